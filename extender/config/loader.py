"""Build scheduling profiles from a ``KubeSchedulerConfiguration`` file, as kube-scheduler does.

A config file holds one or two YAML documents: a ``KubeSchedulerConfiguration``
(``kubescheduler.config.k8s.io/v1``) that a real kube-scheduler accepts unchanged, then
optionally our own ``ExtenderConfiguration`` (``kube-extender.io/v1alpha1``) for the extender
service.

Plugin merging follows upstream (``mergePlugins`` in the v1 defaults, then the framework's
MultiPoint expansion), for each profile:

1. The profile's ``multiPoint`` set is merged into the default MultiPoint list: a disabled
   ``"*"`` drops every default, a disabled name drops that default, re-enabling a default keeps
   its position but takes the user's settings (weight), other enabled plugins are appended.
2. For each extension point, the point's own ``enabled`` list is taken as written; then every
   MultiPoint plugin that implements the point is added, unless the point disables it (or
   ``"*"``). A plugin named both at the point and in MultiPoint takes the point's entry. Order:
   point entries that override MultiPoint ones (in the point's order), then MultiPoint-only
   plugins, then the point's remaining entries.
3. Score weights: a plugin's ``score`` entry wins over its MultiPoint entry; 0 means 1.

Every error is a :class:`ConfigError` whose message names the file and the field path.
Nothing here mutates the parsed YAML or the module defaults.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from marshmallow import ValidationError

from extender.framework.interfaces import EXTENSION_POINTS
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import PluginLoadError, Registry
from extender.plugins import IN_TREE, in_tree_registry

from . import schema
from .defaults import (
    ARG_KEYS,
    DEFAULT_MULTI_POINT,
    DEFAULT_SCHEDULER_NAME,
    OWN_SCHEDULER_NAME,
    UPSTREAM_ONLY_PLUGINS,
    default_args,
    has_args,
)
from .plugins import check_plugin, describe, plugin_registry, points_of

_IN_TREE = in_tree_registry()
MIN_WEIGHT = 1
MAX_WEIGHT = 100
MULTI_POINT = "multiPoint"
_ENVELOPE_KEYS = ("apiVersion", "kind")

# Kubernetes' qualified-name pieces (IsQualifiedName / IsDNS1123Subdomain).
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ConfigError(ValueError):
    """A config that cannot be used; every line names the file and the field path."""


@dataclass
class ExtenderSettings:
    """Our own section (``kind: ExtenderConfiguration``): what the extender service serves."""

    # schedulerName of the profile the extender runs (the loader fills in the first profile).
    profile: str = ""
    # Path prefix of the webhook routes (``<urlPrefix>filter`` ...).
    url_prefix: str = "/"
    # Largest request body accepted; 5000 full Nodes of ~17 KB fit in the default.
    max_request_bytes: int = 128 * 1024 * 1024
    # Report UnschedulableAndUnresolvable in FailedAndUnresolvableNodes (else FailedNodes).
    filter_unresolvable: bool = True
    kubeconfig: str | None = None
    # None: watch pods only when an enabled plugin needs the pods on each node.
    watch_pods: bool | None = None
    # Out-of-tree plugins from files or modules that are not installed packages.
    plugin_modules: list[str] = field(default_factory=list)
    # plugin name -> extension point -> seconds (applied to every profile).
    plugin_timeouts: dict[str, dict[str, float]] = field(default_factory=dict)
    # Client certificate identities (subject CN or SAN) allowed to call the verbs.
    allowed_clients: list[str] = field(default_factory=list)
    # The bind verb: off unless enabled (then it also needs allowed_clients).
    bind_enabled: bool = False


@dataclass
class SchedulerConfig:
    profiles: list[Profile]
    # The ``extenders:`` entries, validated, camelCase, defaults filled, httpTimeout in seconds.
    extenders: list[dict] = field(default_factory=list)
    # None: not set (adaptive, upstream ``pkg/scheduler/schedule_one.go, numFeasibleNodesToFind``);
    # a profile's own value overrides it.
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    parallelism: int = 16
    client_connection: dict = field(default_factory=dict)
    # camelCase keys; durations as float seconds.
    leader_election: dict = field(default_factory=dict)
    extender: ExtenderSettings = field(default_factory=ExtenderSettings)
    source: str = "<default>"
    # Every plugin the config may name: in-tree, installed packages, pluginModules.
    registry: Registry = field(default_factory=in_tree_registry)


# -- errors ------------------------------------------------------------------------------------


def _flatten(messages: Any, prefix: str = "") -> list[str]:
    """marshmallow's nested error dict as ``path: message`` lines."""
    if isinstance(messages, dict):
        lines = []
        for key, value in messages.items():
            if key == "_schema":
                part = prefix
            elif isinstance(key, int):
                part = f"{prefix}[{key}]"
            else:
                part = f"{prefix}.{key}" if prefix else str(key)
            lines.extend(_flatten(value, part))
        return lines
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        text = "; ".join(_MESSAGES.get(m, m) for m in messages)
        return [f"{prefix}: {text}" if prefix else text]
    if isinstance(messages, list):
        return [line for item in messages for line in _flatten(item, prefix)]
    return [f"{prefix}: {messages}" if prefix else str(messages)]


