"""LeastAllocated: favour nodes with the most room left (upstream
``pkg/scheduler/framework/plugins/noderesources/least_allocated.go``).

Per resource ``(allocatable - requested) * 100 / allocatable`` (0 when the requests exceed the
allocatable), combined as the weighted mean of
:func:`~.resource_allocation.weighted_resource_scorer`. :func:`least_resource_batch_scorer`
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


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_resource_scorer(weights: list[int]) -> Scorer:
    return weighted_resource_scorer(weights, least_requested_score)


def least_requested_scores(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """:func:`least_requested_score` elementwise (int64; ``//`` floors as Python's)."""
    out = (capacity - requested) * MAX_NODE_SCORE // np.where(capacity == 0, 1, capacity)
    return np.where((capacity == 0) | (requested > capacity), 0, out)


def least_resource_batch_scorer(weights: list[int]) -> BatchScorer:
    return weighted_resource_batch_scorer(weights, least_requested_scores)
