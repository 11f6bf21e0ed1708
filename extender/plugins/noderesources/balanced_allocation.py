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

Reads NodeInfo aggregates; writes only its PreScore key; mutates nothing.
"""

from __future__ import annotations

import math

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.handle import PODS, Handle
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import SKIP, Status
from extender.framework.types import NodeInfo

from .resource_allocation import PodRequestsState, go_div, pod_request_list, resource_vectors
from .validation import validate_balanced_allocation_args

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_KEY = "PreScore" + NAME


def balance_score(requested: list[int], allocatable: list[int]) -> int:
    """``int((1 - std) * 100)`` over the resources with allocatable > 0 (float math as Go)."""
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
    return int((1 - std) * MAX_NODE_SCORE)


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

    def score_extensions(self) -> None:
        return None
