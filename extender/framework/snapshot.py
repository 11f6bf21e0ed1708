"""Snapshot: the immutable view of the cluster one scheduling cycle reads, its nodes in
upstream's node-tree order (kubernetes ``pkg/scheduler/backend/cache/snapshot.go`` and
``node_tree.go``), with the columnar :class:`~extender.framework.columns.NodeTable` built from
it on first use.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

from .columns import NodeTable
from .node_info import ImageStateSummary, NodeInfo

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


def _overlaid_members(
    members: list[NodeInfo],
    index: dict[str, int] | None,
    replacing: dict[str, NodeInfo],
    before: dict[str, NodeInfo],
    member: Callable[[NodeInfo], bool],
) -> tuple[list[NodeInfo], dict[str, int] | None] | None:
    """``members`` (a snapshot's nodes for which ``member`` holds, in node order) with the
    ``replacing`` NodeInfos swapped in by position, and the name -> position index (built
    once, then shared: positions move only when membership does); ``None`` when a replaced
    node joins or leaves the list (the caller rebuilds it)."""
    hits = []
    for name, info in replacing.items():
        now = member(info)
        if member(before[name]) != now:
            return None
        if now:
            hits.append((name, info))
    if not hits:
        return members, index
    if index is None:
        index = {info.name: k for k, info in enumerate(members)}
    members = list(members)
    for name, info in hits:
        members[index[name]] = info
    return members, index


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
        "_affinity_index",
        "_anti_affinity_index",
    )

    def __init__(self, node_infos: Iterable[NodeInfo] = (), generation: int = 0) -> None:
        infos = [info for info in node_infos if info.node is not None]
        self.node_info_list = zone_interleaved(infos)
        self.node_info_map = {info.name: info for info in self.node_info_list}
        self._list_affinity_nodes()
        self.generation = generation
        self._table: NodeTable | None = None
        self._positions: dict[str, int] | None = None
        # Node name -> its index in each affinity list (built when an overlay needs it).
        self._affinity_index: dict[str, int] | None = None
        self._anti_affinity_index: dict[str, int] | None = None
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
        # The affinity lists change only where a replaced node holds (or held) such pods: a
        # replaced member is swapped in by position; a node joining or leaving a list (at
        # most twice per node and pod) or a new node rebuilds the lists from all nodes.
        affinity = anti = None
        if not added:
            affinity = _overlaid_members(
                self.have_pods_with_affinity_list,
                self._affinity_index,
                replacing,
                self.node_info_map,
                lambda info: bool(info.pods_with_affinity),
            )
            anti = _overlaid_members(
                self.have_pods_with_required_anti_affinity_list,
                self._anti_affinity_index,
                replacing,
                self.node_info_map,
                lambda info: bool(info.pods_with_required_anti_affinity),
            )
        if affinity is None or anti is None:
            snap._list_affinity_nodes()
        else:
            snap.have_pods_with_affinity_list, snap._affinity_index = affinity
            snap.have_pods_with_required_anti_affinity_list = anti[0]
            snap._anti_affinity_index = anti[1]
        snap.generation = self.generation
        snap._table = None
        if self._table is not None and len(nodes) == len(self.node_info_list):
            # Same nodes in the same order: the columns are carried over, the changed rows
            # recomputed (the cache overlays after every assumed or bound pod).
            index = self._table.index
            snap._table = self._table.derive(nodes, [index[name] for name in replacing])
        for info in replacing.values():
            before = self.node_info_map.get(info.name)
            if before is not None and before.images is info.images:
                # A clone of the same node (only its pods changed): the same summaries.
                info.image_states = before.image_states
                continue
            known = before.image_states if before is not None else {}
            info.image_states = {
                name: known.get(name) or ImageStateSummary(size, 1)
                for name, size in info.images.items()
            }
        return snap

    def _list_affinity_nodes(self) -> None:
        self._affinity_index = self._anti_affinity_index = None
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
            self._table = NodeTable(self.node_info_list)
        return self._table

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def __len__(self) -> int:
        return len(self.node_info_list)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.node_info_list)
