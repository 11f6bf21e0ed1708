"""One ``profiles[i]`` entry as a merged :class:`Profile`, as kube-scheduler builds it
(upstream ``pkg/scheduler/apis/config/v1/default_plugins.go`` ``mergePlugins`` and the framework's
MultiPoint expansion in ``pkg/scheduler/framework/runtime/framework.go``): plugin sets, points,
weights and each plugin's args (in-tree args defaulted and validated; a user's plugin's args
loaded by its ``args_schema``). See :mod:`extender.config.loader` for the merge rules.
"""

from __future__ import annotations

from marshmallow import ValidationError

from extender.framework.features import DEFAULT_FEATURES, Features
from extender.framework.interfaces import EXTENSION_POINTS
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import PluginLoadError, Registry
from extender.plugins import IN_TREE, in_tree_registry

from . import schema
from .defaults import (
    ARG_KEYS,
    DEFAULT_SCHEDULER_NAME,
    UPSTREAM_ONLY_PLUGINS,
    default_args,
    default_multi_point,
    has_args,
)
from .errors import fail, flatten
from .plugins import check_plugin, describe, points_of

IN_TREE_REGISTRY = in_tree_registry()
MIN_WEIGHT = 1
MAX_WEIGHT = 100
MULTI_POINT = "multiPoint"
ENVELOPE_KEYS = ("apiVersion", "kind")


def plugin_points(name: str, registry: Registry | None = None) -> frozenset[str]:
    """The extension points a plugin implements (isinstance on the point protocols)."""
    registry = registry or IN_TREE_REGISTRY
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
        args = {k: v for k, v in raw_args.items() if k not in ENVELOPE_KEYS}
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
        error = _validate_args(registry.plugin_class(name), config[name])
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


def _validate_args(cls: type | None, args: dict) -> str | None:
    """The plugin's own complaint about ``args`` (its optional ``validate_args`` classmethod,
    as upstream's ``validation_pluginargs.go``), if any; the plugin is not constructed."""
    validate = getattr(cls, "validate_args", None)
    if validate is None:
        return None
    try:
        validate(args)
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _out_of_tree_args(
    registry: Registry, name: str, args: dict, path: str
) -> tuple[dict, list[str]]:
    """Args of a user's plugin: loaded by the marshmallow ``args_schema`` it declares (unknown
    fields rejected, defaults filled in), else passed as written; then checked by its
    ``validate_args`` classmethod, if it has one."""
    cls = registry.plugin_class(name)
    schema_class = getattr(cls, "args_schema", None) if cls is not None else None
    if schema_class is not None:
        try:
            args = schema_class().load(args)
        except ValidationError as exc:
            return {}, [f"{path}: {line}" for line in flatten(exc.messages)]
    error = _validate_args(cls, args)
    if error:
        return {}, [f"{path}: {error}"]
    return args, []


def build_profile(
    raw: dict,
    index: int,
    source: str,
    *,
    lone: bool = True,
    registry: Registry | None = None,
    features: Features = DEFAULT_FEATURES,
) -> Profile:
    """One ``profiles[index]`` entry (as decoded by the schema) as a merged :class:`Profile`.

    ``lone``: the config has a single profile, which may omit ``schedulerName``.
    """
    where = f"profiles[{index}]"
    name = raw.get("schedulerName")
    if name is None and not lone:
        raise fail(source, f"{where}.schedulerName: required when there is more than one profile")
    if name is not None and not name:
        raise fail(source, f"{where}.schedulerName: must not be empty")
    plugins = raw.get("plugins") or {}
    registry = registry or IN_TREE_REGISTRY
    errors = _check_plugin_names(plugins, where, registry)
    if errors:
        raise fail(source, errors)

    multi = plugins.get(MULTI_POINT) or {}
    multi_point = merge_plugin_set(
        default_multi_point(features),
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
        raise fail(source, errors)

    # Upstream getScoreWeights: the score entry first, then the MultiPoint one; 0 means 1.
    weights: dict[str, int] = {}
    for spec in (*_specs((plugins.get("score") or {}).get("enabled") or []), *multi_point):
        weights.setdefault(spec.name, spec.weight)
    points["score"] = [PluginSpec(s.name, weights.get(s.name) or 1) for s in points["score"]]
    # PlacementScore weights the same way, but a weight is required (upstream ``NewFramework``).
    placement_weights: dict[str, int] = {}
    for spec in (*_specs((plugins.get("placementScore") or {}).get("enabled") or []), *multi_point):
        placement_weights.setdefault(spec.name, spec.weight)
    points["placementScore"] = [
        PluginSpec(s.name, placement_weights.get(s.name) or 0) for s in points["placementScore"]
    ]
    errors = [
        f'{where}.plugins.placementScore: placement score plugin "{s.name}" is not configured '
        "with weight"
        for s in points["placementScore"]
        if not s.weight
    ]
    if errors:
        raise fail(source, errors)
    for point in schema.POINTS:
        if point not in ("score", "placementScore"):
            points[point] = [PluginSpec(s.name, 0) for s in points[point]]

    enabled = {spec.name for specs in points.values() for spec in specs}
    plugin_config, errors = _plugin_config(raw.get("pluginConfig") or [], enabled, where, registry)
    if errors:
        raise fail(source, errors)
    return Profile(
        scheduler_name=name or DEFAULT_SCHEDULER_NAME,
        plugins=points,
        plugin_config=plugin_config,
        percentage_of_nodes_to_score=raw.get("percentageOfNodesToScore"),
    )
