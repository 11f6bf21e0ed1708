"""extender.framework.quantity against apimachinery's ``resource.ParseQuantity`` + ``Value()`` /
``MilliValue()`` (``pkg/api/resource/quantity.go``, ``suffix.go``, ``math.go``): upstream's own
table (``quantity_test.go`` ``TestQuantityParse``), its error texts, exact rounding away from
zero, int64 saturation, work bounded by the length, and the kubernetes client's independent
parser where the two agree."""

from __future__ import annotations

import tracemalloc
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as client_parse_quantity

from extender.framework.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    FORMAT_WRONG,
    MAX_INT64,
    MIN_INT64,
    NUMERIC,
    SUFFIX,
    Quantity,
    QuantityError,
    int_value,
    milli_value,
    parse,
)
from extender.framework.resources import Resource

D, B, X = DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT
# quantity_test.go TestQuantityParse: (input, decQuantity(value, scale, format)).
UPSTREAM_TABLE = [
    ("0", 0, 0, D),
    ("0n", 0, 0, D),
    ("0u", 0, 0, D),
    ("0m", 0, 0, D),
    ("0Ki", 0, 0, B),
    ("0k", 0, 0, D),
    ("0Mi", 0, 0, B),
    ("0M", 0, 0, D),
    ("0Gi", 0, 0, B),
    ("0G", 0, 0, D),
    ("0Ti", 0, 0, B),
    ("0T", 0, 0, D),
    ("1", 1, 0, D),
    ("1Ki", 1024, 0, B),
    ("8Ki", 8 * 1024, 0, B),
    ("7Mi", 7 * 1024**2, 0, B),
    ("6Gi", 6 * 1024**3, 0, B),
    ("5Ti", 5 * 1024**4, 0, B),
    ("4Pi", 4 * 1024**5, 0, B),
    ("3Ei", 3 * 1024**6, 0, B),
    ("10Ti", 10 * 1024**4, 0, B),
    ("100Ti", 100 * 1024**4, 0, B),
    ("5n", 5, -9, D),
    ("4u", 4, -6, D),
    ("3m", 3, -3, D),
    ("9", 9, 0, D),
    ("8k", 8, 3, D),
    ("50k", 5, 4, D),
    ("7M", 7, 6, D),
    ("6G", 6, 9, D),
    ("5T", 5, 12, D),
    ("40T", 4, 13, D),
    ("300T", 3, 14, D),
    ("2P", 2, 15, D),
    ("1E", 1, 18, D),
    ("1E-3", 1, -3, X),
    ("1e3", 1, 3, X),
    ("1E6", 1, 6, X),
    ("1e9", 1, 9, X),
    ("1E12", 1, 12, X),
    ("1e15", 1, 15, X),
    ("1E18", 1, 18, X),
    ("1e14", 1, 14, X),
    ("1e13", 1, 13, X),
    ("100.035k", 100035, 0, D),
    ("0.001", 1, -3, D),
    ("0.0005k", 5, -1, D),
    ("0.005", 5, -3, D),
    ("0.05", 5, -2, D),
    ("0.5", 5, -1, D),
    ("0.00050k", 5, -1, D),
    ("0.00500", 5, -3, D),
    ("0.05000", 5, -2, D),
    ("0.50000", 5, -1, D),
    ("0.5e0", 5, -1, X),
    ("0.5e-1", 5, -2, X),
    ("0.5e-2", 5, -3, X),
    ("10.035M", 10035, 3, D),
    ("1.2e3", 12, 2, X),
    ("1.3E+6", 13, 5, X),
    ("1.40e9", 14, 8, X),
    ("1.53E12", 153, 10, X),
    ("1.6e15", 16, 14, X),
    ("1.7E18", 17, 17, X),
    ("9.01", 901, -2, D),
    ("8.1k", 81, 2, D),
    ("7.123456M", 7123456, 0, D),
    ("6.987654321G", 6987654321, 0, D),
    ("5.444T", 5444, 9, D),
    ("40.1T", 401, 11, D),
    ("300.2T", 3002, 11, D),
    ("2.5P", 25, 14, D),
    ("1.01E", 101, 16, D),
    ("3.001n", 4, -9, D),
    ("1.1E-9", 2, -9, X),
    ("0.0000000001", 1, -9, D),
    ("0.0000000005", 1, -9, D),
    ("0.00000000050", 1, -9, D),
    ("0.5e-9", 1, -9, X),
    ("0.9n", 1, -9, D),
    ("0.00000012345", 124, -9, D),
    ("0.00000012354", 124, -9, D),
    ("9Ei", MAX_INT64, 0, B),
    ("9223372036854775807Ki", MAX_INT64, 0, B),
    ("12E", 12, 18, D),
    ("100.035Ki", 10243584, -2, B),
    ("0.5Mi", 512 * 1024, 0, B),
    ("0.05Gi", 536870912, -1, B),
    ("0.025Ti", 274877906944, -1, B),
    ("0.000000000001Ki", 2, -9, D),  # rounds up, changes format
    (".001", 1, -3, D),
    (".0001k", 100, -3, D),
    ("1.", 1, 0, D),
    ("1.G", 1, 9, D),
]


@pytest.mark.parametrize(("text", "value", "scale", "fmt"), UPSTREAM_TABLE)
def test_parse_equals_upstream_table(text: str, value: int, scale: int, fmt: str) -> None:
    expected = Quantity.of(value, scale)
    for sign, want in (("", expected), ("+", expected), ("-", expected.neg())):
        got = parse(sign + text)
        assert got == want, sign + text
        assert got.format == fmt, sign + text


