"""PreScore, Score and NormalizeScore of InterPodAffinity: preferred terms of the incoming
pod and all terms of the existing pods (upstream ``interpodaffinity/scoring.go``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

import numpy as np

from extender.framework.columns import SAFE_AMOUNT, NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.handle import Handle
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.pod_info import AffinityTerm, PodInfo, WeightedAffinityTerm
from extender.framework.results import NodeScore
from extender.framework.status import SKIP, Status

from .common import NAME, NamespaceLabels, term_matches

PRE_SCORE_STATE_KEY = "PreScore" + NAME


class PreScoreState:
    """Pair scores for Score/NormalizeScore; read-only after PreScore, so clone shares it."""

    __slots__ = ("topology_score",)

    def __init__(self) -> None:
        # topology key -> value -> score
        self.topology_score: dict[str, dict[str, int]] = {}

    def clone(self) -> PreScoreState:
        return self


class Scoring:
    """The PreScore/Score/NormalizeScore methods of :class:`.plugin.InterPodAffinity`, a mixin:
    the plugin class supplies ``handle``, ``hard_pod_affinity_weight`` and
    ``ignore_preferred_terms_of_existing_pods``."""

    handle: Handle
    hard_pod_affinity_weight: int
    ignore_preferred_terms_of_existing_pods: bool

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        try:
            pod_info = state.parsed_pod(pod)
        except ValueError as exc:
            return Status.error(f"failed to parse pod: {exc}")
        has_constraints = bool(
            pod_info.preferred_affinity_terms or pod_info.preferred_anti_affinity_terms
        )
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        snapshot = state.snapshot
        if snapshot is None:
            all_nodes = nodes if has_constraints else [n for n in nodes if n.pods_with_affinity]
        elif has_constraints:
            all_nodes = snapshot.node_info_list
        else:
            # Without preferred terms of its own, only pods with affinity terms can score.
            all_nodes = snapshot.have_pods_with_affinity_list

        ns_labels = NamespaceLabels(self.handle)
        s = PreScoreState()
        incoming_terms = [(wt.term, wt.weight) for wt in pod_info.preferred_affinity_terms]
        incoming_terms += [(wt.term, -wt.weight) for wt in pod_info.preferred_anti_affinity_terms]
        if (
            incoming_terms
            and snapshot is not None
            and all_nodes is snapshot.node_info_list
            and snapshot.table.infos is all_nodes
            and _incoming_scores_indexed(snapshot.table, s, incoming_terms, ns_labels)
        ):
            incoming_terms = []  # done from the table's label index
        if incoming_terms:
            for node_info in all_nodes:
                if node_info.labels:
                    self._process_incoming_terms(s, incoming_terms, node_info, ns_labels)
        if snapshot is None:
            for node_info in all_nodes:
                for existing in node_info.pods_with_affinity:
                    self._process_existing_pod(s, pod_info, existing, node_info.labels, ns_labels)
        else:
            # The same sums from the existing pods' terms grouped by content: one match per
            # distinct term instead of one per pod (pods of a workload share their terms).
            groups = snapshot.table.derived(
                f"{NAME}/existing-terms/{self.hard_pod_affinity_weight}",
                self._summarize_existing_terms,
                self._update_existing_terms,
            )
            score = s.topology_score
            for term, weight, counts in groups.values():
                if counts and term_matches(term, pod_info, ns_labels):
                    values = score.setdefault(term.topology_key, {})
                    for value, count in counts.items():
                        values[value] = values.get(value, 0) + weight * count
        if not s.topology_score:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    @staticmethod
    def _process_incoming_terms(
        s: PreScoreState,
        terms: list[tuple[AffinityTerm, int]],
        node_info: NodeInfo,
        ns_labels: NamespaceLabels,
    ) -> None:
        """The incoming pod's preferred terms (with their signed weights) matched against the
        node's existing pods: the first half of upstream's ``processExistingPod``
        (``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``), which walks every
        pod; here only the pods the label index offers (``NodeInfo.candidates``) are checked,
        as no other pod can match. The sums are the same (integers, any order)."""
        node_labels = node_info.labels
        score = s.topology_score
        for term, weight in terms:
            value = node_labels.get(term.topology_key)
            if value is None:
                continue
            for existing in node_info.candidates(term.selector):
                if term_matches(term, existing, ns_labels):
                    values = score.setdefault(term.topology_key, {})
                    values[value] = values.get(value, 0) + weight

    # -- existing pods' terms, grouped (PreScore) ---------------------------------------
    #
    # (term.key, weight) -> (term, weight, {topology value: pods}): for every existing pod with
    # affinity terms on a labelled node, each term it contributes in `_process_existing_pod`
    # (required affinity at hardPodAffinityWeight, preferred affinity +w, preferred
    # anti-affinity -w), counted per value of the term's topology key on the pod's node.

    def _contributions(self, existing: PodInfo) -> Iterable[tuple[AffinityTerm, int]]:
        if self.hard_pod_affinity_weight > 0:
            for term in existing.required_affinity_terms:
                yield term, self.hard_pod_affinity_weight
        for wt in existing.preferred_affinity_terms:
            yield wt.term, wt.weight
        for wt in existing.preferred_anti_affinity_terms:
            yield wt.term, -wt.weight

    def _count_node(self, groups: dict, node_info: NodeInfo, sign: int, copied: set | None) -> None:
        labels = node_info.labels
        if not labels:
            return
        for existing in node_info.pods_with_affinity:
            for term, weight in self._contributions(existing):
                value = labels.get(term.topology_key)
                if value is None:
                    continue
                key = (term.key, weight)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = (term, weight, {})
                    if copied is not None:
                        copied.add(key)
                elif copied is not None and key not in copied:
                    # Copy on first write: the parent table keeps its own counts.
                    group = groups[key] = (group[0], group[1], dict(group[2]))
                    copied.add(key)
                counts = group[2]
                total = counts.get(value, 0) + sign
                if total:
                    counts[value] = total
                else:
                    del counts[value]

    def _summarize_existing_terms(self, table: NodeTable) -> dict:
        groups: dict = {}
        for node_info in table.infos:
            if node_info.pods_with_affinity:
                self._count_node(groups, node_info, 1, None)
        return groups

    def _update_existing_terms(
        self, groups: dict, parent_infos: list[NodeInfo], table: NodeTable
    ) -> dict:
        groups = dict(groups)
        copied: set = set()
        for row in table.changed:
            self._count_node(groups, parent_infos[row], -1, copied)
            self._count_node(groups, table.infos[row], 1, copied)
        return groups

    def _process_existing_pod(
        self,
        s: PreScoreState,
        incoming: PodInfo,
        existing: PodInfo,
        node_labels: dict[str, str],
        ns_labels: NamespaceLabels,
    ) -> None:
        """The existing pod's terms matched against the incoming pod: the second half of
        upstream's ``processExistingPod``; only pods with affinity terms contribute."""
        if not node_labels:
            return
        score = s.topology_score

        def add(term: AffinityTerm, weight: int, target: PodInfo) -> None:
            if term_matches(term, target, ns_labels):
                value = node_labels.get(term.topology_key)
                if value is not None:
                    values = score.setdefault(term.topology_key, {})
                    values[value] = values.get(value, 0) + weight

        def add_weighted(terms: Iterable[WeightedAffinityTerm], sign: int, target: PodInfo) -> None:
            for wt in terms:
                add(wt.term, wt.weight * sign, target)

        # The existing pod's terms, matched against the incoming pod (symmetry).
        if self.hard_pod_affinity_weight > 0:
            for term in existing.required_affinity_terms:
                add(term, self.hard_pod_affinity_weight, incoming)
        add_weighted(existing.preferred_affinity_terms, 1, incoming)
        add_weighted(existing.preferred_anti_affinity_terms, -1, incoming)

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        except StateNotFound:
            return 0, Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState')
        total = 0
        for key, values in s.topology_score.items():
            value = node_info.labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total, None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for ``rows``: each topology key's scores mapped through its label
        column (a node without the key gets nothing from it)."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return None
        total = np.zeros(len(rows), dtype=np.int64)
        for key, values in s.topology_score.items():
            column = table.labels(key)
            # Only the values that scored (for hostname: the nodes with matching pods).
            per_value = np.zeros(len(column.values), dtype=np.int64)
            lookup = column.lookup
            for value, score in values.items():
                if not -SAFE_AMOUNT < score < SAFE_AMOUNT:
                    return None
                code = lookup.get(value)
                if code is not None:
                    per_value[code] = score
            total += per_value[column.codes[rows]]
        return total

    def score_extensions(self) -> Self:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        try:
            s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        except StateNotFound:
            return Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState')
        if not s.topology_score or not scores:
            return None
        lowest = min(ns.score for ns in scores)
        spread = max(ns.score for ns in scores) - lowest
        for ns in scores:
            # Float then truncation, as upstream computes it.
            ns.score = int(MAX_NODE_SCORE * ((ns.score - lowest) / spread)) if spread > 0 else 0
        return None

    def normalize_score_batch(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo], scores: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`normalize_score` on an array: the same float64 operations, truncated."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return None
        if not s.topology_score or not len(scores):
            return scores
        lowest = int(scores.min())
        spread = int(scores.max()) - lowest
        if spread <= 0:
            return np.zeros(len(scores), dtype=np.int64)
        if spread >= SAFE_AMOUNT or abs(lowest) >= SAFE_AMOUNT:
            return None  # beyond exact float64 integers: the per-node path
        return (MAX_NODE_SCORE * ((scores - lowest) / spread)).astype(np.int64)


def _incoming_scores_indexed(
    table: NodeTable,
    s: PreScoreState,
    terms: list[tuple[AffinityTerm, int]],
    ns_labels: NamespaceLabels,
) -> bool:
    """``InterPodAffinity._process_incoming_terms`` for every row of ``table``, visiting only
    the pods the table's label index offers for each term (``NodeTable.candidates``). False,
    scoring nothing, when a term has no selective pair."""
    offered = [table.candidates(term.selector) for term, _ in terms]
    if any(found is None for found in offered):
        return False
    infos = table.infos
    score = s.topology_score
    for (term, weight), found in zip(terms, offered, strict=True):
        assert found is not None
        key = term.topology_key
        rows, pods = found
        for r, existing in zip(rows.tolist(), pods, strict=True):
            value = infos[r].labels.get(key)
            if value is not None and term_matches(term, existing, ns_labels):
                values = score.setdefault(key, {})
                values[value] = values.get(value, 0) + weight
    return True
