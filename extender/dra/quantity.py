"""Exact resource quantities for the Kubernetes CEL ``quantity`` library.

``extender.framework.resources`` converts a quantity to an int64 amount (what the scheduler's
resource accounting needs); CEL needs the exact value instead (``compareTo``, ``add``, ``sub``
and ``isInteger`` of ``k8s.io/apiserver/pkg/cel/library/quantity.go``). Parsing follows
apimachinery's ``resource.ParseQuantity`` (``pkg/api/resource/quantity.go``): the same grammar,
suffixes and error texts, a value finer than a nano-unit rounded up away from zero, a binary-SI
value capped at 2^63-1.

A value is kept as ``unscaled * 10**exponent`` in normalized form (no trailing zeroes in
``unscaled``), so two quantities are equal exactly when ``Quantity.Cmp`` says so. The work is
bounded by the text's length, never by its value: ``"1e999999"`` stays ``(1, 999999)``.

Known difference: apimachinery keeps an int64 or an arbitrary-precision representation and
``AsInt64`` (``isInteger``, ``asInteger``) only succeeds for the former with a non-negative
scale; here an integral value within int64 always converts. Only quantities written with fraction
digits that are still integral (``"1.0"``, ``"1.5Ki"``) differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.framework.resources import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    MAX_INT64,
    MIN_INT64,
    SUFFIX_CHARS,
)

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

_DIGITS = frozenset("0123456789")
_NANO = -9
# Python converts at most 4300 digits between int and str: a quantity longer than _MAX_DIGITS
# is refused, and add/sub refuse an exponent gap that would build a longer number (Go's
# arbitrary-precision decimals take both).
_MAX_DIGITS = 1000
_MAX_ALIGN = 1000
TOO_LONG = "quantity has too many digits"


class QuantityError(ValueError):
    """Text that ``resource.ParseQuantity`` rejects (``str(e)`` is its message)."""


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: (positive, numeric text, integer digits, fraction, suffix)."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, bool]:
    """``suffixHandler.interpret``: (base, exponent, binary)."""
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix], False
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        body = suffix[1:]
        digits = body[1:] if body[0] in "+-" else body
        if digits and all(c in _DIGITS for c in digits):
            value = int(body)
            if MIN_INT64 <= value <= MAX_INT64:
                # Go: strconv.ParseInt(s, 10, 64), then int32(parsed), which wraps.
                return 10, ((value + (1 << 31)) % (1 << 32)) - (1 << 31), False
    raise QuantityError(SUFFIX)


def _normalize(unscaled: int, exponent: int) -> tuple[int, int]:
    if unscaled == 0:
        return 0, 0
    while unscaled % 10 == 0:
        # Strip many zeroes at once: a long literal like "1000...0" stays linear.
        text = str(unscaled)
        zeros = len(text) - len(text.rstrip("0"))
        unscaled //= 10**zeros
        exponent += zeros
    return unscaled, exponent


def _digits(value: int) -> int:
    return len(str(abs(value)))


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity: ``unscaled * 10**exponent``, normalized."""

    unscaled: int
    exponent: int

    @staticmethod
    def of(unscaled: int, exponent: int = 0) -> Quantity:
        return Quantity(*_normalize(unscaled, exponent))

    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)

    def cmp(self, other: Quantity) -> int:
        a, b = self.sign(), other.sign()
        if a != b or a == 0:
            return (a > b) - (a < b)
        # Same sign, both non-zero: compare magnitudes by order first, exactly when close.
        order_a = _digits(self.unscaled) + self.exponent
        order_b = _digits(other.unscaled) + other.exponent
        if order_a != order_b:
            bigger = order_a > order_b
        else:
            low = min(self.exponent, other.exponent)
            ma = abs(self.unscaled) * 10 ** (self.exponent - low)
            mb = abs(other.unscaled) * 10 ** (other.exponent - low)
            if ma == mb:
                return 0
            bigger = ma > mb
        return (1 if bigger else -1) * a

    def add(self, other: Quantity) -> Quantity:
        if other.unscaled == 0:
            return self
        if self.unscaled == 0:
            return other
        low = min(self.exponent, other.exponent)
        if max(self.exponent, other.exponent) - low > _MAX_ALIGN:
            raise QuantityError("quantity arithmetic out of range")
        total = self.unscaled * 10 ** (self.exponent - low) + other.unscaled * 10 ** (
            other.exponent - low
        )
        return Quantity.of(total, low)

    def neg(self) -> Quantity:
        return Quantity(-self.unscaled, self.exponent)

    def as_int64(self) -> int | None:
        """The value as an int64, or None if it is not an integer in range."""
        if self.exponent < 0:
            return None  # normalized: a negative exponent means a fraction
        if self.exponent > 19:
            return None
        value = self.unscaled * 10**self.exponent
        return value if MIN_INT64 <= value <= MAX_INT64 else None

    def approximate_float(self) -> float:
        """``AsApproximateFloat64``: float(unscaled) * math.Pow10(exponent), as Go computes it."""
        try:
            base = float(self.unscaled)
        except OverflowError:
            base = float("inf") if self.unscaled > 0 else float("-inf")
        if self.exponent == 0:
            return base
        return base * _go_pow10(self.exponent)


_POW10_TAB = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


def _go_pow10(n: int) -> float:
    """Go's ``math.Pow10`` (the same tables, so the same rounding)."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10_TAB[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10_TAB[-n % 32]
    return float("inf") if n > 0 else 0.0


def parse(text: str) -> Quantity:
    """``resource.ParseQuantity``."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(0, 0)
    positive, value, num, denom, suffix = _split(text)
    base, exponent, binary = _interpret(suffix)
    numeric = value.lstrip("+-")
    if not numeric or numeric == "." or numeric.count(".") > 1:
        if not (num + denom).strip("0"):
            return Quantity(0, 0)  # Go's int64 path: ParseInt("0") succeeds
        raise QuantityError(NUMERIC)
    if len(num) + len(denom) > _MAX_DIGITS:
        raise QuantityError(TOO_LONG)
    magnitude = int(num + denom)
    if base == 10:
        exp10, exp2 = exponent - len(denom), 0
    else:
        exp10, exp2 = -len(denom), exponent
    magnitude <<= exp2
    if magnitude == 0:
        return Quantity(0, 0)
    if exp10 < _NANO:
        # Round up (away from zero) to nano precision.
        shift = _NANO - exp10
        if _digits(magnitude) <= shift:
            magnitude = 1
        else:
            whole, rest = divmod(magnitude, 10**shift)
            magnitude = whole + (1 if rest else 0)
        exp10 = _NANO
    # A binary-SI exponent is 0 and exp10 = -len(denom) (or nano): bounded by the text.
    if binary and magnitude > MAX_INT64 * 10 ** (-exp10):
        magnitude, exp10 = MAX_INT64, 0
    return Quantity.of(magnitude if positive else -magnitude, exp10)
