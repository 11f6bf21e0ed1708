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

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from marshmallow import ValidationError

from extender.framework.features import (
    DEFAULT_FEATURES,
    Features,
)
from extender.framework.profile import Profile
from extender.framework.registry import Registry
from extender.framework.resources import is_qualified_name
from extender.plugins import in_tree_registry

from . import schema
from .defaults import (
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_POD_BUDGET,
    OWN_SCHEDULER_NAME,
)
from .errors import ConfigError, fail, flatten
from .plugins import plugin_registry
from .profiles import build_profile, plugin_points


@dataclass
class ExtenderSettings:
    """Our own section (``kind: ExtenderConfiguration``): what the extender service serves."""

    # schedulerName of the profile the extender runs (the loader fills in the first profile).
    profile: str = ""
    # Path prefix of the webhook routes (``<urlPrefix>filter`` ...).
    url_prefix: str = "/"
    # Largest request body accepted (docs/extender.md#memory).
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
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
    # The bind verb assumes the pod it bound in the cache (bind.assume), for this long at
    # most without the watch's confirmation (bind.assumeTTL, seconds).
    bind_assume: bool = True
    bind_assume_ttl: float = 30.0
    # The pod budget (extender.framework.budget), seconds; 0: none (applied to every profile).
    pod_budget: float = DEFAULT_POD_BUDGET


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
    # The process's feature gates (``--feature-gates``), which the defaults depend on.
    features: Features = DEFAULT_FEATURES


# -- extenders (upstream ``pkg/scheduler/apis/config/validation/validation.go``) ----------------


def extended_resource_problem(name: str) -> str | None:
    """Why ``name`` is not a valid extended resource name (upstream IsExtendedResourceName)."""
    if "/" not in name:
        return "is an invalid extended resource name: needs a domain prefix (example.com/name)"
    if "kubernetes.io/" in name:
        return "is an invalid extended resource name: the kubernetes.io domain is reserved"
    if name.startswith("requests."):
        return 'is an invalid extended resource name: must not start with "requests."'
    if not is_qualified_name(name) or not is_qualified_name(f"requests.{name}"):
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
        raise fail(source, "document 3: only one ExtenderConfiguration document is allowed")
    doc = documents[0]
    if not isinstance(doc, dict):
        raise fail(source, f"document 2: expected a mapping ({schema.EXTENDER_KIND})")
    if doc.get("kind") != schema.EXTENDER_KIND:
        raise fail(
            source, f"document 2: kind: must be {schema.EXTENDER_KIND!r}, got {doc.get('kind')!r}"
        )
    try:
        data = schema.ExtenderConfigurationSchema().load(doc)
    except ValidationError as exc:
        raise fail(source, flatten(exc.messages, schema.EXTENDER_KIND)) from exc
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
        bind_assume=data["bind"]["assume"],
        bind_assume_ttl=data["bind"]["assumeTTL"],
        pod_budget=data["podBudget"],
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


def loads(
    text: str,
    source: str = "<string>",
    *,
    plugins: Iterable[type] = (),
    features: Features = DEFAULT_FEATURES,
) -> SchedulerConfig:
    """Parse a config file's text; ``source`` names it in error messages.

    ``plugins``: extra plugin classes the config may name (registered by their ``name``, after
    in-tree plugins, installed packages and ``pluginModules``), for tests and embedders.
    ``features``: the feature gates, which the default plugins depend on (as kube-scheduler's
    ``--feature-gates`` flag, not a field of the file).
    """
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise fail(source, _yaml_problem(exc)) from exc
    if not documents:
        raise fail(source, f"empty: expected a {schema.KIND} document")
    first = documents[0]
    if not isinstance(first, dict):
        raise fail(source, f"expected a {schema.KIND} mapping, got {type(first).__name__}")
    try:
        data = schema.KubeSchedulerConfigurationSchema().load(first)
    except ValidationError as exc:
        raise fail(source, flatten(exc.messages)) from exc
    settings = _extender_settings(documents[1:], source)
    base_dir = Path(source).parent if not source.startswith("<") else Path.cwd()
    registry, problems = plugin_registry(settings.plugin_modules, base_dir, plugins)
    if problems:
        raise fail(
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
        profile = build_profile(
            raw, i, source, lone=len(raw_profiles) == 1, registry=registry, features=features
        )
        if profile.scheduler_name in seen:
            raise fail(
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
    for profile in profiles:
        profile.pod_budget = settings.pod_budget or None
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
        raise fail(source, errors)

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
        features=features,
    )


def load(
    path: str | Path, *, plugins: Iterable[type] = (), features: Features = DEFAULT_FEATURES
) -> SchedulerConfig:
    """Read and parse a config file; every error names ``path``. ``plugins`` and
    ``features`` as in :func:`loads`."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{file}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read: {getattr(exc, 'strerror', None) or exc}") from exc
    return loads(text, source=str(file), plugins=plugins, features=features)


def default_config(
    scheduler_name: str = OWN_SCHEDULER_NAME, features: Features = DEFAULT_FEATURES
) -> SchedulerConfig:
    """A config with one default profile named ``scheduler_name`` and upstream defaults."""
    config = loads(
        f"apiVersion: {schema.API_VERSION}\nkind: {schema.KIND}\n",
        source="<default>",
        features=features,
    )
    config.profiles[0].scheduler_name = scheduler_name
    config.extender.profile = scheduler_name
    return config


def default_profile(scheduler_name: str = OWN_SCHEDULER_NAME) -> Profile:
    """The default profile (upstream's MultiPoint defaults that we implement)."""
    return default_config(scheduler_name).profiles[0]
