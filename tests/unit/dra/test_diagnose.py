"""The DRA diagnosis (``extender/dra/structured/diagnose.py``) over upstream's allocator test
table: it agrees with the allocator on every case (no diagnosis where the claims fit, at least
one where they do not), gives a known reason kind, never raises, and mutates nothing."""

from __future__ import annotations

import json

import pytest

from extender.dra.structured import diagnose as dg

from .test_allocator import CASES, allocated_state_of, cel_cache, class_lister_of, features_of

KINDS = {
    dg.NO_SLICES,
    dg.INCOMPLETE_POOL,
    dg.INVALID_POOL,
    dg.NO_CLASS,
    dg.NO_MATCH,
    dg.TOO_FEW,
    dg.ALLOCATED,
    dg.TAINTED,
    dg.COUNTERS,
    dg.CAPACITY,
    dg.CONSTRAINT,
    dg.COMBINATION,
    dg.ERROR,
}


@pytest.mark.parametrize(
    "case", CASES, ids=[c["name"].removeprefix("TestAllocator/") for c in CASES]
)
def test_agrees_with_the_allocator(case: dict) -> None:
    snapshot = json.dumps(case, sort_keys=True)
    found = dg.diagnose(
        features_of(case),
        allocated_state_of(case),
        class_lister_of(case),
        case.get("slices") or [],
        cel_cache(),
        case["node"],
        case.get("claims") or [],
    )
    assert json.dumps(case, sort_keys=True) == snapshot  # nothing passed in is changed
    assert {d.reason for d in found} <= KINDS
    if case.get("error") is not None:
        return  # Filter answers an Error: whatever the diagnosis says, it did not raise
    if case.get("results") is not None:
        assert found == [], [d.text() for d in found]
    else:
        assert found, "the claims do not fit: the diagnosis must say why"
        assert all(d.message for d in found)


def test_the_table_has_unfitting_cases() -> None:
    unfit = [c for c in CASES if c.get("error") is None and c.get("results") is None]
    assert len(unfit) >= 20