# marshmallow's stock messages, reworded in the style of the others.
_MESSAGES = {
    "Unknown field.": "unknown field",
    "Missing data for required field.": "required",
    "Not a valid string.": "must be a string",
    "Not a valid list.": "must be a list",
    "Not a valid mapping type.": "must be a mapping",
    "Invalid input type.": "must be a mapping",
    "Field may not be null.": "must not be null",
}


def _fail(source: str, lines: list[str] | str) -> ConfigError:
    if isinstance(lines, str):
        lines = [lines]
    return ConfigError("\n".join(f"{source}: {line}" for line in lines))


# -- plugins -----------------------------------------------------------------------------------


def plugin_points(name: str, registry: Registry | None = None) -> frozenset[str]:
    """The extension points a plugin implements (isinstance on the point protocols)."""
    registry = registry or _IN_TREE
    try:
        cls = registry.plugin_class(name)
    except PluginLoadError:
        return frozenset()
    return points_of(cls) if cls is not None else frozenset(EXTENSION_POINTS)


def _specs(items: list[dict]) -> list[PluginSpec]:
    return [PluginSpec(item["name"], item.get("weight") or 0) for item in items]


def merge_plugin_set(
    defaults: list[PluginSpec] | tuple[PluginSpec, ...],
    enabled: list[PluginSpec],
    disabled: set[str],
) -> list[PluginSpec]:
    """Upstream's ``mergePluginSet``: the defaults with the user's enabled/disabled applied."""
    position = {spec.name: i for i, spec in enumerate(enabled)}
    replaced: set[int] = set()
    merged: list[PluginSpec] = []
    if "*" not in disabled:
        for spec in defaults:
            if spec.name in disabled:
                continue
            if spec.name in position:
                # Re-configured default: keep its place, take the user's entry.
                replaced.add(position[spec.name])
                spec = enabled[position[spec.name]]
            merged.append(PluginSpec(spec.name, spec.weight))
    merged.extend(spec for i, spec in enumerate(enabled) if i not in replaced)
    return merged


def _check_plugin_names(plugins: dict, where: str, registry: Registry) -> list[str]:
    """Unknown or broken plugins, and score weights out of range, anywhere in ``plugins``."""
    errors = []
    checked: set[str] = set()
    for key in (MULTI_POINT, *schema.POINTS):
        plugin_set = plugins.get(key) or {}
        for i, item in enumerate(plugin_set.get("enabled") or ()):
            path = f"{where}.plugins.{key}.enabled[{i}]"
            name = item["name"]
            if name not in registry:
                if name in UPSTREAM_ONLY_PLUGINS:
                    hint = " (an upstream plugin kube-extender does not implement)"
                else:
                    hint = f" (registered: {describe(registry)})"
                errors.append(f'{path}.name: unknown plugin "{name}"{hint}')
            elif registry.source(name) != IN_TREE and name not in checked:
                checked.add(name)
                problem = check_plugin(registry, name)
                if problem:
                    errors.append(f"{path}.name: {problem}")
            weight = item.get("weight") or 0
            # Weight only matters to Score; upstream ignores it elsewhere. 0 means 1.
            if (
                key in (MULTI_POINT, "score")
                and weight != 0
                and not MIN_WEIGHT <= weight <= MAX_WEIGHT
            ):
                errors.append(
                    f"{path}.weight: must be between {MIN_WEIGHT} and {MAX_WEIGHT} (got {weight})"
                )
        for i, item in enumerate(plugin_set.get("disabled") or ()):
            name = item["name"]
            # Disabling an upstream plugin we lack is a no-op, so shared files keep working.
            if name != "*" and name not in registry and name not in UPSTREAM_ONLY_PLUGINS:
                errors.append(f'{where}.plugins.{key}.disabled[{i}].name: unknown plugin "{name}"')
    return errors


