"""``sets.contains`` / ``sets.equivalent`` / ``sets.intersects`` (cel-go ``ext/sets.go``) and
the runtime cost meter of the DRA CEL library functions (``extender/dra/cel/``).

The sets functions find members by hash; CEL's equality is the pairwise ``_cel_equal``. The
property tests hold the two to the same answers on mixed nested values of every kind the C++
runtime hands to a Python function (numbers of three kinds, bools, strings, bytes, null,
durations, timestamps, type values, quantity / semver / IP messages, the device message
(which has no key: compared pairwise), lists, maps).
"""

from __future__ import annotations

import datetime
import math
from types import SimpleNamespace
from typing import Any

import pytest
from cel_expr_python import cel as cel_runtime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.dra.cel import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    COST_LIMIT_EXCEEDED,
    CELDeadlineExceeded,
    CELDevice,
    CELError,
    compile_expression,
)
from extender.dra.cel import compile as cel_compile
from extender.dra.cel import library as cel_library
from extender.dra.cel import meter as cel_meter
from extender.dra.cel import sets as cel_sets
from extender.dra.cel import types as cel_types

DEVICE = CELDevice(driver="dra.example.com", attributes={}, capacity={})

# --- hashed membership == pairwise CEL equality ---------------------------------------------

_scalars = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, math.nan, math.inf, -math.inf, 1e300]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from(["", "a", "b", "1", "true"]),
    st.text(max_size=4),
    st.sampled_from([b"", b"a", b"1"]).map(bytearray),
    st.none(),
    st.sampled_from([datetime.timedelta(0), datetime.timedelta(seconds=1)]),
    st.sampled_from(
        [
            datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
            datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
        ]
    ),
    st.sampled_from(["INT", "UINT", "STRING"]).map(lambda name: getattr(cel_runtime.Type, name)),
    st.sampled_from(["1", "1000m", "1k", "1000", "2Gi"]).map(cel_types._quantity_msg_of),
    st.sampled_from(["1.2.3", "1.2.4"]).map(cel_types._semver_msg_of),
    st.sampled_from(["::1", "127.0.0.1", "0:0:0:0:0:0:0:1"]).map(cel_library._ip_msg_of),
    # a message with no key (the device itself): compared pairwise
    st.sampled_from(["a", "b"]).map(lambda driver: cel_types._DeviceMsg(driver=driver)),
)
_map_keys = st.one_of(
    st.integers(min_value=-2, max_value=2), st.booleans(), st.sampled_from(["", "a", "1"])
)
VALUES = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_map_keys, inner, max_size=3)
    ),
    max_leaves=8,
)
LISTS = st.lists(VALUES, max_size=6)


def _pairwise_contains(a: list[Any], b: list[Any]) -> bool:
    return all(any(cel_sets._cel_equal(x, y) for x in a) for y in b)


def _pairwise_intersects(a: list[Any], b: list[Any]) -> bool:
    return any(cel_sets._cel_equal(x, y) for x in a for y in b)


def _equal_by_key(a: Any, b: Any) -> bool | None:
    """Whether the keys are equal; None when a value has no key."""
    try:
        return bool(cel_sets._key(a) == cel_sets._key(b))
    except cel_sets._Unequal:
        return False
    except cel_sets._Unkeyable:
        return None


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(LISTS, LISTS, st.randoms(use_true_random=False))
def test_hashed_sets_answer_as_pairwise_comparison(a: list[Any], b: list[Any], random: Any) -> None:
    # Shared elements (the same object, or an equal copy) make the answers interesting.
    if a and b:
        b = [*b, random.choice(a)]
    assert cel_sets._sets_contains(a, b) == _pairwise_contains(a, b)
    assert cel_sets._sets_contains(b, a) == _pairwise_contains(b, a)
    assert cel_sets._sets_intersects(a, b) == _pairwise_intersects(a, b)
    assert cel_sets._sets_equivalent(a, b) == (
        _pairwise_contains(a, b) and _pairwise_contains(b, a)
    )


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(VALUES, VALUES)
def test_keys_are_equal_exactly_for_cel_equal_values(a: Any, b: Any) -> None:
    by_key = _equal_by_key(a, b)
    if by_key is not None:
        assert by_key == cel_sets._cel_equal(a, b)
    assert _equal_by_key(a, a) in (cel_sets._cel_equal(a, a), None)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),  # 1 == 1u == 1.0: int and uint are both Python ints
        (True, 1, False),  # a bool is not a number
        ([True], [1], False),
        ({True: 1}, {1: 1}, False),
        ({1: [1.0]}, {1: [1]}, True),
        (math.nan, math.nan, False),  # NaN equals nothing, itself included
        ([math.nan], [math.nan], False),
        ({"a": math.nan}, {"a": math.nan}, False),
        (bytearray(b"a"), "a", False),
        (cel_types._quantity_msg_of("1k"), cel_types._quantity_msg_of("1000"), True),
        (cel_types._quantity_msg_of("1"), cel_types._semver_msg_of("1.0.0"), False),
        (cel_library._ip_msg_of("0:0:0:0:0:0:0:1"), cel_library._ip_msg_of("::1"), True),
        (cel_runtime.Type.INT, cel_runtime.Type("int"), True),
        (cel_runtime.Type.INT, 1, False),
    ],
)
def test_equality_cases(a: Any, b: Any, equal: bool) -> None:
    assert cel_sets._cel_equal(a, b) is equal
    assert _equal_by_key(a, b) is equal
    assert cel_sets._sets_intersects([a], [b]) is equal


