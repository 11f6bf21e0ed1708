"""PreScore, Score and NormalizeScore of PodTopologySpread: the soft (``ScheduleAnyway``)
constraints (upstream ``podtopologyspread/scoring.go``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Self

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import SCORE_ROWS_KEY, CycleState, StateNotFound
from extender.framework.labels import RequiredNodeAffinity
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.results import NodeScore
from extender.framework.snapshot import HOSTNAME_LABEL
from extender.framework.status import SKIP, Status

from .common import (
    NAME,
    SCHEDULE_ANYWAY,
    Constraint,
    MatchCounts,
    RowCounts,
    count_node_pods_matching,
    node_has_all_keys,
    whole_table,
)
from .filtering import _InclusionRows

PRE_SCORE_STATE_KEY = "PreScore" + NAME


def _pre_score_domains(
    nodes: Iterable[NodeInfo], constraints: list[Constraint], require_all: bool, s: PreScoreState
) -> list[int]:
    """PreScore's ignored nodes and (soft, non-hostname) domains of the feasible ``nodes``,
    node by node, into ``s``; the number of domains per constraint (upstream
    ``initPreScoreState`` in ``pkg/scheduler/framework/plugins/podtopologyspread/scoring.go``)."""
    sizes = [0] * len(constraints)
    for node_info in nodes:
        if require_all and not node_has_all_keys(node_info.labels, constraints):
            s.ignored_nodes.add(node_info.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME_LABEL:
                continue  # per-node counts are taken in Score
            value = node_info.labels.get(c.topology_key, "")
            if value not in s.tp_counts[i]:
                s.tp_counts[i][value] = 0
                sizes[i] += 1
    return sizes


def _pre_score_domains_indexed(
    table: NodeTable,
    rows: np.ndarray,
    constraints: list[Constraint],
    require_all: bool,
    s: PreScoreState,
) -> list[int]:
    """:func:`_pre_score_domains` for the table's ``rows`` by label columns: a row missing a
    key is ignored (when every key is required), the domains are the distinct values of the
    other rows (a missing label counts as the value ``""``; the order of a Go map's keys does
    not matter, the state is read by key)."""
    keep = np.ones(len(rows), dtype=bool)
    if require_all:
        for c in constraints:
            keep &= table.labels(c.topology_key).codes[rows] != 0
        names = table.names
        s.ignored_nodes.update(names[r] for r in rows[~keep].tolist())
    kept = rows[keep]
    sizes = [0] * len(constraints)
    for i, c in enumerate(constraints):
        if c.topology_key == HOSTNAME_LABEL:
            continue
        column = table.labels(c.topology_key)
        present = np.flatnonzero(np.bincount(column.codes[kept], minlength=len(column.values)))
        values = column.values
        s.tp_counts[i] = dict.fromkeys((values[k] or "" for k in present.tolist()), 0)
        sizes[i] = len(s.tp_counts[i])
    return sizes


def _rows(state: CycleState, table: NodeTable, nodes: list[NodeInfo]) -> np.ndarray | None:
    """The table rows of ``nodes``: the ones the runtime's filter remembered for this exact
    list (``SCORE_ROWS_KEY``), else looked up (``NodeTable.rows``)."""
    known = state.get(SCORE_ROWS_KEY)
    if known is not None and known[0] is nodes and known[1] is table:
        rows: np.ndarray | None = known[2]
        return rows
    return table.rows(nodes)


def _round_half_away(value: float) -> int:
    """Go's ``math.Round`` (half away from zero); Python's ``round`` rounds half to even."""
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


class PreScoreState:
    """Soft-constraint counts for scoring; read-only after PreScore, so clone shares it."""

    __slots__ = ("constraints", "ignored_nodes", "tp_counts", "weights")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        self.ignored_nodes: set[str] = set()
        self.tp_counts: list[dict[str, int]] = []
        self.weights: list[float] = []

    def clone(self) -> PreScoreState:
        return self


class Scoring:
    """The PreScore/Score/NormalizeScore methods of :class:`.plugin.PodTopologySpread`, a
    mixin: the plugin class supplies ``_constraints``, ``match_counts``, ``row_counts`` and
    ``system_defaulted``."""

    match_counts: MatchCounts
    row_counts: RowCounts
    system_defaulted: bool

    if TYPE_CHECKING:

        def _constraints(self, pod: dict, action: str) -> list[Constraint]: ...

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        snapshot = state.snapshot
        all_nodes: list[NodeInfo] = snapshot.node_info_list if snapshot is not None else nodes
        if not all_nodes:
            return SKIP
        spec = pod.get("spec") or {}
        # Nodes must carry every topology key unless the constraints are the system defaults,
        # so that nodes without a zone label still get hostname spreading.
        require_all = bool(spec.get("topologySpreadConstraints")) or not self.system_defaulted
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as exc:
            return Status.error(f"calculating preScoreState: {exc}")
        if not constraints:
            return SKIP

        s = PreScoreState()
        s.constraints = constraints
        s.tp_counts = [{} for _ in constraints]
        table = snapshot.table if snapshot is not None else None
        rows = _rows(state, table, nodes) if table is not None else None
        if table is not None and rows is not None:
            sizes = _pre_score_domains_indexed(table, rows, constraints, require_all, s)
        else:
            sizes = _pre_score_domains(nodes, constraints, require_all, s)
        for i, c in enumerate(constraints):
            size = sizes[i]
            if c.topology_key == HOSTNAME_LABEL:
                size = len(nodes) - len(s.ignored_nodes)
            s.weights.append(math.log(size + 2))

        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        required = RequiredNodeAffinity(pod)
        # Only domains of the feasible nodes are counted, never the hostname key (Score counts
        # a node's own pods); the cheap domain check goes before the inclusion policies.
        counted = [(c, s.tp_counts[i]) for i, c in enumerate(constraints)]
        counted = [(c, counts) for c, counts in counted if c.topology_key != HOSTNAME_LABEL]
        whole = whole_table(snapshot, all_nodes) if counted else None
        if whole is not None:
            self._pre_score_counts_indexed(
                whole, pod, constraints, counted, require_all, namespace, required
            )
            counted = []
        for node_info in all_nodes if counted else ():
            labels = node_info.labels
            if require_all and not node_has_all_keys(labels, constraints):
                continue
            for c, counts in counted:
                value = labels.get(c.topology_key, "")
                if value not in counts:
                    continue
                if not c.matches_inclusion_policies(pod, node_info, required):
                    continue
                counts[value] += self.match_counts.count(node_info, c.selector, namespace)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def _pre_score_counts_indexed(
        self,
        table: NodeTable,
        pod: dict,
        constraints: list[Constraint],
        counted: list[tuple[Constraint, dict[str, int]]],
        require_all: bool,
        namespace: str,
        required: RequiredNodeAffinity,
    ) -> None:
        """PreScore's counting loop over ``table.infos`` without a Python step per node: the
        rows passing the loop's per-node tests (every key when required, the inclusion
        policies) as numpy masks, their matching pods (``RowCounts``) summed per value of the
        key, and each sum added to its domain when it is one of the feasible nodes' domains
        (a missing label is the value ``""``, as in the loop)."""
        keep: np.ndarray | None = None
        if require_all:
            keep = np.ones(len(table), dtype=bool)
            for c in constraints:
                keep &= table.labels(c.topology_key).codes != 0
        inclusion = _InclusionRows(table, pod, required)
        for c, counts in counted:
            mask = inclusion.mask(c)
            ok = keep if mask is None else mask if keep is None else keep & mask
            column = table.labels(c.topology_key)
            per_row = self.row_counts.counts(table, c.selector, namespace)
            codes = column.codes
            if ok is not None:
                codes, per_row = codes[ok], per_row[ok]
            sums = np.bincount(codes, weights=per_row, minlength=len(column.values))
            values = column.values
            for k, n in zip(np.flatnonzero(sums).tolist(), sums[sums != 0].tolist(), strict=True):
                value = values[k] or ""
                if value in counts:
                    counts[value] += int(n)

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        except StateNotFound:
            return 0, Status.error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState')
        if node_info.name in s.ignored_nodes:
            return 0, None
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = node_info.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME_LABEL:
                count = count_node_pods_matching(node_info, c.selector, namespace)
            else:
                count = s.tp_counts[i].get(value, 0)
            # maxSkew - 1 waters down small differences between domains.
            total += count * s.weights[i] + (c.max_skew - 1)
        return _round_half_away(total), None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for ``rows``: the same float sum, constraint by constraint, then
        Go's rounding; hostname constraints count each node's own pods."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return None
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        total = np.zeros(len(rows), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            column = table.labels(c.topology_key)
            present = column.codes[rows] != 0
            if c.topology_key == HOSTNAME_LABEL:
                per_row = self.row_counts.counts(table, c.selector, namespace)[rows]
                count = np.where(present, per_row, 0).astype(np.float64)
            else:
                counts = s.tp_counts[i]
                count = column.map(
                    [0 if v is None else counts.get(v, 0) for v in column.values], np.float64
                )[rows]
            # Added only where the node has the key, as score skips the constraint otherwise.
            total = np.where(present, total + (count * s.weights[i] + (c.max_skew - 1)), total)
        # Go's math.Round: half away from zero.
        scores = np.where(total >= 0, np.floor(total + 0.5), -np.floor(-total + 0.5))
        scores = scores.astype(np.int64)
        if s.ignored_nodes:
            names = table.names
            ignored = np.fromiter(
                (names[r] in s.ignored_nodes for r in rows.tolist()), bool, len(rows)
            )
            scores[ignored] = 0
        return scores

    def score_extensions(self) -> Self:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        try:
            s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState')
        counted = [ns.score for ns in scores if ns.name not in s.ignored_nodes]
        lowest = min(counted, default=0)
        highest = max(max(counted, default=0), 0)
        for ns in scores:
            if ns.name in s.ignored_nodes:
                ns.score = 0
            elif highest == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = MAX_NODE_SCORE * (highest + lowest - ns.score) // highest
        return None

    def normalize_score_batch(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo], scores: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`normalize_score` on an array (ignored nodes 0, reversed min/max)."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return None
        ignored = (
            np.fromiter((n.name in s.ignored_nodes for n in nodes), bool, len(nodes))
            if s.ignored_nodes
            else np.zeros(len(nodes), dtype=bool)
        )
        counted = scores[~ignored]
        lowest = int(counted.min()) if len(counted) else 0
        highest = max(int(counted.max()) if len(counted) else 0, 0)
        if highest == 0:
            out = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        else:
            out = MAX_NODE_SCORE * (highest + lowest - scores) // highest
        out[ignored] = 0
        return out
