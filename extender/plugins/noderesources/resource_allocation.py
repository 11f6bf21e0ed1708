"""The scorer machinery NodeResourcesFit and NodeResourcesBalancedAllocation share (upstream
``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go``).

Both score a node from two vectors over the configured resources, in order: the requests
(node + pod) and the allocatable. :func:`resource_vectors` builds them, leaving a resource out
(zeros) when the node does not offer it or when it is a scalar resource the pod does not
request. A strategy is a :data:`Scorer` of those vectors; the weighted mean here is the one
LeastAllocated and MostAllocated use. Integer arithmetic follows Go (:func:`go_div`,
:func:`go_round_ratio`).

Batch forms (:func:`resource_columns`, :data:`BatchScorer`) do the same for every row of the
node table at once, with the same integer operations on int64 columns; they decline (``None``)
whenever an operand could leave int64, where the per-node Python ints would not overflow.

Pure functions of the pod and NodeInfo; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from extender.framework.columns import SAFE_AMOUNT, NodeTable
from extender.framework.node_info import NodeInfo
from extender.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_scalar_resource_name,
    pod_requests,
)

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


def pod_request_list(
    pod: dict, resources: Iterable[str], use_requested: bool, pod_level: bool = True
) -> list[int]:
    """The pod's request of each resource, in order (non-zero CPU/memory unless use_requested;
    pod-level requests unless not ``pod_level``)."""
    requests = pod_requests(pod, non_zero=not use_requested, pod_level=pod_level)
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


# -- batch forms (over the node table, :mod:`extender.framework.columns`) --------------------------

# (requested per resource, allocatable per resource), one int64 array over the rows each ->
# the node scores, or None when the arithmetic would leave int64.
BatchScorer = Callable[[list[np.ndarray], list[np.ndarray]], np.ndarray | None]

# Products of a per-resource score and a weight stay below this (Python ints do not overflow;
# int64 does): a batch scorer whose operands could exceed it declines.
_INT64_ROOM = 1 << 62


def go_div_array(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """:func:`go_div` elementwise (no zero divisors): quotient truncated toward zero."""
    q = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (np.asarray(b) > 0), q, -q)


def resource_columns(
    table: NodeTable,
    rows: np.ndarray,
    resources: list[str],
    pod_request: list[int],
    use_requested: bool,
) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """:func:`resource_vectors` for the table's ``rows`` at once: per resource, (requested incl.
    the pod, allocatable) as int64 arrays over ``rows``, zeros where the resource is left out.
    ``None`` when an amount is not int64-safe (the per-node path then answers)."""
    if not table.exact or not all(-SAFE_AMOUNT < r < SAFE_AMOUNT for r in pod_request):
        return None
    requested: list[np.ndarray] = []
    allocatable: list[np.ndarray] = []
    zeros = np.zeros(len(rows), dtype=np.int64)
    for name, pod_req in zip(resources, pod_request, strict=True):
        if pod_req == 0 and is_scalar_resource_name(name):
            requested.append(zeros)
            allocatable.append(zeros)
            continue
        if name == CPU:
            alloc = table.alloc_milli_cpu
            used = table.req_milli_cpu if use_requested else table.nz_milli_cpu
        elif name == MEMORY:
            alloc = table.alloc_memory
            used = table.req_memory if use_requested else table.nz_memory
        elif name == EPHEMERAL_STORAGE:
            alloc, used = table.alloc_ephemeral, table.req_ephemeral
        else:
            # Absent from the node's allocatable: 0 in the column, left out below as per node.
            columns = table.scalar(name)
            if columns is None:
                return None
            alloc, used = columns
        alloc = alloc[rows]
        offered = alloc != 0
        requested.append(np.where(offered, used[rows] + pod_req, 0))
        allocatable.append(alloc)
    return requested, allocatable


def weighted_resource_batch_scorer(
    weights: list[int], resource_score: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> BatchScorer:
    """:func:`weighted_resource_scorer` over columns: the same integer operations per row
    (floor division as Python's ``//`` on the same non-negative-or-not operands)."""
    total_weight = sum(abs(w) for w in weights)

    def scorer(requested: list[np.ndarray], allocatable: list[np.ndarray]) -> np.ndarray | None:
        n = len(requested[0]) if requested else 0
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            offered = alloc != 0
            if not offered.any():
                continue
            score = resource_score(req, alloc)
            if n and int(np.abs(score).max()) * total_weight >= _INT64_ROOM:
                return None
            node_score += np.where(offered, score * weight, 0)
            weight_sum += np.where(offered, weight, 0)
        has = weight_sum != 0
        return np.where(has, node_score // np.where(has, weight_sum, 1), 0)

    return scorer
