"""Go duration strings (``15s``, ``1m30s``, ``1.5h``, ``300ms``), as Go's ``time.ParseDuration``.

The Kubernetes APIs and component configs write ``metav1.Duration`` fields this way
(apimachinery ``pkg/apis/meta/v1/duration.go`` decodes them with ``time.ParseDuration``), so
the same text must mean the same here. This is a port of Go's ``src/time/format.go``
``ParseDuration``: an optional sign, then one or more ``<number><unit>`` with a decimal
number (``1``, ``1.5``, ``.5``, ``1.``) and one of the units ``ns``, ``us`` (``µs``, ``μs``),
``ms``, ``s``, ``m``, ``h``. ``0`` alone needs no unit; anything else without one is an
error, as are spaces, an empty string and a magnitude beyond int64 nanoseconds (about 292
years). Fractions are truncated to whole nanoseconds, as in Go.
"""

from __future__ import annotations

_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX = 1 << 63  # int64 nanoseconds: -_MAX is allowed, _MAX itself is not
_DIGITS = "0123456789"
HINT = "use Go syntax such as 10s, 1m30s, 500ms"


class DurationError(ValueError):
    """Text that Go's ``time.ParseDuration`` rejects."""

    def __init__(self, text: str, problem: str = "") -> None:
        detail = f": {problem}" if problem else ""
        super().__init__(f"invalid duration {text!r}{detail} ({HINT})")
        self.text = text


def _leading_digits(s: str, i: int) -> int:
    while i < len(s) and s[i] in _DIGITS:
        i += 1
    return i


def _fraction(fraction: str) -> tuple[int, float]:
    """Go's ``leadingFraction``: the digits as an integer (stopping before it would overflow
    int64) and the power of ten it is to be divided by."""
    value, power = 0, 1.0
    for char in fraction:
        if value > (_MAX - 1) // 10:
            break
        nxt = value * 10 + int(char)
        if nxt > _MAX:
            break
        value, power = nxt, power * 10
    return value, power


def parse_duration_ns(text: str) -> int:
    """``text`` in integer nanoseconds; raises :class:`DurationError` where Go errs."""
    if not isinstance(text, str):
        raise DurationError(str(text), "not a string")
    s, i, negative = text, 0, False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        i = 1
    if s[i:] == "0":
        return 0
    if i == len(s):
        raise DurationError(text)
    total = 0
    while i < len(s):
        if s[i] != "." and s[i] not in _DIGITS:
            raise DurationError(text)
        start = i
        i = _leading_digits(s, i)
        whole = s[start:i]
        fraction = ""
        if i < len(s) and s[i] == ".":
            frac_start = i + 1
            i = _leading_digits(s, frac_start)
            fraction = s[frac_start:i]
        if not whole and not fraction:
            raise DurationError(text)  # no digits, as ".s" or "-.s"
        unit_start = i
        while i < len(s) and s[i] != "." and s[i] not in _DIGITS:
            i += 1
        unit = s[unit_start:i]
        if not unit:
            raise DurationError(text, "missing unit")
        scale = _UNITS.get(unit)
        if scale is None:
            raise DurationError(text, f"unknown unit {unit!r}")
        value = int(whole or "0") * scale
        if fraction:
            # As Go: the fraction's digits (as many as fit in int64), scaled in float64 and
            # truncated to whole nanoseconds.
            digits, power = _fraction(fraction)
            value += int(float(digits) * (float(scale) / power))
        total += value
        if total > _MAX:
            raise DurationError(text, "out of range")
    if not negative and total > _MAX - 1:
        raise DurationError(text, "out of range")
    return -total if negative else total


def parse_duration(text: str) -> float:
    """``text`` (a Go duration string) in seconds; raises :class:`DurationError`, a
    ``ValueError``, with a message naming the text."""
    return parse_duration_ns(text) / 1e9


__all__ = ["DurationError", "parse_duration", "parse_duration_ns"]


def _trim(value: str) -> str:
    return value.rstrip("0").rstrip(".") if "." in value else value


def format_duration(seconds: float) -> str:
    """Seconds as Go's ``time.Duration.String`` writes them (``5m0s``, ``1.5s``, ``300ms``,
    ``1h0m0s``, ``0s``), for messages that must read as kube-scheduler's."""
    ns = round(seconds * 1_000_000_000)
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns == 0:
        return "0s"
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_trim(f'{ns / 1_000:.3f}')}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_trim(f'{ns / 1_000_000:.6f}')}ms"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = _trim(f"{rest / 1_000_000_000:.9f}")
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return f"{sign}{out}{secs}s"
