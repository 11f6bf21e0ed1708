"""NodeResourcesFit (PreFilter, Filter, PreScore, Score): the pod's requests must fit (spec §7.6).

Filter, on the pod's *actual* requests (computed once in PreFilter):

* pods: ``len(node.pods) + 1 > allocatable pods`` -> ``Too many pods``;
* a pod requesting nothing stops there;
* CPU, memory, ephemeral storage, then each scalar resource (extended, hugepages, ...) with a
  positive request: ``request > allocatable - requested`` -> ``Insufficient <name>``. Extended
  resources named in ``ignoredResources`` or whose prefix (before ``/``) is in
  ``ignoredResourceGroups`` are not checked (something else, e.g. an extender, manages them).

Every shortfall is reported, in that order. The code is Unschedulable (evicting pods may make
room), or UnschedulableAndUnresolvable when some request exceeds the node's whole allocatable
(no preemption can help; ``Too many pods`` never counts as unresolvable).

Score: the configured strategy (LeastAllocated, MostAllocated, RequestedToCapacityRatio) over
the configured resources, on ``node requests + the pod's request`` where CPU and memory use the
non-zero variant (a container that mentions neither counts 100m / 200Mi). A resource the node
does not offer (allocatable 0), or a scalar resource the pod does not request, is left out.
Integer arithmetic as upstream.

Reads NodeInfo aggregates; writes only its cycle-state keys; mutates nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import PODS as POD_OBJECTS
from extender.framework.handle import Handle
from extender.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_extended_resource_name,
    is_qualified_name,
    is_scalar_resource_name,
    pod_requests,
)
from extender.framework.resources import Resource as Amounts
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import Code, Status
from extender.framework.types import NodeInfo, PreFilterResult

NAME = "NodeResourcesFit"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

ERR_REASON_TOO_MANY_PODS = "Too many pods"

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# RequestedToCapacityRatio shape points: utilization 0..100, score 0..10 (scaled x10 to 0..100).
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_RESOURCE_WEIGHT = 100

DEFAULT_RESOURCES: tuple[dict[str, Any], ...] = (
    {"name": CPU, "weight": 1},
    {"name": MEMORY, "weight": 1},
)


def insufficient_reason(resource_name: str) -> str:
    return f"Insufficient {resource_name}"


# -- pod requests -------------------------------------------------------------------------------


def compute_pod_resource_request(pod: dict) -> Amounts:
    """The pod's effective requests (spec §7.1), keeping only resources the scheduler tracks."""
    request = pod_requests(pod)
    request.scalar = {k: v for k, v in request.scalar.items() if is_scalar_resource_name(k)}
    return request


def pod_request_list(pod: dict, resources: Iterable[str], use_requested: bool) -> list[int]:
    """The pod's request of each resource, in order (non-zero CPU/memory unless use_requested)."""
    requests = pod_requests(pod, non_zero=not use_requested)
    return [requests.get(name) for name in resources]


# -- filter -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One resource that keeps the pod off the node (upstream ``InsufficientResource``)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # The request exceeds the node's whole allocatable: preemption cannot help.
    unresolvable: bool = False


def insufficient_resources(
    pod_request: Amounts,
    node_info: NodeInfo,
    ignored_resources: Iterable[str] = (),
    ignored_resource_groups: Iterable[str] = (),
) -> list[InsufficientResource]:
    """Every shortfall of ``node_info`` for ``pod_request``, in upstream order (empty: it fits)."""
    out: list[InsufficientResource] = []
    allocatable, used = node_info.allocatable, node_info.requested

    pods = len(node_info.pods)
    if pods + 1 > allocatable.allowed_pod_number:
        out.append(
            InsufficientResource(
                PODS, ERR_REASON_TOO_MANY_PODS, 1, pods, allocatable.allowed_pod_number
            )
        )

    if (
        pod_request.milli_cpu == 0
        and pod_request.memory == 0
        and pod_request.ephemeral_storage == 0
        and not pod_request.scalar
    ):
        return out

    for name, want, have, taken in (
        (CPU, pod_request.milli_cpu, allocatable.milli_cpu, used.milli_cpu),
        (MEMORY, pod_request.memory, allocatable.memory, used.memory),
        (
            EPHEMERAL_STORAGE,
            pod_request.ephemeral_storage,
            allocatable.ephemeral_storage,
            used.ephemeral_storage,
        ),
    ):
        if want > 0 and want > have - taken:
            out.append(
                InsufficientResource(
                    name, insufficient_reason(name), want, taken, have, unresolvable=want > have
                )
            )

    ignored = frozenset(ignored_resources)
    groups = frozenset(ignored_resource_groups)
    for name, want in pod_request.scalar.items():
        if want == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored or (groups and name.split("/", 1)[0] in groups)
        ):
            continue
        have = allocatable.scalar.get(name, 0)
        taken = used.scalar.get(name, 0)
        if want > have - taken:
            out.append(
                InsufficientResource(
                    name, insufficient_reason(name), want, taken, have, unresolvable=want > have
                )
            )
    return out