# quantity_test.go's invalid inputs, and what Go's ParseQuantity says for the edges the three
# parsers this module replaced got wrong (checked against the Go function itself).
UPSTREAM_ERRORS = [
    ("", FORMAT_WRONG),
    ("1.1.M", FORMAT_WRONG),
    ("1+1.0M", FORMAT_WRONG),
    ("0.1mi", SUFFIX),
    ("0.1am", FORMAT_WRONG),
    ("aoeu", FORMAT_WRONG),
    (".5i", SUFFIX),
    ("1i", SUFFIX),
    ("-3.01i", SUFFIX),
    ("-3.01e-", SUFFIX),
    (" 1", FORMAT_WRONG),
    ("1 ", FORMAT_WRONG),
    ("10Mm", SUFFIX),
    ("1e", SUFFIX),
    ("1e9223372036854775808", SUFFIX),  # ParseInt(s, 10, 64) fails
    # No digit, and a value Go reads through inf.Dec (Pi/Ei, a scale below nano): no digits.
    ("Pi", NUMERIC),
    ("-Ei", NUMERIC),
    (".e-10", NUMERIC),
    ("e-10", NUMERIC),
]


@pytest.mark.parametrize(("text", "message"), UPSTREAM_ERRORS)
def test_errors_are_upstreams(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # No digit, on Go's int64 path: the numerator is read as "0".
        (".", Quantity(0, 0)),
        ("+", Quantity(0, 0)),
        ("-k", Quantity(0, 0)),
        ("Ki", Quantity(0, 0)),
        ("-.Ki", Quantity(0, 0)),
        # Go keeps the exponent, then the scale, in an int32.
        ("1e4294967299", Quantity(1, 3)),
        ("0.5e-2147483648", Quantity(5, 2147483647)),
        ("1e999999", Quantity(1, 999999)),  # exact, and cheap
    ],
)
def test_parse_edges_equal_go(text: str, expected: Quantity) -> None:
    assert parse(text) == expected


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
    ("quantity", "message"),
    [
        ("", FORMAT_WRONG),
        ("abc", FORMAT_WRONG),
        ("NaN", FORMAT_WRONG),
        ("inf", FORMAT_WRONG),
        ("1e", SUFFIX),
        ("1e+", SUFFIX),
        ("1eKi5", SUFFIX),
        ("1Ki5", SUFFIX),
        ("1.5.5", FORMAT_WRONG),
        ("1i", SUFFIX),
        ("1 Gi", FORMAT_WRONG),
        ("1e" + "9" * 20, SUFFIX),
        ("Ei", NUMERIC),
    ],
)
def test_integer_views_reject_what_go_rejects(quantity: str, message: str) -> None:
    for view in (int_value, milli_value):
        with pytest.raises(QuantityError) as caught:
            view(quantity)
        assert str(caught.value) == message


@pytest.mark.parametrize("quantity", [None, True, [1], {"a": 1}])
def test_rejects_non_quantity_types(quantity: object) -> None:
    with pytest.raises(QuantityError):
        milli_value(quantity)


@pytest.mark.parametrize(
    "quantity", ["1e999999", "1e-999999", "9" * 100_000, "0." + "0" * 100_000 + "1", "1e2147483647"]
)
def test_parse_work_is_bounded(quantity: str) -> None:
    """Failed before the fix: ``1e999999`` was made an exact integer (~35 s, 415 KB for an
    8-byte input). What parsing may allocate is bounded by the input's size, whatever its
    exponent: a size bound, not a timing, so that a loaded machine cannot fail it."""
    tracemalloc.start()
    try:
        Resource.from_list({"cpu": quantity, "memory": quantity})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(quantity) + 64 * 1024, peak


# The kubernetes client's parse_quantity (kubernetes/utils/quantity.py) is an independent
# parser: Decimal arithmetic on the number before a one- or two-letter suffix. Its semantics are
# apimachinery's where the value needs no rounding to nano and no binary-SI cap, and the text
# has at least one digit; the strategy stays inside that domain.
_FRACTION_DIGITS = {"n": 0, "u": 3, "m": 6, "": 9, "k": 9, "M": 9, "G": 9, "T": 9, "P": 9}


@st.composite
def _client_domain(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "+", "-"]))
    suffix = draw(st.sampled_from([*_FRACTION_DIGITS, "Ki", "Mi", "Gi", "Ti", "e"]))
    # 999999Ti < 2^63: below the binary-SI cap.
    whole = draw(st.text("0123456789", min_size=1, max_size=6 if "i" in suffix else 12))
    if suffix == "e":
        exponent = draw(st.integers(-9, 30))
        fraction = draw(st.text("0123456789", max_size=max(0, min(9, exponent + 9))))
        suffix = f"e{exponent}"
    else:
        fraction = draw(st.text("0123456789", max_size=_FRACTION_DIGITS.get(suffix, 0)))
    return sign + whole + ("." + fraction if fraction or draw(st.booleans()) else "") + suffix


@settings(max_examples=2000, deadline=None)
@given(_client_domain())
def test_parse_equals_kubernetes_client(text: str) -> None:
    got = parse(text)
    assert Decimal(f"{got.unscaled}e{got.exponent}") == client_parse_quantity(text), text
    value = client_parse_quantity(text)
    # Value() / MilliValue(): rounded up away from zero.
    for scale, view in ((0, int_value), (3, milli_value)):
        scaled = value.scaleb(scale)
        integral = int(scaled)
        if integral != scaled:
            integral += 1 if scaled > 0 else -1
        assert view(text) == max(MIN_INT64, min(MAX_INT64, integral)), text