def _expand_point(
    point: str,
    plugin_set: dict,
    multi_point: list[PluginSpec],
    where: str,
    registry: Registry,
) -> tuple[list[PluginSpec], list[str]]:
    """One point's plugins: its own entries plus the MultiPoint plugins implementing it."""
    errors = []
    specific = _specs(plugin_set.get("enabled") or [])
    disabled = {p["name"] for p in plugin_set.get("disabled") or []}
    names: list[str] = []
    for i, spec in enumerate(specific):
        if point not in plugin_points(spec.name, registry):
            errors.append(
                f'{where}.plugins.{point}.enabled[{i}].name: plugin "{spec.name}" '
                f"does not extend {point}"
            )
        elif spec.name in names:
            errors.append(
                f'{where}.plugins.{point}.enabled[{i}].name: plugin "{spec.name}" enabled twice'
            )
        names.append(spec.name)
    if errors or "*" in disabled:
        return specific, errors

    overridden: set[str] = set()
    from_multi: list[PluginSpec] = []
    for spec in multi_point:
        if point not in plugin_points(spec.name, registry) or spec.name in disabled:
            continue
        if spec.name in names:
            # Named at the point too: the user's intent is the point's entry.
            overridden.add(spec.name)
        elif any(s.name == spec.name for s in from_multi):
            errors.append(f'{where}.plugins.multiPoint.enabled: plugin "{spec.name}" enabled twice')
        else:
            from_multi.append(spec)
    ordered = [s for s in specific if s.name in overridden]
    ordered += from_multi
    ordered += [s for s in specific if s.name not in overridden]
    return ordered, errors


def _plugin_config(
    entries: list[dict], enabled: set[str], where: str, registry: Registry
) -> tuple[dict[str, dict], list[str]]:
    """Each plugin's args: the user's entry or the default, upstream defaults filled in."""
    errors: list[str] = []
    config: dict[str, dict] = {}
    given: dict[str, int] = {}
    for j, entry in enumerate(entries):
        name = entry["name"]
        path = f"{where}.pluginConfig[{j}]"
        if name not in registry:
            errors.append(f'{path}.name: unknown plugin "{name}"')
            continue
        if name in given:
            errors.append(f'{path}.name: duplicate pluginConfig for "{name}"')
            continue
        given[name] = j
        raw_args = entry.get("args") or {}
        # Upstream's embedded args may carry their own apiVersion/kind (e.g. NodeResourcesFitArgs).
        args = {k: v for k, v in raw_args.items() if k not in _ENVELOPE_KEYS}
        if registry.source(name) != IN_TREE:
            loaded, arg_errors = _out_of_tree_args(registry, name, args, f"{path}.args")
            errors.extend(arg_errors)
            if not arg_errors:
                config[name] = loaded
            continue
        allowed = ARG_KEYS.get(name, frozenset())
        unknown = [key for key in args if key not in allowed]
        if unknown and not has_args(name):
            errors.append(f"{path}.args: plugin {name} takes no args")
            continue
        if unknown:
            errors.extend(f"{path}.args.{key}: unknown field" for key in unknown)
            continue
        config[name] = default_args(name, args)
        error = _validate_args(registry, name, config[name])
        if error:
            errors.append(f"{path}.args: {error}")
    # Upstream adds a defaulted pluginConfig entry for every enabled plugin that has args; an
    # out-of-tree plugin's defaults come from its args_schema.
    for name in sorted(enabled - set(given)):
        if registry.source(name) != IN_TREE:
            loaded, arg_errors = _out_of_tree_args(registry, name, {}, f"{where}.pluginConfig")
            errors.extend(f"{line} (no pluginConfig entry for {name})" for line in arg_errors)
            if not arg_errors:
                config[name] = loaded
        elif has_args(name):
            config[name] = default_args(name)
    return config, errors