def fits(pod: dict, node_info: NodeInfo) -> list[InsufficientResource]:
    """Upstream ``Fits``: the shortfalls of ``node_info`` for ``pod``, ignoring nothing."""
    return insufficient_resources(compute_pod_resource_request(pod), node_info)


def status_for(shortfalls: list[InsufficientResource]) -> Status | None:
    """The Filter status for a list of shortfalls (``None`` when there is none)."""
    if not shortfalls:
        return None
    code = (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if any(s.unresolvable for s in shortfalls)
        else Code.UNSCHEDULABLE
    )
    return Status(code, *(s.reason for s in shortfalls))


class _PreFilterState:
    """The pod's requests; never mutated after PreFilter, so clones share it."""

    __slots__ = ("request",)

    def __init__(self, request: Amounts) -> None:
        self.request = request

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    """The pod's request of each scoring resource, in the configured order."""

    __slots__ = ("pod_requests",)

    def __init__(self, requests: list[int]) -> None:
        self.pod_requests = requests

    def clone(self) -> _PreScoreState:
        return self


# -- scoring ------------------------------------------------------------------------------------


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round_ratio(numerator: int, denominator: int) -> int:
    """``math.Round(numerator / denominator)`` for non-negative integers (half away from zero)."""
    q, r = divmod(numerator, denominator)
    return q + 1 if 2 * r >= denominator else q


