"""NodeAffinity (PreFilter, Filter, PreScore, Score): nodeSelector and node affinity (spec §7.9).

Required: ``spec.nodeSelector`` AND required node affinity, plus the profile's ``addedAffinity``
(args), checked separately. PreFilter narrows the cycle to named nodes when every term pins
``metadata.name``; Skip when there is nothing to check. Score: the summed weights of the
preferred terms (the pod's and addedAffinity's) that match the node, normalized to 0..100.
Reads node labels and names; mutates nothing.
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
from extender.framework.labels import NodeSelector, NodeSelectorTerm, RequiredNodeAffinity
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import SKIP, Status, unresolvable
from extender.framework.types import NodeInfo, NodeScore, PreFilterResult

from .helper import default_normalize_score

NAME = "NodeAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


class _Preferred:
    __slots__ = ("term", "weight")

    def __init__(self, term: dict, weight: int) -> None:
        self.term = NodeSelectorTerm(term)
        self.weight = weight


def _preferred(affinity: dict | None) -> list[_Preferred]:
    terms = (affinity or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    return [
        _Preferred(t.get("preference") or {}, t.get("weight") or 0)
        for t in terms
        if t.get("weight")
    ]


def _node_affinity(pod: dict) -> dict | None:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity")


def _has_required(pod: dict) -> bool:
    spec = pod.get("spec") or {}
    required = (_node_affinity(pod) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return bool(spec.get("nodeSelector")) or required is not None


def _pinned_node_names(pod: dict) -> set[str] | None:
    """Names from ``metadata.name In`` field terms, if every term has one; else ``None``."""
    required = (_node_affinity(pod) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = (required or {}).get("nodeSelectorTerms") or []
    if not terms:
        return None
    union: set[str] = set()
    for term in terms:
        names: set[str] | None = None
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                values = set(field.get("values") or ())
                names = values if names is None else names & values
        if names is None:
            return None
        union |= names
    return union


class NodeAffinity:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle
        added = args.get("addedAffinity") or None
        if added is not None and not isinstance(added, dict):
            raise ValueError("addedAffinity: must be a NodeAffinity object")
        self.added_required: NodeSelector | None = None
        self.added_preferred: list[_Preferred] = []
        if added:
            required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
            if required is not None:
                if not required.get("nodeSelectorTerms"):
                    raise ValueError(
                        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                        "nodeSelectorTerms: must have at least one term"
                    )
                self.added_required = NodeSelector(required)
            self.added_preferred = _preferred(added)
            for pref in self.added_preferred:
                if not 1 <= pref.weight <= 100:
                    raise ValueError(
                        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution.weight: "
                        "must be in the range 1-100"
                    )

    # -- filter ---------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not _has_required(pod) and self.added_required is None:
            return None, SKIP
        state.write(PRE_FILTER_KEY, RequiredNodeAffinity(pod))
        names = _pinned_node_names(pod)
        if names is None:
            return None, None
        if not names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names), None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if self.added_required is not None and not self.added_required.matches(
            node_info.name, node_info.labels
        ):
            return unresolvable(ERR_REASON_ENFORCED)
        try:
            required = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            required = RequiredNodeAffinity(pod)  # PreFilter skipped: nothing required
        if not required.matches(node_info.name, node_info.labels):
            return unresolvable(ERR_REASON_POD)
        return None

    # -- score ----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        preferred = _preferred(_node_affinity(pod)) + self.added_preferred
        if not preferred:
            return SKIP
        state.write(PRE_SCORE_KEY, preferred)
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            preferred = state.read(PRE_SCORE_KEY)
        except StateNotFound:
            preferred = _preferred(_node_affinity(pod)) + self.added_preferred
        total = 0
        for pref in preferred:
            if pref.term.matches(node_info.name, node_info.labels):
                total += pref.weight
        return total, None

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._node_now_matches,
            ),
        ]

    def _node_now_matches(self, pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        meta = new.get("metadata") or {}
        name, labels = meta.get("name", ""), meta.get("labels") or {}
        if self.added_required is not None and not self.added_required.matches(name, labels):
            return QueueingHint.QUEUE_SKIP
        if RequiredNodeAffinity(pod).matches(name, labels):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
