"""TaintToleration (Filter, PreScore, Score): taints repel pods that do not tolerate them (upstream
``pkg/scheduler/framework/plugins/tainttoleration``).

* Filter: the first ``NoSchedule``/``NoExecute`` taint that no toleration of the pod matches
  rejects the node as UnschedulableAndUnresolvable (evicting pods cannot remove a taint), with the
  1.35+ reason ``node(s) had untolerated taint(s)`` (no taint key/value in the text any more).
  ``PreferNoSchedule`` taints never filter.
* PreScore: keeps the pod's tolerations whose effect is empty or ``PreferNoSchedule`` in the cycle
  state. It never skips (upstream writes the state even for a pod without tolerations).
* Score: the number of the node's ``PreferNoSchedule`` taints those tolerations do not tolerate;
  NormalizeScore reverses the default normalization, so fewer untolerated taints is better and a
  node with none gets 100.

Batch forms (:mod:`extender.framework.columns`): the answer depends only on the node's taints
(their key, value and effect), so ``filter_batch`` and ``score_batch`` evaluate the same
functions once per distinct taint list (:meth:`NodeTable.taint_groups`) and map the group
answers to the rows.

Reads the node's taints and the pod's tolerations; mutates neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import Handle
from extender.framework.labels import find_untolerated_taint, toleration_matcher
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import DefaultNormalize
from extender.framework.status import Status, unresolvable

if TYPE_CHECKING:
    from extender.framework.columns import NodeTable

NAME = "TaintToleration"
PRE_SCORE_KEY = "PreScore" + NAME
ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
# Taint effects that keep a pod off a node (upstream DoNotScheduleTaintsFilterFunc).
DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def _tolerations(pod: dict | None) -> list[dict]:
    return ((pod or {}).get("spec") or {}).get("tolerations") or []


def _taints(node: dict) -> list[dict]:
    return (node.get("spec") or {}).get("taints") or []


def prefer_no_schedule_tolerations(tolerations: list[dict]) -> list[dict]:
    """Tolerations that can tolerate a ``PreferNoSchedule`` taint.

    An empty effect means "every effect", so it counts as well.
    """
    return [t for t in tolerations if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]


def count_intolerable_prefer_no_schedule(taints: list[dict], tolerations: list[dict]) -> int:
    if not taints:
        return 0
    tolerated = toleration_matcher(tolerations, len(taints))
    return sum(
        1 for taint in taints if taint.get("effect") == PREFER_NO_SCHEDULE and not tolerated(taint)
    )


class _PreScoreState:
    """The pod's PreferNoSchedule-relevant tolerations; read-only, so clone shares it."""

    __slots__ = ("tolerations",)

    def __init__(self, tolerations: list[dict]) -> None:
        self.tolerations = tolerations

    def clone(self) -> _PreScoreState:
        return self


class TaintToleration(DefaultNormalize):
    name = NAME
    normalize_reverse = True  # fewer intolerable taints score higher
    # Answers depend only on the pod's spec and the NodeInfo: the runtime may memoize them.
    memo_points = ("filter", "score")

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    # -- filter ---------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        taint = find_untolerated_taint(
            node_info.taints or [], _tolerations(pod), DO_NOT_SCHEDULE_EFFECTS
        )
        if taint is None:
            return None
        return unresolvable(ERR_REASON_NOT_MATCH)

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray:
        """:meth:`filter` for every row: ``find_untolerated_taint`` once per taint group."""
        codes, groups = table.taint_groups()
        tolerations = _tolerations(pod)
        ok = np.fromiter(
            (
                find_untolerated_taint(taints or [], tolerations, DO_NOT_SCHEDULE_EFFECTS) is None
                for taints in groups
            ),
            bool,
            len(groups),
        )
        return ok[codes]

    # -- score ----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        state.write(
            PRE_SCORE_KEY, _PreScoreState(prefer_no_schedule_tolerations(_tolerations(pod)))
        )
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            pre_score: _PreScoreState = state.read(PRE_SCORE_KEY)
        except StateNotFound:
            # Upstream has no fallback here: Score without PreScore is an error.
            return 0, Status.error(f'failed to read "{PRE_SCORE_KEY}" from cycleState', plugin=NAME)
        return count_intolerable_prefer_no_schedule(
            node_info.taints or [], pre_score.tolerations
        ), None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for ``rows``: the count of intolerable ``PreferNoSchedule`` taints once
        per taint group. Declines without the PreScore state (``score`` reports the error)."""
        pre_score: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return None
        codes, groups = table.taint_groups()
        counts = np.fromiter(
            (
                count_intolerable_prefer_no_schedule(taints or [], pre_score.tolerations)
                for taints in groups
            ),
            np.int64,
            len(groups),
        )
        return counts[codes[rows]]

    # -- queueing -------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Labels never change this plugin's verdict, so only additions and taint updates.
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION),
                is_schedulable_after_pod_toleration_change,
            ),
        ]


def is_schedulable_after_node_change(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    """Queue only when the node went from untolerated (or absent) to tolerated."""
    if new is None:
        return QueueingHint.QUEUE_SKIP
    tolerations = _tolerations(pod)
    was_untolerated = True
    if old is not None:
        was_untolerated = (
            find_untolerated_taint(_taints(old), tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None
        )
    is_untolerated = (
        find_untolerated_taint(_taints(new), tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None
    )
    if was_untolerated and not is_untolerated:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_toleration_change(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    """Queue when the updated pod is the unschedulable pod itself (it gained a toleration)."""
    if new is None:
        return QueueingHint.QUEUE_SKIP
    uid = ((pod.get("metadata") or {}).get("uid")) or ""
    new_uid = ((new.get("metadata") or {}).get("uid")) or ""
    if uid == new_uid:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
