"""Hypothesis profile of the fuzz suite: a small budget in ``make test``, more on demand with
``FUZZ_EXAMPLES=5000`` (``make fuzz``)."""

from __future__ import annotations

import os

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
