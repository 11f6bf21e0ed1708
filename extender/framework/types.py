"""Core data types: PodInfo, NodeInfo, Snapshot and the results the runtime passes around.

Pods and nodes stay plain JSON dicts as the API serves them; the slotted views here parse the
fields plugins read once (requests, ports, affinity terms, labels, taints) so that the hot
filter/score loops never re-parse them.

One module of ~500 lines on purpose, like upstream's ``pkg/scheduler/framework/types.go``: the
views share their parsing helpers and the NodeInfo aggregates depend on PodInfo's fields.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, overload

from .labels import LabelSelector
from .resources import Resource, pod_requests

if TYPE_CHECKING:
    from .columns import NodeTable

_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


def pod_key(pod: dict) -> str:
    """The cache key of a pod: its UID, or namespace/name for pods without one (tests)."""
    meta = pod.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def pod_priority(pod: dict) -> int:
    return (pod.get("spec") or {}).get("priority") or 0


class AffinityTerm:
    """A pod (anti-)affinity term with its namespaces resolved (upstream
    ``pkg/scheduler/framework/plugins/interpodaffinity``)."""

    __slots__ = ("namespaces", "namespace_selector", "selector", "topology_key", "key")

    def __init__(self, term: dict, pod_namespace: str, pod_labels: dict) -> None:
        self.topology_key: str = term.get("topologyKey") or ""
        self.selector = LabelSelector(term.get("labelSelector"))
        for key in term.get("matchLabelKeys") or ():
            if key in pod_labels:
                self.selector.add_equals(key, pod_labels[key])
        for key in term.get("mismatchLabelKeys") or ():
            if key in pod_labels:
                self.selector.add_not_equals(key, pod_labels[key])
        ns_selector = term.get("namespaceSelector")
        self.namespaces: frozenset[str] = frozenset(term.get("namespaces") or ())
        self.namespace_selector = LabelSelector(ns_selector) if ns_selector is not None else None
        if not self.namespaces and self.namespace_selector is None:
            self.namespaces = frozenset((pod_namespace,))
        # Equal for terms that match the same pods (same namespaces, selectors, key).
        self.key: tuple = (
            self.topology_key,
            self.selector.key,
            self.namespaces,
            None if self.namespace_selector is None else self.namespace_selector.key,
        )

    def matches(self, pod: PodInfo, namespace_labels: dict | None = None) -> bool:
        """Whether ``pod`` is in the term's namespaces and its labels match the selector.

        ``namespace_labels`` are the labels of the pod's namespace, needed only when the term
        has a namespaceSelector (an empty one selects every namespace).
        """
        if pod.namespace not in self.namespaces:
            if self.namespace_selector is None:
                return False
            if not self.namespace_selector.empty and not self.namespace_selector.matches(
                namespace_labels
            ):
                return False
        return self.selector.matches(pod.labels)


class WeightedAffinityTerm:
    __slots__ = ("term", "weight")

    def __init__(self, term: AffinityTerm, weight: int) -> None:
        self.term = term
        self.weight = weight


def host_ports_of(spec: dict) -> tuple[tuple[str, str, int], ...]:
    ports = []
    containers = list(spec.get("containers") or ())
    containers += [
        c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"
    ]
    for container in containers:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort") or 0
            if host_port > 0:
                ports.append(
                    (port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", host_port)
                )
    return tuple(ports)


class PodInfo:
    """A pod plus the fields the plugins read, parsed once."""

    __slots__ = (
        "pod",
        "key",
        "name",
        "namespace",
        "uid",
        "labels",
        "priority",
        "node_name",
        "requests",
        "non_zero_milli_cpu",
        "non_zero_memory",
        "host_ports",
        "required_affinity_terms",
        "required_anti_affinity_terms",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "deleting",
        "start_time",
    )

    def __init__(self, pod: dict) -> None:
        self.pod = pod
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.key = pod_key(pod)
        self.name: str = meta.get("name", "")
        self.namespace: str = meta.get("namespace") or "default"
        self.uid: str = meta.get("uid", "")
        self.labels: dict[str, str] = meta.get("labels") or {}
        self.priority: int = spec.get("priority") or 0
        self.node_name: str = spec.get("nodeName") or ""
        self.deleting = meta.get("deletionTimestamp") is not None
        self.start_time: str = (pod.get("status") or {}).get("startTime") or meta.get(
            "creationTimestamp", ""
        )
        self.requests = pod_requests(pod)
        non_zero = pod_requests(pod, non_zero=True)
        self.non_zero_milli_cpu = non_zero.milli_cpu
        self.non_zero_memory = non_zero.memory
        self.host_ports = host_ports_of(spec)

        affinity = spec.get("affinity") or {}
        pod_aff = affinity.get("podAffinity") or {}
        pod_anti = affinity.get("podAntiAffinity") or {}
        self.required_affinity_terms = self._terms(
            pod_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
        )
        self.required_anti_affinity_terms = self._terms(
            pod_anti.get("requiredDuringSchedulingIgnoredDuringExecution")
        )
        self.preferred_affinity_terms = self._weighted(
            pod_aff.get("preferredDuringSchedulingIgnoredDuringExecution")
        )
        self.preferred_anti_affinity_terms = self._weighted(
            pod_anti.get("preferredDuringSchedulingIgnoredDuringExecution")
        )

    def _terms(self, terms: list[dict] | None) -> tuple[AffinityTerm, ...]:
        return tuple(AffinityTerm(t, self.namespace, self.labels) for t in terms or ())

    def _weighted(self, terms: list[dict] | None) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(
            WeightedAffinityTerm(
                AffinityTerm(t.get("podAffinityTerm") or {}, self.namespace, self.labels),
                t.get("weight") or 0,
            )
            for t in terms or ()
        )

    @property
    def has_affinity(self) -> bool:
        return bool(
            self.required_affinity_terms
            or self.required_anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )

    def __repr__(self) -> str:
        return f"PodInfo({self.namespace}/{self.name})"


class ImageStateSummary:
    """Size of an image and on how many nodes of the snapshot it is present."""

    __slots__ = ("size", "num_nodes")

    def __init__(self, size: int, num_nodes: int = 0) -> None:
        self.size = size
        self.num_nodes = num_nodes


class NodeInfo:
    """A node with the pods on it and the aggregates the plugins need.

    ``node`` may be ``None`` for a node that was deleted while pods still reference it.
    """

    __slots__ = (
        "node",
        "name",
        "labels",
        "taints",
        "unschedulable",
        "allocatable",
        "images",
        "image_states",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "used_ports",
        "requested",
        "non_zero_requested",
        "generation",
        "_label_index",
        "_index_shared",
    )

    def __init__(self, node: dict | None = None, pods: Iterable[PodInfo | dict] = ()) -> None:
        self.node: dict | None = None
        self.name = ""
        self.labels: dict[str, str] = {}
        self.taints: list[dict] = []
        self.unschedulable = False
        self.allocatable = Resource()
        # image name -> size in bytes, from node.status.images
        self.images: dict[str, int] = {}
        # image name -> summary over the snapshot (filled by the snapshot)
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        # host IP -> {(protocol, port)}
        self.used_ports: dict[str, set[tuple[str, int]]] = {}
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.generation = next_generation()
        # (label key, value) -> the pods carrying that label, for NodeInfo.candidates. Shared
        # with clones until either side changes its pods (copy on write), so clone stays cheap.
        self._label_index: dict[tuple[str, str], list[PodInfo]] = {}
        self._index_shared = False
        if node is not None:
            self.set_node(node)
        for pod in pods:
            self.add_pod(pod)

    def set_node(self, node: dict) -> None:
        # Everything is parsed before anything is assigned: a malformed node (a bad quantity)
        # raises here and leaves this NodeInfo as it was.
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        allocatable = Resource.from_list(status.get("allocatable"))
        images: dict[str, int] = {}
        for image in status.get("images") or ():
            for name in image.get("names") or ():
                images[name] = image.get("sizeBytes") or 0
        self.node = node
        self.name = meta.get("name", "")
        self.labels = meta.get("labels") or {}
        self.taints = spec.get("taints") or []
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = allocatable
        self.images = images
        self.generation = next_generation()

    def add_pod(self, pod: PodInfo | dict) -> PodInfo:
        info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        self.pods.append(info)
        if info.has_affinity:
            self.pods_with_affinity.append(info)
        if info.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(info)
        if info.labels:
            index = self._writable_index()
            for pair in info.labels.items():
                bucket = index.get(pair)
                if bucket is None:
                    index[pair] = [info]
                else:
                    bucket.append(info)
        self._update(info, 1)
        return info

    def remove_pod(self, key: str) -> PodInfo | None:
        """Remove the pod with cache key ``key``; ``None`` if it is not on this node."""
        for i, info in enumerate(self.pods):
            if info.key == key:
                del self.pods[i]
                if info in self.pods_with_affinity:
                    self.pods_with_affinity.remove(info)
                if info in self.pods_with_required_anti_affinity:
                    self.pods_with_required_anti_affinity.remove(info)
                if info.labels:
                    index = self._writable_index()
                    for pair in info.labels.items():
                        bucket = index[pair]
                        # One entry, by identity, as ``pods`` loses one (a PodInfo added twice
                        # stays once).
                        del bucket[next(j for j, p in enumerate(bucket) if p is info)]
                        if not bucket:
                            del index[pair]
                self._update(info, -1)
                return info
        return None

    def _writable_index(self) -> dict[tuple[str, str], list[PodInfo]]:
        if self._index_shared:
            self._label_index = {pair: list(pods) for pair, pods in self._label_index.items()}
            self._index_shared = False
        return self._label_index

    def pods_with_label(self, key: str, value: str) -> Sequence[PodInfo]:
        """The pods of this node carrying the label ``key=value`` (read-only; may be shared)."""
        return self._label_index.get((key, value), ())

    def candidates(self, selector: LabelSelector) -> Sequence[PodInfo]:
        """The pods of this node that can match ``selector``, for callers that then apply
        their full check (namespace, the whole selector, deletion) to each.

        With a selective requirement (a matchLabels pair or an ``In`` expression, see
        ``LabelSelector.selective``) only the pods carrying one of its pairs can match; the
        requirement with the fewest such pods is used. Otherwise all pods. Order may differ
        from ``pods``, which counting callers do not observe.
        """
        if selector.matches_nothing:
            return ()
        if not selector.selective:
            return self.pods
        index = self._label_index
        best: Sequence[PodInfo] = self.pods
        for key, values in selector.selective:
            if len(values) == 1:
                found: Sequence[PodInfo] = index.get((key, values[0]), ())
            else:
                found = [p for value in values for p in index.get((key, value), ())]
            if len(found) < len(best):
                if not found:
                    return ()
                best = found
        return best

    def _update(self, info: PodInfo, sign: int) -> None:
        if sign > 0:
            self.requested.add(info.requests)
        else:
            self.requested.sub(info.requests)
        self.non_zero_requested.milli_cpu += sign * info.non_zero_milli_cpu
        self.non_zero_requested.memory += sign * info.non_zero_memory
        for ip, protocol, port in info.host_ports:
            ports = self.used_ports.setdefault(ip, set())
            if sign > 0:
                ports.add((protocol, port))
            else:
                ports.discard((protocol, port))
        self.generation = next_generation()

    def clone(self) -> NodeInfo:
        copy = NodeInfo.__new__(NodeInfo)
        copy.node = self.node
        copy.name = self.name
        copy.labels = self.labels
        copy.taints = self.taints
        copy.unschedulable = self.unschedulable
        copy.allocatable = self.allocatable
        copy.images = self.images
        copy.image_states = self.image_states
        copy.pods = list(self.pods)
        copy.pods_with_affinity = list(self.pods_with_affinity)
        copy.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        copy._label_index = self._label_index
        copy._index_shared = self._index_shared = True
        copy.used_ports = {ip: set(ports) for ip, ports in self.used_ports.items()}
        copy.requested = self.requested.clone()
        copy.non_zero_requested = self.non_zero_requested.clone()
        copy.generation = self.generation
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


# Well-known node labels (k8s.io/api ``core/v1/well_known_labels.go``).
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"


def zone_key(node_info: NodeInfo) -> str:
    labels = node_info.labels
    return f"{labels.get(REGION_LABEL, '')}:\x00:{labels.get(ZONE_LABEL, '')}"


def zone_interleaved(node_infos: Iterable[NodeInfo]) -> list[NodeInfo]:
    """Order nodes as upstream's node tree does: zones in first-seen order, round-robin."""
    zones: dict[str, list[NodeInfo]] = {}
    for info in node_infos:
        zones.setdefault(zone_key(info), []).append(info)
    if len(zones) <= 1:
        return next(iter(zones.values()), [])
    ordered: list[NodeInfo] = []
    for group in itertools.zip_longest(*zones.values()):
        ordered.extend(info for info in group if info is not None)
    return ordered


