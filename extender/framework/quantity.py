"""Kubernetes resource quantities: one parser, the views its callers need.

The parser is apimachinery's ``resource.ParseQuantity`` (``pkg/api/resource/quantity.go``,
``suffix.go``): the same grammar, suffixes and error texts (``str(QuantityError)`` is upstream's
``ErrFormatWrong``, ``ErrNumeric`` or ``ErrSuffix``), a decimal exponent read as an int64 and
truncated to int32 (so is the scale it yields), a value finer than a nano-unit rounded up away
from zero, a binary-SI value capped at 2^63-1, and a JSON number taken as its text
(``UnmarshalJSON`` also trims the text). Its views:

* :func:`int_value` / :func:`milli_value`: ``Value()`` / ``MilliValue()``, rounded up away from
  zero, for the scheduler's resource accounting. A value beyond int64 saturates at
  ``MAX_INT64`` (``MIN_INT64`` when negative) where Go's silently overflows ("an overflowed
  result is undefined"); the written amount is converted, before the binary-SI cap, so that
  :func:`exceeds_int64` / :func:`request_int_value` can refuse a request beyond int64 (a saturated
  allocatable is still correct to compare against, a saturated request is not).
* :func:`parse`: the exact value as a :class:`Quantity` (``unscaled * 10**exponent``, normalized)
  and its format, for CEL's ``quantity`` library (``k8s.io/apiserver/pkg/cel/library/quantity.go``)
  and DRA's consumable capacity.

The work per quantity is bounded by its length, never by its value: ``"1e999999"`` is 8 bytes
and exactly 10^999999, so the integer views keep only the leading significant digits (with a
sticky bit for the rest), enough to round exactly, and :func:`parse` keeps the exponent apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

MAX_INT64 = (1 << 63) - 1
MIN_INT64 = -(1 << 63)

# apimachinery's errors, word for word (quantity.go: ErrFormatWrong, ErrNumeric, ErrSuffix).
FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"
# Python converts at most 4300 digits between int and str: the exact view refuses a longer
# number, and Quantity.add an exponent gap that would build one (Go's inf.Dec takes both).
TOO_LONG = "quantity has too many digits"
OUT_OF_RANGE = "quantity arithmetic out of range"

# The formats of a quantity's canonical string (quantity.go: Format).
BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

# suffix.go: the decimal and binary suffixes (powers of 10 and of 2).
DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = -9
_MAX_DIGITS = 1000
_MAX_ALIGN = 1000
# Significant digits kept by the integer views: 10^40 is far past int64 at any scale used.
_KEEP_DIGITS = 40


class QuantityError(ValueError):
    """Not a quantity ``resource.ParseQuantity`` accepts; ``str(e)`` is upstream's message."""


def _int32(value: int) -> int:
    """Go's ``int32(v)``: wraps."""
    return ((value + (1 << 31)) % (1 << 32)) - (1 << 31)


class _Scanned(NamedTuple):
    """A parsed quantity: ``±int(digits) * 10**exp10 * 2**exp2``, before rounding or capping."""

    positive: bool
    digits: str  # significant digits, leading zeroes stripped ("" for zero)
    exp10: int
    exp2: int
    format: str


_ZERO = _Scanned(True, "", 0, 0, DECIMAL_SI)


