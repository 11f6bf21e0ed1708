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
  ones, what the allocator must not hand out again (``GatherAllocatedState``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from extender.framework.handle import Lister

from .claims import allocation, meta

DeviceID = tuple[str, str, str]  # (driver, pool, device)
SharedDeviceID = tuple[str, str, str, str]  # (driver, pool, device, shareID)


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


class ClaimTracker:
    """Assumed claims and in-flight allocations over the claims informer's store."""

    def __init__(self, claims: Lister) -> None:
        self.claims = claims
        self._lock = threading.Lock()
        self._assumed: dict[str, dict] = {}
        # claim UID -> [claim with the allocation, number of pods sharing it]
        self._in_flight: dict[str, list] = {}

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

    def assumed_claim_restore(self, namespace: str, name: str) -> None:
        with self._lock:
            self._assumed.pop(f"{namespace}/{name}", None)

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
# the claim, so its id cannot be reused): gather_allocated_state, run per pod over every
# claim, parses each allocation once.
_CONTRIBUTIONS: dict[int, tuple[dict, bool, AllocatedDevices]] = {}
_CONTRIBUTIONS_MAX = 1 << 17


def _add_claim_memoised(state: AllocatedDevices, claim: dict, consumable_capacity: bool) -> None:
    known = _CONTRIBUTIONS.get(id(claim))
    if known is None or known[0] is not claim or known[1] != consumable_capacity:
        part = AllocatedDevices()
        part.add_claim(claim, consumable_capacity)
        if len(_CONTRIBUTIONS) >= _CONTRIBUTIONS_MAX:
            _CONTRIBUTIONS.clear()
        known = (claim, consumable_capacity, part)
        _CONTRIBUTIONS[id(claim)] = known
    part = known[2]
    if part.devices:
        state.devices.update(part.devices)
    if part.shared:
        state.shared.update(part.shared)
    if part.consumed:
        state.consumed.extend(part.consumed)
