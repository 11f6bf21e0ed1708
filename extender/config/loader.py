"""Build scheduling profiles from a ``KubeSchedulerConfiguration`` file, as kube-scheduler does.

Merging follows upstream: the default profile is a MultiPoint list; a profile's
``plugins.<point>`` are merged into the defaults (``disabled: "*"`` drops them, re-enabling a
default plugin replaces it in place, others are appended); then MultiPoint plugins are expanded
to every point they implement, unless disabled there, with a plugin named at a specific point
overriding its MultiPoint entry. Score weights: the specific ``score`` entry wins, then the
MultiPoint one; 0 means 1.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from marshmallow import ValidationError

from extender.framework.profile import PluginSpec, Profile
from extender.plugins import IN_TREE_PLUGINS, plugin_class

from . import schema
from .defaults import (
    ARG_KEYS,
    DEFAULT_ARGS,
    DEFAULT_MULTI_POINT,
    DEFAULT_SCHEDULER_NAME,
)

MAX_WEIGHT = 100
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file and the field."""


@dataclass
class ExtenderSettings:
    """Our own section (``kind: ExtenderConfiguration``): what the extender service serves."""

    profile: str = ""
    url_prefix: str = "/"
    max_request_bytes: int = 128 * 1024 * 1024
    node_cache_capable: bool = True
    filter_unresolvable: bool = True
    kubeconfig: str | None = None
    watch_pods: bool | None = None


@dataclass
class SchedulerConfig:
    profiles: list[Profile]
    extenders: list[dict] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    parallelism: int = 16
    client_connection: dict = field(default_factory=dict)
    leader_election: dict = field(default_factory=dict)
    extender: ExtenderSettings = field(default_factory=ExtenderSettings)
    source: str = "<default>"


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
        message = "; ".join(messages)
        message = message.replace("Unknown field.", "unknown field")
        return [f"{prefix}: {message}" if prefix else message]
    if isinstance(messages, list):
        return [line for item in messages for line in _flatten(item, prefix)]
    return [f"{prefix}: {messages}"]


def _error(source: str, lines: list[str] | str) -> ConfigError:
    if isinstance(lines, str):
        lines = [lines]
    return ConfigError("\n".join(f"{source}: {line}" for line in lines))


# -- merging -------------------------------------------------------------------------------------


def _specs(items: list[dict]) -> list[PluginSpec]:
    return [PluginSpec(item["name"], item.get("weight") or 0) for item in items]


def _merge_plugin_set(
    defaults: list[PluginSpec], enabled: list[PluginSpec], disabled: set[str]
) -> list[PluginSpec]:
    custom = {spec.name: i for i, spec in enumerate(enabled)}
    replaced: set[int] = set()
    merged: list[PluginSpec] = []
    if "*" not in disabled:
        for spec in defaults:
            if spec.name in disabled:
                continue
            if spec.name in custom:
                replaced.add(custom[spec.name])
                spec = enabled[custom[spec.name]]
            merged.append(spec)
    merged.extend(spec for i, spec in enumerate(enabled) if i not in replaced)
    return merged


# The method that marks a plugin class as extending each point (one protocol per point).
POINT_METHODS = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


def _has_point(name: str, point: str) -> bool:
    return callable(getattr(plugin_class(name), POINT_METHODS[point], None))


