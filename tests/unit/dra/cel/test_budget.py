"""A selector evaluation under the pod budget (``extender.framework.budget``) without a deadline
of its own: the watchdog's exception, raised inside a library function, would become a CEL
error value that ``&& false`` absorbs, and the search would go on device after device. The
meter keeps it: the evaluation ends with it, and no answer is kept for the device."""

from __future__ import annotations

import pytest

from extender.dra.cel import CELCache, CELDevice
from extender.framework import budget
from extender.framework.cycle_state import CycleState

# ~1,000,000 cost units (under the limit) in 985 library calls, each handed the whole list:
# seconds per device here.
PAIRS = "[" + ",".join(f"[{i}]" for i in range(985)) + "]"
SLOW = f"cel.bind(a, {PAIRS}, a.all(x, sets.contains(a, [x])) && false)"


def test_the_watchdog_ends_an_evaluation_that_absorbs_errors() -> None:
    compiled = CELCache().get_or_compile(SLOW)
    assert compiled.error is None
    devices = [CELDevice("d", {"i": {"int": i}}, {}) for i in range(8)]
    evaluated = 0
    with pytest.raises(budget.BudgetExceeded):
        with budget.enforced(CycleState(), 0.05):
            for device in devices:
                evaluated += 1
                compiled.device_matches(device)  # no deadline passed: only the watchdog
    assert evaluated == 1
    assert not compiled._results  # no answer kept for the interrupted device
