"""NodeUnschedulable (Filter): keep pods off cordoned nodes (upstream
``pkg/scheduler/framework/plugins/nodeunschedulable``).

Reads ``node.spec.unschedulable`` and the pod's tolerations; mutates nothing. A pod that
tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint may still land there.
"""

from __future__ import annotations

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import Handle
from extender.framework.labels import tolerates
from extender.framework.node_info import NodeInfo
from extender.framework.status import Status, unresolvable

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    name = NAME
    # Answers depend only on the pod's spec and the NodeInfo: the runtime may memoize them.
    memo_points = ("filter",)

    def __init__(self, args: dict, handle: Handle) -> None:
        pass

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if not node_info.unschedulable:
            return None
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if tolerates(tolerations, UNSCHEDULABLE_TAINT):
            return None
        return unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray:
        """:meth:`filter` for every row: cordoned rows fail unless the pod tolerates it."""
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if tolerates(tolerations, UNSCHEDULABLE_TAINT):
            return np.ones(len(table), dtype=bool)
        return ~table.unschedulable

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                _node_became_schedulable,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION), None
            ),
        ]


def _node_became_schedulable(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if new is not None and not (new.get("spec") or {}).get("unschedulable"):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
