"""NodeResourcesFit (PreFilter, Filter, PreScore, Score): the pod's requests must fit (spec §7.6).

* Filter: pod count, then CPU, memory, ephemeral storage and each requested scalar resource
  against ``allocatable - requested``; every shortfall is listed (``Insufficient cpu``, ...).
  Unschedulable, or UnschedulableAndUnresolvable when a request exceeds the node's whole
  allocatable (no eviction could make room). Extended resources in ``ignoredResources`` /
  ``ignoredResourceGroups`` are skipped (an extender manages them).
* Score: the configured scoring strategy over the configured resources, on the node's
  non-zero requests plus the pod's (a container without a CPU/memory request counts as
  100m / 200Mi here).

Reads NodeInfo aggregates; writes only its cycle-state keys; mutates nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from extender.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_scalar_resource,
    pod_requests,
)
from extender.framework.resources import (
    Resource as Amounts,
)
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import Code, Status
from extender.framework.types import NodeInfo, PodInfo, PreFilterResult

NAME = "NodeResourcesFit"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
ERR_REASON_TOO_MANY_PODS = "Too many pods"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
DEFAULT_RESOURCES = [{"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1}]


def insufficient_reason(name: str) -> str:
    return f"Insufficient {name}"


def is_extended_resource(name: str) -> bool:
    """A vendor resource such as ``example.com/gpu`` (upstream ``IsExtendedResourceName``)."""
    if not is_scalar_resource(name) or name.startswith("hugepages-"):
        return False
    if name.startswith("attachable-volumes-"):
        return False
    return "/" in name and "kubernetes.io/" not in name.split("/", 1)[0] + "/"


def parse_resources(value: Any, where: str) -> list[tuple[str, int]]:
    """``[{name, weight}]`` with weights 1..100 (0 means 1), as upstream validates them."""
    if value is None:
        value = DEFAULT_RESOURCES
    if not isinstance(value, list):
        raise ValueError(f"{where}: must be a list of {{name, weight}}")
    resources = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ValueError(f"{where}[{i}].name: required")
        weight = item.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ValueError(f"{where}[{i}].weight: must be an integer")
        if weight == 0:
            weight = 1
        if not 1 <= weight <= 100:
            raise ValueError(f"{where}[{i}].weight: must be in the range [1, 100], got {weight}")
        resources.append((item["name"], weight))
    return resources


def broken_linear(shape: list[tuple[int, int]]) -> Callable[[int], int]:
    """Piecewise-linear utilization -> score through the shape points (scores already x10)."""

    def function(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return shape[0][1]
                u0, s0 = shape[i - 1]
                return s0 + go_div((score - s0) * (p - u0), utilization - u0)
        return shape[-1][1]

    return function


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/``."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


class _FitState:
    __slots__ = ("request",)

    def __init__(self, request: Amounts) -> None:
        self.request = request

    def clone(self) -> _FitState:
        return self  # read-only after PreFilter


def allocatable_and_requested(
    node_info: NodeInfo, resource: str, pod_request: int, use_requested: bool
) -> tuple[int, int]:
    """(allocatable, requested incl. the pod) for scoring; (0, 0) skips the resource."""
    if pod_request == 0 and is_scalar_resource(resource) and resource != EPHEMERAL_STORAGE:
        return 0, 0
    requested = node_info.requested if use_requested else node_info.non_zero_requested
    if resource == CPU:
        return node_info.allocatable.milli_cpu, requested.milli_cpu + pod_request
    if resource == MEMORY:
        return node_info.allocatable.memory, requested.memory + pod_request
    if resource == EPHEMERAL_STORAGE:
        return (
            node_info.allocatable.ephemeral_storage,
            node_info.requested.ephemeral_storage + pod_request,
        )
    if resource in node_info.allocatable.scalar:
        return (
            node_info.allocatable.scalar[resource],
            node_info.requested.scalar.get(resource, 0) + pod_request,
        )
    return 0, 0


def pod_score_requests(pod: dict, resources: list[tuple[str, int]], non_zero: bool) -> list[int]:
    requests = pod_requests(pod, non_zero=non_zero)
    return [requests.get(name) for name, _ in resources]


class NodeResourcesFit:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle
        ignored = args.get("ignoredResources") or []
        groups = args.get("ignoredResourceGroups") or []
        if not isinstance(ignored, list) or not all(isinstance(r, str) for r in ignored):
            raise ValueError("ignoredResources: must be a list of resource names")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise ValueError("ignoredResourceGroups: must be a list of group names")
        for i, group in enumerate(groups):
            if "/" in group:
                raise ValueError(f"ignoredResourceGroups[{i}]: {group!r} must not contain '/'")
        self.ignored = frozenset(ignored)
        self.ignored_groups = frozenset(groups)

        strategy = args.get("scoringStrategy") or {}
        if not isinstance(strategy, dict):
            raise ValueError("scoringStrategy: must be an object")
        self.strategy = strategy.get("type") or LEAST_ALLOCATED
        if self.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
            raise ValueError(
                f"scoringStrategy.type: unsupported value {self.strategy!r} (supported: "
                f"{LEAST_ALLOCATED}, {MOST_ALLOCATED}, {REQUESTED_TO_CAPACITY_RATIO})"
            )
        self.resources = parse_resources(strategy.get("resources"), "scoringStrategy.resources")
        self.shape: Callable[[int], int] | None = None
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            rtcr = strategy.get("requestedToCapacityRatio") or {}
            points = rtcr.get("shape") or []
            if not points:
                raise ValueError("scoringStrategy.requestedToCapacityRatio.shape: required")
            shape = []
            last = -1
            for i, point in enumerate(points):
                where = f"scoringStrategy.requestedToCapacityRatio.shape[{i}]"
                utilization, score = point.get("utilization", 0), point.get("score", 0)
                if not 0 <= utilization <= MAX_UTILIZATION:
                    raise ValueError(f"{where}.utilization: must be in the range [0, 100]")
                if utilization <= last:
                    raise ValueError(f"{where}.utilization: values must be sorted increasingly")
                if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
                    raise ValueError(f"{where}.score: must be in the range [0, 10]")
                last = utilization
                shape.append((utilization, score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)))
            self.shape = broken_linear(shape)

    # -- filter ---------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_KEY, _FitState(pod_requests(pod)))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _ignored(self, name: str) -> bool:
        if not is_extended_resource(name):
            return False
        return name in self.ignored or name.split("/", 1)[0] in self.ignored_groups

    def insufficient_resources(
        self, request: Amounts, node_info: NodeInfo
    ) -> list[tuple[str, bool]]:
        """(reason, unresolvable) for each shortfall, in upstream order."""
        out: list[tuple[str, bool]] = []
        allocatable, used = node_info.allocatable, node_info.requested
        if len(node_info.pods) + 1 > allocatable.allowed_pod_number:
            out.append((ERR_REASON_TOO_MANY_PODS, allocatable.allowed_pod_number < 1))
        if request.is_zero():
            return out
        for name, want, have, taken in (
            (CPU, request.milli_cpu, allocatable.milli_cpu, used.milli_cpu),
            (MEMORY, request.memory, allocatable.memory, used.memory),
            (
                EPHEMERAL_STORAGE,
                request.ephemeral_storage,
                allocatable.ephemeral_storage,
                used.ephemeral_storage,
            ),
        ):
            if want > 0 and want > have - taken:
                out.append((insufficient_reason(name), want > have))
        for name, want in request.scalar.items():
            if want == 0 or self._ignored(name):
                continue
            have = allocatable.scalar.get(name, 0)
            if want > have - used.scalar.get(name, 0):
                out.append((insufficient_reason(name), want > have))
        return out

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            request = state.read(PRE_FILTER_KEY).request
        except StateNotFound:
            request = pod_requests(pod)
        shortfalls = self.insufficient_resources(request, node_info)
        if not shortfalls:
            return None
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if any(unresolvable for _, unresolvable in shortfalls)
            else Code.UNSCHEDULABLE
        )
        return Status(code, *(reason for reason, _ in shortfalls))

    # -- score ----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, pod_score_requests(pod, self.resources, non_zero=True))
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            pod_request = state.read(PRE_SCORE_KEY)
        except StateNotFound:
            pod_request = pod_score_requests(pod, self.resources, non_zero=True)
        node_score = weight_sum = 0
        for (name, weight), request in zip(self.resources, pod_request, strict=True):
            capacity, requested = allocatable_and_requested(node_info, name, request, False)
            if capacity == 0:
                continue
            if self.strategy == LEAST_ALLOCATED:
                score = least_requested_score(requested, capacity)
            elif self.strategy == MOST_ALLOCATED:
                score = most_requested_score(requested, capacity)
            else:
                assert self.shape is not None
                if requested > capacity:
                    score = self.shape(MAX_UTILIZATION)
                else:
                    score = self.shape(requested * MAX_UTILIZATION // capacity)
                if score <= 0:
                    continue  # RequestedToCapacityRatio counts only positive scores
            node_score += score * weight
            weight_sum += weight
        if weight_sum == 0:
            return 0, None
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return int(math.floor(node_score / weight_sum + 0.5)), None
        return node_score // weight_sum, None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
        ]


def fits(pod: dict | PodInfo, node_info: NodeInfo) -> bool:
    """Whether the pod's requests fit on the node (for callers outside a cycle)."""
    request = pod.requests if isinstance(pod, PodInfo) else pod_requests(pod)
    return not NodeResourcesFit({}, None).insufficient_resources(request, node_info)