def _scan(text: str) -> _Scanned:
    """``ParseQuantity`` up to the value: ``parseQuantityString``, then ``interpret``."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return _ZERO
    positive = True
    pos, end = 0, len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_WRONG)
    suffix = text[suffix_start:]
    if suffix in DECIMAL_SUFFIXES:
        binary, exponent, fmt = False, DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    elif suffix in BINARY_SUFFIXES:
        binary, exponent, fmt = True, BINARY_SUFFIXES[suffix], BINARY_SI
    else:
        binary, exponent, fmt = False, _exponent(suffix), DECIMAL_EXPONENT
    if not num and not denom:
        # No digit at all ("", "+", ".", "-.Ki"): Go's int64 path reads the numerator as "0";
        # its inf.Dec path (a scale below nano, or Pi/Ei) finds no digits: ErrNumeric.
        if (binary and exponent >= 50) or (not binary and _int32(exponent) < _NANO):
            raise QuantityError(NUMERIC)
        return _Scanned(positive, "", 0, 0, fmt)
    digits = (num + denom).lstrip("0")
    if binary:
        return _Scanned(positive, digits, -len(denom), exponent, fmt)
    # Go keeps the scale in an int32: exponent - len(denom) wraps.
    return _Scanned(positive, digits, _int32(exponent - len(denom)), 0, fmt)


def _exponent(suffix: str) -> int:
    """``interpret`` of an ``e``/``E`` suffix: ``strconv.ParseInt(s, 10, 64)``, then int32."""
    if len(suffix) > 1 and suffix[0] in "eE":
        body = suffix[1:]
        digits = body[1:] if body[0] in "+-" else body
        if digits and all(c in _DIGITS for c in digits):
            digits = digits.lstrip("0")
            if len(digits) <= 19:
                value = int(digits or "0") * (-1 if body[0] == "-" else 1)
                if MIN_INT64 <= value <= MAX_INT64:
                    return _int32(value)
    raise QuantityError(SUFFIX)


# --- the integer views: Value(), MilliValue() ---------------------------------------------


def _scaled_exact(text: str, scale: int) -> int | None:
    """``ceil(q * 10^scale)`` away from zero, or ``None`` when that is beyond int64."""
    positive, digits, exp, exp2, _ = _scan(text)
    if not digits:
        return 0
    exp += scale  # value = int(digits) * 10^exp * 2^exp2
    if len(digits) - 1 + exp >= 19:  # >= 10^19 > MAX_INT64, before the binary factor
        return None
    if len(digits) + exp < -20:  # < 10^-20 * 2^60 < 1: rounds up to one unit
        return 1 if positive else -1
    sticky = False
    # Keep enough fraction digits that truncation cannot cross an integer (see below).
    keep = max(_KEEP_DIGITS, len(digits) + exp + exp2 + 2)
    if len(digits) > keep:
        sticky = digits[keep:].strip("0") != ""
        exp += len(digits) - keep
        digits = digits[:keep]
    mantissa = int(digits) << exp2
    if exp >= 0:
        magnitude = mantissa * 10**exp + (1 if sticky else 0)
    else:
        whole, rest = divmod(mantissa, 10**-exp)
        # mantissa * 10^exp keeps >= exp2 + 2 fraction digits, so the truncated tail is below
        # the spacing of the representable values: only an exact integer can be nudged up.
        magnitude = whole + (1 if rest or sticky else 0)
    if magnitude > (MAX_INT64 if positive else -MIN_INT64):
        return None
    return magnitude if positive else -magnitude


def _scaled(text: str, scale: int) -> int:
    """``ceil(q * 10^scale)`` away from zero, saturated to int64."""
    value = _scaled_exact(text, scale)
    if value is None:
        return MIN_INT64 if text.startswith("-") else MAX_INT64
    return value


@lru_cache(maxsize=4096)
def _scaled_cached(text: str, scale: int) -> int:
    return _scaled(text, scale)


def text_of(value: object) -> str:
    """The quantity's text as Go's ``UnmarshalJSON`` sees it: a string trimmed, or a number."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(FORMAT_WRONG)
    return repr(value)