def allocatable_and_requested(
    node_info: NodeInfo, resource: str, pod_request: int, use_requested: bool
) -> tuple[int, int]:
    """(allocatable, node requests + the pod's) of ``resource``; (0, 0) leaves it out.

    CPU/memory use the node's non-zero requests unless ``use_requested``; ephemeral storage and
    scalar resources always use the actual ones. A scalar resource the pod does not request is
    left out, so that nodes offering it are not favoured or penalised for it.
    """
    if pod_request == 0 and is_scalar_resource_name(resource):
        return 0, 0
    requested = node_info.requested if use_requested else node_info.non_zero_requested
    allocatable = node_info.allocatable
    if resource == CPU:
        return allocatable.milli_cpu, requested.milli_cpu + pod_request
    if resource == MEMORY:
        return allocatable.memory, requested.memory + pod_request
    if resource == EPHEMERAL_STORAGE:
        return (
            allocatable.ephemeral_storage,
            node_info.requested.ephemeral_storage + pod_request,
        )
    if resource in allocatable.scalar:
        return (
            allocatable.scalar[resource],
            node_info.requested.scalar.get(resource, 0) + pod_request,
        )
    return 0, 0


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # requested may exceed capacity because of the non-zero defaults: cap it.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def broken_linear_function(shape: list[tuple[int, int]]) -> Callable[[int], int]:
    """Piecewise-linear ``utilization -> score`` through ``shape`` (sorted by utilization).

    Below the first point: its score; above the last: its score; between two points: integer
    interpolation truncated as Go does.
    """

    def function(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return score
                u0, s0 = shape[i - 1]
                return s0 + go_div((score - s0) * (p - u0), utilization - u0)
        return shape[-1][1]

    return function


Scorer = Callable[[list[int], list[int]], int]


def weighted_resource_scorer(
    weights: list[int], resource_score: Callable[[int, int], int]
) -> Scorer:
    """Weighted mean of ``resource_score(requested, allocatable)`` over resources a node has."""

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += resource_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return scorer


def least_resource_scorer(weights: list[int]) -> Scorer:
    return weighted_resource_scorer(weights, least_requested_score)


def most_resource_scorer(weights: list[int]) -> Scorer:
    return weighted_resource_scorer(weights, most_requested_score)


def requested_to_capacity_ratio_scorer(weights: list[int], shape: list[tuple[int, int]]) -> Scorer:
    """``shape`` holds (utilization, score 0..10) points; scores are scaled to 0..100."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(u, s * scale) for u, s in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            score = resource_score(req, alloc)
            # Only resources with a positive score take part in the average.
            if score > 0:
                node_score += score * weight
                weight_sum += weight
        return go_round_ratio(node_score, weight_sum) if weight_sum else 0

    return scorer


def resource_vectors(
    node_info: NodeInfo, resources: list[str], pod_request: list[int], use_requested: bool
) -> tuple[list[int], list[int]]:
    """(requested incl. the pod, allocatable) per resource; zeros where a resource is left out."""
    requested = [0] * len(resources)
    allocatable = [0] * len(resources)
    for i, name in enumerate(resources):
        alloc, req = allocatable_and_requested(node_info, name, pod_request[i], use_requested)
        if alloc == 0:
            continue
        allocatable[i] = alloc
        requested[i] = req
    return requested, allocatable


# -- args ---------------------------------------------------------------------------------------


def _go_value(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_go_value(value)}: {detail}"


def raise_errors(errors: list[str]) -> None:
    """Raise one ValueError carrying every field error, formatted as upstream's aggregate."""
    if len(errors) == 1:
        raise ValueError(errors[0])
    if errors:
        raise ValueError("[" + ", ".join(errors) + "]")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
            errors.append(f"{where}.name: Required value: a resource name is required")
            continue
        weight = item.get("weight") or 0
        if not _is_int(weight):
            errors.append(invalid(f"{where}.weight", weight, "must be an integer"))
            continue
        specs.append((name, weight or 1))
    return specs


def _string_list(value: Any, path: str, errors: list[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(invalid(path, str(value), "must be a list of strings"))
        return []
    return value


def _parse_shape(value: Any, path: str, errors: list[str]) -> list[tuple[int, int]]:
    """Validate RequestedToCapacityRatio shape points as upstream ``validateFunctionShape``."""
    if not value:
        errors.append(f"{path}: Required value: at least one point must be specified")
        return []
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        errors.append(invalid(path, str(value), "must be a list of {utilization, score}"))
        return []
    points: list[tuple[int, int]] = []
    for i, point in enumerate(value):
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        if not _is_int(utilization) or not _is_int(score):
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


# -- plugin -------------------------------------------------------------------------------------


class NodeResourcesFit:
    name = NAME
    reads = (POD_OBJECTS,)
    # Answers depend only on the pod's spec and the NodeInfo: the runtime may memoize them.
    memo_points = ("filter", "score")

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        args = args or {}
        errors: list[str] = []

        ignored = _string_list(args.get("ignoredResources"), "ignoredResources", errors)
        for i, name in enumerate(ignored):
            if not is_qualified_name(name):
                errors.append(invalid(f"ignoredResources[{i}]", name, "must be a qualified name"))
        groups = _string_list(args.get("ignoredResourceGroups"), "ignoredResourceGroups", errors)
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
                errors.append(
                    invalid(f"ignoredResourceGroups[{i}]", group, "must be a qualified name")
                )
        self.ignored_resources = frozenset(ignored)
        self.ignored_resource_groups = frozenset(groups)

        strategy = args.get("scoringStrategy")
        if strategy is None:
            # Upstream defaults the whole strategy only when it is absent.
            strategy = {"type": LEAST_ALLOCATED}
        if not isinstance(strategy, dict):
            raise ValueError(invalid("scoringStrategy", str(strategy), "must be an object"))
        self.strategy: str = strategy.get("type") or ""
        if self.strategy not in SUPPORTED_STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in SUPPORTED_STRATEGIES)
            errors.append(
                f'scoringStrategy.type: Unsupported value: "{self.strategy}": '
                f"supported values: {supported}"
            )
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
        if rtcr is not None or self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream validates a given shape whatever the type (its error path is
            # scoringStrategy.shape); the type needs one.
            shape_value = rtcr.get("shape") if isinstance(rtcr, dict) else rtcr
            shape = _parse_shape(shape_value, "scoringStrategy.shape", errors)
        raise_errors(errors)

        self.resources = [name for name, _ in specs]
        self.weights = [weight for _, weight in specs]
        if self.strategy == LEAST_ALLOCATED:
            self.scorer = least_resource_scorer(self.weights)
        elif self.strategy == MOST_ALLOCATED:
            self.scorer = most_resource_scorer(self.weights)
        else:
            self.scorer = requested_to_capacity_ratio_scorer(self.weights, shape)

    # -- PreFilter / Filter ---------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_KEY, _PreFilterState(compute_pod_resource_request(pod)))
        return None, None

    def pre_filter_extensions(self) -> None:
        # The requests do not depend on other pods: nothing to update on add/remove.
        return None

    def insufficient_resources(
        self, pod_request: Amounts, node_info: NodeInfo
    ) -> list[InsufficientResource]:
        """Shortfalls with this plugin's ignored resources/groups applied."""
        return insufficient_resources(
            pod_request, node_info, self.ignored_resources, self.ignored_resource_groups
        )

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            pre: _PreFilterState = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycleState', plugin=NAME)
        return status_for(self.insufficient_resources(pre.request, node_info))

    # -- PreScore / Score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, _PreScoreState(self._pod_requests(pod)))
        return None

    def _pod_requests(self, pod: dict) -> list[int]:
        return pod_request_list(pod, self.resources, use_requested=False)

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            requests = state.read(PRE_SCORE_KEY).pod_requests
        except StateNotFound:
            requests = self._pod_requests(pod)
        requested, allocatable = resource_vectors(node_info, self.resources, requests, False)
        return self.scorer(requested, allocatable), None

    def score_extensions(self) -> None:
        return None

    # -- queueing hints -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A deleted pod, or one whose requests shrank (in-place resize, GA in 1.35), frees
            # room; the target pod shrinking itself also helps.
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                is_schedulable_after_pod_event,
            ),
            # A new node, or more allocatable on one.
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                is_schedulable_after_node_change,
            ),
        ]