class Snapshot:
    """An immutable view of the cluster for one scheduling cycle.

    Plugins read it through ``handle.snapshot``; they must not mutate the NodeInfos.
    """

    __slots__ = (
        "node_info_list",
        "node_info_map",
        "have_pods_with_affinity_list",
        "have_pods_with_required_anti_affinity_list",
        "generation",
        "_table",
        "_positions",
    )

    def __init__(self, node_infos: Iterable[NodeInfo] = (), generation: int = 0) -> None:
        infos = [info for info in node_infos if info.node is not None]
        self.node_info_list = zone_interleaved(infos)
        self.node_info_map = {info.name: info for info in self.node_info_list}
        self._list_affinity_nodes()
        self.generation = generation
        self._table: NodeTable | None = None
        self._positions: dict[str, int] | None = None
        self._summarize_images()

    @classmethod
    def from_objects(cls, nodes: Iterable[dict], pods: Iterable[dict] = ()) -> Snapshot:
        """Build a snapshot from API objects: nodes, and pods (only assigned ones count)."""
        infos = {}
        for node in nodes:
            info = NodeInfo(node)
            infos[info.name] = info
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name in infos:
                infos[node_name].add_pod(pod)
        return cls(infos.values())

    def overlay(self, infos: Iterable[NodeInfo]) -> Snapshot:
        """This snapshot with ``infos`` replacing (or added to) the nodes of the same name.

        Cheaper than a new snapshot: unchanged NodeInfos keep their image summaries, and the
        replacements are summarized against this snapshot's counts.
        """
        replacing = {info.name: info for info in infos}
        snap = Snapshot.__new__(Snapshot)
        # Replace by position: the cost is a copy of the list, not a Python pass over it.
        positions = self._node_positions()
        nodes = list(self.node_info_list)
        added = False
        for name, info in replacing.items():
            pos = positions.get(name)
            if pos is None:
                nodes.append(info)
                added = True
            else:
                nodes[pos] = info
        snap.node_info_list = nodes
        snap.node_info_map = {**self.node_info_map, **replacing}
        snap._positions = None if added else positions
        # The affinity lists change only if a replaced node holds (or held) such pods (a pod
        # with required anti-affinity has affinity: one test covers both lists).
        previous = [self.node_info_map.get(name) for name in replacing]
        touched = list(replacing.values()) + [p for p in previous if p is not None]
        if added or any(i.pods_with_affinity for i in touched):
            snap._list_affinity_nodes()
        else:
            snap.have_pods_with_affinity_list = self.have_pods_with_affinity_list
            anti = self.have_pods_with_required_anti_affinity_list
            snap.have_pods_with_required_anti_affinity_list = anti
        snap.generation = self.generation
        snap._table = None
        if self._table is not None and len(nodes) == len(self.node_info_list):
            # Same nodes in the same order: the columns are carried over, the changed rows
            # recomputed (the cache overlays after every assumed or bound pod).
            index = self._table.index
            snap._table = self._table.derive(nodes, [index[name] for name in replacing])
        for info in replacing.values():
            before = self.node_info_map.get(info.name)
            known = before.image_states if before is not None else {}
            info.image_states = {
                name: known.get(name) or ImageStateSummary(size, 1)
                for name, size in info.images.items()
            }
        return snap

    def _list_affinity_nodes(self) -> None:
        nodes = self.node_info_list
        self.have_pods_with_affinity_list = [i for i in nodes if i.pods_with_affinity]
        self.have_pods_with_required_anti_affinity_list = [
            i for i in nodes if i.pods_with_required_anti_affinity
        ]

    def _node_positions(self) -> dict[str, int]:
        """Node name -> its index in ``node_info_list`` (shared by overlays: same order)."""
        if self._positions is None:
            self._positions = {info.name: i for i, info in enumerate(self.node_info_list)}
        return self._positions

    def _summarize_images(self) -> None:
        counts: dict[str, int] = {}
        sizes: dict[str, int] = {}
        for info in self.node_info_list:
            for name, size in info.images.items():
                counts[name] = counts.get(name, 0) + 1
                sizes[name] = size
        summaries = {name: ImageStateSummary(sizes[name], n) for name, n in counts.items()}
        for info in self.node_info_list:
            info.image_states = {name: summaries[name] for name in info.images}

    def refresh(self, info: NodeInfo) -> None:
        """``info``, a NodeInfo of this snapshot, was changed in place (a simulation assumes
        pods this way): bring the views derived from the NodeInfos up to date."""
        # Rebuilt, not edited: an overlay may share these lists with the snapshot it came from.
        self._list_affinity_nodes()
        if self._table is not None:
            self._table = self._table.derive(self.node_info_list, [self._table.index[info.name]])

    @property
    def table(self) -> NodeTable:
        """The columnar view of the nodes (:mod:`extender.framework.columns`), built on first
        use and carried over to overlays."""
        if self._table is None:
            from .columns import NodeTable

            self._table = NodeTable(self.node_info_list)
        return self._table

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def __len__(self) -> int:
        return len(self.node_info_list)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.node_info_list)


