"""NodeInfo: a node with the pods on it and the aggregates the plugins need (requested
amounts, used host ports, pods with affinity, a label index), kept up to date as pods are added
and removed (upstream ``NodeInfo`` in kubernetes ``pkg/scheduler/framework/types.go``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from .labels import LabelSelector
from .pod_info import PodInfo
from .resources import Resource

_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


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
        "scratch",
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
        # A what-if copy (preemption's dry runs, nominated pods added): its filter answers
        # are not memoized, each of its changes being a generation no later cycle sees.
        self.scratch = False
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
        copy.scratch = False
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
