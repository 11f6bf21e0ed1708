"""MostAllocated: favour the fullest nodes (bin packing) (upstream
``pkg/scheduler/framework/plugins/noderesources/most_allocated.go``).

Per resource ``min(requested, allocatable) * 100 / allocatable``, combined as the weighted mean
of :func:`~.resource_allocation.weighted_resource_scorer`.
"""

from __future__ import annotations

from extender.framework.runtime import MAX_NODE_SCORE

from .resource_allocation import Scorer, weighted_resource_scorer


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # requested may exceed capacity because of the non-zero defaults: cap it.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def most_resource_scorer(weights: list[int]) -> Scorer:
    return weighted_resource_scorer(weights, most_requested_score)
