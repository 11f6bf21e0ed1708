"""The claim tracker shared by scheduling cycles (upstream
``pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go`` ``claimTracker`` and
``allocateddevices.go``; the assume cache of ``pkg/scheduler/util/assumecache``).

* The assume cache: a claim the plugin wrote in PreBind shadows the informer's copy until the
  informer holds that version or a newer one, so the next cycle sees the allocation before the
  watch delivers it.
* In-flight allocations: Reserve records the allocation of each claim it allocated, PreBind or
  Unreserve drops it. Their devices count as allocated for every other pod, so two pods never
  get the same device while the first one's API write is on its way.
* The allocated state: the devices of every allocated claim (assumed view) plus the in-flight
  ones, what the allocator must not hand out again (``GatherAllocatedState``). Kept
  incrementally, as upstream's ``allocatedDevices`` follows claim events: each claim's devices
  are counted once per claim object, and a cycle refreshes only the claims that changed since
  the last one (the informer's journal, ``changed_since``, and the assume cache's writes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from extender.framework.handle import Lister

from .claims import allocation, meta

DeviceID = tuple[str, str, str]  # (driver, pool, device)
SharedDeviceID = tuple[str, str, str, str]  # (driver, pool, device, shareID)
_ID = TypeVar("_ID", DeviceID, SharedDeviceID)


def _rv(obj: dict | None) -> int:
    try:
        return int(meta(obj or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


@dataclass
class AllocatedDevices:
    """The devices taken by allocated claims (``structured.AllocatedState`` inputs):
    dedicated devices, shared devices (consumable capacity: one share each) and the capacity
    the shares consume, per device."""

    devices: set[DeviceID] = field(default_factory=set)
    shared: set[SharedDeviceID] = field(default_factory=set)
    # (device, capacity name -> quantity as the API writes it), one entry per shared result
    consumed: list[tuple[DeviceID, dict[str, str]]] = field(default_factory=list)

    def add_claim(self, claim: dict, consumable_capacity: bool) -> None:
        """``foreachAllocatedDevice``: admin-access results are not allocated; with
        consumable capacity a result with a ``shareID`` takes one share and its capacity."""
        alloc = allocation(claim)
        if alloc is None:
            return
        for result in (alloc.get("devices") or {}).get("results") or ():
            if result.get("adminAccess"):
                continue
            device = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            share = result.get("shareID")
            if share is not None:
                if consumable_capacity:
                    self.shared.add((*device, share))
                    self.consumed.append((device, dict(result.get("consumedCapacity") or {})))
                    continue
            self.devices.add(device)


@runtime_checkable
class JournaledLister(Lister, Protocol):
    """A lister that tells which keys (``namespace/name``) changed since a change number
    (``Informer.changed_since``); ``None``: it cannot tell, compare everything."""

    def changed_since(self, mark: int) -> tuple[int, list[str] | None]: ...


def _add_counts(counts: dict[_ID, int], ids: Iterable[_ID], delta: int) -> None:
    """Add ``delta`` to the count of each of ``ids``; a count that reaches 0 is dropped."""
    for device in ids:
        left = counts.get(device, 0) + delta
        if left:
            counts[device] = left
        else:
            del counts[device]


class _AllocatedIndex:
    """The allocated devices of the claims (assumed view), kept per claim key: what each
    claim object adds (``AllocatedDevices.add_claim``) and how many claims hold each device,
    so that a changed claim costs its own devices only."""

    def __init__(self, consumable_capacity: bool) -> None:
        self.consumable_capacity = consumable_capacity
        # key -> (the claim object counted, what it adds)
        self.claims: dict[str, tuple[dict, AllocatedDevices]] = {}
        self.devices: dict[DeviceID, int] = {}
        self.shared: dict[SharedDeviceID, int] = {}
        # Claims whose part has consumed capacity (their order matters: see state()).
        self.consuming = 0

    def set(self, key: str, claim: dict | None) -> None:
        known = self.claims.get(key)
        if known is not None:
            if known[0] is claim:
                return
            self._count(known[1], -1)
            del self.claims[key]
            _forget_part(known[0])  # deleted or replaced: its memo goes with it
        if claim is None:
            return
        part = _part(claim, self.consumable_capacity)
        self.claims[key] = (claim, part)
        self._count(part, 1)

    def _count(self, part: AllocatedDevices, delta: int) -> None:
        _add_counts(self.devices, part.devices, delta)
        _add_counts(self.shared, part.shared, delta)
        if part.consumed:
            self.consuming += delta


class ClaimTracker:
    """Assumed claims and in-flight allocations over the claims informer's store."""

    def __init__(self, claims: Lister) -> None:
        self.claims = claims
        self._lock = threading.Lock()
        self._assumed: dict[str, dict] = {}
        # claim UID -> [claim with the allocation, number of pods sharing it]
        self._in_flight: dict[str, list] = {}
        # The allocated state kept across cycles; the informer's change number it has
        # seen; keys the assume cache changed since.
        self._index: _AllocatedIndex | None = None
        self._journal = claims if isinstance(claims, JournaledLister) else None
        self._mark = -1
        self._dirty: set[str] = set()

    # -- the assume cache ----------------------------------------------------------------------

    def _current(self, key: str, api: dict | None) -> dict | None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None or _rv(api) > _rv(assumed):
            self._assumed.pop(key, None)  # the informer moved on (or the claim is gone)
            return api
        return assumed

    def get(self, namespace: str, name: str) -> dict | None:
        with self._lock:
            return self._current(f"{namespace}/{name}", self.claims.get(namespace, name))

    def list(self) -> list[dict]:
        out = []
        with self._lock:
            if not self._assumed:  # the usual case between writes: the informer's view
                return list(self.claims.list())
            for claim in self.claims.list():
                m = meta(claim)
                current = self._current(f"{m.get('namespace', '')}/{m.get('name', '')}", claim)
                if current is not None:
                    out.append(current)
        return out

    def assume_claim_after_api_call(self, claim: dict) -> None:
        """Store what the API answered to our write (``AssumeClaimAfterAPICall``); an older
        version than the informer's is ignored, as upstream's ``Assume`` refuses it."""
        m = meta(claim)
        key = f"{m.get('namespace', '')}/{m.get('name', '')}"
        with self._lock:
            api = self.claims.get(m.get("namespace", ""), m.get("name", ""))
            if api is not None and _rv(api) > _rv(claim):
                return
            self._assumed[key] = claim
            self._dirty.add(key)

    def assumed_claim_restore(self, namespace: str, name: str) -> None:
        with self._lock:
            key = f"{namespace}/{name}"
            self._assumed.pop(key, None)
            self._dirty.add(key)

    # -- in-flight allocations ---------------------------------------------------------------

    def get_pending_allocation(self, uid: str) -> dict | None:
        with self._lock:
            entry = self._in_flight.get(uid)
            return allocation(entry[0]) if entry is not None else None

    def signal_claim_pending_allocation(self, uid: str, claim: dict) -> None:
        with self._lock:
            entry = self._in_flight.get(uid)
            if entry is not None:
                entry[1] += 1
            else:
                self._in_flight[uid] = [claim, 1]

    def maybe_remove_claim_pending_allocation(self, uid: str, force: bool) -> bool:
        with self._lock:
            entry = self._in_flight.get(uid)
            if entry is None:
                return False
            if force or entry[1] == 1:
                del self._in_flight[uid]
                return True
            entry[1] -= 1
            return False

    def in_flight_count(self) -> int:
        with self._lock:
            return len(self._in_flight)

    # -- what the allocator must not hand out ----------------------------------------------

    def gather_allocated_state(
        self, consumable_capacity: bool, skip: Callable[[dict], bool] | None = None
    ) -> AllocatedDevices:
        """The devices of all allocated claims (assumed view) and of the in-flight
        allocations (``GatherAllocatedState``)."""
        if skip is not None:
            return self.gather_allocated_state_recomputed(consumable_capacity, skip)
        with self._lock:
            index = self._refresh(consumable_capacity)
            if index.consuming:
                state = None  # the consumed list in the informer's order: recomputed below
            else:
                state = AllocatedDevices(set(index.devices), set(index.shared))
            in_flight = [entry[0] for entry in self._in_flight.values()]
        if state is None:
            return self.gather_allocated_state_recomputed(consumable_capacity)
        for claim in in_flight:
            state.add_claim(claim, consumable_capacity)
        return state

    def _refresh(self, consumable_capacity: bool) -> _AllocatedIndex:
        """Bring the index up to the informer's store and the assume cache (the lock held):
        the keys the journal and the assume cache name, or every key when the journal
        cannot tell (a relist, a lister without one, the first cycle)."""
        index = self._index
        changed: list[str] | None = None
        mark = self._mark
        if self._journal is not None:
            mark, changed = self._journal.changed_since(self._mark)
        if index is None or index.consumable_capacity != consumable_capacity:
            index = self._index = _AllocatedIndex(consumable_capacity)
            changed = None
        if changed is None:
            current: dict[str, dict] = {}
            for claim in self.claims.list():
                m = meta(claim)
                current[f"{m.get('namespace', '')}/{m.get('name', '')}"] = claim
            for key in [key for key in index.claims if key not in current]:
                index.set(key, None)
            for key, api in current.items():
                index.set(key, self._current(key, api))
        else:
            for key in {*changed, *self._dirty}:
                namespace, _, name = key.rpartition("/")
                index.set(key, self._current(key, self.claims.get(namespace, name)))
        self._dirty.clear()
        self._mark = mark
        return index

    def gather_allocated_state_recomputed(
        self, consumable_capacity: bool, skip: Callable[[dict], bool] | None = None
    ) -> AllocatedDevices:
        """:meth:`gather_allocated_state` over every claim (the reference it keeps)."""
        state = AllocatedDevices()
        for claim in self.list():
            if skip is None or not skip(claim):
                _add_claim_memoised(state, claim, consumable_capacity)
        with self._lock:
            in_flight = [entry[0] for entry in self._in_flight.values()]
        for claim in in_flight:
            state.add_claim(claim, consumable_capacity)
        return state


