"""Quantity parsing against apimachinery's ``resource.ParseQuantity`` + ``Value()`` /
``MilliValue()`` (``pkg/api/resource/quantity.go``, ``suffix.go``, ``math.go``): the same
grammar, exact rounding away from zero, int64 saturation, and work bounded by the length."""

from __future__ import annotations

import time

import pytest

from extender.framework.resources import (
    MAX_INT64,
    MIN_INT64,
    QuantityError,
    Resource,
    int_value,
    milli_value,
)

# (quantity, MilliValue(), Value()) as Go computes them.
GO_VALUES = [
    ("1", 1000, 1),
    ("100m", 100, 1),
    ("1.5", 1500, 2),
    ("1Gi", 1073741824000, 1073741824),
    ("1.5Gi", 1610612736000, 1610612736),
    ("0.1m", 1, 1),
    ("1n", 1, 1),
    ("1e3", 1000000, 1000),
    ("1E", MAX_INT64, 10**18),  # "E" alone is exa
    ("1E3", 1000000, 1000),
    ("1e-3", 1, 1),
    ("+", 0, 0),  # Go accepts a lone sign or dot as zero
    ("-", 0, 0),
    (".", 0, 0),
    ("1.", 1000, 1),
    ("-1.5m", -2, -1),  # away from zero
    ("9223372036854775807", MAX_INT64, MAX_INT64),
    ("9223372036854775808", MAX_INT64, MAX_INT64),
    ("-9223372036854775809", MIN_INT64, MIN_INT64),
    ("8Ei", MAX_INT64, MAX_INT64),
    ("1e18", MAX_INT64, 10**18),
    ("1e999999", MAX_INT64, MAX_INT64),
    ("-1e999999", MIN_INT64, MIN_INT64),
    ("1e-999999", 1, 1),
    ("1e4294967299", 1000000, 1000),  # int32(4294967299) == 3 in Go
    ("  2  ", 2000, 2),  # UnmarshalJSON trims
    ("3." + "0" * 60 + "1", 3001, 4),
    ("1." + "0" * 40 + "1Ki", 1024001, 1025),
    ("0." + "0" * 5000 + "1", 1, 1),
    ("1" * 5000, MAX_INT64, MAX_INT64),
    (2, 2000, 2),  # JSON numbers are quantities too
    (1.5, 1500, 2),
    (1e300, MAX_INT64, MAX_INT64),
]


@pytest.mark.parametrize(("quantity", "milli", "value"), GO_VALUES)
def test_values_equal_go(quantity: object, milli: int, value: int) -> None:
    assert milli_value(quantity) == milli
    assert int_value(quantity) == value


@pytest.mark.parametrize(
    "quantity",
    ["", "abc", "NaN", "inf", "1e", "1e+", "1eKi5", "1Ki5", "1.5.5", "1i", "1 Gi", "1e" + "9" * 20],
)
def test_rejects_what_go_rejects(quantity: str) -> None:
    with pytest.raises(QuantityError, match="is not a quantity"):
        int_value(quantity)


@pytest.mark.parametrize("quantity", [None, True, [1], {"a": 1}])
def test_rejects_non_quantity_types(quantity: object) -> None:
    with pytest.raises(QuantityError):
        milli_value(quantity)


@pytest.mark.parametrize(
    "quantity", ["1e999999", "1e-999999", "9" * 100_000, "0." + "0" * 100_000 + "1", "1e2147483647"]
)
def test_parse_time_is_bounded(quantity: str) -> None:
    """Failed before the fix: ``1e999999`` was made an exact integer (~35 s). The bound is a
    guard against that stall, two orders of magnitude above the normal cost even on a loaded
    machine, not a speed goal (those live in bench/)."""
    start = time.perf_counter()
    Resource.from_list({"cpu": quantity, "memory": quantity})
    assert time.perf_counter() - start < 5.0
