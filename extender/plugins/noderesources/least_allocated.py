"""LeastAllocated: favour nodes with the most room left (upstream
``pkg/scheduler/framework/plugins/noderesources/least_allocated.go``).

Per resource ``(allocatable - requested) * 100 / allocatable`` (0 when the requests exceed the
allocatable), combined as the weighted mean of
:func:`~.resource_allocation.weighted_resource_scorer`.
"""

from __future__ import annotations

from extender.framework.runtime import MAX_NODE_SCORE

from .resource_allocation import Scorer, weighted_resource_scorer


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_resource_scorer(weights: list[int]) -> Scorer:
    return weighted_resource_scorer(weights, least_requested_score)
