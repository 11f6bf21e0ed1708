"""NodeResourcesBalancedAllocation (PreScore, Score): keep a node's resources in balance (upstream
``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``).

For each configured resource the node offers (allocatable > 0; a scalar resource only when the
pod requests it) the utilization fraction ``f = min(requested / allocatable, 1)`` is taken on
*actual* requests (no 100m / 200Mi defaults). ``std`` is ``|f1 - f2| / 2`` for two resources,
the population standard deviation for more, 0 for fewer; ``b = int((1 - std) * 100)``.

v1.36 scores how placing the pod changes the balance, with ``b_with`` including the pod's
requests and ``b_without`` not: ``50 + (50 + b_with - b_without) / 2``, the division truncating
toward zero as Go's. A pod requesting none of the resources (best-effort) makes PreScore return
Skip, so that such pods do not all pile onto the same node.

``score_batch`` answers for every row of the node table (:mod:`extender.framework.columns`)
what ``score`` answers per node: the same IEEE float64 operations in the same order, elementwise
(the sums accumulate resource by resource as the per-node loop does; no pairwise summation, no
library standard deviation), so the scores are bit-identical.

Reads NodeInfo aggregates; writes only its PreScore key; mutates nothing.
"""

from __future__ import annotations

import math

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.handle import PODS, Handle
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.status import SKIP, Status

from .resource_allocation import (
    PodRequestsState,
    go_div,
    go_div_array,
    pod_request_list,
    resource_columns,
    resource_vectors,
)
from .validation import validate_balanced_allocation_args

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_KEY = "PreScore" + NAME


