"""DynamicResources (PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve/Unreserve,
PreBind): a pod's ResourceClaims (resource.k8s.io/v1) get devices as part of scheduling
(upstream ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``, v1.36.3,
with the feature gates v1.36 turns on by default).

Reads DeviceClasses, ResourceSlices and ResourceClaims (informers' dicts, never mutated: a
claim is copied before the plugin changes it).

* PreEnqueue: every claim of the pod exists (a claim from a template is named in
  ``pod.status.resourceClaimStatuses`` first), is not being deleted and, when generated, is
  owned by the pod; otherwise the pod stays out of the active queue with upstream's reason.
* PreFilter: the same checks (UnschedulableAndUnresolvable); a pod with no claim: Skip. An
  allocated claim restricts nodes to its allocation's node selector; an unallocated one must not
  be in flight for another pod and its requests' DeviceClasses must exist. The structured
  allocator is set up once for the cycle over the slices and the devices already taken.
* Filter: allocated claims must be available on the node (node selector, binding conditions
  not failed or timed out); the unallocated ones must all get devices there (``cannot allocate
  all claims``), within ``filterTimeout`` (10 s; an Error on timeout, as upstream).
* PostFilter: a claim that is unavailable everywhere and reserved for nobody but this pod is
  deallocated (``deallocation of ResourceClaim completed``) so that another try may find other
  devices.
* Score: with first-available requests, nodes where earlier subrequests were chosen score higher.
* Reserve: the node's allocations become in-flight allocations shared by cycles (the next pod
  does not get the same devices); Unreserve drops them and removes the pod from ``reservedFor``.
* PreBind (standalone scheduler only; the extender never reserves or binds): writes
  ``status.allocation`` (after the finalizer) and adds the pod to ``status.reservedFor``,
  retrying on conflicts with a fresh claim; then waits, polling every 5 s up to
  ``bindingTimeout`` (600 s), for devices with binding conditions.

An empty answer from a lister means the kind is not watched (offline): a pod with claims then
gets ``could not find ResourceClaim``, never a node without its devices.

One concept, the plugin's extension points over one claim state, kept in one module as
upstream keeps ``dynamicresources.go``; the allocator, the claim tracker and the diagnosis live
beside it.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import (
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Handle,
    SharedKey,
)
from extender.framework.labels import NodeSelector
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import (
    DefaultNormalize,
)
from extender.framework.resources import pod_requests
from extender.framework.results import PostFilterResult, PreFilterResult
from extender.framework.status import SKIP, Code, Status, unresolvable
from extender.kube.duration import parse_duration
from extender.kube.errors import Conflict

from ..args import invalid, raise_errors
from . import allocation as alloc_bridge
from .claims import (
    FINALIZER,
    FIRST_AVAILABLE_MAX_SIZE,
    ClaimError,
    ClaimStore,
    allocation,
    claim_name,
    is_for_pod,
    is_reserved_for_pod,
    is_sub_request_ref,
    kobj,
    meta,
    pod_reference,
    status,
)
from .extended import (
    ERR_CANNOT_FIT,
    ERR_CANNOT_SCHEDULE_CLAIM,
    class_resolver,
    find_extended_resource_claim,
    is_dra_extended_resource_name,
    is_special_claim_name,
    node_claim,
    placeholder_claim,
    requests_and_mappings,
)
from .manager import ClaimTracker

log = logging.getLogger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME

DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0
# PreBind polls the claims for binding conditions this often (upstream: 5 s).
BINDING_POLL_INTERVAL = 5.0
# ``retry.DefaultRetry``: 5 attempts, 10 ms apart.
CONFLICT_RETRIES = 5
CONFLICT_BACKOFF = 0.01

ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_DEVICE_BINDING_TIMEOUT = "device binding timeout"
ERR_DEVICE_BINDING_FAILED = "device binding failed"
MSG_DEALLOCATED = "deallocation of ResourceClaim completed"
MSG_NO_CLAIMS = "no new claims to deallocate"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
MSG_NOT_FOUND = "not found"  # fwk.ErrNotFound
MSG_DELETED = "deletion of ResourceClaim completed"
# PreBind waits this long for the informer to see the extended-resource claim it created.
ASSUME_EXTENDED_CLAIM_TIMEOUT = 120.0


def _timeout_arg(args: dict, key: str, default: str, errors: list[str]) -> float:
    """A Go duration of ``DynamicResourcesArgs`` (``metav1.Duration``), in seconds."""
    value = args.get(key, default)
    if not isinstance(value, str):
        errors.append(invalid(key, str(value), "must be a duration string like 10s"))
        return parse_duration(default)
    try:
        return parse_duration(value)
    except ValueError as exc:
        errors.append(invalid(key, value, str(exc)))
        return parse_duration(default)


def _timeouts(args: dict) -> tuple[float, float]:
    """(filterTimeout, bindingTimeout) in seconds: ``ValidateDynamicResourcesArgs`` with both
    timeouts' feature gates on."""
    args = args or {}
    errors: list[str] = []
    filter_timeout = _timeout_arg(args, "filterTimeout", "10s", errors)
    binding_timeout = _timeout_arg(args, "bindingTimeout", "600s", errors)
    if filter_timeout < 0:
        errors.append(invalid("filterTimeout", args["filterTimeout"], "must be zero or positive"))
    if binding_timeout < 1:
        errors.append(
            invalid("bindingTimeout", args["bindingTimeout"], "must be at least 1 second")
        )
    raise_errors(errors)
    return filter_timeout, binding_timeout