def build_profile(raw: dict, where: str, source: str) -> Profile:
    plugins = raw.get("plugins") or {}
    multi = plugins.get("multiPoint") or {}
    multi_point = _merge_plugin_set(
        DEFAULT_MULTI_POINT,
        _specs(multi.get("enabled") or []),
        {p["name"] for p in multi.get("disabled") or []},
    )

    errors: list[str] = []
    for key in ("multiPoint", *schema.POINTS):
        for i, item in enumerate((plugins.get(key) or {}).get("enabled") or ()):
            if item["name"] not in IN_TREE_PLUGINS:
                errors.append(
                    f'{where}.plugins.{key}.enabled[{i}].name: unknown plugin "{item["name"]}"'
                )
            weight = item.get("weight") or 0
            if weight < 0 or weight > MAX_WEIGHT:
                errors.append(
                    f"{where}.plugins.{key}.enabled[{i}].weight: must be between 1 and "
                    f"{MAX_WEIGHT} (0 means 1), got {weight}"
                )
        for i, item in enumerate((plugins.get(key) or {}).get("disabled") or ()):
            if item["name"] != "*" and item["name"] not in IN_TREE_PLUGINS:
                errors.append(
                    f'{where}.plugins.{key}.disabled[{i}].name: unknown plugin "{item["name"]}"'
                )
    if errors:
        raise _error(source, errors)

    points: dict[str, list[PluginSpec]] = {}
    weights: dict[str, int] = {}
    for point in schema.POINTS:
        plugin_set = plugins.get(point) or {}
        specific = _specs(plugin_set.get("enabled") or [])
        disabled = {p["name"] for p in plugin_set.get("disabled") or []}
        for i, spec in enumerate(specific):
            if not _has_point(spec.name, point):
                raise _error(
                    source,
                    f'{where}.plugins.{point}.enabled[{i}].name: plugin "{spec.name}" '
                    f"does not extend {point}",
                )
        names = [s.name for s in specific]
        if "*" in disabled:
            ordered = specific
        else:
            overrides: list[PluginSpec] = []
            from_multi: list[PluginSpec] = []
            for spec in multi_point:
                if not _has_point(spec.name, point) or spec.name in disabled:
                    continue
                if spec.name in names:
                    overrides.append(spec)
                elif spec.name in (s.name for s in from_multi):
                    raise _error(
                        source, f'{where}.plugins.multiPoint: plugin "{spec.name}" enabled twice'
                    )
                else:
                    from_multi.append(spec)
            override_names = {s.name for s in overrides}
            ordered = [s for s in specific if s.name in override_names]
            ordered += from_multi
            ordered += [s for s in specific if s.name not in override_names]
        seen: set[str] = set()
        for spec in ordered:
            if spec.name in seen:
                raise _error(source, f'{where}.plugins.{point}: plugin "{spec.name}" enabled twice')
            seen.add(spec.name)
        points[point] = ordered
        if point == "score":
            for spec in specific:
                weights.setdefault(spec.name, spec.weight)
            for spec in multi_point:
                weights.setdefault(spec.name, spec.weight)
    points["score"] = [PluginSpec(s.name, weights.get(s.name) or 1) for s in points["score"]]

    plugin_config: dict[str, dict] = {}
    for i, entry in enumerate(raw.get("pluginConfig") or ()):
        name = entry["name"]
        path = f"{where}.pluginConfig[{i}]"
        if name not in IN_TREE_PLUGINS:
            raise _error(source, f'{path}.name: unknown plugin "{name}"')
        if name in plugin_config:
            raise _error(source, f'{path}.name: duplicate pluginConfig for "{name}"')
        args = {
            k: v for k, v in (entry.get("args") or {}).items() if k not in ("apiVersion", "kind")
        }
        allowed = ARG_KEYS.get(name, frozenset())
        unknown = sorted(set(args) - allowed)
        if unknown:
            raise _error(source, f"{path}.args.{unknown[0]}: unknown field for {name} args")
        plugin_config[name] = {**copy.deepcopy(DEFAULT_ARGS.get(name, {})), **args}

    enabled = {spec.name for specs in points.values() for spec in specs}
    for name in enabled:
        plugin_config.setdefault(name, copy.deepcopy(DEFAULT_ARGS.get(name, {})))
    for name, args in plugin_config.items():
        try:
            plugin_class(name)(args, None)
        except (ValueError, TypeError, KeyError) as exc:
            index = next(
                (i for i, e in enumerate(raw.get("pluginConfig") or ()) if e["name"] == name), None
            )
            path = f"{where}.pluginConfig[{index}].args" if index is not None else f"{where}"
            raise _error(source, f"{path}: {name}: {exc}") from exc

    return Profile(
        scheduler_name=raw.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        plugins=points,
        plugin_config=plugin_config,
        percentage_of_nodes_to_score=raw.get("percentageOfNodesToScore"),
    )


# -- extenders -----------------------------------------------------------------------------------


def _extended_resource_problem(name: str) -> str | None:
    if "/" not in name:
        return "must be an extended resource name with a domain prefix (example.com/device)"
    prefix, _, short = name.partition("/")
    if "kubernetes.io/" in name:
        return "must not be in the kubernetes.io domain"
    if name.startswith("requests."):
        return "must not start with requests."
    if (
        not prefix
        or len(prefix) > 253
        or not _DNS_SUBDOMAIN.match(prefix)
        or not short
        or len(short) > 63
        or not _QUALIFIED_NAME.match(short)
    ):
        return "must be a qualified name (prefix/name)"
    return None