def balance_std(requested: list[int], allocatable: list[int]) -> float:
    """The standard deviation of the fractions over the resources with allocatable > 0
    (``|f1 - f2| / 2`` for two, population standard deviation for more; float math as Go)."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(float(req) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares += (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return std


def balance_score(requested: list[int], allocatable: list[int]) -> int:
    """``int((1 - std) * 100)`` over the resources with allocatable > 0 (float math as Go)."""
    return int((1 - balance_std(requested, allocatable)) * MAX_NODE_SCORE)


def balance_stds(requested: list[np.ndarray], allocatable: list[np.ndarray]) -> np.ndarray:
    """:func:`balance_std` for every row, bit for bit: per resource an int64 column of each; a
    row takes part of a resource where its allocatable is not 0. Same float operations, same
    order (sums accumulate resource by resource)."""
    n = len(requested[0])
    if all(alloc.all() for alloc in allocatable):
        return _balance_stds_all_offered(requested, allocatable)
    fractions: list[np.ndarray] = []
    included: list[np.ndarray] = []
    total = np.zeros(n, dtype=np.float64)
    count = np.zeros(n, dtype=np.int64)
    for req, alloc in zip(requested, allocatable, strict=True):
        offered = alloc != 0
        ratio = req.astype(np.float64) / np.where(offered, alloc, 1).astype(np.float64)
        fraction = np.where(ratio > 1.0, 1.0, ratio)  # min(ratio, 1.0) as Python's min
        total = np.where(offered, total + fraction, total)
        count += offered
        fractions.append(fraction)
        included.append(offered)
    std = np.zeros(n, dtype=np.float64)
    # Two resources: the first two taken part, in order.
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.int64)
    for fraction, offered in zip(fractions, included, strict=True):
        first = np.where(offered & (seen == 0), fraction, first)
        second = np.where(offered & (seen == 1), fraction, second)
        seen += offered
    two = count == 2
    std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        divisor = np.where(many, count, 1).astype(np.float64)
        mean = total / divisor
        squares = np.zeros(n, dtype=np.float64)
        for fraction, offered in zip(fractions, included, strict=True):
            deviation = fraction - mean
            squares = np.where(offered, squares + deviation * deviation, squares)
        std = np.where(many, np.sqrt(squares / divisor), std)
    return std


def _balance_stds_all_offered(
    requested: list[np.ndarray], allocatable: list[np.ndarray]
) -> np.ndarray:
    """:func:`balance_stds` where every row offers every resource (the usual case: CPU and
    memory on every node): the same operations without the per-row masks, a third of the
    array operations (the masks were most of the function's cost)."""
    fractions = []
    for req, alloc in zip(requested, allocatable, strict=True):
        ratio = req.astype(np.float64) / alloc.astype(np.float64)
        fractions.append(np.where(ratio > 1.0, 1.0, ratio))  # min(ratio, 1.0) as Python's min
    if len(fractions) == 2:
        return np.abs((fractions[0] - fractions[1]) / 2)
    if len(fractions) < 2:
        return np.zeros(len(requested[0]), dtype=np.float64)
    total = np.zeros(len(requested[0]), dtype=np.float64)
    for fraction in fractions:
        total = total + fraction
    count = float(len(fractions))
    mean = total / count
    squares = np.zeros(len(requested[0]), dtype=np.float64)
    for fraction in fractions:
        deviation = fraction - mean
        squares = squares + deviation * deviation
    return np.sqrt(squares / count)


def balance_scores(requested: list[np.ndarray], allocatable: list[np.ndarray]) -> np.ndarray:
    """:func:`balance_score` for every row (``int()``: truncation toward zero)."""
    return ((1 - balance_stds(requested, allocatable)) * MAX_NODE_SCORE).astype(np.int64)


def balanced_resource_scorer(
    requested: list[int], allocated: list[int], allocatable: list[int]
) -> int:
    """Score the change of balance: 50 means unchanged, above 50 the pod improves it."""
    with_pod = balance_score(requested, allocatable)
    without_pod = balance_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


class NodeResourcesBalancedAllocation:
    name = NAME
    reads = (PODS,)
    # Answers depend only on the pod's spec and the NodeInfo: the runtime may memoize them.
    memo_points = ("score",)

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``: ``ValueError`` naming
        each bad field."""
        validate_balanced_allocation_args(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.resources = validate_balanced_allocation_args(args)

    def _pod_requests(self, pod: dict) -> list[int]:
        return pod_request_list(pod, self.resources, use_requested=True)

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        requests = self._pod_requests(pod)
        if not any(requests):
            return SKIP  # best-effort pod (upstream issue #129138)
        state.write(PRE_SCORE_KEY, PodRequestsState(requests))
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            requests = state.read(PRE_SCORE_KEY).pod_requests
        except StateNotFound:
            requests = self._pod_requests(pod)
            if not any(requests):
                return 0, None
        requested, allocatable = resource_vectors(node_info, self.resources, requests, True)
        # The node's own requests: the same resources, without the pod's share.
        allocated = [
            req - pod_req if alloc else 0
            for req, pod_req, alloc in zip(requested, requests, allocatable, strict=True)
        ]
        return balanced_resource_scorer(requested, allocated, allocatable), None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for the table's ``rows`` (actual requests; float math as per node).
        ``None`` when an amount is not int64-safe."""
        pre = state.get(PRE_SCORE_KEY)
        if pre is not None:
            requests = pre.pod_requests
        else:
            requests = self._pod_requests(pod)
            if not any(requests):
                return np.zeros(len(rows), dtype=np.int64)
        columns = resource_columns(table, rows, self.resources, requests, True)
        if columns is None:
            return None
        requested, allocatable = columns
        allocated = [
            np.where(alloc != 0, req - pod_req, 0)
            for req, pod_req, alloc in zip(requested, requests, allocatable, strict=True)
        ]
        with_pod = balance_scores(requested, allocatable)
        without_pod = balance_scores(allocated, allocatable)
        half = MAX_NODE_SCORE // 2
        return half + go_div_array(half + with_pod - without_pod, 2)

    def score_extensions(self) -> None:
        return None