@dataclass
class ClaimInfo:
    """``informationForClaim``."""

    available_on_nodes: NodeSelector | None = None
    # Set by Reserve (the allocation PreBind writes).
    allocation: dict | None = None


@dataclass
class NodeAllocation:
    """``nodeAllocation``: what Filter found for one node."""

    # One AllocationResult per claim to allocate, in store order.
    results: list[dict]
    # The node's extended-resource claim (DRAExtendedResource) and the pod's container
    # request mappings for it.
    extended_claim: dict | None = None
    mappings: list[dict] = field(default_factory=list)


@dataclass
class _State:
    claims: ClaimStore = field(default_factory=ClaimStore)
    allocator: Any = None
    informations: list[ClaimInfo] = field(default_factory=list)
    unavailable_claims: set[int] = field(default_factory=set)
    node_allocations: dict[str, NodeAllocation] = field(default_factory=dict)
    # Extended resources backed by DRA: the pod's scalar requests, the class of each
    # extended resource name, and the UID of the extended-resource claim at PreFilter.
    pod_scalar_resources: dict[str, int] = field(default_factory=dict)
    resolver: dict[str, dict] = field(default_factory=dict)
    initial_extended_uid: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clone(self) -> _State:
        return self  # shared across clones, as upstream


def _now() -> datetime:
    return datetime.now(UTC)


def _parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# The claim tracker, one per process like upstream's DRA manager (``NewDRAManager`` in
# pkg/scheduler/scheduler.go): the profiles of one scheduler share it, so two profiles never
# hand out the same in-flight device.
CLAIM_TRACKER: SharedKey[ClaimTracker] = SharedKey(
    "DynamicResources/claimTracker", lambda handle: ClaimTracker(handle.lister(RESOURCE_CLAIMS))
)


