"""The allocated state kept incrementally (``ClaimTracker._refresh`` over the informer's
journal, ``Informer.changed_since``, and the assume cache's writes) equals the state
recomputed over every claim (``AllocatedDevices.add_claim`` over the assumed view plus the
in-flight claims), after every step of seeded sequences of claim adds, updates (allocated,
deallocated, shared devices with consumed capacity), deletes, missed watch events and relists,
assumed writes, restores and in-flight allocations, several between two cycles; with the
informer's journal, with a journal too short to tell, and with a plain lister (no journal:
every cycle compares the store)."""

from __future__ import annotations

import copy
import random
from collections import deque

import pytest

from extender.cache.informers import StoreLister
from extender.kube.informer import Informer
from extender.plugins.dynamicresources.manager import AllocatedDevices, ClaimTracker

from .fixtures import ListLister


def _reference(tracker: ClaimTracker, consumable: bool) -> AllocatedDevices:
    state = AllocatedDevices()
    for claim in tracker.list():
        state.add_claim(claim, consumable)
    for entry in list(tracker._in_flight.values()):
        state.add_claim(entry[0], consumable)
    return state


def _claim(i: int, rv: int, rng: random.Random) -> dict:
    claim: dict = {
        "metadata": {
            "name": f"c{i}",
            "namespace": f"ns{i % 2}",
            "uid": f"u{i}",
            "resourceVersion": str(rv),
        }
    }
    if rng.random() < 0.7:
        results = []
        for _ in range(rng.randint(0, 3)):
            # Few devices, so that two claims often hold the same one.
            result: dict = {
                "driver": "d",
                "pool": f"p{rng.randint(0, 2)}",
                "device": f"x{rng.randint(0, 3)}",
            }
            roll = rng.random()
            if roll < 0.15:
                result["adminAccess"] = True
            elif roll < 0.3:
                result["shareID"] = f"s{rng.randint(0, 2)}"
                if rng.random() < 0.5:
                    result["consumedCapacity"] = {"memory": rng.choice(["1Gi", "512Mi"])}
            results.append(result)
        claim["status"] = {"allocation": {"devices": {"results": results}}}
    return claim


class _Relisting:
    """The client of an informer whose list answers the given objects."""

    def __init__(self, objects: dict[str, dict]) -> None:
        self.objects = objects

    def list(self, path: str, query: dict, page_size: int) -> tuple[list[dict], str]:
        return [copy.deepcopy(o) for o in self.objects.values()], "1"


def _sequence(seed: int, kind: str) -> None:
    rng = random.Random(seed)
    objects: dict[str, dict] = {}  # key -> claim, what the API server holds
    informer = Informer(_Relisting(objects), "/claims")
    if kind == "short-journal":
        informer._journal = deque(maxlen=2)
    plain: list[dict] = []
    lister = ListLister(plain) if kind == "plain" else StoreLister(informer)
    tracker = ClaimTracker(lister)
    rv = 1

    def deliver(event: str, claim: dict) -> None:
        key = f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"
        if kind == "plain":
            for j, o in enumerate(plain):
                if o["metadata"]["name"] == claim["metadata"]["name"] and (
                    o["metadata"]["namespace"] == claim["metadata"]["namespace"]
                ):
                    if event == "DELETED":
                        del plain[j]
                    else:
                        plain[j] = claim
                    break
            else:
                if event != "DELETED":
                    plain.append(claim)
        else:
            informer._apply(event, claim)
        if event == "DELETED":
            objects.pop(key, None)
        else:
            objects[key] = claim

    for _ in range(60):
        roll = rng.random()
        i = rng.randrange(10)
        key = f"ns{i % 2}/c{i}"
        rv += 1
        if roll < 0.4:
            deliver("MODIFIED" if key in objects else "ADDED", _claim(i, rv, rng))
        elif roll < 0.45:
            # A change the watch missed: the API holds it, the next relist brings it.
            if kind == "plain":
                deliver("MODIFIED" if key in objects else "ADDED", _claim(i, rv, rng))
            else:
                objects[key] = _claim(i, rv, rng)
        elif roll < 0.55:
            if key in objects:
                deliver("DELETED", objects[key])
        elif roll < 0.7:
            # Our write, as the API answered it: newer than the informer's, or stale.
            newer = rng.random() < 0.8
            tracker.assume_claim_after_api_call(_claim(i, rv if newer else 0, rng))
        elif roll < 0.78:
            tracker.assumed_claim_restore(f"ns{i % 2}", f"c{i}")
        elif roll < 0.86:
            tracker.signal_claim_pending_allocation(f"fly{i}", _claim(100 + i, rv, rng))
        elif roll < 0.92:
            tracker.maybe_remove_claim_pending_allocation(f"fly{i}", rng.random() < 0.5)
        elif kind != "plain":
            informer._relist()  # the store replaced by copies: every object is new
        if rng.random() < 0.4:
            continue  # several changes before the next cycle
        for consumable in (True, False) if rng.random() < 0.3 else (True,):
            got = tracker.gather_allocated_state(consumable)
            want = _reference(tracker, consumable)
            assert got.devices == want.devices
            assert got.shared == want.shared
            assert got.consumed == want.consumed


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("kind", ["journal", "short-journal", "plain"])
def test_incremental_equals_recomputed(seed: int, kind: str) -> None:
    _sequence(seed, kind)


def test_journal_names_the_changed_keys() -> None:
    informer = Informer(None, "/claims")
    mark, keys = informer.changed_since(-1)
    assert keys is None  # a reader that never read compares the store
    informer._apply("ADDED", {"metadata": {"name": "a", "namespace": "n"}})
    informer._apply("ADDED", {"metadata": {"name": "b", "namespace": "n"}})
    assert informer.changed_since(mark)[1] is not None
    assert sorted(informer.changed_since(mark)[1] or []) == ["n/a", "n/b"]
    now, keys = informer.changed_since(mark + 1)
    assert keys == ["n/b"] and informer.changed_since(now) == (now, [])
    informer._apply("DELETED", {"metadata": {"name": "a", "namespace": "n"}})
    assert informer.changed_since(now)[1] == ["n/a"]
