"""PreFilter, its AddPod/RemovePod extensions and Filter of InterPodAffinity: required pod
affinity and anti-affinity (upstream ``interpodaffinity/filtering.go``)."""

from __future__ import annotations

from typing import Self

import numpy as np

from extender.framework.columns import NodeTable, PairEntry
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.handle import Handle
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo
from extender.framework.status import SKIP, Status, unresolvable, unschedulable

from .common import NAME, NamespaceLabels, TopologyPair, matches_all_terms, term_matches

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"


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


class Filtering:
    """The PreFilter/Filter methods of :class:`.plugin.InterPodAffinity`, a mixin: the plugin
    class supplies ``handle``."""

    handle: Handle

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[None, Status | None]:
        try:
            pod_info = state.parsed_pod(pod)
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

    def pre_filter_extensions(self) -> Self:
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