def _validate_args(registry: Registry, name: str, args: dict) -> str | None:
    """An in-tree plugin's own complaint about ``args``, if any (it owns the rules)."""
    cls = registry.plugin_class(name)
    try:
        cls(args, None)  # type: ignore[misc]  # in-tree constructors only read their args
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _out_of_tree_args(
    registry: Registry, name: str, args: dict, path: str
) -> tuple[dict, list[str]]:
    """Args of a user's plugin: loaded by the marshmallow ``args_schema`` it declares (unknown
    fields rejected, defaults filled in), else passed as written."""
    cls = registry.plugin_class(name)
    schema_class = getattr(cls, "args_schema", None) if cls is not None else None
    if schema_class is None:
        return args, []
    try:
        return schema_class().load(args), []
    except ValidationError as exc:
        return {}, [f"{path}: {line}" for line in _flatten(exc.messages)]


def build_profile(
    raw: dict, index: int, source: str, *, lone: bool = True, registry: Registry | None = None
) -> Profile:
    """One ``profiles[index]`` entry (as decoded by the schema) as a merged :class:`Profile`.

    ``lone``: the config has a single profile, which may omit ``schedulerName``.
    """
    where = f"profiles[{index}]"
    name = raw.get("schedulerName")
    if name is None and not lone:
        raise _fail(source, f"{where}.schedulerName: required when there is more than one profile")
    if name is not None and not name:
        raise _fail(source, f"{where}.schedulerName: must not be empty")
    plugins = raw.get("plugins") or {}
    registry = registry or _IN_TREE
    errors = _check_plugin_names(plugins, where, registry)
    if errors:
        raise _fail(source, errors)

    multi = plugins.get(MULTI_POINT) or {}
    multi_point = merge_plugin_set(
        DEFAULT_MULTI_POINT,
        _specs(multi.get("enabled") or []),
        {p["name"] for p in multi.get("disabled") or []},
    )
    points: dict[str, list[PluginSpec]] = {}
    for point in schema.POINTS:
        points[point], point_errors = _expand_point(
            point, plugins.get(point) or {}, multi_point, where, registry
        )
        errors.extend(point_errors)
    if len(points["queueSort"]) > 1:
        errors.append(f"{where}.plugins.queueSort: only one queue sort plugin can be enabled")
    if errors:
        raise _fail(source, errors)

    # Upstream getScoreWeights: the score entry first, then the MultiPoint one; 0 means 1.
    weights: dict[str, int] = {}
    for spec in (*_specs((plugins.get("score") or {}).get("enabled") or []), *multi_point):
        weights.setdefault(spec.name, spec.weight)
    points["score"] = [PluginSpec(s.name, weights.get(s.name) or 1) for s in points["score"]]
    for point in schema.POINTS:
        if point != "score":
            points[point] = [PluginSpec(s.name, 0) for s in points[point]]

    enabled = {spec.name for specs in points.values() for spec in specs}
    plugin_config, errors = _plugin_config(raw.get("pluginConfig") or [], enabled, where, registry)
    if errors:
        raise _fail(source, errors)
    return Profile(
        scheduler_name=name or DEFAULT_SCHEDULER_NAME,
        plugins=points,
        plugin_config=plugin_config,
        percentage_of_nodes_to_score=raw.get("percentageOfNodesToScore"),
    )


# -- extenders (upstream ``pkg/scheduler/apis/config/validation/validation.go``) ----------------


def _is_qualified_name(value: str) -> bool:
    prefix, slash, short = value.rpartition("/")
    if slash and (
        not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix) or "/" in prefix
    ):
        return False
    return 0 < len(short) <= 63 and bool(_QUALIFIED_NAME.match(short))


