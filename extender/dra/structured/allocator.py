"""The structured allocator: picks devices for a pod's ResourceClaims on one node.

An exact port of the semantics of upstream's "incubating" allocator, the one kube-scheduler v1.36
runs with its default feature gates (``k8s.io/dynamic-resource-allocation/structured/internal/
incubating/allocator_incubating.go``). The search is upstream's: claims in order, requests in
order, subrequests (``firstAvailable``) in order, and for each wanted device the candidates in
pool order (:func:`~extender.dra.structured.pools.gather_pools`), slice order and device order,
trying only combinations (never permutations) within one request, backtracking on failure. The
first complete solution wins, so the same devices are chosen as kube-scheduler chooses.

Contract: inputs are resource.k8s.io/v1 objects as plain JSON dicts, read-only (nothing passed
in is mutated; results are new dicts). ``allocate`` returns one ``AllocationResult`` dict per
claim (``allocationTimestamp`` is the caller's), ``None`` when the claims do not fit on the node,
and raises :class:`AllocatorError` for invalid input with upstream's message text.

One concept, the search, in one module as upstream's ``allocator_incubating.go``: its steps
share the run's state and read best in upstream's order, so that the two can be compared.
"""

from __future__ import annotations

import copy
import os
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import is_
from typing import Any

import orjson

from extender.dra.cel import CELCache, CELDeadlineExceeded, CELDevice, CELError
from extender.dra.structured.capacity import (
    Quantity,
    UndefinedCapacityRequest,
    consumed_capacity_from_request,
    request_fits_capacity,
)
from extender.dra.structured.constraints import Constraint, DistinctAttribute, MatchAttribute
from extender.dra.structured.pools import CounterSets, Pool, gather_pools, node_matches
from extender.dra.structured.types import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocatedState,
    AllocationTimeout,
    AllocatorError,
    ConsumedCapacityCollection,
    DeviceID,
    FailedAllocationOnNode,
    Features,
    insert_consumed,
    is_device_allocated,
    remove_consumed,
)

ClassLister = Callable[[str], dict | None]

_EXACT_COUNT = "ExactCount"
_ALL = "All"
_TAINT_EFFECTS_PREVENTING = ("NoSchedule", "NoExecute")