def _spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def _uid(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("uid", "")


def is_schedulable_after_pod_event(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    """Queue for a deleted pod that held (or was nominated for) room, or a relevant scale-down."""
    if new is None:
        if old is None:
            return QueueingHint.QUEUE
        nominated = (old.get("status") or {}).get("nominatedNodeName") or ""
        if not _spec(old).get("nodeName") and not nominated:
            return QueueingHint.QUEUE_SKIP  # it never took room on a node
        return QueueingHint.QUEUE
    if old is None:
        return QueueingHint.QUEUE
    return (
        QueueingHint.QUEUE
        if is_schedulable_after_pod_scale_down(pod, old, new)
        else QueueingHint.QUEUE_SKIP
    )


def is_schedulable_after_pod_scale_down(target: dict, old: dict, new: dict) -> bool:
    """The target itself shrank, or a scheduled pod shrank a resource the target requests."""
    if _uid(new) == _uid(target):
        return True
    if not _spec(new).get("nodeName"):
        return False
    before, after = pod_requests(old), pod_requests(new)
    wanted = pod_requests(target)
    if wanted.milli_cpu and before.milli_cpu > after.milli_cpu:
        return True
    if wanted.memory and before.memory > after.memory:
        return True
    if wanted.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
        return True
    for name, amount in wanted.scalar.items():
        if (
            amount
            and is_scalar_resource_name(name)
            and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        ):
            return True
    return False


def is_schedulable_after_node_change(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    """Queue when the new/updated node could host the pod and (if updated) grew where it counts."""
    if new is None or fits(pod, NodeInfo(new)):
        return QueueingHint.QUEUE_SKIP  # it would not fit even on the empty node
    if old is None:
        return QueueingHint.QUEUE
    if not have_any_requested_resources_increased(pod, old, new):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def have_any_requested_resources_increased(pod: dict, old: dict, new: dict) -> bool:
    """More pods allowed, or more allocatable of a resource the pod requests."""
    request = compute_pod_resource_request(pod)
    before, after = NodeInfo(old).allocatable, NodeInfo(new).allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if (
        request.milli_cpu == 0
        and request.memory == 0
        and request.ephemeral_storage == 0
        and not request.scalar
    ):
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        amount and after.scalar.get(name, 0) > before.scalar.get(name, 0)
        for name, amount in request.scalar.items()
    )
