"""LeastAllocated (extender/plugins/noderesources/least_allocated.py)."""

from __future__ import annotations

from extender.plugins.noderesources.least_allocated import (
    least_requested_score,
    least_resource_scorer,
)


def test_least_requested_score() -> None:
    assert least_requested_score(3100, 4000) == 22
    assert least_requested_score(5000, 4000) == 0  # over capacity
    assert least_requested_score(0, 0) == 0


def test_least_resource_scorer_weighted_mean() -> None:
    # cpu 22 (weight 3), memory 66 (weight 1): (66 + 66) // 4 = 33
    assert least_resource_scorer([3, 1])([3100, 2760], [4000, 8192]) == 33
