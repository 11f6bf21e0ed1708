"""What filtering and scoring share (upstream ``podtopologyspread/common.go``): the parsed
constraint with its inclusion policies, the counting of matching pods (per node, memoized, and
from the table's label index), and the selector of default constraints (upstream's
``DefaultSelector``, in ``pkg/scheduler/framework/plugins/helper/spread.go``, used only here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.handle import REPLICA_SETS, REPLICATION_CONTROLLERS, STATEFUL_SETS, Kind
from extender.framework.labels import LabelSelector, RequiredNodeAffinity, find_untolerated_taint
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo

NAME = "PodTopologySpread"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

# Taint effects that keep a pod off a node (upstream DoNotScheduleTaintsFilterFunc).
_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


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


def whole_table(snapshot: Any, nodes: list[NodeInfo]) -> NodeTable | None:
    """The snapshot's node table when ``nodes`` is the snapshot's whole node list (the
    counting loops then run over its columns), else ``None`` (the per-node loops)."""
    if snapshot is None or nodes is not snapshot.node_info_list:
        return None
    table: NodeTable = snapshot.table
    return table if table.infos is nodes else None


class RowCounts:
    """:func:`count_node_pods_matching` for every row of a node table, per (selector,
    namespace), kept from one table to the next: only the rows whose ``NodeInfo.generation``
    moved (``NodeTable.generations``) are counted again.

    This is the incremental form of upstream's per-pod walk over every node's pods in
    PreFilter/PreScore (``calPreFilterState`` / ``initPreScoreState`` in
    ``pkg/scheduler/framework/plugins/podtopologyspread``): between two pods of a workload
    only the node the previous one was assumed on changed, so a pod costs a comparison of the
    generation columns and a recount of a row or two, not a visit to every matching pod. A
    table with other nodes (or in another order) counts every row. Entries are replaced whole,
    never mutated, so concurrent readers see a consistent one (a race only recounts).
    """

    def __init__(self, max_selectors: int = 64) -> None:
        self.max_selectors = max_selectors
        self._lock = threading.Lock()
        # (selector key, namespace) -> (names, generations, counts) of the last table counted
        self._entries: dict[tuple, tuple[list[str], np.ndarray, np.ndarray]] = {}

    def counts(self, table: NodeTable, selector: LabelSelector, namespace: str) -> np.ndarray:
        """Matching pods per row of ``table`` (read-only: the array may be shared)."""
        n = len(table)
        if selector.empty or selector.matches_nothing:
            return np.zeros(n, dtype=np.int64)
        key = (selector.key, namespace)
        names, generations, infos = table.names, table.generations, table.infos
        entry = self._entries.get(key)
        if entry is not None and (entry[0] is names or entry[0] == names):
            if entry[1] is generations:
                return entry[2]
            stale = np.flatnonzero(entry[1] != generations).tolist()
            if not stale:
                counts = entry[2]
            else:
                counts = entry[2].copy()
                for r in stale:
                    counts[r] = count_node_pods_matching(infos[r], selector, namespace)
        else:
            counts = np.fromiter(
                (count_node_pods_matching(info, selector, namespace) for info in infos),
                np.int64,
                n,
            )
        with self._lock:
            if key not in self._entries and len(self._entries) >= self.max_selectors:
                self._entries.clear()
            self._entries[key] = (names, generations, counts)
        return counts


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


def count_pods_matching(pods: Iterable[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """Pods in ``namespace`` matching ``selector``, terminating pods excluded."""
    if selector.empty:
        return 0
    return sum(
        1
        for p in pods
        if not p.deleting and p.namespace == namespace and selector.matches(p.labels)
    )


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
