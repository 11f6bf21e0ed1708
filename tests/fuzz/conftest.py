"""Hypothesis profile of the fuzz suite: a small budget in ``make test``, more on demand with
``FUZZ_EXAMPLES=5000`` (``make fuzz``)."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "20")),
    deadline=None,  # the stall bound (MAX_SECONDS) is asserted per request, not per example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("FUZZ_EXAMPLES") is None,  # make test stays reproducible
    database=None,
)
settings.load_profile("fuzz")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many bad (4xx) and good (2xx) inputs the verbs were fed: a report, not a test."""
    verbs = sys.modules.get(f"{__package__}.test_verbs")
    tried = getattr(verbs, "TRIED", None)
    if tried:
        terminalreporter.write_line(f"fuzz inputs tried: {dict(sorted(tried.items()))}")