class PreFilterResult:
    """Nodes a PreFilter plugin restricts the cycle to; ``node_names=None`` means all nodes.

    ``plugins`` is filled by the runtime: the plugins whose results were merged into it.
    """

    __slots__ = ("node_names", "plugins")

    def __init__(self, node_names: set[str] | frozenset[str] | None = None) -> None:
        self.node_names = node_names
        self.plugins: list[str] = []

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return PreFilterResult(set(other.node_names or ()))
        return PreFilterResult(set(self.node_names or ()) & set(other.node_names or ()))


class NominatingMode(Enum):
    NOOP = 0
    OVERRIDE = 1


@dataclass(slots=True)
class NominatingInfo:
    nominated_node_name: str = ""
    mode: NominatingMode = NominatingMode.NOOP


@dataclass(slots=True)
class PostFilterResult:
    nominating_info: NominatingInfo | None = None


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


class NodePluginScores:
    """A node's weighted score from each plugin (``scores``: plugin -> score x weight) and
    their sum (``total_score``, what the host is picked by).

    Built by the runtime from the cycle's per-plugin score columns; the per-plugin dict is
    made on first use, as most cycles read only the totals."""

    __slots__ = ("name", "total_score", "_scores", "_columns", "_index")

    def __init__(self, name: str, scores: dict[str, int] | None = None, total_score: int = 0):
        self.name = name
        self.total_score = total_score
        self._scores = scores
        self._columns: tuple[list[str], list[list[int]]] | None = None
        self._index = 0

    @classmethod
    def from_columns(
        cls, name: str, total: int, columns: tuple[list[str], list[list[int]]], index: int
    ) -> NodePluginScores:
        entry = cls.__new__(cls)
        entry.name = name
        entry.total_score = total
        entry._scores = None
        entry._columns = columns
        entry._index = index
        return entry

    @property
    def scores(self) -> dict[str, int]:
        if self._scores is None:
            if self._columns is None:
                self._scores = {}
            else:
                names, columns = self._columns
                i = self._index
                self._scores = {n: column[i] for n, column in zip(names, columns, strict=True)}
                self._columns = None
        return self._scores

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodePluginScores):
            return NotImplemented
        return (self.name, self.scores, self.total_score) == (
            other.name,
            other.scores,
            other.total_score,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NodePluginScores({self.name!r}, {self.scores!r}, {self.total_score})"


class NodeScoreList(Sequence[NodePluginScores]):
    """The scored nodes of one cycle, in node order: ``names`` and ``totals`` as plain lists
    (what picking a host and the extender's prioritize answer read), and a
    :class:`NodePluginScores` per node made when an entry is first asked for."""

    __slots__ = ("names", "totals", "_columns", "_entries")

    def __init__(
        self, names: list[str], totals: list[int], columns: tuple[list[str], list[list[int]]]
    ) -> None:
        self.names = names
        self.totals = totals
        self._columns = columns
        self._entries: list[NodePluginScores] | None = None

    def _all(self) -> list[NodePluginScores]:
        if self._entries is None:
            make, columns = NodePluginScores.from_columns, self._columns
            self._entries = [
                make(name, total, columns, i)
                for i, (name, total) in enumerate(zip(self.names, self.totals, strict=True))
            ]
        return self._entries

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> NodePluginScores: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodePluginScores]: ...

    def __getitem__(self, index: int | slice) -> NodePluginScores | list[NodePluginScores]:
        return self._all()[index]

    def __iter__(self) -> Iterator[NodePluginScores]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class QueuedPodInfo:
    """A pod in the scheduling queue with its bookkeeping (upstream
    ``pkg/scheduler/backend/queue``)."""

    __slots__ = (
        "pod_info",
        "timestamp",
        "attempts",
        "initial_attempt_timestamp",
        "unschedulable_count",
        "consecutive_errors_count",
        "unschedulable_plugins",
        "pending_plugins",
        "gating_plugin",
    )

    def __init__(self, pod: dict | PodInfo, timestamp: float = 0.0) -> None:
        self.pod_info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        self.timestamp = timestamp
        self.attempts = 0
        self.initial_attempt_timestamp: float | None = None
        self.unschedulable_count = 0
        self.consecutive_errors_count = 0
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.gating_plugin = ""

    @property
    def pod(self) -> dict:
        return self.pod_info.pod

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod_info.namespace}/{self.pod_info.name})"


QueuedPodInfoLike = QueuedPodInfo
