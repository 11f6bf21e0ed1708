"""PodGroupPodsCount (PlacementScore): favours the placement that holds more of the group's
pods (kubernetes ``pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count.go``;
feature gate TopologyAwareWorkloadScheduling, weight 1 in the default profile).

Reads: the pod group cycle's state of the group (``state.pod_group_states``: its scheduled
members) and the placement's proposed assignments. Mutates nothing. Score: scheduled members
plus proposed ones; normalized against the largest, without regard to minCount (upstream keeps
small differences small).
"""

from __future__ import annotations

from extender.framework.cycle_state import CycleState
from extender.framework.handle import Handle
from extender.framework.normalize import MAX_NODE_SCORE, MIN_NODE_SCORE
from extender.framework.podgroups import PlacementScore, PodGroupAssignments, PodGroupInfo
from extender.framework.status import Status

NAME = "PodGroupPodsCount"


class PodGroupPodsCount:
    name = NAME

    def __init__(self, args: dict, handle: Handle) -> None:
        pass

    def score_placement(
        self, state: CycleState, pod_group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> tuple[int, Status | None]:
        group_state = (state.pod_group_states or {}).get(pod_group.key)
        if group_state is None:
            return 0, Status.error(
                f"pod group state not found for pod group {pod_group.namespace}/{pod_group.name}"
            )
        return group_state.scheduled_pods_count() + len(assignments.proposed), None

    def normalize_placement_score(
        self, state: CycleState, pod_group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        top = max((s.score for s in scores), default=0)
        if top == 0:
            return Status.error(
                "no pods from pod group are assigned to any of the candidate placements"
            )
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // top
        return None
