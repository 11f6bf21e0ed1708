"""``ClaimTracker.gather_allocated_state`` parses each claim object once (memoised per object)
and ``list`` skips the assume cache when nothing is assumed: both answer exactly what the
reference (``AllocatedDevices.add_claim`` over the assumed view) answers, including after an
update replaces a claim object and with assumed and in-flight claims."""

from __future__ import annotations

import copy
import random

import pytest

from extender.plugins.dynamicresources.manager import AllocatedDevices, ClaimTracker

from .fixtures import ListLister


def _claim(i: int, rng: random.Random, rv: int = 1) -> dict:
    claim: dict = {
        "metadata": {"name": f"c{i}", "namespace": "ns", "uid": f"u{i}", "resourceVersion": str(rv)}
    }
    if rng.random() < 0.7:
        results = []
        for d in range(rng.randint(0, 3)):
            result: dict = {"driver": "d", "pool": f"p{rng.randint(0, 3)}", "device": f"x{d}"}
            if rng.random() < 0.2:
                result["adminAccess"] = True
            results.append(result)
        claim["status"] = {"allocation": {"devices": {"results": results}}}
    return claim


def _reference(tracker: ClaimTracker, consumable: bool) -> AllocatedDevices:
    state = AllocatedDevices()
    for claim in tracker.list():
        state.add_claim(claim, consumable)
    for entry in tracker._in_flight.values():
        state.add_claim(entry[0], consumable)
    return state


@pytest.mark.parametrize("seed", range(50))
def test_gather_allocated_state_equals_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    claims = [_claim(i, rng) for i in range(rng.randint(0, 12))]
    tracker = ClaimTracker(ListLister(claims))
    for _ in range(3):  # again and again, after updates, assumed writes and in-flight ones
        for consumable in (False, True):
            got = tracker.gather_allocated_state(consumable)
            want = _reference(tracker, consumable)
            assert got.devices == want.devices
            assert got.shared == want.shared
            assert got.consumed == want.consumed
        if claims:
            i = rng.randrange(len(claims))
            claims[i] = _claim(i, rng, rv=int(claims[i]["metadata"]["resourceVersion"]) + 1)
            assumed = copy.deepcopy(_claim(rng.randrange(len(claims)), rng, rv=99))
            tracker.assume_claim_after_api_call(assumed)
            tracker.signal_claim_pending_allocation(f"fly{seed}", _claim(100, rng))


def test_an_updated_claim_object_is_parsed_again() -> None:
    claim = {
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "1"},
        "status": {
            "allocation": {"devices": {"results": [{"driver": "d", "pool": "p", "device": "a"}]}}
        },
    }
    claims = [claim]
    tracker = ClaimTracker(ListLister(claims))
    assert tracker.gather_allocated_state(True).devices == {("d", "p", "a")}
    claims[0] = {**claim, "status": {}}  # the informer's new object: deallocated
    assert tracker.gather_allocated_state(True).devices == set()