@pytest.mark.parametrize(
    "expression",
    [
        'sets.contains([quantity("1k"), quantity("2")], [quantity("1000")])',
        'sets.intersects([semver("1.2.3")], [semver("1.2.3"), semver("2.0.0")])',
        'sets.equivalent([ip("::1"), ip("::1")], [ip("0:0:0:0:0:0:0:1")])',
        "sets.contains([[1, 2], [3]], [[3.0]])",
        'sets.intersects([{"a": [1]}], [{"a": [1u]}])',
        "!sets.intersects([dyn(true)], [dyn(1)])",
        '!sets.contains([double("NaN")], [double("NaN")])',
        "sets.intersects([device], [device])",  # a message we do not key: pairwise
        "sets.contains([type(1)], [int])",
    ],
)
def test_sets_in_expressions(expression: str) -> None:
    result = compile_expression(expression)
    assert result.error is None, result.error
    assert result.device_matches(DEVICE) is True


# --- issue 28: the hostile selector ---------------------------------------------------------


def _pairs(n: int, sign: int, offset: int = 0) -> str:
    return (
        "[" + ", ".join(f"[{sign * i + offset}, {sign * i + offset + 1}]" for i in range(n)) + "]"
    )


# 990 is the most the API server takes: 991 elements a list exceed the estimated cost limit.
HOSTILE = f"sets.intersects({_pairs(990, 1)}, {_pairs(990, -1, -1)})"


def test_the_990_by_990_selector_is_hashed_not_compared_pairwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comparisons = 0
    pairwise = cel_sets._cel_equal

    def counting(a: Any, b: Any) -> bool:
        nonlocal comparisons
        comparisons += 1
        return pairwise(a, b)

    # Both modules that compare look the function up.
    monkeypatch.setattr(cel_sets, "_cel_equal", counting)
    monkeypatch.setattr(cel_library, "_cel_equal", counting)
    result = compile_expression(HOSTILE)
    assert result.error is None and result.max_cost is not None
    assert result.max_cost <= CEL_SELECTOR_EXPRESSION_MAX_COST  # the API server accepts it
    devices = [CELDevice("dra.example.com", {"i": {"int": i}}, {}) for i in range(128)]
    assert [result.device_matches(d) for d in devices] == [False] * 128
    # [0, 1] is in both: found by hash as well.
    found = compile_expression(f"sets.intersects({_pairs(990, 1)}, {_pairs(990, -1, 0)})")
    assert found.device_matches(devices[0]) is True
    assert comparisons == 0


# --- the runtime cost meter -----------------------------------------------------------------


def _numbers(n: int) -> str:
    return "[" + ", ".join(str(i) for i in range(n)) + "]"


def _index_of_all(n: int) -> str:
    long = "a" * 1000
    return f"cel.bind(l, {_numbers(n)}.map(i, string(i) + '{long}'), l.all(x, l.indexOf(x) >= 0))"


