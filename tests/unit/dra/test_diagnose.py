"""The DRA diagnosis (``extender/dra/structured/diagnose.py``) over upstream's allocator test
table: it agrees with the allocator on every case (no diagnosis where the claims fit, at least
one where they do not), gives a known reason kind, never raises, and mutates nothing."""

from __future__ import annotations

import json

import pytest

from extender.dra import cel
from extender.dra.cel import cache as cel_lru
from extender.dra.structured import AllocatedState
from extender.dra.structured import diagnose as dg

from .test_allocator import (
    CASES,
    _selector_inputs,
    allocated_state_of,
    cel_cache,
    class_lister_of,
    features_of,
)

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


def test_each_expression_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Eleven distinct selectors: more than the shared LRU holds (10), so asking it per device
    # would compile each expression again for every device.
    compiles = 0
    compile_expression = cel.compile_expression

    def counting(expression: str) -> cel.CompilationResult:
        nonlocal compiles
        compiles += 1
        return compile_expression(expression)

    monkeypatch.setattr(cel_lru, "compile_expression", counting)
    allocator, node, claims = _selector_inputs("true", devices=8)
    selectors = [{"cel": {"expression": f"device.driver != 'x{i}'"}} for i in range(10)]
    selectors.append({"cel": {"expression": "device.driver == 'none'"}})
    device_class = allocator.class_lister("class-a")
    assert device_class is not None
    device_class["spec"]["selectors"] = selectors
    found = dg.diagnose(
        allocator.features,
        AllocatedState(),
        allocator.class_lister,
        allocator.all_slices,
        cel_cache(),
        node,
        claims,
    )
    assert [d.reason for d in found] == [dg.NO_MATCH]
    assert compiles == 11
