"""The args of NodeResourcesFit and NodeResourcesBalancedAllocation: defaults and validation
(upstream ``pkg/scheduler/apis/config/validation/validation_pluginargs.go``:
``ValidateNodeResourcesFitArgs``, ``ValidateNodeResourcesBalancedAllocationArgs``,
``validateResources``, ``validateFunctionShape``; the strategy names follow
``pkg/scheduler/apis/config/types_pluginargs.go``).

Each validator collects every field error and raises one ``ValueError`` with upstream's text
(:func:`extender.plugins.args.raise_errors`); on success it returns the parsed args.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from extender.framework.resources import is_qualified_name

from ..args import (
    duplicate,
    go_value,
    invalid,
    is_int,
    raise_errors,
    required,
    string_list,
    unsupported,
)
from .requested_to_capacity_ratio import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION
from .resource_allocation import DEFAULT_RESOURCES

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

MAX_RESOURCE_WEIGHT = 100


def parse_resource_specs(value: Any, path: str, errors: list[str]) -> list[tuple[str, int]]:
    """``[{name, weight}]`` defaulted as upstream: missing/empty -> cpu:1, memory:1; weight 0 -> 1.

    Weights are returned as given otherwise; range checks belong to each plugin.
    """
    if value is None or value == []:
        value = [dict(r) for r in DEFAULT_RESOURCES]
    if not isinstance(value, list):
        errors.append(invalid(path, type(value).__name__, "must be a list of {name, weight}"))
        return []
    specs: list[tuple[str, int]] = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            errors.append(invalid(where, type(item).__name__, "must be an object {name, weight}"))
            continue
        name = item.get("name")
        if not isinstance(name, str) or not name:
            errors.append(required(f"{where}.name", "a resource name is required"))
            continue
        weight = item.get("weight") or 0
        if not is_int(weight):
            errors.append(invalid(f"{where}.weight", weight, "must be an integer"))
            continue
        specs.append((name, weight or 1))
    return specs


def parse_shape(value: Any, path: str, errors: list[str]) -> list[tuple[int, int]]:
    """Validate RequestedToCapacityRatio shape points as upstream ``validateFunctionShape``."""
    if not value:
        errors.append(required(path, "at least one point must be specified"))
        return []
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        errors.append(invalid(path, str(value), "must be a list of {utilization, score}"))
        return []
    points: list[tuple[int, int]] = []
    for i, point in enumerate(value):
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        if not is_int(utilization) or not is_int(score):
            errors.append(invalid(f"{path}[{i}]", str(point), "utilization and score must be ints"))
            return []
        points.append((utilization, score))
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            errors.append(
                invalid(
                    f"{path}[{i}].utilization",
                    points[i][0],
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, (utilization, score) in enumerate(points):
        if not 0 <= utilization <= MAX_UTILIZATION:
            errors.append(
                invalid(
                    f"{path}[{i}].utilization",
                    utilization,
                    f"not in valid range [0, {MAX_UTILIZATION}]",
                )
            )
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                invalid(
                    f"{path}[{i}].score",
                    score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return points


@dataclass(frozen=True, slots=True)
class FitArgs:
    """NodeResourcesFitArgs, validated and defaulted."""

    ignored_resources: frozenset[str]
    ignored_resource_groups: frozenset[str]
    strategy: str
    resources: list[str]
    weights: list[int]
    shape: list[tuple[int, int]]


def _ignored_resources(args: dict, errors: list[str]) -> tuple[list[str], list[str]]:
    ignored = string_list(args.get("ignoredResources"), "ignoredResources", errors)
    for i, name in enumerate(ignored):
        if not is_qualified_name(name):
            errors.append(invalid(f"ignoredResources[{i}]", name, "must be a qualified name"))
    groups = string_list(args.get("ignoredResourceGroups"), "ignoredResourceGroups", errors)
    for i, group in enumerate(groups):
        if "/" in group:
            errors.append(
                invalid(
                    f"ignoredResourceGroups[{i}]",
                    group,
                    "resource group name can't contain '/'",
                )
            )
        elif not is_qualified_name(group):
            errors.append(invalid(f"ignoredResourceGroups[{i}]", group, "must be a qualified name"))
    return ignored, groups


def validate_fit_args(args: dict | None) -> FitArgs:
    """Upstream ``ValidateNodeResourcesFitArgs`` on ``args`` (defaulted as SetDefaults)."""
    args = args or {}
    errors: list[str] = []
    ignored, groups = _ignored_resources(args, errors)

    strategy = args.get("scoringStrategy")
    if strategy is None:
        # Upstream defaults the whole strategy only when it is absent.
        strategy = {"type": LEAST_ALLOCATED}
    if not isinstance(strategy, dict):
        raise ValueError(invalid("scoringStrategy", str(strategy), "must be an object"))
    kind: str = strategy.get("type") or ""
    if kind not in SUPPORTED_STRATEGIES:
        errors.append(unsupported("scoringStrategy.type", str(kind), SUPPORTED_STRATEGIES))
    specs = parse_resource_specs(strategy.get("resources"), "scoringStrategy.resources", errors)
    for i, (name, weight) in enumerate(specs):
        if not 0 < weight <= MAX_RESOURCE_WEIGHT:
            errors.append(
                invalid(
                    f"scoringStrategy.resources[{i}].weight",
                    weight,
                    f"resource weight of {name} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
                )
            )
    rtcr = strategy.get("requestedToCapacityRatio")
    shape: list[tuple[int, int]] = []
    if rtcr is not None or kind == REQUESTED_TO_CAPACITY_RATIO:
        # Upstream validates a given shape whatever the type (its error path is
        # scoringStrategy.shape); the type needs one.
        shape_value = rtcr.get("shape") if isinstance(rtcr, dict) else rtcr
        shape = parse_shape(shape_value, "scoringStrategy.shape", errors)
    raise_errors(errors)
    return FitArgs(
        ignored_resources=frozenset(ignored),
        ignored_resource_groups=frozenset(groups),
        strategy=kind,
        resources=[name for name, _ in specs],
        weights=[weight for _, weight in specs],
        shape=shape,
    )


def validate_balanced_allocation_args(args: dict | None) -> list[str]:
    """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``: the resources to balance."""
    errors: list[str] = []
    specs = parse_resource_specs((args or {}).get("resources"), "resources", errors)
    seen: set[str] = set()
    for i, (name, weight) in enumerate(specs):
        if name in seen:
            errors.append(duplicate(f"resources[{i}].name", go_value(name)))
        seen.add(name)
        # Upstream accepts only weight 1 here (0 is defaulted to 1).
        if weight != 1:
            errors.append(invalid(f"resources[{i}].weight", weight, "must be 1"))
    raise_errors(errors)
    return [name for name, _ in specs]
