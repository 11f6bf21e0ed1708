"""MostAllocated (extender/plugins/noderesources/most_allocated.py)."""

from __future__ import annotations

from extender.plugins.noderesources.most_allocated import (
    most_requested_score,
    most_resource_scorer,
)


def test_most_requested_score() -> None:
    assert most_requested_score(3100, 4000) == 77
    assert most_requested_score(5000, 4000) == 100  # capped
    assert most_requested_score(1, 0) == 0


def test_most_resource_scorer_weighted_mean() -> None:
    assert most_resource_scorer([1, 1])([3100, 2760], [4000, 8192]) == 55
