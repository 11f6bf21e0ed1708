"""NodeName (Filter): a pod with ``spec.nodeName`` fits only that node (upstream
``pkg/scheduler/framework/plugins/nodename``).

Reads the pod's ``spec.nodeName`` and the node's name; mutates nothing.
"""

from __future__ import annotations

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from extender.framework.handle import Handle
from extender.framework.node_info import NodeInfo
from extender.framework.status import Status, unresolvable

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def __init__(self, args: dict, handle: Handle) -> None:
        pass

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        wanted = (pod.get("spec") or {}).get("nodeName")
        if wanted and wanted != node_info.name:
            return unresolvable(ERR_REASON)
        return None

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray:
        """:meth:`filter` for every row: only the named node passes, if one is named."""
        wanted = (pod.get("spec") or {}).get("nodeName")
        ok = np.ones(len(table), dtype=bool) if not wanted else np.zeros(len(table), dtype=bool)
        if wanted and wanted in table.index:
            ok[table.index[wanted]] = True
        return ok

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