def extended_resource_problem(name: str) -> str | None:
    """Why ``name`` is not a valid extended resource name (upstream IsExtendedResourceName)."""
    if "/" not in name:
        return "is an invalid extended resource name: needs a domain prefix (example.com/name)"
    if "kubernetes.io/" in name:
        return "is an invalid extended resource name: the kubernetes.io domain is reserved"
    if name.startswith("requests."):
        return 'is an invalid extended resource name: must not start with "requests."'
    if not _is_qualified_name(name) or not _is_qualified_name(f"requests.{name}"):
        return "is an invalid extended resource name: must be a qualified name (prefix/name)"
    return None


def _validate_extenders(extenders: list[dict]) -> list[str]:
    errors = []
    seen: set[str] = set()
    for i, entry in enumerate(extenders):
        for j, resource in enumerate(entry.get("managedResources") or ()):
            path = f"extenders[{i}].managedResources[{j}].name"
            problem = extended_resource_problem(resource["name"])
            if problem:
                errors.append(f'{path}: "{resource["name"]}" {problem}')
            if resource["name"] in seen:
                errors.append(f"{path}: duplicate extender managed resource name")
            seen.add(resource["name"])
    binders = [i for i, entry in enumerate(extenders) if entry.get("bindVerb")]
    if len(binders) > 1:
        errors.append(
            f"extenders: found {len(binders)} extenders implementing bind "
            f"(extenders{binders}): only one extender can implement bind"
        )
    return errors


# -- documents ---------------------------------------------------------------------------------


def _extender_settings(documents: list[Any], source: str) -> ExtenderSettings:
    """The optional ExtenderConfiguration document (after the KubeSchedulerConfiguration)."""
    if not documents:
        return ExtenderSettings()
    if len(documents) > 1:
        raise _fail(source, "document 3: only one ExtenderConfiguration document is allowed")
    doc = documents[0]
    if not isinstance(doc, dict):
        raise _fail(source, f"document 2: expected a mapping ({schema.EXTENDER_KIND})")
    if doc.get("kind") != schema.EXTENDER_KIND:
        raise _fail(
            source, f"document 2: kind: must be {schema.EXTENDER_KIND!r}, got {doc.get('kind')!r}"
        )
    try:
        data = schema.ExtenderConfigurationSchema().load(doc)
    except ValidationError as exc:
        raise _fail(source, _flatten(exc.messages, schema.EXTENDER_KIND)) from exc
    return ExtenderSettings(
        profile=data["profile"],
        url_prefix=data["urlPrefix"],
        max_request_bytes=data["maxRequestBytes"],
        filter_unresolvable=data["filterUnresolvable"],
        kubeconfig=data["kubeconfig"],
        watch_pods=data["watchPods"],
        plugin_modules=data["pluginModules"],
        plugin_timeouts=data["pluginTimeouts"],
        allowed_clients=data["allowedClients"],
        bind_enabled=data["bind"]["enabled"],
    )


def _apply_timeouts(
    timeouts: dict[str, dict[str, float]], profiles: list[Profile], registry: Registry
) -> list[str]:
    """``pluginTimeouts`` onto every profile; each name must be a plugin that has the point."""
    errors = []
    for name, points in timeouts.items():
        where = f"{schema.EXTENDER_KIND}.pluginTimeouts.{name}"
        if name not in registry:
            errors.append(f'{where}: unknown plugin "{name}"')
            continue
        for point in points:
            if point not in plugin_points(name, registry):
                errors.append(f'{where}.{point}: plugin "{name}" does not extend {point}')
    if not errors:
        for profile in profiles:
            profile.plugin_timeouts = {name: dict(points) for name, points in timeouts.items()}
    return errors


