"""RequestedToCapacityRatio: score utilization through a configured shape (upstream
``pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio.go``).

The shape is a list of (utilization 0..100, score 0..10) points, sorted by utilization (the
args validation, :func:`~.validation.parse_shape`, checks that); scores are scaled to 0..100
and interpolated linearly with Go's truncating division. Per resource the utilization is
``requested * 100 / allocatable`` (100 when the requests exceed the allocatable); only
resources with a positive score take part in the weighted mean, which is rounded half away
from zero as Go's ``math.Round``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from extender.framework.normalize import MAX_NODE_SCORE

from .resource_allocation import BatchScorer, Scorer, go_div, go_div_array, go_round_ratio

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


def broken_linear_function(shape: list[tuple[int, int]]) -> Callable[[int], int]:
    """Piecewise-linear ``utilization -> score`` through ``shape`` (sorted by utilization).

    Below the first point: its score; above the last: its score; between two points: integer
    interpolation truncated as Go does.
    """

    def function(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return score
                u0, s0 = shape[i - 1]
                return s0 + go_div((score - s0) * (p - u0), utilization - u0)
        return shape[-1][1]

    return function


def requested_to_capacity_ratio_scorer(weights: list[int], shape: list[tuple[int, int]]) -> Scorer:
    """``shape`` holds (utilization, score 0..10) points; scores are scaled to 0..100."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(u, s * scale) for u, s in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            score = resource_score(req, alloc)
            # Only resources with a positive score take part in the average.
            if score > 0:
                node_score += score * weight
                weight_sum += weight
        return go_round_ratio(node_score, weight_sum) if weight_sum else 0

    return scorer


def broken_linear_function_array(
    shape: list[tuple[int, int]],
) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`broken_linear_function` elementwise: each value takes the first segment whose end
    it does not exceed, with the same truncating interpolation."""

    def function(p: np.ndarray) -> np.ndarray:
        out = np.full(p.shape, shape[-1][1], dtype=np.int64)
        done = np.zeros(p.shape, dtype=bool)
        for i, (utilization, score) in enumerate(shape):
            hit = (p <= utilization) & ~done
            if not hit.any():
                continue
            if i == 0:
                out[hit] = score
            else:
                u0, s0 = shape[i - 1]
                out[hit] = s0 + go_div_array((score - s0) * (p[hit] - u0), utilization - u0)
            done |= hit
        return out

    return function


def requested_to_capacity_ratio_batch_scorer(
    weights: list[int], shape: list[tuple[int, int]]
) -> BatchScorer:
    """:func:`requested_to_capacity_ratio_scorer` over columns (int64, same operations)."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function_array([(u, s * scale) for u, s in shape])

    def scorer(requested: list[np.ndarray], allocatable: list[np.ndarray]) -> np.ndarray | None:
        n = len(requested[0]) if requested else 0
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            offered = alloc != 0
            if not offered.any():
                continue
            full = ~offered | (req > alloc)
            utilization = req * MAX_UTILIZATION // np.where(offered, alloc, 1)
            score = raw(np.where(full, MAX_UTILIZATION, utilization))
            counted = offered & (score > 0)
            node_score += np.where(counted, score * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        has = weight_sum != 0
        divisor = np.where(has, weight_sum, 1)
        q, r = np.divmod(node_score, divisor)
        return np.where(has, np.where(2 * r >= divisor, q + 1, q), 0)

    return scorer
