"""NodeResourcesBalancedAllocation (PreScore, Score): keep resources in balance (spec §7.7).

On *actual* requests (no non-zero defaults), ``b = int((1 - std) x 100)`` where ``std`` is the
spread of the utilization fractions of the configured resources. v1.36 scores how placing the
pod changes the balance: ``50 + (50 + b_with - b_without) / 2`` (truncated as Go does). A pod
requesting nothing (best-effort) makes the plugin Skip. Mutates nothing.
"""

from __future__ import annotations

import math
from typing import Any

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import SKIP, Status
from extender.framework.types import NodeInfo

from .node_resources_fit import (
    allocatable_and_requested,
    go_div,
    parse_resources,
    pod_score_requests,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_KEY = "PreScore" + NAME


def balance(fractions: list[float]) -> int:
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


class NodeResourcesBalancedAllocation:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle
        self.resources = parse_resources(args.get("resources"), "resources")

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        requests = pod_score_requests(pod, self.resources, non_zero=False)
        if not any(requests):
            return SKIP
        state.write(PRE_SCORE_KEY, requests)
        return None

    def _fractions(self, node_info: NodeInfo, requests: list[int], with_pod: bool) -> list[float]:
        fractions = []
        for (name, _), request in zip(self.resources, requests, strict=True):
            capacity, requested = allocatable_and_requested(node_info, name, request, True)
            if capacity == 0:
                continue
            if not with_pod:
                requested -= request
            fractions.append(min(requested / capacity, 1.0))
        return fractions

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            requests = state.read(PRE_SCORE_KEY)
        except StateNotFound:
            requests = pod_score_requests(pod, self.resources, non_zero=False)
        with_pod = balance(self._fractions(node_info, requests, True))
        without = balance(self._fractions(node_info, requests, False))
        return 50 + go_div(50 + with_pod - without, 2), None

    def score_extensions(self) -> None:
        return None