def _check_common_queue_sort(profiles: list[Profile]) -> list[str]:
    """All profiles share one queue (upstream
    ``pkg/scheduler/apis/config/validation/validation.go``):
    same QueueSort plugin and args."""
    errors = []
    first = profiles[0]
    sort = first.enabled("queueSort")
    sort_args = [first.plugin_config.get(name) for name in sort]
    for i, profile in enumerate(profiles[1:], start=1):
        if profile.enabled("queueSort") != sort:
            errors.append(
                f"profiles[{i}].plugins.queueSort: must be the same for all profiles "
                f"(profiles[0] uses {sort}, this one {profile.enabled('queueSort')})"
            )
        elif [profile.plugin_config.get(name) for name in sort] != sort_args:
            errors.append(
                f"profiles[{i}].pluginConfig: the queueSort plugin's args must be the same "
                "for all profiles"
            )
    return errors


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A one-line description of a YAML syntax error, with its (1-based) position."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return f"invalid YAML: {problem}"
    return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def loads(text: str, source: str = "<string>", *, plugins: Iterable[type] = ()) -> SchedulerConfig:
    """Parse a config file's text; ``source`` names it in error messages.

    ``plugins``: extra plugin classes the config may name (registered by their ``name``, after
    in-tree plugins, installed packages and ``pluginModules``), for tests and embedders.
    """
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise _fail(source, _yaml_problem(exc)) from exc
    if not documents:
        raise _fail(source, f"empty: expected a {schema.KIND} document")
    first = documents[0]
    if not isinstance(first, dict):
        raise _fail(source, f"expected a {schema.KIND} mapping, got {type(first).__name__}")
    try:
        data = schema.KubeSchedulerConfigurationSchema().load(first)
    except ValidationError as exc:
        raise _fail(source, _flatten(exc.messages)) from exc
    settings = _extender_settings(documents[1:], source)
    base_dir = Path(source).parent if not source.startswith("<") else Path.cwd()
    registry, problems = plugin_registry(settings.plugin_modules, base_dir, plugins)
    if problems:
        raise _fail(
            source,
            [
                f"{schema.EXTENDER_KIND}.{line}" if line.startswith("pluginModules") else line
                for line in problems
            ],
        )

    raw_profiles = data["profiles"] or [{}]
    profiles: list[Profile] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        profile = build_profile(raw, i, source, lone=len(raw_profiles) == 1, registry=registry)
        if profile.scheduler_name in seen:
            raise _fail(
                source,
                f'profiles[{i}].schedulerName: duplicate "{profile.scheduler_name}" '
                f"(also profiles[{seen[profile.scheduler_name]}])",
            )
        seen[profile.scheduler_name] = i
        if profile.percentage_of_nodes_to_score is None:
            profile.percentage_of_nodes_to_score = data["percentageOfNodesToScore"]
        profiles.append(profile)

    errors = _check_common_queue_sort(profiles)
    errors += _apply_timeouts(settings.plugin_timeouts, profiles, registry)
    extenders = data["extenders"] or []
    errors += _validate_extenders(extenders)
    if not settings.profile:
        settings.profile = profiles[0].scheduler_name
    elif settings.profile not in seen:
        errors.append(
            f'{schema.EXTENDER_KIND}.profile: no profile named "{settings.profile}" '
            f"(profiles: {', '.join(seen)})"
        )
    if errors:
        raise _fail(source, errors)

    return SchedulerConfig(
        profiles=profiles,
        extenders=extenders,
        percentage_of_nodes_to_score=data["percentageOfNodesToScore"],
        pod_initial_backoff_seconds=float(data["podInitialBackoffSeconds"]),
        pod_max_backoff_seconds=float(data["podMaxBackoffSeconds"]),
        parallelism=data["parallelism"],
        client_connection=data["clientConnection"],
        leader_election=data["leaderElection"],
        extender=settings,
        source=source,
        registry=registry,
    )


def load(path: str | Path, *, plugins: Iterable[type] = ()) -> SchedulerConfig:
    """Read and parse a config file; every error names ``path``. ``plugins`` as in
    :func:`loads`."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{file}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read: {getattr(exc, 'strerror', None) or exc}") from exc
    return loads(text, source=str(file), plugins=plugins)


def default_config(scheduler_name: str = OWN_SCHEDULER_NAME) -> SchedulerConfig:
    """A config with one default profile named ``scheduler_name`` and upstream defaults."""
    config = loads(
        f"apiVersion: {schema.API_VERSION}\nkind: {schema.KIND}\n",
        source="<default>",
    )
    config.profiles[0].scheduler_name = scheduler_name
    config.extender.profile = scheduler_name
    return config


def default_profile(scheduler_name: str = OWN_SCHEDULER_NAME) -> Profile:
    """The default profile (upstream's MultiPoint defaults that we implement)."""
    return default_config(scheduler_name).profiles[0]
