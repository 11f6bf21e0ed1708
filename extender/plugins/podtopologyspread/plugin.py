"""PodTopologySpread: spread matching pods evenly over topology domains (upstream
``pkg/scheduler/framework/plugins/podtopologyspread``).

Contract
* Reads the incoming pod's ``spec.topologySpreadConstraints`` (or the profile's default
  constraints, see below), node labels/taints and the pods already on the nodes of the cycle's
  snapshot. Mutates nothing but its own CycleState keys ``"PreFilterPodTopologySpread"`` and
  ``"PreScorePodTopologySpread"``.
* Hard constraints (``whenUnsatisfiable: DoNotSchedule``) are checked in PreFilter/Filter; soft
  ones (``ScheduleAnyway``) are scored in PreScore/Score/NormalizeScore. A pod without
  constraints of the relevant kind makes PreFilter/PreScore answer Skip.
* Counting: a node is *eligible* for a constraint when it has every constraint's topology key
  and passes the constraint's inclusion policies (``nodeAffinityPolicy`` Honor (default): the
  pod's nodeSelector/required node affinity must match; ``nodeTaintsPolicy`` Honor (default
  Ignore): the node's NoSchedule/NoExecute taints must be tolerated). A domain's count is the
  number of pods on eligible nodes of that domain that are in the incoming pod's namespace, match
  the constraint's selector (``labelSelector`` plus ``matchLabelKeys`` values taken from the
  incoming pod) and are not terminating (``metadata.deletionTimestamp`` unset). As upstream, an
  empty selector (``labelSelector: {}``) counts no pods, while a missing one matches nothing.
* Filter: ``skew = count(node's domain) + (1 if the pod matches the selector) - global min``,
  where the global minimum is 0 while fewer than ``minDomains`` domains exist. ``skew >
  maxSkew`` → Unschedulable; a node lacking a topology key → UnschedulableAndUnresolvable.
  Upstream keeps only the two smallest domains ("critical paths") and can overestimate the
  minimum after simulated pod additions; here the exact minimum is recomputed, which equals
  upstream whenever upstream's answer does not depend on map iteration order.
* Score: per node ``round(Σ count × ln(size + 2) + (maxSkew − 1))``; nodes lacking a key are
  ignored (final score 0); normalisation is reversed min/max so fewer matching pods score higher.

Default constraints (``defaultingType``): ``System`` (the default) uses hostname maxSkew 3 and
zone maxSkew 5, both ScheduleAnyway; ``List`` uses ``defaultConstraints``. They apply only to a
pod without any constraints, and only with the selector upstream derives from the Services
selecting the pod and the pod's controlling ReplicationController/ReplicaSet/StatefulSet
(``helper.DefaultSelector``). An empty derived selector means *no* default constraints. This
plugin reads those objects from the handle's listers (``reads`` declares the kinds, so both
shells watch them); a pod that no Service or controller selects gets no default spreading
(PreScore Skip), as upstream. With System defaulting, nodes missing a default key are not
ignored (hostname spreading still works on nodes without a zone label).

One module (~1070 lines) like every in-tree plugin here (one plugin a module, upstream name);
upstream spreads the same code over ``common.go``, ``filtering.go``, ``scoring.go`` and
``plugin.go`` of one package. About a third is the batch forms and the counting from the
table's label-pair index, kept next to the per-node code each must equal; a split into a
package along upstream's files is the next step if it grows again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import (
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    Handle,
    Kind,
)
from extender.framework.labels import LabelSelector, RequiredNodeAffinity, find_untolerated_taint
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import SKIP, Status, unresolvable, unschedulable
from extender.framework.types import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    NodeInfo,
    NodeScore,
    PodInfo,
    pod_key,
)

from ..args import duplicate, invalid, is_int, required, unsupported
from ..node_affinity import _required_rows

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict, ...] = (
    {"topologyKey": HOSTNAME_LABEL, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": ZONE_LABEL, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

# Taint effects that keep a pod off a node (upstream DoNotScheduleTaintsFilterFunc).
_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
# The minimum of an empty domain map, as upstream's critical paths start at MaxInt32.
_NO_DOMAIN_MIN = 2**31 - 1


@dataclass(slots=True)
class Constraint:
    """A topology spread constraint with its selector compiled and defaults applied."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def matches_inclusion_policies(
        self, pod: dict, node_info: NodeInfo, required: RequiredNodeAffinity
    ) -> bool:
        if self.node_affinity_policy == HONOR and not required.matches(
            node_info.name, node_info.labels
        ):
            return False
        if self.node_taints_policy == HONOR:
            tolerations = (pod.get("spec") or {}).get("tolerations") or []
            if find_untolerated_taint(node_info.taints, tolerations, _DO_NOT_SCHEDULE_EFFECTS):
                return False
        return True


