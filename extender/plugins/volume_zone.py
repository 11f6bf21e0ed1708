"""VolumeZone (PreFilter, Filter): the zone/region labels of a pod's bound PersistentVolumes
must match the node's (upstream ``pkg/scheduler/framework/plugins/volumezone``).

PreFilter collects, per bound PV of the pod, the topology labels it carries (beta and GA
zone/region; a value may list several zones joined by ``__``). Unbound claims of a
WaitForFirstConsumer class are skipped (VolumeBinding places them); any other unbound claim,
or a missing PVC/PV/StorageClass, is UnschedulableAndUnresolvable with upstream's wording.
Filter: a node without any topology label fits; otherwise each PV label must be on the node
(a beta PV label also matches the node's GA label) with one of the PV's values.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.framework.cycle_state import CycleState
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Handle,
)
from extender.framework.node_info import NodeInfo
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unresolvable

from .volume_util import WAIT_FOR_FIRST_CONSUMER, claim_class, meta, not_found, spec

NAME = "VolumeZone"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"
GA_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION)
_TO_GA = {BETA_ZONE: GA_ZONE, BETA_REGION: GA_REGION}


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


class _State:
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies

    def clone(self) -> _State:
        return self


def label_zones_to_set(value: str) -> frozenset[str]:
    """``LabelZonesToSet``: ``a__b`` is the set {a, b}."""
    return frozenset(v for v in value.split("__") if v)


def pv_topologies(pv: dict) -> list[PVTopology]:
    labels = meta(pv).get("labels") or {}
    name = meta(pv).get("name", "")
    return [
        PVTopology(name, key, label_zones_to_set(labels[key]))
        for key in TOPOLOGY_LABELS
        if key in labels
    ]


class VolumeZone:
    name = NAME
    reads = (PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def _topologies(self, pod: dict) -> tuple[list[PVTopology], Status | None]:
        pvcs = self.handle.lister(PERSISTENT_VOLUME_CLAIMS)
        pvs = self.handle.lister(PERSISTENT_VOLUMES)
        classes = self.handle.lister(STORAGE_CLASSES)
        namespace = meta(pod).get("namespace", "")
        out: list[PVTopology] = []
        for claim_name in pvc_claim_names(pod):
            if not claim_name:
                return [], unresolvable("PersistentVolumeClaim had no name")
            pvc = pvcs.get(namespace, claim_name)
            if pvc is None:
                return [], unresolvable(not_found("persistentvolumeclaim", claim_name))
            pv_name = spec(pvc).get("volumeName") or ""
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return [], unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                storage_class = classes.get("", class_name)
                if storage_class is None:
                    return [], unresolvable(not_found("storageclass.storage.k8s.io", class_name))
                mode = storage_class.get("volumeBindingMode")
                if not mode:
                    return [], unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{class_name}"'
                    )
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], unresolvable("PersistentVolume had no name")
            pv = pvs.get("", pv_name)
            if pv is None:
                return [], unresolvable(not_found("persistentvolume", pv_name))
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _State(topologies))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if not spec(pod).get("volumes"):
            return None
        stored = state.get(PRE_FILTER_KEY)
        if stored is None:
            topologies, status = self._topologies(pod)
            if status is not None:
                return status
        else:
            topologies = stored.topologies
        labels = node_info.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_TO_GA.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return unresolvable(ERR_REASON_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD),
                is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pv_change,
            ),
        ]


def pvc_claim_names(pod: dict) -> list[str]:
    """Upstream ``getPersistentVolumeClaimNameFromPod``: the claims of the pod's
    ``persistentVolumeClaim`` volumes only. Generic ephemeral volumes do not count (their
    claim's zone is VolumeBinding's business), so a pod whose ephemeral claim does not exist
    yet is not rejected here."""
    return [
        (volume.get("persistentVolumeClaim") or {}).get("claimName") or ""
        for volume in spec(pod).get("volumes") or ()
        if volume.get("persistentVolumeClaim") is not None
    ]


def is_schedulable_after_pvc_change(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if new is None or meta(new).get("namespace") != meta(pod).get("namespace"):
        return QueueingHint.QUEUE_SKIP
    names = set(pvc_claim_names(pod))
    return QueueingHint.QUEUE if meta(new).get("name") in names else QueueingHint.QUEUE_SKIP


def is_schedulable_after_storage_class_added(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    if new is None or new.get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_pv_change(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    old_labels = meta(old).get("labels") or {}
    new_labels = meta(new).get("labels") or {}
    if any(old_labels.get(k) != new_labels.get(k) for k in TOPOLOGY_LABELS):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
