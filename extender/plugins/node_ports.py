"""NodePorts (PreFilter, Filter): a pod's host ports must be free on the node (upstream
``pkg/scheduler/framework/plugins/nodeports``).

PreFilter collects ``(hostIP, protocol, hostPort)`` for every port with ``hostPort > 0`` of the
containers and the restartable (sidecar) init containers, which run for the pod's whole life;
an empty IP means ``0.0.0.0`` and an empty protocol ``TCP``. No host port makes the plugin Skip.

Filter conflict rule (upstream ``HostPortInfo.CheckConflict``): a wanted port on ``0.0.0.0``
conflicts with the same (protocol, port) on any IP of the node; one on a specific IP conflicts
with the same (protocol, port) on that IP or on ``0.0.0.0``. Conflict -> Unschedulable (evicting
the pod holding the port can help, so preemption may try).

Reads ``NodeInfo.used_ports``; mutates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import PODS, Handle
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import host_ports_of
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unschedulable

NAME = "NodePorts"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD_IP = "0.0.0.0"

HostPort = tuple[str, str, int]  # (ip, protocol, port), sanitized
UsedPorts = Mapping[str, Iterable[tuple[str, int]]]  # ip -> {(protocol, port)}


def check_conflict(used: UsedPorts, ip: str, protocol: str, port: int) -> bool:
    """Whether ``(ip, protocol, port)`` collides with ``used``."""
    if port <= 0:
        return False
    ip = ip or WILDCARD_IP
    key = (protocol or "TCP", port)
    if ip == WILDCARD_IP:
        return any(key in ports for ports in used.values())
    return key in used.get(ip, ()) or key in used.get(WILDCARD_IP, ())


def fits_ports(wanted: Iterable[HostPort], used: UsedPorts) -> bool:
    if not used:
        return True
    return not any(check_conflict(used, ip, protocol, port) for ip, protocol, port in wanted)


def pod_host_ports(pod: dict) -> tuple[HostPort, ...]:
    return host_ports_of(pod.get("spec") or {})


class _PreFilterState:
    """The wanted host ports; independent of other pods, so clone shares it."""

    __slots__ = ("ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports

    def clone(self) -> _PreFilterState:
        return self


class NodePorts:
    name = NAME
    reads = (PODS,)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        wanted = pod_host_ports(pod)
        if not wanted:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(wanted))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            wanted: _PreFilterState = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycleState', plugin=NAME)
        if fits_ports(wanted.ports, node_info.used_ports):
            return None
        return unschedulable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Container ports are immutable, so pod updates cannot free a port: only deletions.
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE),
                is_schedulable_after_pod_deleted,
            ),
            # A new node may have the ports free; always worth a retry.
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]


def is_schedulable_after_pod_deleted(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    """Queue only if the deleted pod held (or was nominated with) a port this pod wants."""
    if old is None:
        return QueueingHint.QUEUE_SKIP
    spec = old.get("spec") or {}
    nominated = (old.get("status") or {}).get("nominatedNodeName") or ""
    if not spec.get("nodeName") and not nominated:
        return QueueingHint.QUEUE_SKIP  # it never occupied a node
    freed = pod_host_ports(old)
    if not freed:
        return QueueingHint.QUEUE_SKIP
    in_use: dict[str, set[tuple[str, int]]] = {}
    for ip, protocol, port in freed:
        in_use.setdefault(ip, set()).add((protocol, port))
    if fits_ports(pod_host_ports(pod), in_use):
        return QueueingHint.QUEUE_SKIP  # no common port: the deletion cannot help
    return QueueingHint.QUEUE
