"""Go ``time.ParseDuration`` forms, accepted and rejected as Go does."""

from __future__ import annotations

import pytest

from extender.kube import DurationError, parse_duration
from extender.kube.duration import format_duration, parse_duration_ns

SECOND = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("5s", 5 * SECOND),
        ("15s", 15 * SECOND),
        ("1m30s", 90 * SECOND),
        ("1h", 3600 * SECOND),
        ("1.5h", 5400 * SECOND),
        ("2h45m", 9900 * SECOND),
        ("1h2m3s4ms5us6ns", 3723 * SECOND + 4_005_006),
        ("300ms", 300_000_000),
        ("250us", 250_000),
        ("1µs", 1_000),  # U+00B5 micro sign
        ("1μs", 1_000),  # U+03BC Greek mu
        ("7ns", 7),
        ("-1s", -SECOND),
        ("+1s", SECOND),
        ("-1m30s", -90 * SECOND),
        (".5s", SECOND // 2),
        ("1.s", SECOND),
        ("1.0000000001s", SECOND),  # below a nanosecond: truncated
        ("0.000000001s", 1),
        ("1.1ns", 1),
        ("100.00100s", 100 * SECOND + 1_000_000),
        ("9223372036854775807ns", (1 << 63) - 1),
        ("-9223372036854775808ns", -(1 << 63)),
        ("2562047h47m16.854775807s", (1 << 63) - 1),
    ],
)
def test_go_forms(text: str, nanoseconds: int) -> None:
    assert parse_duration_ns(text) == nanoseconds
    assert parse_duration(text) == pytest.approx(nanoseconds / 1e9)


def test_one_minute_thirty_is_ninety_seconds() -> None:
    assert parse_duration("1m30s") == 90.0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", ""),
        ("+", ""),
        ("-", ""),
        ("s", ""),
        (".s", ""),
        ("-.s", ""),
        ("--1s", ""),
        (" 1s", ""),
        ("10", "missing unit"),
        ("00", "missing unit"),
        ("1s2", "missing unit"),
        ("1x", "unknown unit 'x'"),
        ("1 s", "unknown unit ' s'"),
        ("1s ", "unknown unit 's '"),
        ("1S", "unknown unit 'S'"),
        ("1sec", "unknown unit 'sec'"),
        ("1e3s", "unknown unit 'e'"),
        ("9223372036854775808ns", "out of range"),
        ("2562048h", "out of range"),
        ("-9223372036854775809ns", "out of range"),
    ],
)
def test_rejects_what_go_rejects(text: str, problem: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    message = str(caught.value)
    assert message.startswith(f"invalid duration {text!r}")
    assert problem in message
    assert "1m30s" in message  # the hint shows the syntax
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(300, "5m0s"), (60, "1m0s"), (1.5, "1.5s"), (0.05, "50ms"), (3600, "1h0m0s"), (0, "0s"),
     (90.25, "1m30.25s"), (0.0005, "500µs"), (10, "10s")],
)  # fmt: skip
def test_format_duration_writes_go_durations(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