def _parse_constraints(
    constraints: Iterable[dict], pod_labels: dict[str, str], action: str
) -> list[Constraint]:
    """The constraints with ``whenUnsatisfiable == action``, selectors compiled."""
    result = []
    for c in constraints:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = LabelSelector(c.get("labelSelector"))
        # matchLabelKeys: the incoming pod's values for these keys narrow the selector.
        for key in c.get("matchLabelKeys") or ():
            if key in pod_labels:
                selector.add_equals(key, pod_labels[key])
        min_domains = c.get("minDomains")
        result.append(
            Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=c.get("topologyKey") or "",
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
                node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE,
            )
        )
    return result


def node_has_all_keys(labels: dict[str, str], constraints: Iterable[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class MatchCounts:
    """Memoized :func:`count_pods_matching` per node, keyed by the NodeInfo's generation.

    Consecutive pods of one workload share their selector, and between two of them only the
    node the last one landed on changed: every other node's count is reused. Safe across
    threads (a race only recomputes a count) and across simulated NodeInfos (each mutation
    gives a NodeInfo a new generation).
    """

    def __init__(self, max_selectors: int = 256) -> None:
        self.max_selectors = max_selectors
        self._counts: dict[tuple, dict[str, tuple[int, int]]] = {}

    def count(self, node_info: NodeInfo, selector: LabelSelector, namespace: str) -> int:
        if selector.empty or selector.matches_nothing:
            return 0
        key = (selector.key, namespace)
        per_node = self._counts.get(key)
        if per_node is None:
            if len(self._counts) >= self.max_selectors:
                self._counts.clear()
            per_node = self._counts[key] = {}
        cached = per_node.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            return cached[1]
        value = count_node_pods_matching(node_info, selector, namespace)
        per_node[node_info.name] = (node_info.generation, value)
        return value


def count_node_pods_matching(node_info: NodeInfo, selector: LabelSelector, namespace: str) -> int:
    """:func:`count_pods_matching` over the node's pods, checking only the pods its label
    index offers as candidates (``NodeInfo.candidates``); the count is the same.

    Upstream counts with a walk over ``nodeInfo.Pods`` (``countPodsMatchSelector`` in
    ``pkg/scheduler/framework/plugins/podtopologyspread/common.go``).
    """
    if selector.empty:
        return 0
    pods = node_info.candidates(selector)
    # Most nodes hold no candidate: skip the generator.
    return count_pods_matching(pods, selector, namespace) if pods else 0


def _host_counts(
    table: NodeTable, rows: np.ndarray, present: np.ndarray, selector: LabelSelector, namespace: str
) -> np.ndarray:
    """:func:`count_pods_matching` over each of ``rows``' own pods (0 where not ``present``),
    from the table's label-pair index when the selector has a selective pair."""
    found = None if selector.empty else table.candidates(selector)
    if found is None:
        infos = table.infos
        return np.fromiter(
            (
                count_pods_matching(infos[r].pods, selector, namespace) if p else 0
                for r, p in zip(rows.tolist(), present.tolist(), strict=True)
            ),
            np.float64,
            len(rows),
        )
    pod_rows, pods = found
    keep = [
        i
        for i, p in enumerate(pods)
        if not p.deleting and p.namespace == namespace and selector.matches(p.labels)
    ]
    per_row = np.bincount(pod_rows[keep], minlength=len(table)) if keep else np.zeros(len(table))
    return np.where(present, per_row[rows], 0).astype(np.float64)


def count_pods_matching(pods: Iterable[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """Pods in ``namespace`` matching ``selector``, terminating pods excluded."""
    if selector.empty:
        return 0
    return sum(
        1
        for p in pods
        if not p.deleting and p.namespace == namespace and selector.matches(p.labels)
    )


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


def _matching_rows(table: NodeTable, selector: LabelSelector, namespace: str) -> list[int] | None:
    """The row of each pod of the table that :func:`count_pods_matching` counts (a row once
    per such pod), from the table's label index (``NodeTable.candidates``); ``None`` when the
    selector offers no selective pair (the caller walks the nodes)."""
    if selector.empty:
        return []
    found = table.candidates(selector)
    if found is None:
        return None
    rows, pods = found
    return [
        r
        for r, p in zip(rows.tolist(), pods, strict=True)
        if not p.deleting and p.namespace == namespace and selector.matches(p.labels)
    ]


def _pre_filter_counts_indexed(
    table: NodeTable,
    constraints: list[Constraint],
    pod: dict,
    namespace: str,
    required: RequiredNodeAffinity,
) -> list[dict[str, int]] | None:
    """:func:`_pre_filter_counts` over ``table.infos`` without a Python step per node: the
    eligible rows (node present, every topology key, inclusion policies) as numpy masks, the
    domains as the distinct values of those rows (first-seen order, count 0), then one
    increment per matching pod from the label index. ``None`` when a selector has no
    selective pair."""
    matched: list[list[int]] = []
    for c in constraints:
        rows = _matching_rows(table, c.selector, namespace)
        if rows is None:
            return None
        matched.append(rows)
    eligible = table.has_node.copy()
    for c in constraints:
        eligible &= table.labels(c.topology_key).codes != 0
    inclusion = _InclusionRows(table, pod, required)
    tp_counts: list[dict[str, int]] = []
    for c, rows in zip(constraints, matched, strict=True):
        mask = inclusion.mask(c)
        ok = eligible if mask is None else eligible & mask
        column = table.labels(c.topology_key)
        codes = column.codes[ok]
        distinct, first = np.unique(codes, return_index=True)
        # Codes of present labels are >= 1: their values are strings.
        values = [v or "" for v in column.values]
        counts = dict.fromkeys([values[k] for k in distinct[np.argsort(first)].tolist()], 0)
        if rows:
            at = np.asarray(rows, dtype=np.int64)
            for k in column.codes[at[ok[at]]].tolist():
                counts[values[k]] += 1
        tp_counts.append(counts)
    return tp_counts


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
    other rows in first-seen order (a missing label counts as the value ``""``)."""
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
        distinct, first = np.unique(column.codes[kept], return_index=True)
        values = column.values
        s.tp_counts[i] = dict.fromkeys(
            (values[k] or "" for k in distinct[np.argsort(first)].tolist()), 0
        )
        sizes[i] = len(s.tp_counts[i])
    return sizes


def _round_half_away(value: float) -> int:
    """Go's ``math.Round`` (half away from zero); Python's ``round`` rounds half to even."""
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


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


class PodTopologySpread:
    name = NAME
    reads = (PODS, SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.match_counts = MatchCounts()
        args = args or {}
        defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
        defaults = list(args.get("defaultConstraints") or [])
        _validate_args(defaulting, defaults)
        self.system_defaulted = defaulting == SYSTEM_DEFAULTING
        self.default_constraints: list[dict] = (
            [dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS] if self.system_defaulted else defaults
        )

    # -- constraints ------------------------------------------------------------------

    def _constraints(self, pod: dict, action: str) -> list[Constraint]:
        """The pod's constraints for ``action``, or the default ones if it has none at all."""
        spec = pod.get("spec") or {}
        labels = (pod.get("metadata") or {}).get("labels") or {}
        own = spec.get("topologySpreadConstraints") or []
        if own:
            return _parse_constraints(own, labels, action)
        return self._default_constraints(pod, action)

    def _default_constraints(self, pod: dict, action: str) -> list[Constraint]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        constraints = _parse_constraints(self.default_constraints, labels, action)
        if not constraints:
            return []
        selector = self._default_selector(pod)
        if selector is None or selector.empty:
            return []
        for c in constraints:
            c.selector = selector
        return constraints

    def _default_selector(self, pod: dict) -> LabelSelector | None:
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        services = self.handle.lister(SERVICES).list(namespace)
        return default_selector(pod, services, self._controller)

    def _controller(self, kind: Kind, namespace: str, name: str) -> dict | None:
        return self.handle.lister(kind).get(namespace, name)

    # -- PreFilter / Filter -----------------------------------------------------------

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
        snapshot = state.snapshot
        if (
            snapshot is not None
            and nodes is snapshot.node_info_list
            and snapshot.table.infos is nodes
        ):
            indexed = _pre_filter_counts_indexed(
                snapshot.table, constraints, pod, namespace, required
            )
            if indexed is not None:
                state.write(PRE_FILTER_STATE_KEY, PreFilterState(constraints, indexed))
                return None, None
        tp_counts = _pre_filter_counts(nodes, constraints, pod, namespace, required)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(constraints, tp_counts))
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
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

    # -- PreScore / Score / NormalizeScore --------------------------------------------

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
        rows = table.rows(nodes) if table is not None else None
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
        if (
            counted
            and snapshot is not None
            and all_nodes is snapshot.node_info_list
            and snapshot.table.infos is all_nodes
            and self._pre_score_counts_indexed(
                snapshot.table, pod, constraints, counted, require_all, namespace, required
            )
        ):
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

    @staticmethod
    def _pre_score_counts_indexed(
        table: NodeTable,
        pod: dict,
        constraints: list[Constraint],
        counted: list[tuple[Constraint, dict[str, int]]],
        require_all: bool,
        namespace: str,
        required: RequiredNodeAffinity,
    ) -> bool:
        """PreScore's counting loop over ``table.infos`` visiting only the rows of matching
        pods (the label index, ``NodeTable.candidates``): each such row passes the loop's
        per-node tests (every key when required, a known domain, inclusion policies) once, and
        adds one per matching pod; rows without one add 0. False, counting nothing, when a
        selector has no selective pair (the caller walks the nodes)."""
        matched: list[list[int]] = []
        for c, _ in counted:
            rows = _matching_rows(table, c.selector, namespace)
            if rows is None:
                return False
            matched.append(rows)
        infos = table.infos
        for (c, counts), rows in zip(counted, matched, strict=True):
            passed: dict[int, str | None] = {}
            for r in rows:
                if r in passed:
                    value = passed[r]
                else:
                    info = infos[r]
                    labels = info.labels
                    value = labels.get(c.topology_key, "")
                    if (
                        (require_all and not node_has_all_keys(labels, constraints))
                        or value not in counts
                        or not c.matches_inclusion_policies(pod, info, required)
                    ):
                        value = None
                    passed[r] = value
                if value is not None:
                    counts[value] += 1
        return True

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
                count = _host_counts(table, rows, present, c.selector, namespace)
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

    def score_extensions(self) -> PodTopologySpread:
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

    # -- events -----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, node_actions), self.is_schedulable_after_node_change
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if (new is not None and not _involved(new, pod)) or (
            old is not None and not _involved(old, pod)
        ):
            return QueueingHint.QUEUE_SKIP
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            if (
                pod_key(new) == pod_key(pod)
                and _tolerations(old) != _tolerations(new)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            old_labels, new_labels = _labels(old), _labels(new)
            if old_labels == new_labels:
                return QueueingHint.QUEUE_SKIP
            for c in constraints:
                if c.selector.matches(old_labels) != c.selector.matches(new_labels):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        if changed is not None and any(c.selector.matches(_labels(changed)) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        old_match = old is not None and node_has_all_keys(_labels(old), constraints)
        new_match = new is not None and node_has_all_keys(_labels(new), constraints)
        if old is not None and new is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match:
                old_labels, new_labels = _labels(old), _labels(new)
                if any(
                    old_labels.get(c.topology_key) != new_labels.get(c.topology_key)
                    for c in constraints
                ) or _taints(old) != _taints(new):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.QUEUE_SKIP


def _labels(obj: dict) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _tolerations(pod: dict) -> list[dict]:
    return (pod.get("spec") or {}).get("tolerations") or []


def _taints(node: dict) -> list[dict]:
    return (node.get("spec") or {}).get("taints") or []


def _involved(changed: dict, pod: dict) -> bool:
    """Whether ``changed`` is the pod itself or an assigned pod of the pod's namespace."""
    if pod_key(changed) == pod_key(pod):
        return True
    assigned = bool((changed.get("spec") or {}).get("nodeName"))
    same_ns = ((changed.get("metadata") or {}).get("namespace") or "default") == (
        (pod.get("metadata") or {}).get("namespace") or "default"
    )
    return assigned and same_ns


# The controllers whose selector upstream's DefaultSelector merges, by (group, version, kind)
# of the owner reference (``rcKind``, ``rsKind``, ``ssKind`` in upstream's helper/spread.go).
CONTROLLER_KINDS: dict[tuple[str, str, str], Kind] = {
    ("", "v1", "ReplicationController"): REPLICATION_CONTROLLERS,
    ("apps", "v1", "ReplicaSet"): REPLICA_SETS,
    ("apps", "v1", "StatefulSet"): STATEFUL_SETS,
}

_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def parse_group_version(api_version: str) -> tuple[str, str] | None:
    """``(group, version)`` of an apiVersion, or None if it does not parse (upstream
    ``k8s.io/apimachinery/pkg/runtime/schema.ParseGroupVersion``: ``"v1"`` and ``"/v1"`` are
    the core group, more than one ``/`` is an error)."""
    if api_version in ("", "/"):
        return "", ""
    if api_version.count("/") == 0:
        return "", api_version
    if api_version.count("/") == 1:
        group, version = api_version.split("/")
        return group, version
    return None


def _selector_requirements(selector: dict | None) -> list[dict] | None:
    """A controller's ``metav1.LabelSelector`` as matchExpressions (matchLabels as ``In``),
    or None where upstream's ``LabelSelectorAsSelector`` fails or selects nothing (a missing
    selector, an unknown operator, In/NotIn without values, Exists/DoesNotExist with values)."""
    if selector is None:
        return None
    requirements = [
        {"key": k, "operator": "In", "values": [v]}
        for k, v in (selector.get("matchLabels") or {}).items()
    ]
    for expr in selector.get("matchExpressions") or ():
        op, values = expr.get("operator"), expr.get("values") or []
        if op not in _SELECTOR_OPERATORS or bool(values) != (op in ("In", "NotIn")):
            return None
        requirements.append(expr)
    return requirements


def _controller_of(meta: dict) -> tuple[Kind | None, str]:
    """The lister kind and name of the pod's controlling owner (upstream
    ``metav1.GetControllerOfNoCopy``: the first owner reference with ``controller: true``),
    or ``(None, "")`` if there is none or it is not a kind DefaultSelector reads."""
    owner = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
    if owner is None:
        return None, ""
    gv = parse_group_version(owner.get("apiVersion") or "")
    if gv is None:
        return None, ""
    return CONTROLLER_KINDS.get((*gv, owner.get("kind") or "")), owner.get("name") or ""


def default_selector(
    pod: dict,
    services: Iterable[dict],
    controller_lookup: Callable[[Kind, str, str], dict | None] | None,
) -> LabelSelector:
    """The selector upstream derives for default constraints (``DefaultSelector`` in
    ``pkg/scheduler/framework/plugins/helper/spread.go``).

    * The selectors of the Services in the pod's namespace that select the pod
      (``GetPodServices``; a Service without a selector selects nothing) are merged into one
      label set.
    * The pod's controller (the first owner reference with ``controller: true``) counts when
      its apiVersion/kind is ``v1`` ReplicationController or ``apps/v1`` ReplicaSet or
      StatefulSet and the object exists: a ReplicationController's map selector is *merged*
      into the label set (its value wins on a shared key, ``labels.Merge``), a ReplicaSet's or
      StatefulSet's selector is *added* as requirements (``selector.Add``), so a key both the
      Services and the ReplicaSet constrain must satisfy both.
    """
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    pod_labels = meta.get("labels") or {}
    match_labels: dict[str, str] = {}
    for service in services:
        if ((service.get("metadata") or {}).get("namespace") or "default") != namespace:
            continue
        selector = (service.get("spec") or {}).get("selector")
        # A Service without a selector selects nothing (not everything); an empty one selects
        # the pod but adds no label.
        if selector is None:
            continue
        if all(pod_labels.get(k) == v for k, v in selector.items()):
            match_labels.update(selector)
    expressions: list[dict] = []
    kind, name = _controller_of(meta)
    if kind is not None and controller_lookup is not None:
        controller = controller_lookup(kind, namespace, name)
        if controller is not None:
            selector = (controller.get("spec") or {}).get("selector")
            if kind == REPLICATION_CONTROLLERS:
                match_labels.update(selector or {})
            else:
                expressions = _selector_requirements(selector) or []
    return LabelSelector({"matchLabels": match_labels, "matchExpressions": expressions})


def _validate_args(defaulting: str, defaults: list[dict]) -> None:
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ValueError(
            unsupported(
                "defaultingType", defaulting, (LIST_DEFAULTING, SYSTEM_DEFAULTING), quote=repr
            )
        )
    if defaulting == SYSTEM_DEFAULTING and defaults:
        raise ValueError(
            invalid(
                "defaultingType",
                defaulting,
                "when .defaultConstraints are not empty",
                quote=repr,
            )
        )
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(defaults):
        path = f"defaultConstraints[{i}]"
        if not isinstance(c, dict):
            raise ValueError(f"{path}: must be an object")
        max_skew = c.get("maxSkew")
        if not is_int(max_skew) or max_skew <= 0:
            raise ValueError(
                invalid(f"{path}.maxSkew", max_skew, "not in valid range (0, inf)", quote=repr)
            )
        if not c.get("topologyKey"):
            raise ValueError(required(f"{path}.topologyKey", "can not be empty"))
        when = c.get("whenUnsatisfiable")
        if not when:
            raise ValueError(required(f"{path}.whenUnsatisfiable", "can not be empty"))
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(
                unsupported(
                    f"{path}.whenUnsatisfiable",
                    when,
                    (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY),
                    quote=repr,
                )
            )
        if c.get("labelSelector") is not None:
            raise ValueError(
                f"{path}.labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod"
            )
        key = (c["topologyKey"], when)
        if key in seen:
            raise ValueError(duplicate(path, f"{{{key[0]}, {key[1]}}}"))
        seen.add(key)
