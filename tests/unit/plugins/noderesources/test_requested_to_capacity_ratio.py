"""RequestedToCapacityRatio (extender/plugins/noderesources/requested_to_capacity_ratio.py)."""

from __future__ import annotations

from extender.plugins.noderesources.requested_to_capacity_ratio import (
    broken_linear_function,
    requested_to_capacity_ratio_scorer,
)


def test_broken_linear_function() -> None:
    f = broken_linear_function([(0, 100), (30, 50), (100, 0)])
    assert f(0) == 100
    assert f(77) == 17  # 50 + trunc(-50 * 47 / 70 = -33.57)
    assert f(150) == 0
    assert broken_linear_function([(80, 20), (90, 100)])(10) == 20


def test_scorer_rounds_and_skips_zero_scores() -> None:
    scorer = requested_to_capacity_ratio_scorer([1, 1], [(0, 0), (100, 10)])
    assert scorer([3100, 2760], [4000, 8192]) == 55
    only_cpu = requested_to_capacity_ratio_scorer([1, 1], [(0, 0), (50, 0), (100, 10)])
    assert only_cpu([3100, 2760], [4000, 8192]) == 54