# Claim object id -> (claim, consumable capacity, what add_claim adds for it). Claims from the
# informer and the assumed ones are never mutated (an update is a new object; the entry holds
# the claim, so its id cannot be reused): the index and the recomputed state (over every
# claim, with consumed capacity) parse each allocation once.
_CONTRIBUTIONS: dict[int, tuple[dict, bool, AllocatedDevices]] = {}
_CONTRIBUTIONS_MAX = 1 << 17


def _part(claim: dict, consumable_capacity: bool) -> AllocatedDevices:
    """What ``add_claim`` adds for ``claim`` (memoised per claim object; read-only)."""
    known = _CONTRIBUTIONS.get(id(claim))
    if known is None or known[0] is not claim or known[1] != consumable_capacity:
        part = AllocatedDevices()
        part.add_claim(claim, consumable_capacity)
        if len(_CONTRIBUTIONS) >= _CONTRIBUTIONS_MAX:
            _CONTRIBUTIONS.clear()
        known = (claim, consumable_capacity, part)
        _CONTRIBUTIONS[id(claim)] = known
    return known[2]


def _forget_part(claim: dict) -> None:
    """Drop the memo of a claim object that left the cluster (deleted, or replaced)."""
    known = _CONTRIBUTIONS.get(id(claim))
    if known is not None and known[0] is claim:
        _CONTRIBUTIONS.pop(id(claim), None)
        if not _CONTRIBUTIONS:
            _CONTRIBUTIONS.clear()  # an emptied dict keeps its table; clear() gives it back


def _add_claim_memoised(state: AllocatedDevices, claim: dict, consumable_capacity: bool) -> None:
    part = _part(claim, consumable_capacity)
    if part.devices:
        state.devices.update(part.devices)
    if part.shared:
        state.shared.update(part.shared)
    if part.consumed:
        state.consumed.extend(part.consumed)
