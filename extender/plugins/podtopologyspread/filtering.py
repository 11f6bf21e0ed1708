"""PreFilter, its AddPod/RemovePod extensions and Filter of PodTopologySpread: the hard
(``DoNotSchedule``) constraints (upstream ``podtopologyspread/filtering.go``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Self

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.labels import RequiredNodeAffinity, find_untolerated_taint
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo
from extender.framework.status import SKIP, Status, unresolvable, unschedulable

from ..node_affinity import _required_rows
from .common import (
    _DO_NOT_SCHEDULE_EFFECTS,
    DO_NOT_SCHEDULE,
    HONOR,
    NAME,
    Constraint,
    RowCounts,
    count_node_pods_matching,
    node_has_all_keys,
    whole_table,
)

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

# The minimum of an empty domain map, as upstream's critical paths start at MaxInt32.
_NO_DOMAIN_MIN = 2**31 - 1


def _pre_filter_counts(
    nodes: Iterable[NodeInfo],
    constraints: list[Constraint],
    pod: dict,
    namespace: str,
    required: RequiredNodeAffinity,
) -> list[dict[str, int]]:
    """PreFilter's domain counts, node by node (the reference for
    :func:`_pre_filter_counts_indexed`; upstream ``calPreFilterState`` in
    ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``)."""
    tp_counts: list[dict[str, int]] = [{} for _ in constraints]
    keys = [c.topology_key for c in constraints]
    # Per node this loop is the whole cost of PreFilter: skip the inclusion check where
    # it cannot fail (no nodeSelector/affinity to honor, taints ignored).
    unconditional = not required.node_selector and required.affinity is None
    checked = [
        (
            i,
            c,
            c.topology_key,
            c.node_taints_policy == HONOR
            or (c.node_affinity_policy == HONOR and not unconditional),
        )
        for i, c in enumerate(constraints)
    ]
    for node_info in nodes:
        labels = node_info.labels
        if node_info.node is None:
            continue
        for key in keys:
            if key not in labels:
                break
        else:
            for i, c, key, check in checked:
                if check and not c.matches_inclusion_policies(pod, node_info, required):
                    continue
                value = labels[key]
                count = count_node_pods_matching(node_info, c.selector, namespace)
                tp_counts[i][value] = tp_counts[i].get(value, 0) + count
    return tp_counts


class _InclusionRows:
    """The inclusion policies of a pod's constraints as row masks over a table, each
    computed once: required node affinity (``Constraint.matches_inclusion_policies``'s Honor
    test, by NodeAffinity's batch form) and tolerated NoSchedule/NoExecute taints (once per
    taint group)."""

    def __init__(self, table: NodeTable, pod: dict, required: RequiredNodeAffinity) -> None:
        self.table = table
        self.pod = pod
        self.required = required
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None

    def mask(self, c: Constraint) -> np.ndarray | None:
        """Rows passing ``c``'s inclusion policies; ``None``: every row passes."""
        mask: np.ndarray | None = None
        required = self.required
        if c.node_affinity_policy == HONOR and (
            required.node_selector or required.affinity is not None
        ):
            if self._affinity is None:
                self._affinity = _required_rows(self.table, required)
            mask = self._affinity
        if c.node_taints_policy == HONOR:
            if self._taints is None:
                codes, groups = self.table.taint_groups()
                tolerations = (self.pod.get("spec") or {}).get("tolerations") or []
                tolerated = np.fromiter(
                    (
                        find_untolerated_taint(g, tolerations, _DO_NOT_SCHEDULE_EFFECTS) is None
                        for g in groups
                    ),
                    bool,
                    len(groups),
                )
                self._taints = tolerated[codes]
            mask = self._taints if mask is None else mask & self._taints
        return mask