def _convert(value: object, scale: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return max(MIN_INT64, min(MAX_INT64, value * 10**scale))
    text = text_of(value)
    # A cluster repeats a handful of short values; long (hostile) ones are not kept.
    return _scaled_cached(text, scale) if len(text) <= 32 else _scaled(text, scale)


def check_quantity(value: object) -> None:
    """Raise :class:`QuantityError` if ``value`` is not a quantity Kubernetes accepts."""
    _convert(value, 0)


def int_value(value: object) -> int:
    """``Value()``: the quantity as a whole number, rounded up (``"1Gi"`` -> 1073741824)."""
    return _convert(value, 0)


def milli_value(value: object) -> int:
    """``MilliValue()``: the quantity in thousandths, rounded up (``"100m"`` -> 100)."""
    return _convert(value, 3)


def exceeds_int64(value: object, scale: int = 0) -> bool:
    """Whether the quantity times ``10^scale`` is beyond int64 (what :func:`milli_value` /
    :func:`int_value` would saturate). Raises :class:`QuantityError` like them."""
    if isinstance(value, int) and not isinstance(value, bool):
        return not MIN_INT64 <= value * 10**scale <= MAX_INT64
    if _convert(value, scale) not in (MAX_INT64, MIN_INT64):
        return False  # the usual case, from the cached conversion
    return _scaled_exact(text_of(value), scale) is None


# A request beyond int64 compares as this: more than any (saturated) capacity, so it never fits.
BEYOND_INT64 = MAX_INT64 + 1


def request_int_value(value: object) -> int:
    """:func:`int_value` for an amount *requested* from a capacity: one beyond int64 is
    :data:`BEYOND_INT64`, never the saturated ``MAX_INT64`` that a saturated capacity equals."""
    return BEYOND_INT64 if exceeds_int64(value) and not _negative(value) else int_value(value)


def _negative(value: object) -> bool:
    return value < 0 if isinstance(value, int | float) else str(value).strip().startswith("-")


# --- the exact view -------------------------------------------------------------------------


def _normalize(unscaled: int, exponent: int) -> tuple[int, int]:
    if unscaled == 0:
        return 0, 0
    while unscaled % 10 == 0:
        # Strip many zeroes at once: a long literal like "1000...0" stays linear.
        digits = str(unscaled)
        zeros = len(digits) - len(digits.rstrip("0"))
        unscaled //= 10**zeros
        exponent += zeros
    return unscaled, exponent


def _digits(value: int) -> int:
    return len(str(abs(value)))


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity, ``unscaled * 10**exponent`` normalized (no trailing zeroes in
    ``unscaled``), so that two are equal exactly when ``Quantity.Cmp`` says so. ``format`` is
    the format of the parsed text (it decides the canonical string) and never counts in
    equality."""

    unscaled: int
    exponent: int
    format: str = field(default=DECIMAL_SI, compare=False)

    @staticmethod
    def of(unscaled: int, exponent: int = 0, fmt: str = DECIMAL_SI) -> Quantity:
        return Quantity(*_normalize(unscaled, exponent), fmt)

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
        """``Quantity.Add``: exact; keeps the receiver's format unless the receiver is zero.
        Raises :class:`QuantityError` (:data:`OUT_OF_RANGE`) past an exponent gap of 1000."""
        fmt = other.format if self.unscaled == 0 else self.format
        if other.unscaled == 0:
            return Quantity(self.unscaled, self.exponent, fmt)
        if self.unscaled == 0:
            return Quantity(other.unscaled, other.exponent, fmt)
        low = min(self.exponent, other.exponent)
        if max(self.exponent, other.exponent) - low > _MAX_ALIGN:
            raise QuantityError(OUT_OF_RANGE)
        total = self.unscaled * 10 ** (self.exponent - low) + other.unscaled * 10 ** (
            other.exponent - low
        )
        return Quantity.of(total, low, fmt)

    def neg(self) -> Quantity:
        return Quantity(-self.unscaled, self.exponent, self.format)

    def as_int64(self) -> int | None:
        """The value as an int64, or None if it is not an integer in range.

        Known difference: apimachinery keeps an int64 or an inf.Dec representation and
        ``AsInt64`` (CEL's ``isInteger``, ``asInteger``) succeeds only for the former with a
        non-negative scale; here an integral value within int64 always converts, so only a
        quantity written with fraction digits that is still integral (``"1.0"``, ``"1.5Ki"``)
        differs."""
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
    """``resource.ParseQuantity``: the exact value and the format. Raises
    :class:`QuantityError` with upstream's message, or :data:`TOO_LONG` past 1000 digits."""
    positive, digits, exp10, exp2, fmt = _scan(text)
    if not digits:
        return Quantity(0, 0, fmt)
    if len(digits) > _MAX_DIGITS:
        raise QuantityError(TOO_LONG)
    magnitude = int(digits) << exp2
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
    if fmt == BINARY_SI and magnitude > MAX_INT64 * 10 ** (-exp10):
        magnitude, exp10 = MAX_INT64, 0
    if fmt == BINARY_SI and exp10 < 0 and magnitude < 10 ** (-exp10):
        fmt = DECIMAL_SI  # a binary-SI fraction below one is printed in decimal
    return Quantity.of(magnitude if positive else -magnitude, exp10, fmt)
