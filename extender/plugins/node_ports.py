"""NodePorts (PreFilter, Filter): a pod's host ports must be free on the node (spec §7.5).

PreFilter collects ``(hostIP, protocol, hostPort)`` of containers and sidecar init containers
(empty IP is ``0.0.0.0``, empty protocol ``TCP``); none makes the plugin Skip. Filter: a wanted
port on ``0.0.0.0`` conflicts with the same protocol/port on any IP of the node; one on a
specific IP conflicts with that IP or ``0.0.0.0``. Reads ``NodeInfo.used_ports``; mutates nothing.
"""

from __future__ import annotations

from typing import Any

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
)
from extender.framework.status import SKIP, Status, unschedulable
from extender.framework.types import NodeInfo, PreFilterResult, host_ports_of

NAME = "NodePorts"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD = "0.0.0.0"


def fits_ports(wanted: tuple[tuple[str, str, int], ...], node_info: NodeInfo) -> bool:
    used = node_info.used_ports
    if not used:
        return True
    for ip, protocol, port in wanted:
        key = (protocol, port)
        if ip == WILDCARD:
            if any(key in ports for ports in used.values()):
                return False
        elif key in used.get(ip, ()) or key in used.get(WILDCARD, ()):
            return False
    return True


class NodePorts:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        wanted = host_ports_of(pod.get("spec") or {})
        if not wanted:
            return None, SKIP
        state.write(PRE_FILTER_KEY, wanted)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            wanted = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(f"reading {PRE_FILTER_KEY!r} from cycle state", plugin=NAME)
        return None if fits_ports(wanted, node_info) else unschedulable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]
