"""MostAllocated: favour the fullest nodes (bin packing) (upstream
``pkg/scheduler/framework/plugins/noderesources/most_allocated.go``).

Per resource ``min(requested, allocatable) * 100 / allocatable``, combined as the weighted mean
of :func:`~.resource_allocation.weighted_resource_scorer`. :func:`most_resource_batch_scorer`
computes the same over the node table's columns.
"""

from __future__ import annotations

import numpy as np

from extender.framework.normalize import MAX_NODE_SCORE

from .resource_allocation import (
    BatchScorer,
    Scorer,
    weighted_resource_batch_scorer,
    weighted_resource_scorer,
)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # requested may exceed capacity because of the non-zero defaults: cap it.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def most_resource_scorer(weights: list[int]) -> Scorer:
    return weighted_resource_scorer(weights, most_requested_score)


def most_requested_scores(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """:func:`most_requested_score` elementwise (int64; ``//`` floors as Python's)."""
    out = np.minimum(requested, capacity) * MAX_NODE_SCORE // np.where(capacity == 0, 1, capacity)
    return np.where(capacity == 0, 0, out)


def most_resource_batch_scorer(weights: list[int]) -> BatchScorer:
    return weighted_resource_batch_scorer(weights, most_requested_scores)