def _validate_extenders(extenders: list[dict], source: str) -> None:
    errors = []
    binders = [i for i, e in enumerate(extenders) if e.get("bindVerb")]
    if len(binders) > 1:
        errors.append(f"extenders[{binders[1]}].bindVerb: only one extender can implement bind")
    seen: set[str] = set()
    for i, entry in enumerate(extenders):
        for j, resource in enumerate(entry.get("managedResources") or ()):
            problem = _extended_resource_problem(resource["name"])
            if problem:
                errors.append(f"extenders[{i}].managedResources[{j}].name: {problem}")
            if resource["name"] in seen:
                errors.append(
                    f"extenders[{i}].managedResources[{j}].name: "
                    "duplicate extender managed resource name"
                )
            seen.add(resource["name"])
    if errors:
        raise _error(source, errors)


# -- entry points --------------------------------------------------------------------------------


def loads(text: str, source: str = "<string>") -> SchedulerConfig:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise _error(source, f"invalid YAML: {exc}") from exc
    if not documents:
        raise _error(source, "empty file: expected a KubeSchedulerConfiguration")
    first, rest = documents[0], documents[1:]
    if not isinstance(first, dict):
        raise _error(source, "expected a KubeSchedulerConfiguration mapping")
    try:
        data = schema.KubeSchedulerConfigurationSchema().load(first)
    except ValidationError as exc:
        raise _error(source, _flatten(exc.messages)) from exc

    settings = ExtenderSettings()
    for index, doc in enumerate(rest, start=1):
        if not isinstance(doc, dict) or doc.get("kind") != schema.EXTENDER_KIND:
            kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
            raise _error(
                source, f"document {index + 1}: expected kind {schema.EXTENDER_KIND}, got {kind!r}"
            )
        try:
            ext = schema.ExtenderConfigurationSchema().load(doc)
        except ValidationError as exc:
            raise _error(
                source, [f"document {index + 1}: {line}" for line in _flatten(exc.messages)]
            ) from exc
        settings = ExtenderSettings(
            profile=ext["profile"],
            url_prefix=ext["urlPrefix"],
            max_request_bytes=ext["maxRequestBytes"],
            node_cache_capable=ext["nodeCacheCapable"],
            filter_unresolvable=ext["filterUnresolvable"],
            kubeconfig=ext["kubeconfig"],
            watch_pods=ext["watchPods"],
        )

    raw_profiles = data["profiles"] or [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
    profiles = []
    names: set[str] = set()
    for i, raw in enumerate(raw_profiles):
        profile = build_profile(raw, f"profiles[{i}]", source)
        if profile.scheduler_name in names:
            raise _error(
                source, f'profiles[{i}].schedulerName: duplicate "{profile.scheduler_name}"'
            )
        names.add(profile.scheduler_name)
        if profile.percentage_of_nodes_to_score is None:
            profile.percentage_of_nodes_to_score = data["percentageOfNodesToScore"]
        profiles.append(profile)
    sorts = {tuple(s.name for s in p.plugins.get("queueSort", ())) for p in profiles}
    if len(sorts) > 1:
        raise _error(source, "profiles: all profiles must use the same queueSort plugin")
    queue_sort_args = {
        repr(p.plugin_config.get(p.plugins["queueSort"][0].name))
        for p in profiles
        if p.plugins.get("queueSort")
    }
    if len(queue_sort_args) > 1:
        raise _error(source, "profiles: all profiles must use the same queueSort args")

    extenders = data["extenders"] or []
    _validate_extenders(extenders, source)
    if settings.profile and settings.profile not in names:
        raise _error(
            source,
            f'ExtenderConfiguration.profile: no profile named "{settings.profile}" '
            f"(profiles: {', '.join(sorted(names))})",
        )
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
    )


def load(path: str | Path) -> SchedulerConfig:
    file = Path(path)
    try:
        text = file.read_text()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror or exc}") from exc
    return loads(text, source=str(file))


def default_config(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> SchedulerConfig:
    return loads(
        f"apiVersion: {schema.API_VERSION}\nkind: {schema.KIND}\n"
        f"profiles:\n  - schedulerName: {scheduler_name}\n",
        source="<default>",
    )


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
    return default_config(scheduler_name).profiles[0]
