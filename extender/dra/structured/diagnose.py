"""Why the structured allocator found no devices on a node: a reader's diagnosis.

Read-only and separate from the search. ``diagnose`` takes the same inputs as
:class:`~extender.dra.structured.Allocator` (features, allocated state, class lister, slices, CEL
cache), a node and the claims that did not fit there, and says per claim and request what
failed: each request is first tried on its own (the real allocator, on a copy of the claim with
just that request and no constraints), and for a request that does not fit alone the node's
devices are sorted into why each one cannot serve it; when every request fits alone, each claim
is tried on its own (its constraints), then the claims together.

It never changes what Filter decides: the allocator is only asked, never altered, and nothing
passed in is mutated. It is meant for nodes Filter has rejected (``cannot allocate all
claims``); upstream's message stays the Filter status, this is explain's ``detail``.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from extender.dra.cel import CELCache, CELDevice, CELError
from extender.dra.structured.allocator import Allocator, tolerates
from extender.dra.structured.capacity import (
    Quantity,
    QuantityError,
    UndefinedCapacityRequest,
    request_fits_capacity,
)
from extender.dra.structured.constraints import lookup_attribute
from extender.dra.structured.pools import Pool, gather_pools, node_matches
from extender.dra.structured.types import (
    AllocatedState,
    AllocatorError,
    DeviceID,
    Features,
    is_device_allocated,
)

# The reason kinds, stable (explain -o json shows them).
NO_SLICES = "NoSlices"
INCOMPLETE_POOL = "IncompletePool"
INVALID_POOL = "InvalidPool"
NO_CLASS = "NoDeviceClass"
NO_MATCH = "NoMatchingDevice"
ALLOCATED = "DevicesAllocated"
TAINTED = "DeviceTaintNotTolerated"
COUNTERS = "CountersExhausted"
CAPACITY = "CapacityInsufficient"
TOO_FEW = "NotEnoughDevices"
CONSTRAINT = "ConstraintUnmet"
COMBINATION = "RequestsTogether"
ERROR = "Error"

_TAINT_EFFECTS_PREVENTING = ("NoSchedule", "NoExecute")
# Blocking reasons of a matching device, in the order they are checked.
_BLOCKED_ORDER = (ALLOCATED, CAPACITY, TAINTED, COUNTERS)
_SHOWN_OWNERS = 3


@dataclass
class RequestDiagnosis:
    """Why ``claim`` (``namespace/name``) cannot get devices on the node; ``request`` is the
    request (``""``: the claim as a whole, or all claims together: ``claim`` ``""``)."""

    claim: str
    request: str
    reason: str
    message: str

    def text(self) -> str:
        where = f"claim {self.claim}" if self.claim else "the claims together"
        if self.request:
            where += f", request {self.request}"
        return f"{where}: {self.message}"


@dataclass
class _Sorted:
    """The devices a node offers one request, sorted by why each can or cannot serve it."""

    total: int = 0
    class_matches: int = 0
    matching: int = 0
    usable: list[tuple[DeviceID, dict, Pool]] = field(default_factory=list)
    blocked: dict[str, list[DeviceID]] = field(default_factory=dict)
    taints: Counter[str] = field(default_factory=Counter)


def _kobj(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def diagnose(
    features: Features,
    allocated_state: AllocatedState,
    class_lister: Callable[[str], dict | None],
    slices: Sequence[dict],
    cel_cache: CELCache,
    node: dict | None,
    claims: Sequence[dict],
    owners: Mapping[DeviceID, Sequence[str]] | None = None,
) -> list[RequestDiagnosis]:
    """Per claim and request, why the claims get no devices on ``node`` (empty: they fit
    there). ``owners``: the claims holding each allocated device, to name them."""
    diagnoser = Diagnoser(features, allocated_state, class_lister, slices, cel_cache)
    return diagnoser.diagnose(node, claims, owners)


class Diagnoser:
    """:func:`diagnose` for many nodes over the same inputs (one allocator, built once)."""

    def __init__(
        self,
        features: Features,
        allocated_state: AllocatedState,
        class_lister: Callable[[str], dict | None],
        slices: Sequence[dict],
        cel_cache: CELCache,
    ) -> None:
        self.features = features
        self.state = allocated_state
        self.class_lister = class_lister
        self.slices = list(slices)
        self.cel_cache = cel_cache
        self.allocator = Allocator(features, allocated_state, class_lister, slices, cel_cache)

    def diagnose(
        self,
        node: dict | None,
        claims: Sequence[dict],
        owners: Mapping[DeviceID, Sequence[str]] | None = None,
    ) -> list[RequestDiagnosis]:
        return _Diagnosis(self, node, owners or {}).run(list(claims))


class _Diagnosis:
    def __init__(
        self, owner: Diagnoser, node: dict | None, owners: Mapping[DeviceID, Sequence[str]]
    ) -> None:
        self.features = owner.features
        self.state = owner.state
        self.class_lister = owner.class_lister
        self.cel_cache = owner.cel_cache
        self.allocator = owner.allocator
        self.all_slices = owner.slices
        self.node = node
        self.node_name = ((node or {}).get("metadata") or {}).get("name") or ""
        self.owners = owners
        on_node = self.allocator.slices_on_node.get(self.node_name, []) if self.node_name else []
        self.pools = gather_pools(
            on_node + self.allocator.slices_shared, node, self.features, self.all_slices
        )
        self._counters: dict[tuple[str, str], dict[str, dict[str, Quantity]]] = {}

    # -- the steps ------------------------------------------------------------------------------

    def _fits(self, claims: list[dict]) -> str | None:
        """None: the allocator finds devices for ``claims``; else why not ("" : no fit)."""
        try:
            return None if self.allocator.allocate(self.node, claims) is not None else ""
        except AllocatorError as exc:
            return str(exc)

    def run(self, claims: list[dict]) -> list[RequestDiagnosis]:
        out: list[RequestDiagnosis] = []
        usable: dict[tuple[int, str], list[tuple[DeviceID, dict, Pool]]] = {}
        for index, claim in enumerate(claims):
            for request in _requests(claim):
                name = request.get("name") or ""
                found = self._request(claim, request)
                if isinstance(found, RequestDiagnosis):
                    out.append(found)
                else:
                    usable[(index, name)] = found
        if out:
            return out
        for index, claim in enumerate(claims):
            problem = self._fits([claim])
            if problem is None:
                continue
            if problem:
                out.append(RequestDiagnosis(_kobj(claim), "", ERROR, problem))
                continue
            out.append(self._claim_together(index, claim, usable))
        if out:
            return out
        problem = self._fits(claims)
        if problem is None:
            return []
        message = problem or (
            "each claim fits on its own, but the claims together need more devices (or device "
            "capacity) than the node has free"
        )
        return [RequestDiagnosis("", "", ERROR if problem else COMBINATION, message)]

    def _request(
        self, claim: dict, request: dict
    ) -> RequestDiagnosis | list[tuple[DeviceID, dict, Pool]]:
        """The usable devices of a request that fits alone, or why it does not."""
        name = request.get("name") or ""
        alone = _only_request(claim, request)
        subrequests = request.get("firstAvailable") or []
        if not subrequests:
            problem = self._fits([alone])
            exactly = request.get("exactly") or {}
            if problem is None:
                return self._sort(exactly).usable
            if problem:
                return RequestDiagnosis(_kobj(claim), name, ERROR, problem)
            reason, message = self._why(exactly)
            return RequestDiagnosis(_kobj(claim), name, reason, message)
        whys: list[tuple[str, str]] = []
        for sub in subrequests:
            sub_name = sub.get("name") or ""
            one = _only_request(claim, {"name": name, "firstAvailable": [sub]})
            problem = self._fits([one])
            if problem is None:
                return self._sort(sub).usable
            whys.append((ERROR, problem) if problem else self._why(sub))
            whys[-1] = (whys[-1][0], f"{sub_name}: {whys[-1][1]}")
        message = "no subrequest fits: " + "; ".join(m for _, m in whys)
        return RequestDiagnosis(_kobj(claim), name, whys[0][0], message)

    def _claim_together(
        self, index: int, claim: dict, usable: dict[tuple[int, str], list]
    ) -> RequestDiagnosis:
        """A claim whose requests each fit alone but not together."""
        devices = (claim.get("spec") or {}).get("devices") or {}
        names = [r.get("name") or "" for r in devices.get("requests") or ()]
        for constraint in devices.get("constraints") or ():
            attribute = constraint.get("matchAttribute") or constraint.get("distinctAttribute")
            if not attribute:
                continue
            over = constraint.get("requests") or names
            trial = copy.deepcopy(claim)
            trial["spec"]["devices"]["constraints"] = [constraint]
            if self._fits([trial]) is None:
                continue
            kind = "matchAttribute" if constraint.get("matchAttribute") else "distinctAttribute"
            values = []
            for request in over:
                seen = sorted(
                    {
                        _attribute_text(lookup_attribute(device, device_id, attribute))
                        for device_id, device, _ in usable.get((index, request.split("/")[0]), [])
                    }
                )
                values.append(f"{request}: {', '.join(seen) or 'none'}")
            need = "one value common to" if kind == "matchAttribute" else "a different value for"
            return RequestDiagnosis(
                _kobj(claim),
                "",
                CONSTRAINT,
                f"constraint {kind} {attribute} over requests {', '.join(over)} cannot be met: "
                f"the free devices offer no {need} all of them ({'; '.join(values)})",
            )
        return RequestDiagnosis(
            _kobj(claim),
            "",
            COMBINATION,
            "each request fits on its own, but the requests together need more devices (or "
            "device capacity) than the node has free",
        )

    # -- why one request does not fit ------------------------------------------------------------

    def _why(self, request: dict) -> tuple[str, str]:
        class_name = request.get("deviceClassName") or ""
        if self.class_lister(class_name) is None:
            return NO_CLASS, f"DeviceClass {class_name} does not exist"
        found = self._sort(request)
        incomplete = [p for p in self.pools if p.is_incomplete]
        invalid = [p for p in self.pools if p.is_invalid]
        if not self.pools:
            return NO_SLICES, "no ResourceSlice publishes devices for this node"
        if found.matching == 0:
            if incomplete:
                return INCOMPLETE_POOL, "; ".join(self._incomplete(p) for p in incomplete)
            if invalid:
                return INVALID_POOL, "; ".join(
                    f"resource pool {p.pool_id} is invalid ({p.invalid_reason})" for p in invalid
                )
            if found.class_matches == 0:
                drivers = ", ".join(sorted({p.driver for p in self.pools}))
                return NO_MATCH, (
                    f"none of the node's {_plural(found.total, 'device')} (driver {drivers}) "
                    f"matches DeviceClass {class_name}"
                )
            return NO_MATCH, (
                f"{_plural(found.class_matches, 'device')} of DeviceClass {class_name}, none "
                "matches the request's selectors"
            )
        all_mode = request.get("allocationMode") == "All"
        needed = found.matching if all_mode else int(request.get("count") or 0)
        head = (
            f"needs {'all ' if all_mode else ''}{_plural(needed, 'device')} of DeviceClass "
            f"{class_name}: {found.matching} match, {len(found.usable)} free"
        )
        parts = [
            self._blocked_text(kind, found) for kind in _BLOCKED_ORDER if kind in found.blocked
        ]
        if len(found.usable) < needed:
            # The most common blocker; on a tie the later check, the more specific one.
            kinds = [k for k in reversed(_BLOCKED_ORDER) if k in found.blocked]
            if not kinds:  # the node has fewer matching devices than the request wants
                return TOO_FEW, head
            dominant = max(kinds, key=lambda k: len(found.blocked[k]))
            return dominant, head + (f" ({'; '.join(parts)})" if parts else "")
        consumers = [d for _, d, _ in found.usable if d.get("consumesCounters")]
        if consumers:
            return COUNTERS, (
                f"{head}, but they share counters: together they need more than their pool has left"
            )
        return COMBINATION, f"{head}, but no combination of them satisfies the request"

    def _incomplete(self, pool: Pool) -> str:
        published = [
            s
            for s in self.all_slices
            if ((s.get("spec") or {}).get("driver") or "") == pool.driver
            and (((s.get("spec") or {}).get("pool") or {}).get("name") or "") == pool.pool
        ]
        counts = {
            int((s["spec"].get("pool") or {}).get("resourceSliceCount") or 0) for s in published
        }
        wanted = max(counts) if counts else 0
        return (
            f"resource pool {pool.pool_id} is incomplete ({len(published)} of {wanted} "
            "ResourceSlices published): its devices are not used until all are there"
        )

    def _blocked_text(self, kind: str, found: _Sorted) -> str:
        devices = found.blocked[kind]
        n = _plural(len(devices), "device")
        if kind == ALLOCATED:
            names = sorted({o for d in devices for o in self.owners.get(d, ())})
            if not names:
                return f"{n} allocated"
            shown = ", ".join(names[:_SHOWN_OWNERS])
            more = f" (+{len(names) - _SHOWN_OWNERS})" if len(names) > _SHOWN_OWNERS else ""
            return f"{n} allocated, to claim{'s' if len(names) > 1 else ''} {shown}{more}"
        if kind == TAINTED:
            taints = ", ".join(sorted(found.taints))
            return f"{n} with a taint the request does not tolerate ({taints})"
        if kind == COUNTERS:
            return f"{n} whose shared counters are used up"
        return f"{n} without enough free capacity"

    def _sort(self, request: dict) -> _Sorted:
        found = _Sorted()
        device_class = self.class_lister(request.get("deviceClassName") or "")
        class_selectors = ((device_class or {}).get("spec") or {}).get("selectors") or []
        selectors = request.get("selectors") or []
        admin = bool(request.get("adminAccess"))
        for pool in self.pools:
            if pool.is_incomplete or pool.is_invalid:
                continue
            for slice_ in pool.device_slices:
                spec = slice_.get("spec") or {}
                for device in spec.get("devices") or ():
                    found.total += 1
                    device_id = (pool.driver, pool.pool, device.get("name") or "")
                    if (
                        device.get("bindingConditions")
                        and not self.features.device_binding_and_status
                    ):
                        continue
                    if not self._matches(device_id, device, class_selectors):
                        continue
                    found.class_matches += 1
                    if not self._matches(device_id, device, selectors):
                        continue
                    if spec.get("perDeviceNodeSelection") and not node_matches(
                        self.features,
                        self.node,
                        device.get("nodeName") or "",
                        bool(device.get("allNodes")),
                        device.get("nodeSelector"),
                    ):
                        continue
                    found.matching += 1
                    kind = self._blocked(device_id, device, pool, request, admin, found)
                    if kind is None:
                        found.usable.append((device_id, device, pool))
                    else:
                        found.blocked.setdefault(kind, []).append(device_id)
        return found

    def _blocked(
        self,
        device_id: DeviceID,
        device: dict,
        pool: Pool,
        request: dict,
        admin: bool,
        found: _Sorted,
    ) -> str | None:
        shared = self.features.consumable_capacity and bool(device.get("allowMultipleAllocations"))
        if not admin and device_id in self.state.allocated_devices:
            return ALLOCATED
        if self.features.consumable_capacity and not self._fits_capacity(
            request, device_id, device
        ):
            return CAPACITY
        if self.features.device_taints:
            untolerated = [
                t
                for t in device.get("taints") or ()
                if t.get("effect") in _TAINT_EFFECTS_PREVENTING
                and not any(tolerates(tol, t) for tol in request.get("tolerations") or ())
            ]
            if untolerated:
                for taint in untolerated:
                    value = f"={taint['value']}" if taint.get("value") else ""
                    found.taints[f"{taint.get('key', '')}{value}:{taint.get('effect')}"] += 1
                return TAINTED
        consumes = device.get("consumesCounters") or []
        if consumes and not (shared and device_id in self.state.aggregated_capacity):
            if not self.features.partitionable_devices or not self._counters_fit(pool, consumes):
                return COUNTERS
        return None

    # -- device checks ---------------------------------------------------------------------------

    def _matches(self, device_id: DeviceID, device: dict, selectors: list) -> bool:
        cel_device = CELDevice(
            driver=device_id[0],
            attributes=device.get("attributes") or {},
            capacity=device.get("capacity") or {},
            allow_multiple_allocations=device.get("allowMultipleAllocations"),
        )
        for selector in selectors:
            expression = ((selector or {}).get("cel") or {}).get("expression") or ""
            # The allocator's memo: compiled once per Diagnoser even when more expressions
            # are in play than the shared LRU holds (or one does not compile).
            compiled = self.allocator.compiled.get(expression)
            if compiled is None:
                compiled = self.cel_cache.get_or_compile(expression)
                self.allocator.compiled[expression] = compiled
            if compiled.error is not None:
                return False
            try:
                if not compiled.device_matches(cel_device):
                    return False
            except CELError:
                return False
        return True

    def _fits_capacity(self, request: dict, device_id: DeviceID, device: dict) -> bool:
        capacity = device.get("capacity")
        wanted = request.get("capacity")
        if not capacity:
            return not (wanted or {}).get("requests")
        consumed = self.state.aggregated_capacity.get(device_id) or {}
        try:
            return request_fits_capacity(
                {name: Quantity.parse(q) for name, q in consumed.items()}, wanted, capacity, None
            )
        except (UndefinedCapacityRequest, QuantityError, ValueError):
            return False

    def _counters_fit(self, pool: Pool, consumes: list) -> bool:
        """The device alone fits in what its pool's counters have left after the allocated
        devices (upstream's available counters)."""
        available = self._available_counters(pool)
        for consumption in consumes:
            counters = available.get(consumption.get("counterSet") or "")
            if counters is None:
                return False
            for name, counter in (consumption.get("counters") or {}).items():
                have = counters.get(name)
                try:
                    amount = Quantity.parse((counter or {}).get("value", "0"))
                except (QuantityError, ValueError):
                    return False
                if have is None or have.cmp(amount) < 0:
                    return False
        return True

    def _available_counters(self, pool: Pool) -> dict[str, dict[str, Quantity]]:
        key = (pool.driver, pool.pool)
        known = self._counters.get(key)
        if known is not None:
            return known
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        for slices in (pool.device_slices, pool.device_slices_not_targeting_node):
            for slice_ in slices:
                for device in (slice_.get("spec") or {}).get("devices") or ():
                    device_id = (pool.driver, pool.pool, device.get("name") or "")
                    if not is_device_allocated(device_id, self.state):
                        continue
                    for consumption in device.get("consumesCounters") or ():
                        counters = available.get(consumption.get("counterSet") or "")
                        for name, counter in (consumption.get("counters") or {}).items():
                            if counters is not None and name in counters:
                                amount = Quantity.parse((counter or {}).get("value", "0"))
                                counters[name] = counters[name].sub(amount)
        self._counters[key] = available
        return available


def _requests(claim: dict) -> list[dict]:
    return ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []


def _only_request(claim: dict, request: dict) -> dict:
    """A copy of ``claim`` with only ``request`` and no constraints or config."""
    trial = {k: v for k, v in claim.items() if k != "status"}
    trial["spec"] = {"devices": {"requests": [copy.deepcopy(request)]}}
    return trial


def _attribute_text(attribute: dict | None) -> str:
    if not attribute:
        return "(none)"
    for value in attribute.values():
        return str(value).lower() if isinstance(value, bool) else str(value)
    return "(none)"
