"""TaintToleration (Filter, PreScore, Score): taints repel pods that do not tolerate them.

* Filter: the first ``NoSchedule``/``NoExecute`` taint no toleration matches rejects the node
  (UnschedulableAndUnresolvable: evicting pods cannot remove a taint).
* Score: the number of ``PreferNoSchedule`` taints not tolerated by the pod's tolerations with
  effect ``PreferNoSchedule`` or empty; normalized reversed, so fewer is better.

Reads the node's taints and the pod's tolerations; mutates nothing.
"""

from __future__ import annotations

from typing import Any

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.labels import find_untolerated_taint, tolerates
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import Status, unresolvable
from extender.framework.types import NodeInfo, NodeScore

from .helper import default_normalize_score

NAME = "TaintToleration"
PRE_SCORE_KEY = "PreScore" + NAME
ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
_FILTER_EFFECTS = ("NoSchedule", "NoExecute")


def _tolerations(pod: dict) -> list[dict]:
    return (pod.get("spec") or {}).get("tolerations") or []


class TaintToleration:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if not node_info.taints:
            return None
        if find_untolerated_taint(node_info.taints, _tolerations(pod), _FILTER_EFFECTS) is None:
            return None
        return unresolvable(ERR_REASON_NOT_MATCH)

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        prefer = [
            t for t in _tolerations(pod) if (t.get("effect") or "") in ("", "PreferNoSchedule")
        ]
        state.write(PRE_SCORE_KEY, prefer)
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            tolerations = state.read(PRE_SCORE_KEY)
        except StateNotFound:
            return 0, Status.error(f"reading {PRE_SCORE_KEY!r} from cycle state", plugin=NAME)
        count = 0
        for taint in node_info.taints:
            if taint.get("effect") == "PreferNoSchedule" and not tolerates(tolerations, taint):
                count += 1
        return count, None

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                _node_now_tolerated,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION)),
        ]


def _node_now_tolerated(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if new is None:
        return QueueingHint.QUEUE_SKIP
    taints = (new.get("spec") or {}).get("taints") or []
    if find_untolerated_taint(taints, _tolerations(pod), _FILTER_EFFECTS) is None:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
