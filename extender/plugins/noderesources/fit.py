"""NodeResourcesFit (PreFilter, Filter, PreScore, Score): the pod's requests must fit (upstream
``pkg/scheduler/framework/plugins/noderesources/fit.go``).

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

Score: the configured strategy (:mod:`.least_allocated`, :mod:`.most_allocated`,
:mod:`.requested_to_capacity_ratio`) over the configured resources, on ``node requests + the
pod's request`` where CPU and memory use the non-zero variant (a container that mentions neither
counts 100m / 200Mi); :mod:`.resource_allocation` builds the vectors. Args: :mod:`.validation`.

Batch forms (:mod:`extender.framework.columns`): ``filter_batch`` and ``score_batch`` answer for
every row of the node table what ``filter`` / ``score`` answer per node, declining (``None``)
when an amount is not int64-safe.

Reads NodeInfo aggregates; writes only its cycle-state keys; mutates nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from extender.framework.columns import SAFE_AMOUNT, NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import DEVICE_CLASSES, Handle
from extender.framework.handle import PODS as POD_OBJECTS
from extender.framework.node_info import NodeInfo
from extender.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    first_request_beyond_int64,
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_requests,
)
from extender.framework.resources import Resource as Amounts
from extender.framework.results import PreFilterResult
from extender.framework.status import Code, Status

from ..dynamicresources.extended import (
    DEVICE_CLASS_PREFIX,
    class_resolver,
    is_dra_extended_resource_name,
)
from .least_allocated import least_resource_batch_scorer, least_resource_scorer
from .most_allocated import most_resource_batch_scorer, most_resource_scorer
from .requested_to_capacity_ratio import (
    requested_to_capacity_ratio_batch_scorer,
    requested_to_capacity_ratio_scorer,
)
from .resource_allocation import (
    BatchScorer,
    PodRequestsState,
    pod_request_list,
    resource_columns,
    resource_vectors,
)
from .validation import LEAST_ALLOCATED, MOST_ALLOCATED, validate_fit_args

NAME = "NodeResourcesFit"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

ERR_REASON_TOO_MANY_PODS = "Too many pods"
# A request beyond int64 in the compared unit: Go's Value() overflows there and a saturated
# value would "fit" a node whose allocatable saturates too, whatever the real amounts. Refused
# once in PreFilter, unresolvable (no node and no eviction makes such an amount comparable).
ERR_REASON_BEYOND_INT64 = (
    "pod requests {resource} {quantity}, beyond the largest quantity a scheduler can compare "
    "(int64)"
)
# The resources Filter checks before the scalar ones, in upstream order.
NATIVE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)


def insufficient_reason(resource_name: str) -> str:
    return f"Insufficient {resource_name}"


def beyond_int64_reason(resource_name: str, quantity: str) -> str:
    return ERR_REASON_BEYOND_INT64.format(resource=resource_name, quantity=quantity)


# -- pod requests -------------------------------------------------------------------------------


def compute_pod_resource_request(pod: dict) -> Amounts:
    """The pod's effective requests (upstream ``computePodResourceRequest``), keeping only the
    resources the scheduler tracks."""
    request = pod_requests(pod)
    request.scalar = {k: v for k, v in request.scalar.items() if is_scalar_resource_name(k)}
    return request


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
    delegated: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """Every shortfall of ``node_info`` for ``pod_request``, in upstream order (empty: it fits).

    ``delegated``: extended resources a DeviceClass provides (DRAExtendedResource); on a node
    without allocatable of one, DynamicResources allocates it (``shouldDelegateResourceToDRA``)."""
    out: list[InsufficientResource] = []
    allocatable, used = node_info.allocatable, node_info.requested

    pods = len(node_info.pods)
    if pods + 1 > allocatable.allowed_pod_number:
        out.append(
            InsufficientResource(
                PODS, ERR_REASON_TOO_MANY_PODS, 1, pods, allocatable.allowed_pod_number
            )
        )

    if pod_request.is_zero():
        return out

    # (name, request, allocatable, requested on the node): natives first, then scalars.
    checks = [
        (name, pod_request.get(name), allocatable.get(name), used.get(name))
        for name in NATIVE_RESOURCES
        if pod_request.get(name) > 0
    ]
    for name, want in checked_scalars(pod_request, ignored_resources, ignored_resource_groups):
        if name in delegated and allocatable.scalar.get(name, 0) <= 0:
            continue
        checks.append((name, want, allocatable.scalar.get(name, 0), used.scalar.get(name, 0)))
    for name, want, have, taken in checks:
        if want > have - taken:
            out.append(
                InsufficientResource(
                    name, insufficient_reason(name), want, taken, have, unresolvable=want > have
                )
            )
    return out


def checked_scalars(
    pod_request: Amounts, ignored_resources: Iterable[str], ignored_resource_groups: Iterable[str]
) -> list[tuple[str, int]]:
    """The scalar requests Filter checks: positive, and not an extended resource named in
    ``ignoredResources`` or whose prefix (before ``/``) is in ``ignoredResourceGroups``."""
    ignored = frozenset(ignored_resources)
    groups = frozenset(ignored_resource_groups)
    return [
        (name, want)
        for name, want in pod_request.scalar.items()
        if want != 0 and not is_ignored(name, ignored, groups)
    ]


def is_ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    """An extended resource named in ``ignoredResources`` or whose prefix (before ``/``) is in
    ``ignoredResourceGroups``: Filter does not check it."""
    return is_extended_resource_name(name) and (
        name in ignored or bool(groups and name.split("/", 1)[0] in groups)
    )


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
    """The pod's requests and the extended resources among them that DRA may provide; never
    mutated after PreFilter, so clones share it."""

    __slots__ = ("request", "delegated")

    def __init__(self, request: Amounts, delegated: frozenset[str] = frozenset()) -> None:
        self.request = request
        self.delegated = delegated

    def clone(self) -> _PreFilterState:
        return self


# -- plugin -------------------------------------------------------------------------------------


class NodeResourcesFit:
    name = NAME
    reads = (POD_OBJECTS, DEVICE_CLASSES)
    # Answers depend only on the pod's spec and the NodeInfo: the runtime may memoize them.
    memo_points = ("filter", "score")

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateNodeResourcesFitArgs``: ``ValueError`` naming each bad field."""
        validate_fit_args(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        parsed = validate_fit_args(args)
        self.ignored_resources = parsed.ignored_resources
        self.ignored_resource_groups = parsed.ignored_resource_groups
        self.strategy = parsed.strategy
        self.resources = parsed.resources
        self.weights = parsed.weights
        self.batch_scorer: BatchScorer
        if self.strategy == LEAST_ALLOCATED:
            self.scorer = least_resource_scorer(self.weights)
            self.batch_scorer = least_resource_batch_scorer(self.weights)
        elif self.strategy == MOST_ALLOCATED:
            self.scorer = most_resource_scorer(self.weights)
            self.batch_scorer = most_resource_batch_scorer(self.weights)
        else:
            self.scorer = requested_to_capacity_ratio_scorer(self.weights, parsed.shape)
            self.batch_scorer = requested_to_capacity_ratio_batch_scorer(self.weights, parsed.shape)

    # -- PreFilter / Filter ---------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        request = compute_pod_resource_request(pod)
        beyond = first_request_beyond_int64(pod, self._compared, total=request)
        if beyond is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, beyond_int64_reason(*beyond))
        state.write(PRE_FILTER_KEY, _PreFilterState(request, self._delegated(request)))
        return None, None

    def _compared(self, name: str) -> bool:
        """Whether Filter compares a request of ``name`` against the node's allocatable."""
        if name in NATIVE_RESOURCES:
            return True
        return is_scalar_resource_name(name) and not is_ignored(
            name, self.ignored_resources, self.ignored_resource_groups
        )

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        """The node hint with the DeviceClasses' view of the pod's extended resources."""
        if first_request_beyond_int64(pod, self._compared) is not None:
            return QueueingHint.QUEUE_SKIP  # refused in PreFilter whatever the nodes hold
        delegated = self._delegated(compute_pod_resource_request(pod))
        return is_schedulable_after_node_change(pod, old, new, delegated)

    def _delegated(self, request: Amounts) -> frozenset[str]:
        """The requested extended resources a DeviceClass provides (DRAExtendedResource, on
        in v1.36): NodeResourcesFit leaves them to DynamicResources on nodes without them."""
        names = [n for n, v in request.scalar.items() if v and is_dra_extended_resource_name(n)]
        if not names:
            return frozenset()
        resolver = class_resolver(self.handle.lister(DEVICE_CLASSES).list())
        return frozenset(n for n in names if n in resolver)

    def pre_filter_extensions(self) -> None:
        # The requests do not depend on other pods: nothing to update on add/remove.
        return None

    def insufficient_resources(
        self, pod_request: Amounts, node_info: NodeInfo, delegated: frozenset[str] = frozenset()
    ) -> list[InsufficientResource]:
        """Shortfalls with this plugin's ignored resources/groups applied."""
        return insufficient_resources(
            pod_request,
            node_info,
            self.ignored_resources,
            self.ignored_resource_groups,
            delegated,
        )

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            pre: _PreFilterState = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycleState', plugin=NAME)
        return status_for(self.insufficient_resources(pre.request, node_info, pre.delegated))

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray | None:
        """:meth:`filter` for every row: the same comparisons on the table's columns."""
        pre = state.get(PRE_FILTER_KEY)
        if pre is None or not table.exact:
            return None
        request: Amounts = pre.request
        ok = table.pod_count + 1 <= table.alloc_pods
        if request.is_zero():
            return ok
        for want, alloc, used in (
            (request.milli_cpu, table.alloc_milli_cpu, table.req_milli_cpu),
            (request.memory, table.alloc_memory, table.req_memory),
            (request.ephemeral_storage, table.alloc_ephemeral, table.req_ephemeral),
        ):
            if want > 0:
                if not -SAFE_AMOUNT < want < SAFE_AMOUNT:
                    return None
                ok &= want <= alloc - used
        delegated: frozenset[str] = pre.delegated
        for name, want in checked_scalars(
            request, self.ignored_resources, self.ignored_resource_groups
        ):
            columns = table.scalar(name)
            if columns is None and name in delegated:
                continue  # no node has it: DynamicResources allocates it everywhere
            if columns is None or not -SAFE_AMOUNT < want < SAFE_AMOUNT:
                return None
            fits = want <= columns[0] - columns[1]
            ok &= (fits | (columns[0] <= 0)) if name in delegated else fits
        return ok

    # -- PreScore / Score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, PodRequestsState(self._pod_requests(pod)))
        return None

    def _pod_requests(self, pod: dict) -> list[int]:
        # Upstream v1.36's scoring strategies (fit.go getScorer) build their
        # resourceAllocationScorer without the PodLevelResources gate, so the score reads the
        # containers' requests even when the pod sets pod-level ones (BalancedAllocation and
        # the Filter do read them).
        return pod_request_list(pod, self.resources, use_requested=False, pod_level=False)

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            requests = state.read(PRE_SCORE_KEY).pod_requests
        except StateNotFound:
            requests = self._pod_requests(pod)
        requested, allocatable = resource_vectors(node_info, self.resources, requests, False)
        return self.scorer(requested, allocatable), None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for the table's ``rows``: the same vectors (non-zero CPU/memory requests,
        scalar resources only when the pod requests them) as int64 columns, the strategy's
        integer arithmetic elementwise. ``None`` when an amount or a product is not int64-safe."""
        pre = state.get(PRE_SCORE_KEY)
        requests = pre.pod_requests if pre is not None else self._pod_requests(pod)
        columns = resource_columns(table, rows, self.resources, requests, False)
        if columns is None:
            return None
        return self.batch_scorer(*columns)

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
                self.is_schedulable_after_node_change,
            ),
            # DRAExtendedResource: a class may now provide an extended resource the pod asks.
            ClusterEventWithHint(
                ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_device_class_event,
            ),
        ]


def _spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def is_schedulable_after_device_class_event(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    """``isSchedulableAfterDeviceClassEvent``: a new class named like a requested resource, or
    a class whose ``extendedResourceName`` changed to one the pod requests."""
    if new is None:
        return QueueingHint.QUEUE
    name = _spec(new).get("extendedResourceName")
    requests = pod_requests(pod).scalar
    if old is not None:
        if (_spec(old).get("extendedResourceName") or "") == (name or ""):
            return QueueingHint.QUEUE_SKIP
    elif DEVICE_CLASS_PREFIX + ((new.get("metadata") or {}).get("name") or "") in requests:
        return QueueingHint.QUEUE
    if name and name in requests:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


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
    if any(wanted.get(n) and before.get(n) > after.get(n) for n in NATIVE_RESOURCES):
        return True
    for name, amount in wanted.scalar.items():
        if (
            amount
            and is_scalar_resource_name(name)
            and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        ):
            return True
    return False


def is_schedulable_after_node_change(
    pod: dict, old: dict | None, new: dict | None, delegated: frozenset[str] = frozenset()
) -> QueueingHint:
    """Queue when the new/updated node could host the pod and (if updated) grew where it counts.
    ``delegated``: the pod's extended resources a DeviceClass provides (DRAExtendedResource)."""
    if new is None:
        return QueueingHint.QUEUE_SKIP
    request = compute_pod_resource_request(pod)
    if insufficient_resources(request, NodeInfo(new), delegated=delegated):
        return QueueingHint.QUEUE_SKIP  # it would not fit even on the empty node
    if old is None:
        return QueueingHint.QUEUE
    if not have_any_requested_resources_increased(pod, old, new, delegated):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def have_any_requested_resources_increased(
    pod: dict, old: dict, new: dict, delegated: frozenset[str] = frozenset()
) -> bool:
    """More pods allowed, or more allocatable of a resource the pod requests, or a requested
    resource DRA now provides on the node."""
    request = compute_pod_resource_request(pod)
    before, after = NodeInfo(old).allocatable, NodeInfo(new).allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.is_zero():
        return False
    if any(request.get(n) > 0 and after.get(n) > before.get(n) for n in NATIVE_RESOURCES):
        return True
    return any(
        amount
        and (
            after.scalar.get(name, 0) > before.scalar.get(name, 0)
            or (name in delegated and after.scalar.get(name, 0) <= 0)
        )
        for name, amount in request.scalar.items()
    )
