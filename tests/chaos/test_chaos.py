"""The short soak ``make test`` runs (marker ``chaos``): about a minute of churn with every
fault kind injected once, then the invariants. ``make chaos MINUTES=30`` runs the long one."""

from __future__ import annotations

import pytest

from .soak import FAULTS, Options, run

pytestmark = pytest.mark.chaos


def test_short_soak(tmp_path) -> None:
    lines: list[str] = []
    # Every fault kind once, one every 5 s (faults take 1-15 s each): about 100 s.
    options = Options(minutes=0.5, fault_every=5.0, settle=45.0)
    report = run(tmp_path, options, out=lambda *a: (lines.append(" ".join(map(str, a))), print(*a)))
    summary = "\n".join(lines)
    assert set(report.faults) == set(FAULTS), summary
    assert report.churn["pods created"] > 50, summary
    assert report.churn["gangs created"] >= 2, summary
    assert report.churn["gangs at quorum (ever seen)"] >= 2, summary
    assert not report.findings.failed(), summary
