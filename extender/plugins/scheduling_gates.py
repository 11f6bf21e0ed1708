"""SchedulingGates (PreEnqueue): a pod with scheduling gates is not tried (upstream
``pkg/scheduler/framework/plugins/schedulinggates``)."""

from __future__ import annotations

from extender.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from extender.framework.handle import Handle
from extender.framework.status import Status, unresolvable

NAME = "SchedulingGates"


class SchedulingGates:
    name = NAME

    def __init__(self, args: dict, handle: Handle) -> None:
        pass

    def pre_enqueue(self, pod: dict) -> Status | None:
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        if not gates:
            return None
        names = " ".join(g.get("name", "") for g in gates)
        return unresolvable(f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
            )
        ]
