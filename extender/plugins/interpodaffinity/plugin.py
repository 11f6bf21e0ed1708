"""InterPodAffinity: required and preferred pod (anti-)affinity (upstream
``pkg/scheduler/framework/plugins/interpodaffinity``).

Contract
* Reads the incoming pod's ``spec.affinity.podAffinity`` / ``podAntiAffinity``, the parsed
  affinity terms of the pods already on the snapshot's nodes, node labels and — for terms with
  a non-empty ``namespaceSelector`` — namespace labels through ``handle.namespace_labels(ns)``
  (no handle, or an unknown namespace, means no labels). Mutates nothing but its CycleState keys
  ``"PreFilterInterPodAffinity"`` and ``"PreScoreInterPodAffinity"``.
* PreFilter counts, per topology pair ``(key, value)``: existing pods whose required
  anti-affinity terms match the incoming pod; existing pods matching *all* the incoming pod's
  required affinity terms; existing pods matching each incoming required anti-affinity term.
  It answers Skip when the pod has no required terms and no existing pod's anti-affinity
  matches it. The counts are cloned for simulations and updated by ``add_pod``/``remove_pod``.
* Filter, in order: incoming required affinity (UnschedulableAndUnresolvable
  ``node(s) didn't match pod affinity rules``; a pod matching its own terms passes when no pod
  anywhere matches them — the first pod of a group); incoming required anti-affinity
  (Unschedulable ``node(s) didn't match pod anti-affinity rules``); existing pods' required
  anti-affinity (Unschedulable ``node(s) didn't satisfy existing pods anti-affinity rules``).
* Score: per topology pair, ``+weight`` / ``-weight`` for the incoming pod's preferred
  affinity / anti-affinity terms matching an existing pod, ``+hardPodAffinityWeight`` for each
  existing pod's required affinity term matching the incoming pod, ``±weight`` for existing pods'
  preferred terms matching it. A node's raw score is the sum over its pairs; NormalizeScore maps
  min..max to 0..100 (all 0 when min == max). PreScore answers Skip when nothing matched, or —
  with ``ignorePreferredTermsOfExistingPods`` — when the incoming pod has no preferred terms (as
  upstream, that flag only enables this early Skip).

One module (~770 lines) like every in-tree plugin here (one plugin a module, upstream name);
upstream's package splits it into ``filtering.go``, ``scoring.go`` and ``plugin.go``. About a
third is the batch forms and the indexed counting, each next to the per-node code it must
equal, which is why they are not split off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from extender.framework.columns import SAFE_AMOUNT, NodeTable, PairEntry
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import NAMESPACES, PODS, Handle
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import SKIP, Status, unresolvable, unschedulable
from extender.framework.types import (
    AffinityTerm,
    NodeInfo,
    NodeScore,
    PodInfo,
    WeightedAffinityTerm,
)

from ..args import invalid, is_int

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

TopologyPair = tuple[str, str]


class NamespaceLabels:
    """Namespace labels looked up once per namespace and cycle (a snapshot, like upstream's)."""

    __slots__ = ("_lookup", "_cache")

    def __init__(self, handle: Handle) -> None:
        self._lookup: Callable[[str], dict | None] = handle.namespace_labels
        self._cache: dict[str, dict | None] = {}

    def get(self, namespace: str) -> dict | None:
        if namespace not in self._cache:
            self._cache[namespace] = self._lookup(namespace) or None
        return self._cache[namespace]


def term_matches(term: AffinityTerm, pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
    """``term.matches`` fetching the pod's namespace labels only when the term needs them."""
    if (
        pod.namespace in term.namespaces
        or term.namespace_selector is None
        or term.namespace_selector.empty
    ):
        return term.matches(pod)
    return term.matches(pod, ns_labels.get(pod.namespace))


def matches_all_terms(
    terms: Iterable[AffinityTerm], pod: PodInfo, ns_labels: NamespaceLabels
) -> bool:
    """True iff there is at least one term and ``pod`` matches every one."""
    terms = tuple(terms)
    return bool(terms) and all(term_matches(t, pod, ns_labels) for t in terms)


def _bump(counts: dict[TopologyPair, int], labels: dict[str, str], key: str, delta: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + delta
    # Removals can bring a pair back to zero; drop it so "no pair" keeps meaning "no match".
    if total == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = total


class PreFilterState:
    __slots__ = (
        "existing_anti_affinity_counts",
        "affinity_counts",
        "anti_affinity_counts",
        "pod_info",
        "ns_labels",
    )

    def __init__(self, pod_info: PodInfo, ns_labels: NamespaceLabels) -> None:
        # pair -> number of existing pods whose required anti-affinity matches the pod
        self.existing_anti_affinity_counts: dict[TopologyPair, int] = {}
        # pair -> number of existing pods matching all the pod's required affinity terms
        self.affinity_counts: dict[TopologyPair, int] = {}
        # pair -> number of existing pods matching the pod's required anti-affinity terms
        self.anti_affinity_counts: dict[TopologyPair, int] = {}
        self.pod_info = pod_info
        self.ns_labels = ns_labels

    def clone(self) -> PreFilterState:
        copy = PreFilterState(self.pod_info, self.ns_labels)
        copy.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        copy.affinity_counts = dict(self.affinity_counts)
        copy.anti_affinity_counts = dict(self.anti_affinity_counts)
        return copy

    def update_with_pod(self, other: PodInfo, node_labels: dict[str, str], delta: int) -> None:
        incoming = self.pod_info
        for term in other.required_anti_affinity_terms:
            if term_matches(term, incoming, self.ns_labels):
                _bump(self.existing_anti_affinity_counts, node_labels, term.topology_key, delta)
        if matches_all_terms(incoming.required_affinity_terms, other, self.ns_labels):
            for term in incoming.required_affinity_terms:
                _bump(self.affinity_counts, node_labels, term.topology_key, delta)
        for term in incoming.required_anti_affinity_terms:
            if term_matches(term, other, self.ns_labels):
                _bump(self.anti_affinity_counts, node_labels, term.topology_key, delta)


class PreScoreState:
    """Pair scores for Score/NormalizeScore; read-only after PreScore, so clone shares it."""

    __slots__ = ("topology_score",)

    def __init__(self) -> None:
        # topology key -> value -> score
        self.topology_score: dict[str, dict[str, int]] = {}

    def clone(self) -> PreScoreState:
        return self


class InterPodAffinity:
    name = NAME
    reads = (PODS, NAMESPACES)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        args = args or {}
        weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
        if weight is None:
            weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
        if not is_int(weight) or not (
            MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT
        ):
            raise ValueError(
                invalid(
                    "hardPodAffinityWeight",
                    weight,
                    f"not in valid range "
                    f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
                    quote=repr,
                )
            )
        ignore = args.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            raise ValueError(
                invalid(
                    "ignorePreferredTermsOfExistingPods", ignore, "must be a boolean", quote=repr
                )
            )
        self.hard_pod_affinity_weight: int = weight
        self.ignore_preferred_terms_of_existing_pods: bool = ignore

    # -- PreFilter / Filter -----------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[None, Status | None]:
        try:
            pod_info = PodInfo(pod)
        except ValueError as exc:
            return None, unresolvable(f"parsing pod: {exc}")
        snapshot = state.snapshot
        if snapshot is not None:
            with_anti = snapshot.have_pods_with_required_anti_affinity_list
        else:
            with_anti = [n for n in nodes if n.pods_with_required_anti_affinity]
        s = PreFilterState(pod_info, NamespaceLabels(self.handle))

        for node_info in with_anti:
            for existing in node_info.pods_with_required_anti_affinity:
                for term in existing.required_anti_affinity_terms:
                    if term_matches(term, pod_info, s.ns_labels):
                        _bump(
                            s.existing_anti_affinity_counts,
                            node_info.labels,
                            term.topology_key,
                            1,
                        )

        affinity_terms = pod_info.required_affinity_terms
        anti_terms = pod_info.required_anti_affinity_terms
        if (affinity_terms or anti_terms) and not (
            snapshot is not None
            and nodes is snapshot.node_info_list
            and snapshot.table.infos is nodes
            and _incoming_counts_indexed(snapshot.table, s)
        ):
            for node_info in nodes:
                labels = node_info.labels
                # Upstream walks every pod (getIncomingAffinityAntiAffinityCounts in
                # pkg/scheduler/framework/plugins/interpodaffinity/filtering.go); only the pods
                # the label index offers can match a term (NodeInfo.candidates), and a pod
                # matching all affinity terms is among the candidates of each.
                if affinity_terms:
                    pods = min((node_info.candidates(t.selector) for t in affinity_terms), key=len)
                    for existing in pods:
                        if matches_all_terms(affinity_terms, existing, s.ns_labels):
                            for term in affinity_terms:
                                _bump(s.affinity_counts, labels, term.topology_key, 1)
                for term in anti_terms:
                    for existing in node_info.candidates(term.selector):
                        if term_matches(term, existing, s.ns_labels):
                            _bump(s.anti_affinity_counts, labels, term.topology_key, 1)

        if not s.existing_anti_affinity_counts and not affinity_terms and not anti_terms:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_remove, node_info, -1)

    def _update(
        self, state: CycleState, other: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status | None:
        try:
            s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(other, node_info.labels, delta)
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState')
        if not _satisfies_pod_affinity(s, node_info):
            return unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not _satisfies_pod_anti_affinity(s, node_info):
            return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not _satisfies_existing_pods_anti_affinity(s, node_info):
            return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray | None:
        """:meth:`filter` for every row: the same topology-pair lookups, once per distinct
        label value."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return None
        ok = np.ones(len(table), dtype=bool)
        terms = s.pod_info.required_affinity_terms
        if terms:
            # Every key present, and (unless the self-affinity exception holds) a matching pod
            # in the node's domain of every term.
            have_keys = np.ones(len(table), dtype=bool)
            pods_exist = np.ones(len(table), dtype=bool)
            for term in terms:
                key = term.topology_key
                column = table.labels(key)
                have_keys &= column.codes != 0
                pods_exist &= column.mask_values(
                    ((v, n > 0) for (k, v), n in s.affinity_counts.items() if k == key), False
                )
            if s.affinity_counts or not matches_all_terms(terms, s.pod_info, s.ns_labels):
                ok &= have_keys & pods_exist
            else:
                ok &= have_keys
        if s.anti_affinity_counts:
            for term in s.pod_info.required_anti_affinity_terms:
                key = term.topology_key
                ok &= ~table.labels(key).mask_values(
                    ((v, n > 0) for (k, v), n in s.anti_affinity_counts.items() if k == key),
                    False,
                )
        existing = s.existing_anti_affinity_counts
        if existing:
            for key in {k for k, _ in existing}:
                ok &= ~table.labels(key).mask_values(
                    ((v, n > 0) for (k2, v), n in existing.items() if k2 == key), False
                )
        return ok

    # -- PreScore / Score / NormalizeScore --------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        try:
            pod_info = PodInfo(pod)
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

    def score_extensions(self) -> InterPodAffinity:
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

    # -- events -----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # UpdateNodeTaint stands in for node additions that were filtered out while the
            # node was not ready (upstream keeps it for the same reason).
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if (new is not None and not _node_name(new)) or (old is not None and not _node_name(old)):
            return QueueingHint.QUEUE_SKIP
        target = PodInfo(pod)
        ns_labels = NamespaceLabels(self.handle)
        terms = target.required_affinity_terms
        anti_terms = target.required_anti_affinity_terms

        def matches_any_anti(changed: PodInfo) -> bool:
            return any(term_matches(t, changed, ns_labels) for t in anti_terms)

        if old is not None and new is not None:
            old_info, new_info = PodInfo(old), PodInfo(new)
            if not matches_all_terms(terms, old_info, ns_labels) and matches_all_terms(
                terms, new_info, ns_labels
            ):
                return QueueingHint.QUEUE
            if matches_any_anti(old_info) and not matches_any_anti(new_info):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            added = PodInfo(new)
            if matches_all_terms(terms, added, ns_labels):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        deleted = PodInfo(old)
        if matches_any_anti(deleted):
            return QueueingHint.QUEUE
        # The deleted pod's own anti-affinity may have been what kept the pod away.
        if any(term_matches(t, target, ns_labels) for t in deleted.required_anti_affinity_terms):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        target = PodInfo(pod)
        new_labels = (new.get("metadata") or {}).get("labels") or {}
        old_labels = ((old or {}).get("metadata") or {}).get("labels") or {}
        for term in target.required_affinity_terms:
            key = term.topology_key
            if old is None:
                if key in new_labels:
                    return QueueingHint.QUEUE
            elif key in new_labels and (
                key not in old_labels or old_labels[key] != new_labels[key]
            ):
                # The node gained the key, or moved to another domain.
                return QueueingHint.QUEUE
        for term in target.required_anti_affinity_terms:
            key = term.topology_key
            if old is None:
                return QueueingHint.QUEUE
            if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
                # The node left the domain that held the conflicting pod.
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _incoming_counts_indexed(table: NodeTable, s: PreFilterState) -> bool:
    """PreFilter's counts of existing pods matching the incoming pod's required affinity
    (all terms) and anti-affinity terms (each), over ``table.infos``, visiting only the pods
    the table's label index offers (``NodeTable.candidates``): a pod matching every affinity
    term carries a pair of the most selective one. The counts equal the node-by-node walk's
    (upstream ``getIncomingAffinityAntiAffinityCounts`` in
    ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``). False, counting
    nothing, when a term needed has no selective pair."""
    incoming = s.pod_info
    affinity_terms = incoming.required_affinity_terms
    anti_terms = incoming.required_anti_affinity_terms
    affinity_pods: PairEntry | None = None
    if affinity_terms:
        offered = [table.candidates(t.selector) for t in affinity_terms]
        usable = [found for found in offered if found is not None]
        if not usable:
            return False
        affinity_pods = min(usable, key=lambda found: len(found[1]))
    anti_pods: list[PairEntry] = []
    for term in anti_terms:
        found = table.candidates(term.selector)
        if found is None:
            return False
        anti_pods.append(found)
    infos = table.infos
    if affinity_pods is not None:
        rows, pods = affinity_pods
        for r, existing in zip(rows.tolist(), pods, strict=True):
            if matches_all_terms(affinity_terms, existing, s.ns_labels):
                labels = infos[r].labels
                for term in affinity_terms:
                    _bump(s.affinity_counts, labels, term.topology_key, 1)
    for term, (rows, pods) in zip(anti_terms, anti_pods, strict=True):
        for r, existing in zip(rows.tolist(), pods, strict=True):
            if term_matches(term, existing, s.ns_labels):
                _bump(s.anti_affinity_counts, infos[r].labels, term.topology_key, 1)
    return True


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


def _node_name(pod: dict) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _satisfies_pod_affinity(s: PreFilterState, node_info: NodeInfo) -> bool:
    terms = s.pod_info.required_affinity_terms
    pods_exist = True
    for term in terms:
        value = node_info.labels.get(term.topology_key)
        if value is None:
            # Every topology key of the pod's affinity terms must be on the node.
            return False
        if s.affinity_counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: allowed when no pod anywhere matches
    # the terms and the pod matches them itself, or it would stay pending forever.
    return not s.affinity_counts and matches_all_terms(terms, s.pod_info, s.ns_labels)


def _satisfies_pod_anti_affinity(s: PreFilterState, node_info: NodeInfo) -> bool:
    if not s.anti_affinity_counts:
        return True
    for term in s.pod_info.required_anti_affinity_terms:
        value = node_info.labels.get(term.topology_key)
        if value is not None and s.anti_affinity_counts.get((term.topology_key, value), 0) > 0:
            return False
    return True


def _satisfies_existing_pods_anti_affinity(s: PreFilterState, node_info: NodeInfo) -> bool:
    counts = s.existing_anti_affinity_counts
    if not counts:
        return True
    return not any(counts.get(pair, 0) > 0 for pair in node_info.labels.items())
