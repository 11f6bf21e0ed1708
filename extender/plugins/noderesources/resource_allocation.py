"""The scorer machinery NodeResourcesFit and NodeResourcesBalancedAllocation share (upstream
``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go``).

Both score a node from two vectors over the configured resources, in order: the requests
(node + pod) and the allocatable. :func:`resource_vectors` builds them, leaving a resource out
(zeros) when the node does not offer it or when it is a scalar resource the pod does not
request. A strategy is a :data:`Scorer` of those vectors; the weighted mean here is the one
LeastAllocated and MostAllocated use. Integer arithmetic follows Go (:func:`go_div`,
:func:`go_round_ratio`).

Pure functions of the pod and NodeInfo; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from extender.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_scalar_resource_name,
    pod_requests,
)
from extender.framework.types import NodeInfo

# The resources scored when the args name none (upstream ``defaultResourceSpec`` in
# ``pkg/scheduler/apis/config/v1/defaults.go``); the config defaulter imports it too.
DEFAULT_RESOURCES: tuple[dict[str, Any], ...] = (
    {"name": CPU, "weight": 1},
    {"name": MEMORY, "weight": 1},
)

# (requested per resource, allocatable per resource) -> node score
Scorer = Callable[[list[int], list[int]], int]


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round_ratio(numerator: int, denominator: int) -> int:
    """``math.Round(numerator / denominator)`` for non-negative integers (half away from zero)."""
    q, r = divmod(numerator, denominator)
    return q + 1 if 2 * r >= denominator else q


def pod_request_list(pod: dict, resources: Iterable[str], use_requested: bool) -> list[int]:
    """The pod's request of each resource, in order (non-zero CPU/memory unless use_requested)."""
    requests = pod_requests(pod, non_zero=not use_requested)
    return [requests.get(name) for name in resources]


class PodRequestsState:
    """PreScore state: the pod's request of each scored resource; read-only, so clones share it."""

    __slots__ = ("pod_requests",)

    def __init__(self, requests: list[int]) -> None:
        self.pod_requests = requests

    def clone(self) -> PodRequestsState:
        return self


def allocatable_and_requested(
    node_info: NodeInfo, resource: str, pod_request: int, use_requested: bool
) -> tuple[int, int]:
    """(allocatable, node requests + the pod's) of ``resource``; (0, 0) leaves it out.

    CPU/memory use the node's non-zero requests unless ``use_requested``; ephemeral storage and
    scalar resources always use the actual ones. A scalar resource the pod does not request is
    left out, so that nodes offering it are not favoured or penalised for it.
    """
    if pod_request == 0 and is_scalar_resource_name(resource):
        return 0, 0
    requested = node_info.requested if use_requested else node_info.non_zero_requested
    allocatable = node_info.allocatable
    if resource == CPU:
        return allocatable.milli_cpu, requested.milli_cpu + pod_request
    if resource == MEMORY:
        return allocatable.memory, requested.memory + pod_request
    if resource == EPHEMERAL_STORAGE:
        return (
            allocatable.ephemeral_storage,
            node_info.requested.ephemeral_storage + pod_request,
        )
    if resource in allocatable.scalar:
        return (
            allocatable.scalar[resource],
            node_info.requested.scalar.get(resource, 0) + pod_request,
        )
    return 0, 0


def resource_vectors(
    node_info: NodeInfo, resources: list[str], pod_request: list[int], use_requested: bool
) -> tuple[list[int], list[int]]:
    """(requested incl. the pod, allocatable) per resource; zeros where a resource is left out."""
    requested = [0] * len(resources)
    allocatable = [0] * len(resources)
    for i, name in enumerate(resources):
        alloc, req = allocatable_and_requested(node_info, name, pod_request[i], use_requested)
        if alloc == 0:
            continue
        allocatable[i] = alloc
        requested[i] = req
    return requested, allocatable


def weighted_resource_scorer(
    weights: list[int], resource_score: Callable[[int, int], int]
) -> Scorer:
    """Weighted mean of ``resource_score(requested, allocatable)`` over resources a node has."""

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += resource_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return scorer
