"""extender.framework.quantity against the three parsers it replaces, on generated text.

Kept for one commit only: it is deleted with the old parsers. Every difference must fall in a
class where the old parser was wrong against apimachinery's ``resource.ParseQuantity``:

* a quantity without digits whose value Go reads through inf.Dec (``"Pi"``, ``"Ei"``, a scale
  below nano such as ``"e-10"``): ``ErrNumeric``; the old scanners returned 0;
* an exponent whose scale wraps in Go's int32 (``exponent - len(fraction)``);
* capacity only: a quantity without digits that Go reads as 0 (``"."``, ``"-k"``), the binary-SI
  cap at 2^63-1, an ``e`` exponent past +-1000 that Go accepts, and more than 120 digits
  (its Decimal context rounded).
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.dra import quantity as old_dra
from extender.dra.structured import capacity as old_capacity
from extender.framework import quantity
from extender.framework import resources as old_resources

COUNTS: Counter[str] = Counter()

_digits = st.text("0123456789", max_size=25)
_suffix = st.sampled_from(
    ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e"]
    + ["E", "ki", "Mm", "i", "mi", "KK"]
)
_exponent = st.one_of(
    st.integers(-30, 30).map(str),
    st.sampled_from(["+3", "+", "-", "2147483648", "-2147483649", "4294967299", "9" * 20]),
)


@st.composite
def _quantity_text(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "", "+", "-"]))
    text = sign + draw(_digits)
    if draw(st.booleans()):
        text += "." + draw(_digits)
    suffix = draw(_suffix)
    if suffix in ("e", "E") and draw(st.booleans()):
        suffix += draw(_exponent)
    return text + suffix + draw(st.sampled_from(["", "", "", " ", "x", ".", "e", "+1"]))


TEXTS = st.one_of(_quantity_text(), st.text("0123456789.+-eEinumkKMGTPx ", max_size=10))


def _no_digits_inf_path(text: str) -> bool:
    """Go's ErrNumeric: no digit, and a value read through inf.Dec."""
    try:
        quantity.parse(text)
    except quantity.QuantityError as e:
        return str(e) == quantity.NUMERIC
    return False


def _wraps(text: str) -> bool:
    """A scale that Go wraps in int32 (``exponent - len(fraction)`` below -2^31)."""
    try:
        return quantity._scan(text).exp10 > 2**31 - 1000
    except quantity.QuantityError:
        return False


def _outcome(f: object, *args: object) -> object:
    try:
        return f(*args)  # type: ignore[operator]
    except ValueError as e:
        return ("error", type(e).__name__ == "QuantityError")


@settings(max_examples=20_000, deadline=None)
@given(TEXTS)
def test_integer_views_equal_framework_resources(text: str) -> None:
    for scale, new, old in (
        (0, quantity.int_value, old_resources.int_value),
        (3, quantity.milli_value, old_resources.milli_value),
    ):
        a, b = _outcome(new, text), _outcome(old, text)
        if a == b:
            COUNTS[f"resources scale {scale}: equal"] += 1
            continue
        assert _no_digits_inf_path(text.strip()) or _wraps(text.strip()), (text, a, b)
        COUNTS[f"resources scale {scale}: differs, old wrong"] += 1
    if _outcome(quantity.exceeds_int64, text) == _outcome(old_resources.exceeds_int64, text):
        COUNTS["exceeds_int64: equal"] += 1
    else:
        assert _no_digits_inf_path(text.strip()) or _wraps(text.strip()), text
        COUNTS["exceeds_int64: differs, old wrong"] += 1


@settings(max_examples=20_000, deadline=None)
@given(TEXTS)
def test_exact_view_equals_dra_quantity(text: str) -> None:
    try:
        new: object = quantity.parse(text)
        new = (new.unscaled, new.exponent)  # type: ignore[attr-defined]
    except quantity.QuantityError as e:
        new = str(e)
    try:
        old: object = old_dra.parse(text)
        old = (old.unscaled, old.exponent)  # type: ignore[attr-defined]
    except old_dra.QuantityError as e:
        old = str(e)
    if new == old:
        COUNTS["dra.quantity: equal"] += 1
        return
    assert _no_digits_inf_path(text) or _wraps(text), (text, new, old)
    COUNTS["dra.quantity: differs, old wrong"] += 1


@settings(max_examples=20_000, deadline=None)
@given(TEXTS)
def test_exact_view_equals_capacity(text: str) -> None:
    try:
        q = quantity.parse(text.strip())
        new: object = (Decimal(f"{q.unscaled}e{q.exponent}"), q.format if q.unscaled else "")
    except quantity.QuantityError:
        new = "error"
    try:
        c = old_capacity.Quantity.parse(text)
        old: object = (c.value, c.format if c.value else "")
    except old_capacity.QuantityError:
        old = "error"
    if new == old:
        COUNTS["capacity: equal"] += 1
        return
    stripped = text.strip()
    digits = sum(ch.isdigit() for ch in stripped.split("e")[0].split("E")[0])
    explained = (
        _no_digits_inf_path(stripped)
        or _wraps(stripped)
        or (new != "error" and digits == 0)  # Go reads no digits as 0
        or (new != "error" and abs(q.unscaled) == quantity.MAX_INT64)  # the binary-SI cap
        or (new != "error" and old == "error" and ("e" in stripped or "E" in stripped))
        or digits > 100
    )
    assert explained, (text, new, old)
    COUNTS["capacity: differs, old wrong"] += 1


@pytest.fixture(scope="module", autouse=True)
def _report() -> object:
    yield
    print("\n" + "\n".join(f"{v:8d}  {k}" for k, v in sorted(COUNTS.items())))