@pytest.mark.parametrize(
    ("expression", "within"),
    [
        # ext/sets.go: 1 + 1500 * 1500 > 1,000,000; 999 * 1000 is within.
        (f"sets.intersects({_numbers(1500)}, {_numbers(1500)})", False),
        (f"sets.intersects({_numbers(999)}, {_numbers(1000)})", True),
        # factor 2 for sets.equivalent: 1 + 2 * 710 * 710 > 1,000,000
        (f"sets.equivalent({_numbers(710)}, {_numbers(710)})", False),
        (f"sets.equivalent({_numbers(700)}, {_numbers(700)})", True),
        # cost.go lists: one traversal of the list per indexOf (a string of 1001 to 1003
        # characters costs 100): 101 calls of 10,100 are over, 99 of 9,900 within.
        (_index_of_all(101), False),
        (_index_of_all(99), True),
        # cost.go find: ceil(4001 * 0.1) * ceil(4000 * 0.25) = 401,000 a call
        (
            "cel.bind(s, '" + "b" * 4000 + "', cel.bind(p, '" + "a" * 4000 + "', "
            's.find(p) == "" && s.find(p) == "" && s.find(p) == ""))',
            False,
        ),
        (
            "cel.bind(s, '" + "b" * 4000 + "', cel.bind(p, '" + "a" * 4000 + "', "
            's.find(p) == "" && s.find(p) == ""))',
            True,
        ),
    ],
)
def test_library_calls_are_metered(expression: str, within: bool) -> None:
    result = compile_expression(expression)
    assert result.error is None, result.error
    # Not refused by the static estimate (over 1000 times the limit): evaluated, metered.
    assert result.max_cost is not None and result.max_cost <= 1000 * 1_000_000
    if within:
        assert result.device_matches(DEVICE) is True
    else:
        with pytest.raises(CELError, match=f"^{COST_LIMIT_EXCEEDED}$"):
            result.device_matches(DEVICE)


def test_the_cost_is_charged_before_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    keyed = 0
    key = cel_sets._key

    def counting(value: Any) -> Any:
        nonlocal keyed
        keyed += 1
        return key(value)

    monkeypatch.setattr(cel_sets, "_key", counting)
    over = f"sets.intersects({_numbers(1500)}, {_numbers(1500)})"
    # cel-go cancels the evaluation: no operator absorbs the error.
    for expression in (over, f"{over} || true", f"true && ({over} || true)"):
        result = compile_expression(expression)
        with pytest.raises(CELError, match=f"^{COST_LIMIT_EXCEEDED}$"):
            result.device_matches(DEVICE)
    assert keyed == 0


def test_the_meter_is_per_evaluation() -> None:
    # 980,101 a device: each evaluation starts from zero.
    result = compile_expression(HOSTILE)
    for i in range(3):
        assert result.device_matches(CELDevice("d", {"i": {"int": i}}, {})) is False


# --- the deadline ---------------------------------------------------------------------------


class _Clock:
    """time.monotonic for extender.dra.cel: ``now`` jumps to ``later`` after ``calls`` reads."""

    def __init__(self, calls: int, later: float = 1e9) -> None:
        self.calls, self.later, self.reads = calls, later, 0

    def monotonic(self) -> float:
        self.reads += 1
        return 0.0 if self.reads <= self.calls else self.later


def test_a_past_deadline_is_no_answer_and_is_not_kept() -> None:
    result = compile_expression('device.driver == "dra.example.com"')
    with pytest.raises(CELDeadlineExceeded):
        result.device_matches(DEVICE, deadline=-1.0)
    assert result.device_matches(DEVICE) is True  # evaluated now: nothing was kept


@pytest.mark.parametrize("expression", [HOSTILE, f"{HOSTILE} || true"])
def test_library_functions_check_the_deadline_as_they_work(
    monkeypatch: pytest.MonkeyPatch, expression: str
) -> None:
    result = compile_expression(expression)
    device = CELDevice("d", {"n": {"int": 7}}, {})
    # The check before evaluating and at the charge pass; the clock jumps while indexing.
    clock = _Clock(calls=2)
    clock_time = SimpleNamespace(monotonic=clock.monotonic)
    # The evaluation and the meter each read the clock.
    monkeypatch.setattr(cel_compile, "time", clock_time)
    monkeypatch.setattr(cel_meter, "time", clock_time)
    with pytest.raises(CELDeadlineExceeded, match="^operation interrupted$"):
        result.device_matches(device, deadline=1.0)
    assert clock.reads == 3  # stopped at the first check after the jump
    monkeypatch.undo()
    assert result.device_matches(device) is (expression != HOSTILE)