class DynamicResources(DefaultNormalize):
    name = NAME
    reads = (DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS)

    features = alloc_bridge.DEFAULT_FEATURES
    binding_poll_interval = BINDING_POLL_INTERVAL

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateDynamicResourcesArgs``: ``ValueError`` naming each bad field."""
        _timeouts(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.filter_timeout, self.binding_timeout = _timeouts(args)
        self._tracker: ClaimTracker | None = None
        self._cel_cache: Any = None
        # How the cycle's allocator is built (``structured.NewAllocator``).
        self.new_allocator: Callable[..., Any] = alloc_bridge.new_allocator
        self.clock: Callable[[], datetime] = _now

    # -- shared state ------------------------------------------------------------------------

    @property
    def tracker(self) -> ClaimTracker:
        """The claim tracker the profiles of this process share (:data:`CLAIM_TRACKER`)."""
        if self._tracker is None:
            self._tracker = self.handle.shared(CLAIM_TRACKER)
        return self._tracker

    def _cel(self) -> Any:
        if self._cel_cache is None:
            self._cel_cache = alloc_bridge.new_cel_cache()
        return self._cel_cache

    def _class(self, name: str) -> dict | None:
        return self.handle.lister(DEVICE_CLASSES).get("", name)

    # -- the pod's claims --------------------------------------------------------------------

    def _foreach_pod_claim(self, pod: dict, cb: Callable[[str, dict], None] | None) -> None:
        """``foreachPodResourceClaim``: raises :class:`ClaimError` for a claim that does not
        exist, is being deleted, or was generated for another pod."""
        namespace = meta(pod).get("namespace", "")
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or ():
            name, must_check_owner = claim_name(pod, pod_claim)
            if name is None:
                continue  # no claim was needed for this entry
            claim = self.tracker.get(namespace, name)
            if claim is None:
                raise ClaimError(f'could not find ResourceClaim "{namespace}/{name}"')
            if meta(claim).get("deletionTimestamp") is not None:
                raise ClaimError(f'resourceclaim "{meta(claim).get("name", "")}" is being deleted')
            if must_check_owner:
                problem = is_for_pod(pod, claim)
                if problem is not None:
                    raise ClaimError(problem)
            if cb is not None:
                cb(pod_claim.get("name", ""), claim)

    def pod_resource_claims(self, pod: dict) -> list[dict]:
        claims: list[dict] = []
        self._foreach_pod_claim(pod, lambda _name, claim: claims.append(claim))
        return claims

    # -- after PreBind: an extender's bind ------------------------------------------------------

    def claims_bound_for(self, pod: dict, node_info: NodeInfo) -> str:
        """Why ``pod`` cannot be bound to the node as its claims stand ("" when it can): what
        PreBind guarantees before kube-scheduler calls an extender's bind. Every claim (the
        extended-resource claim included) allocated, available on the node and reserved for
        the pod. Filter cannot be asked instead: it takes the extended-resource claim PreBind
        just wrote for one left by an earlier cycle and rejects it (upstream
        ``filterExtendedResources``). Reads the informers; mutates nothing."""
        try:
            claims = self.pod_resource_claims(pod)
        except ClaimError as exc:
            return str(exc)
        status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
        if status.get("resourceClaimName"):
            extended = find_extended_resource_claim(pod, self.tracker.list())
            if extended is None:
                return f"resource claim {status['resourceClaimName']} not found"
            claims.append(extended)
        for claim in claims:
            alloc = allocation(claim)
            if alloc is None:
                return (
                    f"resource claim {kobj(claim)} is not allocated (kube-scheduler's "
                    "DynamicResources PreBind allocates it before it calls an extender's bind)"
                )
            selector = alloc.get("nodeSelector")
            if selector is not None and not NodeSelector(selector).matches(
                node_info.name, node_info.labels
            ):
                return f"resource claim {kobj(claim)} is allocated to other nodes"
            if not is_reserved_for_pod(pod, claim):
                return f"resource claim {kobj(claim)} is not reserved for the pod"
        return ""

    # -- PreEnqueue --------------------------------------------------------------------------

    def pre_enqueue(self, pod: dict) -> Status | None:
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return None
        try:
            self._foreach_pod_claim(pod, None)
        except ClaimError as exc:
            return unresolvable(str(exc))
        return None

    # -- PreFilter ---------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _State()
        state.write(STATE_KEY, s)
        try:
            user_claims = self.pod_resource_claims(pod)
        except ClaimError as exc:
            return None, unresolvable(str(exc))
        extended_claim = self._pre_filter_extended_resources(pod, s)
        claims = ClaimStore.of(user_claims, extended_claim)
        if claims.empty():
            return None, SKIP

        to_allocate = 0
        s.informations = [ClaimInfo() for _ in range(len(claims))]
        tracker = self.tracker
        for index, claim in claims.all():
            alloc = allocation(claim)
            if alloc is not None:
                # CanBeReserved is always true in v1.36: an allocated claim is usable by any
                # pod (the API server bounds reservedFor).
                selector = alloc.get("nodeSelector")
                if selector is not None:
                    s.informations[index].available_on_nodes = NodeSelector(selector)
                continue
            to_allocate += 1
            if tracker.get_pending_allocation(meta(claim).get("uid", "")) is not None:
                return None, unresolvable(
                    f"resource claim {kobj(claim)} is in the process of being allocated"
                )
            if claim is extended_claim:
                continue  # no spec yet: Filter makes one per node
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
                problem = self._validate_request(claim, request)
                if problem is not None:
                    return None, problem

        if to_allocate > 0:
            allocated = tracker.gather_allocated_state(self.features.consumable_capacity)
            slices = self.handle.lister(RESOURCE_SLICES).list()
            try:
                # The class lister fetched once for the cycle: the allocator asks it per node.
                classes = partial(self.handle.lister(DEVICE_CLASSES).get, "")
                s.allocator = self.new_allocator(
                    self.features, allocated, classes, slices, self._cel()
                )
            except Exception as exc:  # a broken class or claim: abort, as upstream
                return None, Status.error(str(exc))
        s.claims = claims
        return None, None

    def _pre_filter_extended_resources(self, pod: dict, s: _State) -> dict | None:
        """``preFilterExtendedResources``: the pod's extended-resource claim (one from an
        earlier cycle, or an in-memory placeholder) when it asks for an extended resource some
        DeviceClass provides; ``None`` otherwise."""
        if not self.features.extended_resource:
            return None
        scalar = pod_requests(pod).scalar
        if not any(v and is_dra_extended_resource_name(n) for n, v in scalar.items()):
            return None  # the common case: no DeviceClass lookup
        resolver = class_resolver(self.handle.lister(DEVICE_CLASSES).list())
        if not any(
            v and is_dra_extended_resource_name(n) and n in resolver for n, v in scalar.items()
        ):
            return None
        s.pod_scalar_resources = dict(scalar)
        s.resolver = resolver
        claim = find_extended_resource_claim(pod, self.tracker.list()) or placeholder_claim(pod)
        s.initial_extended_uid = meta(claim).get("uid", "")
        return claim

    def _validate_request(self, claim: dict, request: dict) -> Status | None:
        name = request.get("name", "")
        exactly = request.get("exactly")
        if exactly is not None:
            return self._validate_device_class(exactly.get("deviceClassName") or "", name)
        first = request.get("firstAvailable")
        if first:
            if not self.features.prioritized_list:
                return unresolvable(
                    f"resource claim {kobj(claim)}, request {name}: has subrequests, "
                    "but the DRAPrioritizedList feature is disabled"
                )
            for sub in first:
                qualified = f"{name}/{sub.get('name', '')}"
                problem = self._validate_device_class(sub.get("deviceClassName") or "", qualified)
                if problem is not None:
                    return problem
            return None
        return unresolvable(f"resource claim {kobj(claim)}, request {name}: unknown request type")

    def _validate_device_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status.error(f"request {request_name}: unsupported request type")
        if self._class(class_name) is None:
            # Unschedulable until a DeviceClass event.
            return unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def pre_filter_extensions(self) -> None:
        return None

    # -- Filter ------------------------------------------------------------------------------

    def _state(self, state: CycleState) -> _State | Status:
        try:
            data: _State = state.read(STATE_KEY)
        except StateNotFound:
            # Upstream's fwk.ErrNotFound text.
            return Status.error(MSG_NOT_FOUND)
        return data

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        s = self._state(state)
        if isinstance(s, Status):
            return s
        if s.claims.empty():
            return None
        node = node_info.node
        node_extended, mappings, problem = self._filter_extended_resources(s, pod, node_info)
        if problem is not None:
            return problem
        if node_extended is None and s.claims.no_user_claim():
            return None  # device plugins on this node provide the extended resources
        unavailable: list[int] = []
        # One pass over the store (it is not replaced during Filter): the allocated claims'
        # availability, and the unallocated ones to allocate (those Reserve allocated
        # already: pending), in store order.
        to_allocate: list[dict] = []
        pending: list[dict] = []
        extended_claim = s.claims.extended_resource_claim()
        informations = s.informations
        for index, claim in enumerate(s.claims.claims):
            info = informations[index]
            selector = info.available_on_nodes
            available = selector is None or selector.matches(node_info.name, node_info.labels)
            if not available:
                unavailable.append(index)
            if allocation(claim) is None:
                if claim is extended_claim and node_extended is not None:
                    claim = node_extended
                if info.allocation is not None:
                    pending.append(info.allocation)
                else:
                    to_allocate.append(claim)
                continue
            if not available:
                continue
            if self.features.binding_conditions:
                try:
                    ready = self.is_claim_ready_for_binding(claim)
                except BindingFailed:
                    unavailable.append(index)
                else:
                    if not ready and self.is_claim_timeout(claim):
                        unavailable.append(index)

        allocations: list[dict] = []
        if s.allocator is not None:
            deadline = None
            if self.features.scheduler_filter_timeout and self.filter_timeout > 0:
                deadline = time.monotonic() + self.filter_timeout
            if state.deadline is not None:
                # The pod budget (extender.framework.budget) ends the search as well.
                deadline = state.deadline if deadline is None else min(deadline, state.deadline)
            allocator_error, allocation_timeout, failed_on_node = alloc_bridge.allocation_errors()
            try:
                results = s.allocator.allocate(node, to_allocate, deadline)
            except allocation_timeout:
                # Potentially transient: an Error retries with backoff.
                return Status.error(f"node {node_info.name}: timed out trying to allocate devices")
            except failed_on_node as exc:
                return unresolvable(str(exc))  # not fatal: other nodes may still work
            except allocator_error as exc:
                return Status.error(str(exc))
            if results is None or len(results) != len(to_allocate):
                return unresolvable(ERR_CANNOT_ALLOCATE)
            allocations = list(results) + pending

        if unavailable:
            with s.lock:
                s.unavailable_claims.update(unavailable)
            return unresolvable(ERR_NOT_AVAILABLE)
        if s.allocator is not None:
            with s.lock:
                s.node_allocations[node_info.name] = NodeAllocation(
                    allocations, node_extended, mappings
                )
        return None

    def _filter_extended_resources(
        self, s: _State, pod: dict, node_info: NodeInfo
    ) -> tuple[dict | None, list[dict], Status | None]:
        """``filterExtendedResources``: the node's extended-resource claim (one request per
        container and resource the node does not provide itself) and the request mappings,
        or why the node cannot have them."""
        claim = s.claims.extended_resource_claim()
        if claim is None:
            return None, [], None
        if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
            # Created by an earlier cycle for another node: PostFilter deletes it.
            return None, [], unresolvable(ERR_CANNOT_SCHEDULE_CLAIM)
        wanted: dict[str, int] = {}
        allocatable = node_info.allocatable.scalar
        for name, quantity in s.pod_scalar_resources.items():
            if quantity == 0 or not is_dra_extended_resource_name(name):
                continue
            if name in s.resolver and allocatable.get(name, 0) == 0:
                wanted[name] = quantity
            elif name not in allocatable:
                return None, [], unresolvable(ERR_CANNOT_FIT)
        if s.claims.no_user_claim() and not wanted:
            return None, [], None
        if allocation(claim) is not None:
            return None, [], None
        requests, mappings = requests_and_mappings(pod, wanted, s.resolver)
        return node_claim(claim, requests), mappings, None

    # -- PostFilter --------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        s = self._state(state)
        if isinstance(s, Status):
            # An earlier PreFilter plugin rejected the pod, so ours never ran. Upstream answers
            # an Error ("not found") here, which ends PostFilter before preemption and becomes
            # the FitError's tail (kube-scheduler writes `0/1 nodes are available: <reason>.
            # not found`). Unresolvable with that text is what our runtime turns into the same
            # message and the same stop; an Error would be dropped from the message.
            return None, unresolvable(MSG_NOT_FOUND)
        if s.claims.empty():
            return None, Status(Code.UNSCHEDULABLE, MSG_NO_CLAIMS)
        uid = meta(pod).get("uid")
        extended = s.claims.extended_resource_claim()
        candidates = sorted(s.unavailable_claims)
        # Upstream iterates a Go map: a random claim, there is no better heuristic.
        self.handle.rng.shuffle(candidates)
        for index in candidates:
            claim = s.claims.get(index)
            if claim is extended:
                if not is_special_claim_name(meta(claim).get("name", "")):
                    break  # deleted below
                continue
            reserved = status(claim).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == uid):
                client = self.handle.client
                if client is None:
                    return None, Status.error("no API client to deallocate the claim with")
                updated = copy.deepcopy(claim)
                st = updated.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    st.pop(key, None)
                try:
                    client.update_resource_claim_status(updated)
                except Exception as exc:
                    return None, Status.error(str(exc))
                return None, Status(Code.UNSCHEDULABLE, MSG_DEALLOCATED)
        if extended is not None and not is_special_claim_name(meta(extended).get("name", "")):
            # Created in an earlier cycle and not usable now: delete it, a new one follows.
            client = self.handle.client
            if client is None:
                return None, Status.error("no API client to delete the claim with")
            try:
                self._delete_claim(client, extended)
            except Exception as exc:
                return None, Status.error(str(exc))
            return None, Status(Code.UNSCHEDULABLE, MSG_DELETED)
        return None, Status(Code.UNSCHEDULABLE, MSG_STILL_NOT_SCHEDULABLE)

    def _delete_claim(self, client: Any, claim: dict) -> None:
        """``deleteClaim``: drop the scheduler's finalizer (retried on conflicts), then
        delete."""
        m = meta(claim)
        namespace, name = m.get("namespace", ""), m.get("name", "")
        current = copy.deepcopy(claim)
        for attempt in range(CONFLICT_RETRIES):
            if attempt > 0:
                fresh = client.get_resource_claim(namespace, name)
                if fresh is None:
                    raise ValueError(f"get resourceclaim {namespace}/{name}: not found")
                current = fresh
            finalizers = meta(current).get("finalizers") or []
            if FINALIZER in finalizers:
                current["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
            try:
                client.update_resource_claim(current)
                break
            except Conflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                time.sleep(CONFLICT_BACKOFF)
            except Exception as exc:
                raise ValueError(f"update resourceclaim {namespace}/{name}: {exc}") from exc
        client.delete_resource_claim(namespace, name)

    # -- Score -------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        if not self.features.prioritized_list:
            return 0, None
        s = self._state(state)
        if isinstance(s, Status):
            return 0, s
        if s.claims.empty():
            return 0, None
        allocations = s.node_allocations.get(node_info.name)
        if allocations is None:
            return 0, None
        try:
            return compute_score(s.claims, allocations.results), None
        except ValueError as exc:
            return 0, Status.error(str(exc))

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for the table's ``rows`` when every answer is 0: the pod has no
        claims (the common case), the gate is off, or no claim has a first-available request
        (only those score; Filter made one allocation per claim on every feasible node, so
        ``compute_score`` cannot fail). Per node otherwise."""
        s = state.get(STATE_KEY)
        if isinstance(s, _State) and (
            s.claims.empty()
            or not self.features.prioritized_list
            or not any(
                request.get("firstAvailable") is not None
                for _, claim in s.claims.all()
                for request in _requests(claim)
            )
        ):
            return np.zeros(len(rows), dtype=np.int64)
        return None

    # -- Reserve / Unreserve -----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        s = self._state(state)
        if isinstance(s, Status):
            return s
        if s.claims.empty():
            return None
        to_allocate = list(s.claims.to_allocate())
        if not to_allocate or s.allocator is None:
            return None  # allocated claims are reserved for real in PreBind
        extended = s.claims.extended_resource_claim()
        node_allocation = s.node_allocations.get(node_name)
        if node_allocation is None or not node_allocation.results:
            if all(claim is extended for _, claim in to_allocate):
                return None  # device plugins on the node provide the extended resources
            return Status.error("claim allocation not found for node")
        allocations = node_allocation.results
        if len(allocations) != len(to_allocate):
            return Status.error(
                f"internal error, have {len(allocations)} allocations, "
                f"{len(to_allocate)} claims to allocate, want {len(to_allocate)} claims"
            )
        tracker = self.tracker
        for (index, claim), result in zip(to_allocate, allocations, strict=True):
            s.informations[index].allocation = result
            if claim is extended and node_allocation.extended_claim is not None:
                claim = node_allocation.extended_claim
            # The full claim, as it will be written: the allocator of the next cycle counts
            # its devices.
            assumed = copy.deepcopy(claim)
            finalizers = assumed.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            assumed.setdefault("status", {})["allocation"] = result
            tracker.signal_claim_pending_allocation(meta(claim).get("uid", ""), assumed)
        return None

    def unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or s.claims.empty():
            return
        tracker = self.tracker
        uid = meta(pod).get("uid", "")
        for _, claim in s.claims.all_user_claims():
            m = meta(claim)
            if tracker.maybe_remove_claim_pending_allocation(m.get("uid", ""), False):
                tracker.assumed_claim_restore(m.get("namespace", ""), m.get("name", ""))
            if allocation(claim) is not None and is_reserved_for_pod(pod, claim):
                client = self.handle.client
                if client is None:
                    continue
                patch = {
                    "metadata": {"uid": m.get("uid", "")},
                    "status": {"reservedFor": [{"$patch": "delete", "uid": uid}]},
                }
                try:
                    client.patch_resource_claim_status(
                        m.get("namespace", ""), m.get("name", ""), patch
                    )
                except Exception:  # retried when the pod is scheduled again
                    log.exception("unreserve: resourceclaim %s", kobj(claim))
        extended = s.claims.extended_resource_claim()
        if extended is not None:
            m = meta(extended)
            if tracker.maybe_remove_claim_pending_allocation(s.initial_extended_uid, False):
                tracker.assumed_claim_restore(m.get("namespace", ""), m.get("name", ""))
            if not is_special_claim_name(m.get("name", "")) and self.handle.client is not None:
                try:
                    self._delete_claim(self.handle.client, extended)
                except Exception:
                    log.exception("unreserve: delete resourceclaim %s", kobj(extended))

    # -- PreBind -----------------------------------------------------------------------------

    def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        s = self._state(state)
        if isinstance(s, Status):
            return s
        if s.claims.empty():
            return None
        client = self.handle.client
        if client is None:
            return Status.error("no API client to reserve resource claims with")
        for index, claim in s.claims.all():
            if not is_reserved_for_pod(pod, claim):
                try:
                    updated = self._bind_claim(client, s, index, pod, node_name)
                except Exception as exc:
                    return Status.error(str(exc))
                s.claims.set(index, updated)
        if not self.features.binding_conditions or not has_binding_conditions(s.claims):
            return None
        self.handle.event_recorder.record_event(
            pod,
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
        )
        deadline = time.monotonic() + self.binding_timeout
        while True:
            try:
                if self._is_pod_ready_for_binding(s):
                    return None
            except BindingFailed as exc:
                return Status.error(str(exc))
            if time.monotonic() + self.binding_poll_interval > deadline:
                return Status.error(f"{ERR_DEVICE_BINDING_TIMEOUT}: context deadline exceeded")
            time.sleep(self.binding_poll_interval)

    def pre_bind_pre_flight(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """``PreBindPreFlight``: whether PreBind has work for this pod (Skip: no claims).
        kube-scheduler v1.36 (NominatedNodeNameForExpectation) sets the pod's
        ``nominatedNodeName`` before a PreBind with work (the loop does so too)."""
        s = self._state(state)
        if isinstance(s, Status):
            return s
        return SKIP if s.claims.empty() else None

    def _bind_claim(self, client: Any, s: _State, index: int, pod: dict, node_name: str) -> dict:
        """``bindClaim``: record the allocation from Reserve (after the finalizer) and the
        pod in ``reservedFor``; on a conflict, again with a fresh claim. The extended-resource
        claim is created first, and named in the pod's status after."""
        claim = s.claims.get(index)
        result = s.informations[index].allocation
        is_extended = claim is s.claims.extended_resource_claim()
        if is_extended and result is None and not _requests(claim):
            return claim  # device plugins provide the extended resources
        claim = copy.deepcopy(claim)
        tracker = self.tracker
        uid = meta(claim).get("uid", "")
        modified = False
        try:
            if is_extended and is_special_claim_name(meta(claim).get("name", "")):
                claim = self._create_extended_claim(client, s, node_name)
                modified = True
                s.claims.set(index, claim)
            for attempt in range(CONFLICT_RETRIES):
                if attempt > 0:
                    m = meta(claim)
                    fresh = client.get_resource_claim(m.get("namespace", ""), m.get("name", ""))
                    if fresh is None:
                        raise ValueError(
                            f"get updated claim {kobj(claim)} after conflict: not found"
                        )
                    claim = fresh
                try:
                    claim = self._write_claim(client, claim, result, pod)
                except Conflict:
                    if attempt == CONFLICT_RETRIES - 1:
                        raise
                    time.sleep(CONFLICT_BACKOFF)
                    continue
                modified = True
                break
        finally:
            force = False
            if modified:
                if is_extended:
                    self._wait_for_claim_in_informer(claim)
                else:
                    force = True  # the assumed claim is authoritative from now on
                tracker.assume_claim_after_api_call(claim)
            if result is not None:
                tracker.maybe_remove_claim_pending_allocation(uid, force)
        if is_extended:
            self._patch_pod_extended_resource_claim_status(client, pod, claim, s, node_name)
        return claim

    def _create_extended_claim(self, client: Any, s: _State, node_name: str) -> dict:
        """``createExtendedResourceClaimInAPI``: the node's claim, without allocation, name
        or UID (the API server generates the name)."""
        node_allocation = s.node_allocations.get(node_name)
        if node_allocation is None or node_allocation.extended_claim is None:
            raise ValueError(f"extended resource claim not found for node {node_name}")
        claim = copy.deepcopy(node_allocation.extended_claim)
        claim.get("status", {}).pop("allocation", None)
        claim["metadata"].pop("name", None)
        claim["metadata"].pop("uid", None)
        try:
            return client.create_resource_claim(claim["metadata"].get("namespace", ""), claim)
        except Exception as exc:
            raise ValueError(f"create claim for extended resources {kobj(claim)}: {exc}") from exc

    def _wait_for_claim_in_informer(self, claim: dict) -> None:
        """``waitForExtendedClaimInAssumeCache``: a created claim counts as allocated once
        the informer has it (polled every second, up to 120 s)."""
        m = meta(claim)
        lister = self.handle.lister(RESOURCE_CLAIMS)
        deadline = time.monotonic() + ASSUME_EXTENDED_CLAIM_TIMEOUT
        while lister.get(m.get("namespace", ""), m.get("name", "")) is None:
            if time.monotonic() + 1 > deadline:
                log.info("claim %s not seen by the informer after retries", kobj(claim))
                return
            time.sleep(1)

    def _patch_pod_extended_resource_claim_status(
        self, client: Any, pod: dict, claim: dict, s: _State, node_name: str
    ) -> None:
        node_allocation = s.node_allocations.get(node_name)
        mappings = node_allocation.mappings if node_allocation is not None else []
        m = meta(pod)
        if not mappings:
            raise ValueError(
                f"nil or empty request mappings, no update of pod {m.get('namespace', '')}/"
                f"{m.get('name', '')} ExtendedResourceClaimStatus"
            )
        patch = {
            "status": {
                "extendedResourceClaimStatus": {
                    "requestMappings": mappings,
                    "resourceClaimName": meta(claim).get("name", ""),
                }
            }
        }
        try:
            client.patch_pod_status(m.get("namespace", ""), m.get("name", ""), patch)
        except Exception as exc:
            raise ValueError(
                f"update pod {m.get('namespace', '')}/{m.get('name', '')} "
                f"ExtendedResourceClaimStatus: {exc}"
            ) from exc

    def _write_claim(self, client: Any, claim: dict, result: dict | None, pod: dict) -> dict:
        if meta(claim).get("deletionTimestamp") is not None:
            raise ValueError(f"claim {kobj(claim)} got deleted in the meantime")
        if result is not None:
            if allocation(claim) is not None:
                raise ValueError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
            finalizers = meta(claim).get("finalizers") or []
            if FINALIZER not in finalizers:
                claim.setdefault("metadata", {})["finalizers"] = [*finalizers, FINALIZER]
                try:
                    claim = client.update_resource_claim(claim)
                except Conflict:
                    raise
                except Exception as exc:
                    raise ValueError(f"add finalizer to claim {kobj(claim)}: {exc}") from exc
            claim.setdefault("status", {})["allocation"] = copy.deepcopy(result)
        st = claim.setdefault("status", {})
        st["reservedFor"] = [*(st.get("reservedFor") or []), pod_reference(pod)]
        if self.features.binding_conditions:
            alloc = st.get("allocation")
            if alloc is None:
                raise ValueError(f"claim {kobj(claim)} got deallocated elsewhere in the meantime")
            alloc.setdefault("allocationTimestamp", _rfc3339(self.clock()))
        try:
            return client.update_resource_claim_status(claim)
        except Conflict:
            raise
        except Exception as exc:
            what = "allocation and reservation" if result is not None else "reservation"
            raise ValueError(f"add {what} to claim {kobj(claim)}: {exc}") from exc

    # -- binding conditions ------------------------------------------------------------------

    def is_claim_ready_for_binding(self, claim: dict) -> bool:
        """All binding conditions of the claim's devices true and no failure condition true
        (``isClaimReadyForBinding``); raises :class:`BindingFailed` on a failure condition."""
        alloc = allocation(claim)
        if alloc is None:
            return False
        for result in (alloc.get("devices") or {}).get("results") or ():
            conditions = result.get("bindingConditions") or []
            if not conditions:
                continue
            device_status = allocated_device_status(claim, result)
            if device_status is None:
                return False
            current = {c.get("type"): c for c in device_status.get("conditions") or ()}
            for name in result.get("bindingFailureConditions") or ():
                cond = current.get(name)
                if cond is not None and cond.get("status") == "True":
                    raise BindingFailed(
                        f"{ERR_DEVICE_BINDING_FAILED}: claim={meta(claim).get('name', '')}, "
                        f'reason={cond.get("reason", "")}, message="{cond.get("message", "")}"'
                    )
            for name in conditions:
                cond = current.get(name)
                if cond is None or cond.get("status") != "True":
                    return False
        return True

    def is_claim_timeout(self, claim: dict) -> bool:
        """The claim's allocation is older than ``bindingTimeout`` and has devices with
        binding conditions (``isClaimTimeout``)."""
        alloc = allocation(claim)
        if alloc is None or not alloc.get("allocationTimestamp"):
            return False
        allocated_at = _parse_time(alloc["allocationTimestamp"])
        if allocated_at is None:
            return False
        for result in (alloc.get("devices") or {}).get("results") or ():
            if result.get("bindingConditions") is None:
                continue
            if (self.clock() - allocated_at).total_seconds() > self.binding_timeout:
                return True
        return False

    def _is_pod_ready_for_binding(self, s: _State) -> bool:
        for index, claim in s.claims.all():
            m = meta(claim)
            current = self.tracker.get(m.get("namespace", ""), m.get("name", ""))
            if current is None:
                raise BindingFailed(f'could not find ResourceClaim "{kobj(claim)}"')
            s.claims.set(index, current)
            if not self.is_claim_ready_for_binding(current):
                if self.is_claim_timeout(current):
                    raise BindingFailed(f"{ERR_DEVICE_BINDING_TIMEOUT}: claim={m.get('name', '')}")
                return False
        return True

    # -- events ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints (on in v1.36) Node events need no UpdateNodeTaint.
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        node_actions |= ActionType.UPDATE_NODE_ALLOCATABLE
        return [
            ClusterEventWithHint(ClusterEvent(Resource.NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
            ),
        ]

    def is_schedulable_after_claim_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE
        uid = meta(new).get("uid")
        uses_claim = False

        def seen(_name: str, claim: dict) -> None:
            nonlocal uses_claim
            if meta(claim).get("uid") == uid:
                uses_claim = True

        try:
            self._foreach_pod_claim(pod, seen)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        if old is not None and allocation(old) is not None and allocation(new) is None:
            return QueueingHint.QUEUE  # deallocated: its devices are free
        if not uses_claim:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if status(old) == status(new):
            return QueueingHint.QUEUE_SKIP  # e.g. a finalizer added
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if new is None or meta(pod).get("uid") != meta(new).get("uid"):
            return QueueingHint.QUEUE_SKIP
        try:
            self._foreach_pod_claim(new, None)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def _requests(claim: dict) -> list:
    return ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []


class BindingFailed(Exception):
    """A device's binding failure condition is true, or its binding conditions timed out."""


def allocated_device_status(claim: dict, result: dict) -> dict | None:
    for device in status(claim).get("devices") or ():
        if (
            device.get("device") == result.get("device")
            and device.get("driver") == result.get("driver")
            and device.get("pool") == result.get("pool")
        ):
            return device
    return None


def has_binding_conditions(claims: ClaimStore) -> bool:
    for _, claim in claims.all():
        alloc = allocation(claim)
        if alloc is None:
            continue
        for result in (alloc.get("devices") or {}).get("results") or ():
            if result.get("bindingConditions"):
                return True
    return False


def compute_score(claims: ClaimStore, allocations: list[dict]) -> int:
    """``computeScore``: for each first-available request, ``8 - i`` for the chosen
    subrequest ``i``; allocated claims count with their own allocation."""
    score = 0
    unallocated = 0
    for _, claim in claims.all():
        alloc = allocation(claim)
        if alloc is None:
            if unallocated >= len(allocations):
                raise ValueError(
                    f"number of allocations {len(allocations)} is smaller than number of "
                    "claims needing allocation"
                )
            alloc = allocations[unallocated]
            unallocated += 1
        chosen = {
            r.get("request", "")
            for r in (alloc.get("devices") or {}).get("results") or ()
            if is_sub_request_ref(r.get("request", ""))
        }
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            if request.get("exactly") is not None:
                continue
            for i, sub in enumerate(request.get("firstAvailable") or ()):
                if f"{request.get('name', '')}/{sub.get('name', '')}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