def _kobj(obj: dict) -> str:
    """``klog.KObj``: namespace/name, or just the name."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


def _device_id_str(device_id: DeviceID) -> str:
    return "/".join(device_id)


@dataclass(slots=True)
class _Request:
    """A request or subrequest, seen the same way (upstream's ``requestAccessor``)."""

    name: str
    device_class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: list
    tolerations: list
    capacity: dict | None

    @staticmethod
    def exact(request: dict) -> _Request:
        exactly = request.get("exactly") or {}
        return _Request(
            name=request.get("name") or "",
            device_class_name=exactly.get("deviceClassName") or "",
            allocation_mode=exactly.get("allocationMode") or "",
            count=int(exactly.get("count") or 0),
            admin_access=bool(exactly.get("adminAccess")),
            has_admin_access=exactly.get("adminAccess") is not None,
            selectors=exactly.get("selectors") or [],
            tolerations=exactly.get("tolerations") or [],
            capacity=exactly.get("capacity"),
        )

    @staticmethod
    def sub(subrequest: dict) -> _Request:
        return _Request(
            name=subrequest.get("name") or "",
            device_class_name=subrequest.get("deviceClassName") or "",
            allocation_mode=subrequest.get("allocationMode") or "",
            count=int(subrequest.get("count") or 0),
            admin_access=False,
            has_admin_access=False,
            selectors=subrequest.get("selectors") or [],
            tolerations=subrequest.get("tolerations") or [],
            capacity=subrequest.get("capacity"),
        )


@dataclass(slots=True)
class _Candidate:
    """A device with its ID, slice and pool (upstream's ``deviceWithID``)."""

    id: DeviceID
    device: dict
    slice: dict
    pool: Pool


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: _Request | None
    device_class: dict | None = None
    num_devices: int = 0
    # Set on the entry of subrequest 0: the subrequest that got picked.
    selected_sub_request_index: int = 0
    # The devices of an "All" request, determined up front.
    all_devices: list[_Candidate] = field(default_factory=list)

    def request_name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name


@dataclass(slots=True)
class _DeviceResult:
    request: str  # the request, or the subrequest's own name
    parent_request: str  # the parent of a subrequest, "" otherwise
    id: DeviceID
    device: dict
    slice: dict
    share_id: str | None
    consumed_capacity: dict[str, Quantity] | None
    admin_access: bool | None

    def request_name(self) -> str:
        return f"{self.parent_request}/{self.request}" if self.parent_request else self.request


class _MaxSizeExceeded(Exception):
    """Allocating would exceed the results limit of a claim: backtrack further."""


# id(device dict) -> (that dict, its CEL input). The same device object (a slice in the
# informer's cache) gets the same CELDevice in every scheduling cycle, which lets the CEL layer
# keep each selector's answer per device. Bounded; the dict is kept to guard against id reuse.
_CEL_DEVICES: dict[int, tuple[dict, CELDevice]] = {}
_CEL_DEVICES_MAX = 1 << 16
_DEADLINE_EXCEEDED = "filter operation aborted: context deadline exceeded"

# The pools of a node, kept across allocators (scheduling cycles): node name -> (node, features,
# the slices gather_pools read, its answer). Valid while the node and each slice are the very
# same objects (an informer replaces an object it updates; the entry holds them, so their ids
# cannot be reused) and the answer did not read other nodes' slices. Pools are never mutated.
_NODE_POOLS: dict[str, tuple[dict | None, Features, tuple[dict, ...], list[Pool]]] = {}
_NODE_POOLS_MAX = 1 << 15
# A node's answers, kept across allocators (scheduling cycles): node name -> _NodeAnswers.
# Filter asks every node again for each pod, and pods alike ask alike: while the node's pools,
# the features, the state of the node's devices (see _Run._devices_state), the claims' specs
# and their requests' classes are the same, the search (deterministic in them) gives the same
# results, but for the share IDs, drawn anew for each answer given. Kept only for pools
# whose search reads nothing else: no shared slices, no counters, no invalid or incomplete
# pools. Errors are never kept.
_NODE_ANSWERS: dict[str, _NodeAnswers] = {}
# Claims of a few shapes alternate (a trace's pods): the answers for that many per node.
_ANSWERS_PER_NODE = 16
# The last slice list indexed by _index_slices: (slices, by node name, shared).
_SLICE_INDEX: tuple[tuple[dict, ...], dict[str, list[dict]], list[dict]] | None = None
# Claims memoised per allocator (one cycle's claims, usually one or two).
_PREPARED_MAX = 64
# Device object id -> (device, its capacities are all plain: see _plain_capacity).
_PLAIN_CAPACITY: dict[int, tuple[dict, bool]] = {}

RequestKey = tuple[int, int, int]  # claim, request, subrequest


@dataclass(frozen=True, slots=True)
class _NodeAnswers:
    """A node's kept answers, for the state of its devices they were found in (never
    updated: a new one replaces it, as another thread may be reading it)."""

    pools: list[Pool]  # the very list _NODE_POOLS holds
    # What the pools were gathered from: the node and its slices (the list of the slice
    # index, which holds the same objects while it is the same list), for Allocator's check
    # that needs no pools.
    node: dict | None
    slices: list[dict] | None
    features: Features
    ids: tuple[DeviceID, ...]  # _answer_device_ids(pools)
    devices: tuple  # _devices_state(state, ids)
    # The claims' specs (JSON) -> (the requests' classes, the results as JSON or None,
    # whether they hold share IDs).
    answers: dict[tuple[bytes, ...], tuple[tuple, bytes | None, bool]]


def _kept_answer(results: list[dict] | None) -> tuple[bytes | None, bool]:
    """The results as :data:`_NODE_ANSWERS` keeps them: JSON, and whether any device result
    has a share ID (drawn anew for each answer given, see :func:`_given_answer`)."""
    if results is None:
        return None, False
    shared = any(
        "shareID" in entry for result in results for entry in result["devices"].get("results") or ()
    )
    return orjson.dumps(results), shared


def _given_answer(kept: bytes | None, shared: bool) -> list[dict] | None:
    """A kept answer as the search would give it anew: new objects, new share IDs."""
    if kept is None:
        return None
    results: list[dict] = orjson.loads(kept)
    if shared:
        for result in results:
            for entry in result["devices"].get("results") or ():
                if "shareID" in entry:
                    entry["shareID"] = new_share_id()
    return results


# Share IDs need to be unique, not unpredictable (upstream draws a random UUID): a generator
# of its own, seeded from os.urandom, makes them without a system call each; a forked child
# reseeds, so that it does not draw its parent's.
_SHARE_ID_RANDOM = random.Random()
os.register_at_fork(after_in_child=_SHARE_ID_RANDOM.seed)
_UUID_V4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID_V4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_share_id() -> str:
    """A random (version 4) UUID's text, as ``str(uuid.uuid4())``: a device share's ID."""
    value = (_SHARE_ID_RANDOM.getrandbits(128) & _UUID_V4_CLEAR) | _UUID_V4_SET
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@dataclass(frozen=True, slots=True)
class _PreparedClaim:
    """What ``_prepare_claim`` found for a claim that does not depend on the node (no "All"
    request): valid while the claim and each DeviceClass it names are the same objects."""

    claim: dict
    # (request index, subrequest index, request, parent, class name, class, num_devices)
    requests: tuple[tuple[int, int, _Request, _Request | None, str, dict | None, int], ...]
    has_constraints: bool
    depth: int


DeviceKey = tuple[int, int, int, int]  # claim, request, subrequest, device
Location = tuple[int, int, int]  # pool, slice, device


class Allocator:
    """Allocates devices for claims; built once per scheduling cycle and used for every node.

    ``slices`` are all ResourceSlices; ``allocated_state`` what is taken already (by other
    claims and in flight); ``class_lister(name)`` returns a DeviceClass or ``None``.
    """

    def __init__(
        self,
        features: Features,
        allocated_state: AllocatedState,
        class_lister: ClassLister,
        slices: Sequence[dict],
        cel_cache: CELCache,
    ) -> None:
        self.features = features
        self.allocated_state = allocated_state
        self.class_lister = class_lister
        self.cel_cache = cel_cache
        self.all_slices = list(slices)
        self.slices_on_node, self.slices_shared = _index_slices(self.all_slices)
        # Available counters per pool *name* (as upstream keys them), computed once.
        self.available_counters: dict[str, CounterSets] = {}
        # How often the search step ran (upstream's numAllocateOneInvocations statistic).
        self.num_allocate_one_invocations = 0
        # Claim object id -> its validated requests: Filter asks for the same claims on
        # every node, so validation runs once per cycle (see _Run._prepare_claim_memoised).
        self.prepared: dict[int, _PreparedClaim] = {}
        # Expression -> compiled selector (the shared CEL cache takes a lock per lookup).
        self.compiled: dict[str, Any] = {}
        # Claim object id -> (claim, its spec as JSON with sorted keys): _NODE_ANSWERS' key.
        self._spec_keys: dict[int, tuple[dict, bytes]] = {}

    def claim_spec_key(self, claim: dict) -> bytes:
        """The claim's spec as JSON with sorted keys, once per claim object and cycle."""
        known = self._spec_keys.get(id(claim))
        if known is None or known[0] is not claim:
            known = (claim, orjson.dumps(claim.get("spec"), option=orjson.OPT_SORT_KEYS))
            self._spec_keys[id(claim)] = known
        return known[1]

    def allocate(
        self, node: dict | None, claims: Sequence[dict], deadline: float | None = None
    ) -> list[dict] | None:
        """One AllocationResult per claim, in order; ``None``: the claims do not fit here.

        ``deadline`` is a ``time.monotonic()`` value; past it, :class:`AllocationTimeout`.
        """
        try:
            claims = list(claims)
            remembered = self._remembered(node, claims)
            if remembered is not _NOT_KEPT:
                return remembered  # type: ignore[return-value]
            return _Run(self, node, claims, deadline).allocate()
        except AllocatorError:
            raise
        except (ValueError, TypeError, AttributeError) as err:
            # Malformed objects (a non-numeric count, a bad quantity, a list where a map
            # belongs): the API server would have refused them; never a traceback.
            raise AllocatorError(f"invalid input: {err}") from err

    def _remembered(self, node: dict | None, claims: list[dict]) -> object:
        """The node's kept answer (:data:`_NODE_ANSWERS`) when it is sure to be the search's:
        the same node and slice objects (so the same pools), features, claims validated in
        this cycle with the classes the lister gives now, state of the node's devices and
        claims' specs; :data:`_NOT_KEPT` otherwise (then :class:`_Run` decides, and may
        find the answer kept after all)."""
        if not isinstance(node, dict) or self.slices_shared:
            return _NOT_KEPT  # no node (or not an object: _Run says what is wrong)
        name = (node.get("metadata") or {}).get("name") or ""
        known = _NODE_ANSWERS.get(name) if name else None
        if (
            known is None
            or known.node is not node
            or known.slices is not self.slices_on_node.get(name)
            or not (known.features is self.features or known.features == self.features)
            or known.devices != _devices_state(self.allocated_state, known.ids)
        ):
            return _NOT_KEPT
        classes: list[dict | None] = []
        class_lister = self.class_lister
        for claim in claims:
            prepared = self.prepared.get(id(claim))
            if prepared is None or prepared.claim is not claim:
                return _NOT_KEPT
            for entry in prepared.requests:
                device_class = class_lister(entry[4])
                if device_class is not entry[5]:
                    return _NOT_KEPT
                classes.append(device_class)
        answer = known.answers.get(tuple(map(self.claim_spec_key, claims)))
        if (
            answer is None
            or len(answer[0]) != len(classes)
            or not all(map(is_, answer[0], classes))
        ):
            return _NOT_KEPT
        return _given_answer(answer[1], answer[2])


_NOT_KEPT = object()


def _devices_state(state: AllocatedState, ids: tuple[DeviceID, ...]) -> tuple[tuple, tuple | None]:
    """What the search reads of the allocated state, for :data:`_NODE_ANSWERS`: for each of
    the node's devices (``ids``, from :func:`_answer_device_ids`) whether it is allocated
    whole, and its entry in the aggregated capacity (a snapshot: name and amount pairs,
    ``None`` without one). The search reads nothing else of the state for such pools: shared
    device IDs only for devices with counters (``_reserve_counters``), which such pools lack.
    """
    taken = tuple(map(state.allocated_devices.__contains__, ids))
    aggregated = state.aggregated_capacity
    if not aggregated:
        return taken, None
    return taken, tuple(
        None if entry is None else tuple(entry.items()) for entry in map(aggregated.get, ids)
    )


class _Run:
    """The state of one ``allocate`` call (upstream's unexported ``allocator``)."""

    def __init__(
        self, owner: Allocator, node: dict | None, claims: list[dict], deadline: float | None
    ) -> None:
        self.owner = owner
        self.features = owner.features
        self.state = owner.allocated_state
        self.node = node
        self.node_name = ((node or {}).get("metadata") or {}).get("name") or ""
        self.claims = claims
        self.deadline = deadline
        self.pools: list[Pool] = []
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        # Expression -> compiled selector, for the cycle (the shared cache takes a lock).
        self.compiled = owner.compiled
        # Counters consumed by devices being allocated, per pool name.
        self.consumed_counters: dict[str, CounterSets] = {}
        # Device -> indices of the claims it is being allocated for.
        self.allocating_devices: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: ConsumedCapacityCollection = {}
        self.results: list[list[_DeviceResult]] = [[] for _ in claims]

    # --- setup -------------------------------------------------------------------------------

    def allocate(self) -> list[dict] | None:
        slices_for_node = (
            self.owner.slices_on_node.get(self.node_name, []) if self.node_name else []
        )
        shared = self.owner.slices_shared
        self.pools = _pools_for_node(
            self.node_name,
            self.node,
            slices_for_node + shared if shared else slices_for_node,
            self.owner,
        )
        depth = 3
        for claim_index, claim in enumerate(self.claims):
            depth += self._prepare_claim_memoised(claim_index, claim)
        if not self.node_name or self.owner.slices_shared:
            return self._search(depth)  # reads other nodes' slices: nothing is kept
        known = _NODE_ANSWERS.get(self.node_name)
        if known is not None and (
            known.pools is not self.pools
            or not (known.features is self.features or known.features == self.features)
        ):
            known = None
        ids = known.ids if known is not None else _answer_device_ids(self.pools)
        if ids is None:
            return self._search(depth)
        devices = _devices_state(self.state, ids)
        specs = tuple(map(self.owner.claim_spec_key, self.claims))
        classes = tuple(data.device_class for data in self.request_data.values())
        node_slices = self.owner.slices_on_node.get(self.node_name)
        answers: dict[tuple[bytes, ...], tuple[tuple, bytes | None, bool]] = {}
        if known is not None and known.devices == devices:
            answer = known.answers.get(specs)
            if (
                answer is not None
                and len(answer[0]) == len(classes)
                and all(map(is_, answer[0], classes))
            ):
                if known.node is not self.node or known.slices is not node_slices:
                    # The same pools from new objects (a rebuilt slice index): kept for
                    # Allocator._remembered's check.
                    _NODE_ANSWERS[self.node_name] = _NodeAnswers(
                        self.pools,
                        self.node,
                        node_slices,
                        self.features,
                        ids,
                        devices,
                        known.answers,
                    )
                return _given_answer(answer[1], answer[2])
            # A new entry rather than an update: another thread may be reading this one.
            answers = dict(known.answers)
        results = self._search(depth)
        memoised = _NODE_POOLS.get(self.node_name)
        if memoised is None or memoised[3] is not self.pools:
            return results  # the pools read other nodes' slices: not kept
        kept, has_shares = _kept_answer(results)
        if len(answers) >= _ANSWERS_PER_NODE and specs not in answers:
            del answers[next(iter(answers))]  # the oldest
        answers[specs] = (classes, kept, has_shares)
        if len(_NODE_ANSWERS) >= _NODE_POOLS_MAX:
            _NODE_ANSWERS.clear()
        _NODE_ANSWERS[self.node_name] = _NodeAnswers(
            self.pools, self.node, node_slices, self.features, ids, devices, answers
        )
        return results

    def _search(self, depth: int) -> list[dict] | None:
        self.request_counts = [
            len(((claim.get("spec") or {}).get("devices") or {}).get("requests") or ())
            for claim in self.claims
        ]

        # Every wanted device and every request is one level of the search's recursion; pure
        # Python calls use no C stack (3.11), so only the interpreter's limit needs room.
        if sys.getrecursionlimit() < depth + 1000:
            sys.setrecursionlimit(depth + 1000)
        try:
            done = self._allocate_one((0, 0, 0, 0), False, (0, 0, 0))
        except _MaxSizeExceeded:
            raise AllocatorError("allocation max size exceeded") from None
        if not done:
            if any(pool.is_invalid for pool in self.pools):
                # Not fatal: other nodes may work; surfaced only if all nodes fail.
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            return None
        return [self._result(i, claim) for i, claim in enumerate(self.claims)]

    def _prepare_claim_memoised(self, claim_index: int, claim: dict) -> int:
        """``_prepare_claim`` from the allocator's memo when the claim and the classes it
        names are the same objects as when it was validated (the same answer: validation
        reads nothing else but the features, fixed per allocator); else validated anew."""
        known = self.owner.prepared.get(id(claim))
        class_lister = self.owner.class_lister
        if known is not None and known.claim is claim:
            if all(class_lister(entry[4]) is entry[5] for entry in known.requests):
                for request_index, sub_index, request, parent, _, cls, count in known.requests:
                    data = _RequestData(request=request, parent=parent, device_class=cls)
                    data.num_devices = count
                    self.request_data[(claim_index, request_index, sub_index)] = data
                if known.has_constraints:
                    devices = (claim.get("spec") or {}).get("devices") or {}
                    self.constraints[claim_index] = _claim_constraints(claim, devices)
                return known.depth
        depth = self._prepare_claim(claim_index, claim)
        entries = []
        for (index, request_index, sub_index), data in self.request_data.items():
            if index != claim_index:
                continue
            if data.request.allocation_mode == _ALL:
                return depth  # its devices depend on the node's pools: never memoised
            entries.append(
                (
                    request_index,
                    sub_index,
                    data.request,
                    data.parent,
                    data.request.device_class_name,
                    data.device_class,
                    data.num_devices,
                )
            )
        if len(self.owner.prepared) >= _PREPARED_MAX:
            self.owner.prepared.clear()
        self.owner.prepared[id(claim)] = _PreparedClaim(
            claim, tuple(entries), bool(self.constraints[claim_index]), depth
        )
        return depth

    def _prepare_claim(self, claim_index: int, claim: dict) -> int:
        """Validate a claim's requests and constraints; returns its search depth bound."""
        devices = (claim.get("spec") or {}).get("devices") or {}
        min_devices = 0
        # The search's recursion depth for this claim: at most the results limit in devices,
        # plus a level per request and subrequest.
        depth = ALLOCATION_RESULTS_MAX_SIZE + 4
        for request_index, request in enumerate(devices.get("requests") or ()):
            name = request.get("name") or ""
            subrequests = request.get("firstAvailable") or []
            if not self.features.prioritized_list and subrequests:
                raise AllocatorError(
                    f"claim {_kobj(claim)}, request {name}: has subrequests, "
                    "but the DRAPrioritizedList feature is disabled"
                )
            if not self.features.consumable_capacity:
                if (request.get("exactly") or {}).get("capacity") is not None:
                    raise AllocatorError(
                        f"claim {_kobj(claim)}, request {name}: has capacity requests, "
                        "but the DRAConsumableCapacity feature is disabled"
                    )
                for sub in subrequests:
                    if sub.get("capacity") is not None:
                        raise AllocatorError(
                            f"claim {_kobj(claim)}, subrequest {sub.get('name') or ''}: has "
                            "capacity requests, but the DRAConsumableCapacity feature is disabled"
                        )
            if subrequests:
                parent = _Request.exact(request)
                fewest: int | None = None
                for sub_index, sub in enumerate(subrequests):
                    key = (claim_index, request_index, sub_index)
                    data = self._validate_request(_Request.sub(sub), parent, key)
                    self.request_data[key] = data
                    fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                    depth += 2
                min_devices += fewest or 0
            else:
                key = (claim_index, request_index, 0)
                data = self._validate_request(_Request.exact(request), None, key)
                self.request_data[key] = data
                min_devices += data.num_devices
                depth += 2
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocatorError(
                f"claim {_kobj(claim)}: number of requested devices {min_devices} "
                f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        self.constraints[claim_index] = _claim_constraints(claim, devices)
        return depth

    def _validate_request(
        self, request: _Request, parent: _Request | None, key: RequestKey
    ) -> _RequestData:
        claim = self.claims[key[0]]
        data = _RequestData(request=request, parent=parent)
        for i, selector in enumerate(request.selectors):
            if not (selector or {}).get("cel"):
                raise AllocatorError(
                    f"claim {_kobj(claim)}, request {request.name}, selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocatorError(
                f"claim {_kobj(claim)}, request {request.name}: admin access is requested, "
                "but the feature is disabled"
            )
        if not request.device_class_name:
            raise AllocatorError(
                f"claim {_kobj(claim)}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.owner.class_lister(request.device_class_name)
        if device_class is None:
            raise AllocatorError(
                f"claim {_kobj(claim)}, request {request.name}: could not retrieve device "
                f"class {request.device_class_name}: deviceclass.resource.k8s.io "
                f'"{request.device_class_name}" not found'
            )
        data.device_class = device_class

        if request.allocation_mode == _EXACT_COUNT:
            if request.count > sys.maxsize:
                raise AllocatorError(
                    f"claim {_kobj(claim)}, request {request.name}: exact count "
                    f"{request.count} is too large"
                )
            data.num_devices = request.count
        elif request.allocation_mode == _ALL:
            # "All" needs every matching device up front, so no pool may be incomplete.
            for pool in self.pools:
                if pool.is_incomplete:
                    raise AllocatorError(
                        f"claim {_kobj(claim)}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocatorError(
                        f"claim {_kobj(claim)}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently invalid"
                    )
                for slice_ in pool.device_slices:
                    spec = slice_.get("spec") or {}
                    for device in spec.get("devices") or ():
                        # Every candidate: one device's selectors may take long.
                        self._check_deadline()
                        device_id = (pool.driver, pool.pool, device.get("name") or "")
                        if not self._is_selectable(key, data, slice_, device, device_id):
                            continue
                        if self.features.consumable_capacity and not self._fits_capacity(
                            request, device_id, device
                        ):
                            continue
                        data.all_devices.append(_Candidate(device_id, device, slice_, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocatorError(
                f"claim {_kobj(claim)}, request {request.name}: unsupported count mode "
                f"{request.allocation_mode}"
            )
        return data

    # --- the search --------------------------------------------------------------------------

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout(_DEADLINE_EXCEEDED)

    def _allocate_one(self, r: DeviceKey, allocate_sub_request: bool, start: Location) -> bool:
        """Find a device for wanted device ``r`` and, recursively, for everything after it.

        True: a complete solution is recorded. ``start`` is where the candidates begin within
        the same request, so that a request only tries combinations of devices.
        """
        self.owner.num_allocate_one_invocations += 1
        self._check_deadline()
        claim_index, request_index, sub_index, device_index = r
        if claim_index >= len(self.claims):
            return True
        if request_index >= self.request_counts[claim_index]:
            try:
                return self._allocate_one((claim_index + 1, 0, 0, 0), False, (0, 0, 0))
            except _MaxSizeExceeded:
                # Not fatal: another allocation of an earlier claim may let this one use a
                # subrequest that needs fewer devices.
                return False

        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]

        if not allocate_sub_request and data.parent is not None:
            # Only one subrequest has to be allocated; try them in order.
            all_exceeded = True
            next_sub = 0
            while (claim_index, request_index, next_sub) in self.request_data:
                try:
                    success = self._allocate_one(
                        (claim_index, request_index, next_sub, device_index), True, (0, 0, 0)
                    )
                except _MaxSizeExceeded:
                    next_sub += 1
                    continue
                all_exceeded = False
                if success:
                    data.selected_sub_request_index = next_sub
                    return True
                next_sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False

        request = data.request
        do_all = request.allocation_mode == _ALL
        if do_all and not data.all_devices:
            return False

        if device_index >= data.num_devices:
            # Done with this request (or subrequest): on to the next request.
            return self._allocate_one((claim_index, request_index + 1, 0, 0), False, (0, 0, 0))

        after = len(self.results[claim_index]) + data.num_devices - device_index
        if after > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded

        if do_all:
            # The devices are known; the order does not matter, so only the next one is tried.
            undo = self._allocate_device(r, data.all_devices[device_index], must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(
                    (claim_index, request_index, sub_index, device_index + 1),
                    allocate_sub_request,
                    (0, 0, 0),
                )
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        pools = self.pools
        for pool_index in range(start[0], len(pools)):
            pool = pools[pool_index]
            # Never from invalid or incomplete pools, but other pools may do.
            if pool.is_incomplete or pool.is_invalid:
                continue
            slice_start = start[1] if pool_index == start[0] else 0
            for slice_index in range(slice_start, len(pool.device_slices)):
                slice_ = pool.device_slices[slice_index]
                devices = (slice_.get("spec") or {}).get("devices") or []
                device_start = start[2] if pool_index == start[0] and slice_index == start[1] else 0
                for candidate_index in range(device_start, len(devices)):
                    # Every candidate, not only every search step: evaluating one device's
                    # selectors may take long (a hostile selector), and a node may have many.
                    self._check_deadline()
                    device = devices[candidate_index]
                    device_id = (pool.driver, pool.pool, device.get("name") or "")
                    # "In use" is cheap, so it comes first.
                    if request.admin_access:
                        if claim_index in self.allocating_devices.get(device_id, ()):
                            continue
                    elif self._device_in_use(device_id):
                        continue
                    if not self._is_selectable(key, data, slice_, device, device_id):
                        continue
                    if self.features.consumable_capacity and not self._fits_capacity(
                        request, device_id, device
                    ):
                        continue
                    candidate = _Candidate(device_id, device, slice_, pool)
                    undo = self._allocate_device(r, candidate, must=False, checked=True)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(
                            (claim_index, request_index, sub_index, device_index + 1),
                            allocate_sub_request,
                            (pool_index, slice_index, candidate_index + 1),
                        )
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    # --- checks ------------------------------------------------------------------------------

    def _device_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.state.allocated_devices or bool(
            self.allocating_devices.get(device_id)
        )

    def _device_capacity_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.state.aggregated_capacity or device_id in self.allocating_capacity

    def _fits_capacity(self, request: _Request, device_id: DeviceID, device: dict) -> bool:
        """``CmpRequestOverCapacity``; a request for a capacity the device lacks never fits."""
        device_capacity = device.get("capacity")
        if not device_capacity:
            # Nothing to consume: fits unless the request names a capacity.
            return not (request.capacity or {}).get("requests")
        if (
            not (request.capacity or {}).get("requests")
            and not self.state.aggregated_capacity.get(device_id)
            and not self.allocating_capacity.get(device_id)
            and _plain_capacity(device, device_capacity)
        ):
            # Nothing requested, nothing consumed, no request policy: the request takes each
            # capacity's whole value, which fits (what request_fits_capacity answers, sooner).
            return True
        consumed = self.state.aggregated_capacity.get(device_id) or {}
        try:
            return request_fits_capacity(
                {name: Quantity.parse(q) for name, q in consumed.items()},
                request.capacity,
                device_capacity,
                self.allocating_capacity.get(device_id),
            )
        except UndefinedCapacityRequest:
            return False

    def _is_selectable(
        self, key: RequestKey, data: _RequestData, slice_: dict, device: dict, device_id: DeviceID
    ) -> bool:
        """Class and request selectors and per-device node selection, cached per request."""
        if not self.features.device_binding_and_status and device.get("bindingConditions"):
            return False
        cache_key = (device_id, key)
        cached = self.matches.get(cache_key)
        if cached is not None:
            return cached
        matches = True
        if data.device_class is not None:
            selectors = (data.device_class.get("spec") or {}).get("selectors") or []
            matches = self._selectors_match(key, device, device_id, data.device_class, selectors)
        if matches and data.request.selectors:
            matches = self._selectors_match(key, device, device_id, None, data.request.selectors)
        if matches and (slice_.get("spec") or {}).get("perDeviceNodeSelection"):
            matches = node_matches(
                self.features,
                self.node,
                device.get("nodeName") or "",
                bool(device.get("allNodes")),
                device.get("nodeSelector"),
            )
        self.matches[cache_key] = matches
        return matches

    def _selectors_match(
        self,
        key: RequestKey,
        device: dict,
        device_id: DeviceID,
        device_class: dict | None,
        selectors: list,
    ) -> bool:
        for i, selector in enumerate(selectors):
            # Before each compile and evaluation: either may take long for a hostile selector.
            self._check_deadline()
            expression = ((selector or {}).get("cel") or {}).get("expression") or ""
            compiled = self.compiled.get(expression)
            if compiled is None:
                compiled = self.owner.cel_cache.get_or_compile(expression)
                self.compiled[expression] = compiled
            if compiled.error is not None:
                raise AllocatorError(
                    f"{self._selector_owner(key, device_class)}: selector #{i}: "
                    f"CEL compile error: {compiled.error}"
                )
            try:
                matched = compiled.device_matches(
                    self._cel_device(device_id, device), self.deadline
                )
            except CELDeadlineExceeded:
                raise AllocationTimeout(_DEADLINE_EXCEEDED) from None
            except CELError as err:
                raise AllocatorError(
                    f"{self._selector_owner(key, device_class)}: selector #{i}: "
                    f"CEL runtime error: {err}"
                ) from err
            if not matched:
                return False
        return True

    def _selector_owner(self, key: RequestKey, device_class: dict | None) -> str:
        if device_class is not None:
            return f"class {(device_class.get('metadata') or {}).get('name') or ''}"
        return f"claim {_kobj(self.claims[key[0]])}"

    def _cel_device(self, device_id: DeviceID, device: dict) -> CELDevice:
        known = _CEL_DEVICES.get(id(device))
        if known is not None and known[0] is device and known[1].driver == device_id[0]:
            return known[1]
        cel_device = CELDevice(
            driver=device_id[0],
            attributes=device.get("attributes") or {},
            capacity=device.get("capacity") or {},
            allow_multiple_allocations=device.get("allowMultipleAllocations"),
        )
        if len(_CEL_DEVICES) >= _CEL_DEVICES_MAX:
            _CEL_DEVICES.clear()
        _CEL_DEVICES[id(device)] = (device, cel_device)
        return cel_device

    # --- allocating one device -----------------------------------------------------------------

    def _allocate_device(
        self, r: DeviceKey, candidate: _Candidate, must: bool, checked: bool = False
    ) -> Callable[[], None] | None:
        """Take ``candidate`` for wanted device ``r`` if it is free and satisfies taints,
        constraints, counters and capacity. Returns the function that gives it back, or
        ``None`` (nothing changed). ``must``: a constraint violation is an error ("All").
        ``checked``: the caller found the device not in use for the request and its capacity
        fitting just now (the search's loop), so neither is asked again: nothing between
        that check and this one changes their answers."""
        claim_index = r[0]
        data = self.request_data[(r[0], r[1], r[2])]
        request = data.request
        device, device_id = candidate.device, candidate.id
        allow_multiple = self.features.consumable_capacity and bool(
            device.get("allowMultipleAllocations")
        )
        if checked:
            pass  # the loop's in-use checks are at least as strict as these
        elif (
            not allow_multiple
            and request.admin_access
            and claim_index in self.allocating_devices.get(device_id, ())
        ):
            return None
        elif not request.admin_access and self._device_in_use(device_id):
            return None
        consumes = device.get("consumesCounters") or []
        if not self.features.partitionable_devices and consumes:
            return None

        # A shared device whose capacity is in use already has its counters accounted for.
        skip_counter_check = allow_multiple and self._device_capacity_in_use(device_id)
        counters_reserved = False
        if not skip_counter_check and consumes:
            if not self._reserve_counters(candidate):
                return None
            counters_reserved = True

        if data.parent is None:
            base_name, sub_name, parent_name = request.name, "", ""
        else:
            base_name, sub_name, parent_name = data.parent.name, request.name, data.parent.name

        constraints = self.constraints[claim_index]
        # What to give back goes to _rollback (a partial on success rather than a closure:
        # this runs per candidate device on every node).
        if (
            self.features.device_taints
            and device.get("taints")
            and _taint_prevents_allocation(device, request)
        ):
            self._rollback(claim_index, candidate, (), "", "", False, counters_reserved)
            return None

        for added, constraint in enumerate(constraints):
            if not constraint.add(base_name, sub_name, device, device_id):
                self._rollback(
                    claim_index,
                    candidate,
                    constraints[:added],
                    base_name,
                    sub_name,
                    False,
                    counters_reserved,
                )
                if must:
                    raise AllocatorError(
                        f"claim {_kobj(self.claims[claim_index])}, request {request.name}: "
                        f"cannot add device {_device_id_str(device_id)} because a claim "
                        "constraint would not be satisfied"
                    )
                return None

        marked = False
        if not allow_multiple:
            self.allocating_devices.setdefault(device_id, set()).add(claim_index)
            marked = True

        share_id: str | None = None
        consumed: dict[str, Quantity] = {}
        capacity: tuple[dict[str, Quantity], bool] | None = None
        if self.features.consumable_capacity:
            if not checked and not self._fits_capacity(request, device_id, device):
                self._rollback(
                    claim_index,
                    candidate,
                    constraints,
                    base_name,
                    sub_name,
                    marked,
                    counters_reserved,
                )
                return None
            if allow_multiple:
                consumed = consumed_capacity_from_request(
                    request.capacity, device.get("capacity") or {}
                )
                share_id = new_share_id()
                capacity = (consumed, device_id in self.allocating_capacity)
                insert_consumed(self.allocating_capacity, device_id, consumed)

        results = self.results[claim_index]
        previous_results = len(results)
        results.append(
            _DeviceResult(
                request=request.name,
                parent_request=parent_name,
                id=device_id,
                device=device,
                slice=candidate.slice,
                share_id=share_id,
                consumed_capacity=dict(consumed) if consumed else None,
                admin_access=True if request.admin_access else None,
            )
        )
        return partial(
            self._rollback,
            claim_index,
            candidate,
            constraints,
            base_name,
            sub_name,
            marked,
            counters_reserved,
            capacity,
            previous_results,
        )

    def _rollback(
        self,
        claim_index: int,
        candidate: _Candidate,
        constraints: Sequence[Constraint],
        base_name: str,
        sub_name: str,
        marked: bool,
        counters_reserved: bool,
        capacity: tuple[dict[str, Quantity], bool] | None = None,
        previous_results: int | None = None,
    ) -> None:
        """Give back what ``_allocate_device`` took, newest first: the result (from
        ``previous_results`` on), the consumed capacity (with whether the device had an
        entry before), the device's mark, the ``constraints`` it was added to, its
        counters."""
        device_id, device = candidate.id, candidate.device
        if previous_results is not None:
            del self.results[claim_index][previous_results:]
        if capacity is not None:
            remove_consumed(self.allocating_capacity, device_id, capacity[0])
            if capacity[1] and device_id not in self.allocating_capacity:
                # An earlier share still marks the device as shared.
                self.allocating_capacity[device_id] = {}
        if marked:
            self.allocating_devices[device_id].discard(claim_index)
        for constraint in reversed(constraints):
            constraint.remove(base_name, sub_name, device, device_id)
        if counters_reserved:
            self._release_counters(candidate)

    def _reserve_counters(self, candidate: _Candidate) -> bool:
        """``checkAvailableCounters``: add the device's counters to those being consumed in its
        pool; if any counter of the pool is then overdrawn, take them back and refuse."""
        pool = candidate.pool
        pool_name = pool.pool
        available = self.owner.available_counters.get(pool_name)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            # Devices whose allocation is complete consume counters; this never changes
            # during one allocation.
            for slices in (pool.device_slices, pool.device_slices_not_targeting_node):
                for slice_ in slices:
                    spec = slice_.get("spec") or {}
                    slice_pool = (spec.get("pool") or {}).get("name") or ""
                    for device in spec.get("devices") or ():
                        device_id = (spec.get("driver") or "", slice_pool, device.get("name") or "")
                        if not is_device_allocated(device_id, self.state):
                            continue
                        for consumption in device.get("consumesCounters") or ():
                            counter_set = available.get(consumption.get("counterSet") or "")
                            if counter_set is None:
                                continue
                            for name, counter in (consumption.get("counters") or {}).items():
                                if name in counter_set:
                                    amount = Quantity.parse((counter or {}).get("value", "0"))
                                    # May go negative: then nothing is available.
                                    counter_set[name] = counter_set[name].sub(amount)
            self.owner.available_counters[pool_name] = available

        consumed_pool = self.consumed_counters.setdefault(pool_name, {})
        for consumption in candidate.device.get("consumesCounters") or ():
            consumed_set = consumed_pool.setdefault(consumption.get("counterSet") or "", {})
            for name, counter in (consumption.get("counters") or {}).items():
                amount = Quantity.parse((counter or {}).get("value", "0"))
                current = consumed_set.get(name)
                consumed_set[name] = amount if current is None else current.add(amount)

        for set_name, counters in available.items():
            consumed_set = consumed_pool.get(set_name) or {}
            for name, counter_value in counters.items():
                used = consumed_set.get(name)
                if used is not None and counter_value.cmp(used) < 0:
                    self._release_counters(candidate)
                    return False
                if used is None and counter_value.value < 0:
                    self._release_counters(candidate)
                    return False
        return True

    def _release_counters(self, candidate: _Candidate) -> None:
        """``deallocateCountersForDevice``."""
        consumed_pool = self.consumed_counters.get(candidate.pool.pool) or {}
        for consumption in candidate.device.get("consumesCounters") or ():
            consumed_set = consumed_pool.setdefault(consumption.get("counterSet") or "", {})
            for name, counter in (consumption.get("counters") or {}).items():
                amount = Quantity.parse((counter or {}).get("value", "0"))
                current = consumed_set.get(name)
                consumed_set[name] = (
                    Quantity.from_int(0, amount.format).sub(amount)
                    if current is None
                    else current.sub(amount)
                )

    # --- results -----------------------------------------------------------------------------

    def _result(self, claim_index: int, claim: dict) -> dict:
        devices_spec = (claim.get("spec") or {}).get("devices") or {}
        requests = devices_spec.get("requests") or []
        entries = []
        for internal in self.results[claim_index]:
            entry: dict[str, Any] = {
                "request": internal.request_name(),
                "driver": internal.id[0],
                "pool": internal.id[1],
                "device": internal.id[2],
            }
            if internal.admin_access is not None:
                entry["adminAccess"] = internal.admin_access
            tolerations = _lookup_request(requests, internal)
            if tolerations:
                entry["tolerations"] = copy.deepcopy(tolerations)
            if self.features.device_binding_and_status:
                for field_name in ("bindingConditions", "bindingFailureConditions"):
                    conditions = internal.device.get(field_name)
                    if conditions:
                        entry[field_name] = list(conditions)
            if internal.share_id is not None:
                entry["shareID"] = internal.share_id
            if internal.consumed_capacity:
                entry["consumedCapacity"] = {
                    name: str(q) for name, q in internal.consumed_capacity.items()
                }
            entries.append(entry)

        config: list[dict] = []
        # Each class's configs are added once; later requests of the class are appended.
        class_ranges: dict[str, tuple[int, int]] = {}
        for request_index in range(len(requests)):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent is not None:
                data = self.request_data[
                    (claim_index, request_index, data.selected_sub_request_index)
                ]
            device_class = data.device_class
            if device_class is None:
                continue
            class_name = (device_class.get("metadata") or {}).get("name") or ""
            if class_name in class_ranges:
                begin, end = class_ranges[class_name]
                for i in range(begin, end):
                    config[i]["requests"].append(data.request_name())
                continue
            begin = len(config)
            for class_config in (device_class.get("spec") or {}).get("config") or ():
                config.append(
                    {"source": "FromClass", "requests": [data.request_name()]}
                    | copy.deepcopy(dict(class_config))
                )
            class_ranges[class_name] = (begin, len(config))
        for claim_config in devices_spec.get("config") or ():
            names = claim_config.get("requests") or []
            body = {k: copy.deepcopy(v) for k, v in claim_config.items() if k != "requests"}
            if not names:
                config.append({"source": "FromClaim"} | body)
                continue
            for request_index, request in enumerate(requests):
                if (request.get("name") or "") in names:
                    config.append({"source": "FromClaim", "requests": list(names)} | body)
                    continue
                data = self.request_data[(claim_index, request_index, 0)]
                if data.parent is None:
                    continue
                sub = (request.get("firstAvailable") or [])[data.selected_sub_request_index]
                if f"{request.get('name') or ''}/{sub.get('name') or ''}" in names:
                    config.append({"source": "FromClaim", "requests": list(names)} | body)

        # As the API serves it: empty lists are omitted (omitempty).
        devices: dict[str, Any] = {}
        if entries:
            devices["results"] = entries
        if config:
            devices["config"] = config
        result: dict[str, Any] = {"devices": devices}
        claim_name = (claim.get("metadata") or {}).get("name") or ""
        selector = _node_selector(self.results[claim_index], self.node_name, claim_name)
        if selector is not None:
            result["nodeSelector"] = selector
        return result


def _claim_constraints(claim: dict, devices: dict) -> list[Constraint]:
    """The claim's constraints, new (they record the devices added to them)."""
    constraints: list[Constraint] = []
    for i, constraint in enumerate(devices.get("constraints") or ()):
        requests = constraint.get("requests") or []
        if constraint.get("matchAttribute") is not None:
            constraints.append(MatchAttribute(requests, constraint["matchAttribute"]))
        elif constraint.get("distinctAttribute") is not None:
            constraints.append(DistinctAttribute(requests, constraint["distinctAttribute"]))
        else:
            raise AllocatorError(
                f"claim {_kobj(claim)}, constraint #{i}: empty constraint "
                "(unsupported constraint type?)"
            )
    return constraints


def _index_slices(all_slices: list[dict]) -> tuple[dict[str, list[dict]], list[dict]]:
    """The slices by node name, and those for no single node (or with counters), memoised
    while the slice list holds the very same objects (the next cycle's, usually). The
    answer is read-only for its users."""
    global _SLICE_INDEX
    known = _SLICE_INDEX  # one read: another thread may replace it meanwhile
    if known is not None and len(known[0]) == len(all_slices):
        # map(is_) walks the two lists in C: this runs per pod over every slice.
        if all(map(is_, known[0], all_slices)):
            return known[1], known[2]
    # Slices that left (deleted, replaced by an update or a relist): what the module's caches
    # derived from them goes too, so their memory is given back.
    if known is not None:
        live = set(map(id, all_slices))
        forget_resource_slices([s for s in known[0] if id(s) not in live])
    else:
        _keep_only(all_slices)  # the index was dropped (forget_resource_slices): sweep all
    on_node: dict[str, list[dict]] = {}
    shared: list[dict] = []
    for slice_ in all_slices:
        spec = slice_.get("spec") or {}
        node_name = spec.get("nodeName") or ""
        if not node_name or spec.get("sharedCounters"):
            shared.append(slice_)
        else:
            on_node.setdefault(node_name, []).append(slice_)
    _SLICE_INDEX = (tuple(all_slices), on_node, shared)
    return on_node, shared


def forget_resource_slices(slices: Iterable[dict]) -> None:
    """Drop what this module keeps of ResourceSlice objects that left the cluster (deleted,
    or replaced by an update): their devices' CEL views (the CEL layer's caches hold those
    weakly and follow), their capacity answers, the node pools and the slice index holding
    them. The slice cache's delete and update paths call this; :func:`_index_slices` does
    too for the slices missing from a new list (a relist replaces every object silently)."""
    global _SLICE_INDEX
    gone = {id(s): s for s in slices}  # held for the call: an id here is that very object
    if not gone:
        return
    for slice_ in gone.values():
        spec = slice_.get("spec") if isinstance(slice_, dict) else None
        devices = spec.get("devices") if isinstance(spec, dict) else None
        for device in devices if isinstance(devices, list) else ():
            for cache in (_CEL_DEVICES, _PLAIN_CAPACITY):
                known = cache.get(id(device))
                if known is not None and known[0] is device:
                    cache.pop(id(device), None)
    for cache in (_CEL_DEVICES, _PLAIN_CAPACITY):
        if not cache:
            cache.clear()  # an emptied dict keeps its table; clear() gives it back
    for name, entry in list(_NODE_POOLS.items()):
        if any(id(s) in gone for s in entry[2]):
            _NODE_POOLS.pop(name, None)
            _NODE_ANSWERS.pop(name, None)
    if not _NODE_POOLS:
        _NODE_POOLS.clear()
        _NODE_ANSWERS.clear()
    index = _SLICE_INDEX
    if index is not None and any(id(s) in gone for s in index[0]):
        # Rebuilt at the next allocation, which then sweeps the caches against the live
        # slices (an allocation under way may still have added a gone slice's devices).
        _SLICE_INDEX = None


def _keep_only(all_slices: list[dict]) -> None:
    """Drop the cache entries of every device and slice not in ``all_slices``."""
    live = set(map(id, all_slices))
    devices: set[int] = set()
    for slice_ in all_slices:
        spec = slice_.get("spec") if isinstance(slice_, dict) else None
        listed = spec.get("devices") if isinstance(spec, dict) else None
        if isinstance(listed, list):
            devices.update(map(id, listed))
    for cache in (_CEL_DEVICES, _PLAIN_CAPACITY):
        for key in [k for k in list(cache) if k not in devices]:
            cache.pop(key, None)
    for name, entry in list(_NODE_POOLS.items()):
        if not all(id(s) in live for s in entry[2]):
            _NODE_POOLS.pop(name, None)
            _NODE_ANSWERS.pop(name, None)


def _plain_capacity(device: dict, device_capacity: Any) -> bool:
    """Whether every capacity of ``device`` is a valid quantity without a request policy
    (memoised per device object, as the CEL view is)."""
    known = _PLAIN_CAPACITY.get(id(device))
    if known is not None and known[0] is device:
        return known[1]
    plain = isinstance(device_capacity, dict)
    if plain:
        for capacity in device_capacity.values():
            if not isinstance(capacity, dict) or capacity.get("requestPolicy") is not None:
                plain = False
                break
            try:
                Quantity.parse(capacity.get("value", "0"))
            except (ValueError, TypeError, AttributeError):
                plain = False  # the reference path raises the error it always did
                break
    if len(_PLAIN_CAPACITY) >= _CEL_DEVICES_MAX:
        _PLAIN_CAPACITY.clear()
    _PLAIN_CAPACITY[id(device)] = (device, plain)
    return plain


def _answer_device_ids(pools: list[Pool]) -> tuple[DeviceID, ...] | None:
    """The IDs of the devices the pools offer the node, in order, for :data:`_NODE_ANSWERS`;
    ``None`` when the search reads more than which of them are taken (counters, pools
    incomplete or invalid, slices not for the node)."""
    ids: list[DeviceID] = []
    for pool in pools:
        if (
            pool.is_incomplete
            or pool.is_invalid
            or pool.counter_sets
            or pool.device_slices_not_targeting_node
        ):
            return None
        for slice_ in pool.device_slices:
            for device in (slice_.get("spec") or {}).get("devices") or ():
                if device.get("consumesCounters"):
                    return None
                ids.append((pool.driver, pool.pool, device.get("name", "")))
    return tuple(ids)


def _pools_for_node(
    node_name: str, node: dict | None, slices: list[dict], owner: Allocator
) -> list[Pool]:
    """``gather_pools`` for a node, memoised across cycles while its inputs are unchanged."""
    known = _NODE_POOLS.get(node_name) if node_name else None
    if (
        known is not None
        and known[0] is node
        and (known[1] is owner.features or known[1] == owner.features)
        and len(known[2]) == len(slices)
        and all(a is b for a, b in zip(known[2], slices, strict=True))
    ):
        return known[3]
    consulted: list[bool] = []
    pools = gather_pools(slices, node, owner.features, owner.all_slices, consulted)
    if node_name and not consulted:
        if len(_NODE_POOLS) >= _NODE_POOLS_MAX:
            _NODE_POOLS.clear()
        _NODE_POOLS[node_name] = (node, owner.features, tuple(slices), pools)
    return pools


def _lookup_request(requests: list, internal: _DeviceResult) -> list:
    """The tolerations of the request (or subrequest) a device was allocated for."""
    wanted = internal.parent_request or internal.request
    for request in requests:
        if (request.get("name") or "") != wanted:
            continue
        if not internal.parent_request:
            return (request.get("exactly") or {}).get("tolerations") or []
        for sub in request.get("firstAvailable") or ():
            if (sub.get("name") or "") == internal.request:
                return sub.get("tolerations") or []
    return []


def _taint_prevents_allocation(device: dict, request: _Request) -> bool:
    """Only NoSchedule and NoExecute taints prevent allocation (None and unknown effects do
    not); a toleration of the request must match each of them."""
    for taint in device.get("taints") or ():
        if taint.get("effect") in _TAINT_EFFECTS_PREVENTING and not any(
            tolerates(toleration, taint) for toleration in request.tolerations
        ):
            return True
    return False


def tolerates(toleration: dict, taint: dict) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def _node_selector(results: list[_DeviceResult], node_name: str, claim_name: str) -> dict | None:
    """``createNodeSelector``: the node, if any device is local to it; else the union of the
    (single-term) node selectors of the devices' slices; ``None``: available everywhere."""
    fields: list[dict] = []
    expressions: list[dict] = []
    for internal in results:
        spec = internal.slice.get("spec") or {}
        if spec.get("perDeviceNodeSelection"):
            local_name = internal.device.get("nodeName")
            selector = internal.device.get("nodeSelector")
        else:
            local_name = spec.get("nodeName")
            selector = spec.get("nodeSelector")
        if local_name is not None or internal.device.get("bindsToNode"):
            return {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            }
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) == 1:
                _add_requirements(terms[0].get("matchFields") or [], fields)
                _add_requirements(terms[0].get("matchExpressions") or [], expressions)
            elif len(terms) > 1:
                raise AllocatorError(
                    f"create NodeSelector for claim {claim_name}: unsupported "
                    f"ResourceSlice.NodeSelector with {len(terms)} terms"
                )
    if not fields and not expressions:
        return None
    term: dict[str, list] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _add_requirements(source: list, target: list) -> None:
    for requirement in source:
        values = set(requirement.get("values") or ())
        if not any(
            existing.get("key") == requirement.get("key")
            and existing.get("operator") == requirement.get("operator")
            and set(existing.get("values") or ()) == values
            for existing in target
        ):
            target.append(copy.deepcopy(requirement))