def _pre_filter_counts_indexed(
    table: NodeTable,
    constraints: list[Constraint],
    pod: dict,
    namespace: str,
    required: RequiredNodeAffinity,
    row_counts: RowCounts,
) -> list[dict[str, int]]:
    """:func:`_pre_filter_counts` over ``table.infos`` without a Python step per node: the
    eligible rows (node present, every topology key, inclusion policies) as numpy masks, the
    domains as the distinct values of those rows (the order of a Go map's keys does not
    matter: the state is read by key and by its minimum), each domain's count the sum of its
    eligible rows' matching pods (``RowCounts``, kept from table to table)."""
    eligible = table.has_node.copy()
    for c in constraints:
        eligible &= table.labels(c.topology_key).codes != 0
    inclusion = _InclusionRows(table, pod, required)
    tp_counts: list[dict[str, int]] = []
    for c in constraints:
        mask = inclusion.mask(c)
        ok = eligible if mask is None else eligible & mask
        column = table.labels(c.topology_key)
        codes = column.codes[ok]
        size = len(column.values)
        domains = np.flatnonzero(np.bincount(codes, minlength=size))
        per_row = row_counts.counts(table, c.selector, namespace)[ok]
        sums = np.bincount(codes, weights=per_row, minlength=size)[domains].astype(np.int64)
        # Codes of eligible rows are >= 1: their values are strings.
        values = column.values
        tp_counts.append(
            {values[k] or "": n for k, n in zip(domains.tolist(), sums.tolist(), strict=True)}
        )
    return tp_counts


class PreFilterState:
    """Per-constraint domain counts for the hard constraints; cloned for simulations."""

    __slots__ = ("constraints", "tp_counts")

    def __init__(self, constraints: list[Constraint], tp_counts: list[dict[str, int]]) -> None:
        self.constraints = constraints  # shared: never mutated
        self.tp_counts = tp_counts

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [dict(m) for m in self.tp_counts])

    def min_match(self, index: int) -> int:
        counts = self.tp_counts[index]
        if len(counts) < self.constraints[index].min_domains:
            # Fewer eligible domains than minDomains: the global minimum is treated as 0.
            return 0
        return min(counts.values(), default=_NO_DOMAIN_MIN)


class Filtering:
    """The PreFilter/Filter methods of :class:`.plugin.PodTopologySpread`, a mixin: the plugin
    class supplies ``_constraints`` and ``row_counts``."""

    row_counts: RowCounts

    if TYPE_CHECKING:

        def _constraints(self, pod: dict, action: str) -> list[Constraint]: ...

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[None, Status | None]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as exc:
            return None, Status.error(f"get constraints from pod: {exc}")
        if not constraints:
            return None, SKIP
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        required = RequiredNodeAffinity(pod)
        table = whole_table(state.snapshot, nodes)
        if table is not None:
            tp_counts = _pre_filter_counts_indexed(
                table, constraints, pod, namespace, required, self.row_counts
            )
        else:
            tp_counts = _pre_filter_counts(nodes, constraints, pod, namespace, required)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(constraints, tp_counts))
        return None, None

    def pre_filter_extensions(self) -> Self:
        return self

    def add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_to_remove, node_info, -1)

    def _update_with_pod(
        self, state: CycleState, pod: dict, other: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status | None:
        try:
            s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except StateNotFound:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        if other.namespace != namespace or node_info.node is None:
            return None
        if not node_has_all_keys(node_info.labels, s.constraints):
            return None
        required = RequiredNodeAffinity(pod)
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(other.labels):
                continue
            if not c.matches_inclusion_policies(pod, node_info, required):
                continue
            value = node_info.labels[c.topology_key]
            s.tp_counts[i][value] = s.tp_counts[i].get(value, 0) + delta
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except StateNotFound:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not s.constraints:
            return None
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        for i, c in enumerate(s.constraints):
            value = node_info.labels.get(c.topology_key)
            if value is None:
                return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            self_match = 1 if c.selector.matches(pod_labels) else 0
            skew = s.tp_counts[i].get(value, 0) + self_match - s.min_match(i)
            if skew > c.max_skew:
                return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray | None:
        """:meth:`filter` for every row: each constraint's skew test once per distinct value
        of its topology key (a node without the key fails)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return None
        ok = np.ones(len(table), dtype=bool)
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        for i, c in enumerate(s.constraints):
            self_match = 1 if c.selector.matches(pod_labels) else 0
            min_match = s.min_match(i)
            counts = s.tp_counts[i]
            base = self_match - min_match
            # A domain with no count has 0: the same answer for every such value.
            ok &= table.labels(c.topology_key).mask_values(
                ((v, n + base <= c.max_skew) for v, n in counts.items()), base <= c.max_skew
            )
        return ok
