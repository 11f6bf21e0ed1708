"""VolumeRestrictions (PreFilter with extensions, Filter): volumes that may not be shared
(upstream ``pkg/scheduler/framework/plugins/volumerestrictions``).

* In-tree exclusive disks on the node: the same GCE PD (unless every mount is read-only), AWS
  EBS volume, ISCSI IQN (unless all read-only) or RBD image (overlapping monitors, same pool and
  image, unless all read-only) used by a pod already on the node: Unschedulable, "node(s) had
  no available disk".
* ReadWriteOncePod claims: a claim with that access mode that any assigned pod in the cluster
  already uses makes every node Unschedulable (preemption may evict the holder: the PreFilter
  extensions count the holder in or out). A missing PVC is UnschedulableAndUnresolvable with
  the apiserver's NotFound text.
"""

from __future__ import annotations

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import PERSISTENT_VOLUME_CLAIMS, PODS, Handle
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unresolvable, unschedulable

from .volume_util import READ_WRITE_ONCE_POD, claim_key, meta, not_found, spec

NAME = "VolumeRestrictions"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_EXCLUSIVE_KINDS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def needs_restrictions_check(volume: dict) -> bool:
    return any(volume.get(kind) is not None for kind in _EXCLUSIVE_KINDS)


def pvc_keys_of(pod: dict) -> list[str]:
    """The ``namespace/claim`` keys of the pod's ``persistentVolumeClaim`` volumes."""
    namespace = meta(pod).get("namespace", "")
    return [
        claim_key(namespace, v["persistentVolumeClaim"].get("claimName") or "")
        for v in spec(pod).get("volumes") or ()
        if v.get("persistentVolumeClaim") is not None
    ]


def is_volume_conflict(volume: dict, pod: dict) -> bool:
    """Whether ``volume`` of the incoming pod conflicts with a volume of ``pod``."""
    for existing in spec(pod).get("volumes") or ():
        disk, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
        if disk is not None and other is not None:
            if disk.get("pdName") == other.get("pdName") and not (
                disk.get("readOnly") and other.get("readOnly")
            ):
                return True
        ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
        if ebs is not None and other is not None:
            if ebs.get("volumeID") == other.get("volumeID"):
                return True
        iscsi, other = volume.get("iscsi"), existing.get("iscsi")
        if iscsi is not None and other is not None:
            if iscsi.get("iqn") == other.get("iqn") and not (
                iscsi.get("readOnly") and other.get("readOnly")
            ):
                return True
        rbd, other = volume.get("rbd"), existing.get("rbd")
        if rbd is not None and other is not None:
            if (
                set(rbd.get("monitors") or ()) & set(other.get("monitors") or ())
                and (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd")
                and rbd.get("image") == other.get("image")
                and not (rbd.get("readOnly") and other.get("readOnly"))
            ):
                return True
    return False


def satisfy_volume_conflicts(pod: dict, node_info: NodeInfo) -> bool:
    for volume in spec(pod).get("volumes") or ():
        if not needs_restrictions_check(volume):
            continue
        for existing in node_info.pods:
            if is_volume_conflict(volume, existing.pod):
                return False
    return True


class _State:
    """The pod's ReadWriteOncePod claims and how many assigned pods use one of them."""

    __slots__ = ("rwop_claims", "conflicting")

    def __init__(self, rwop_claims: frozenset[str], conflicting: int) -> None:
        self.rwop_claims = rwop_claims
        self.conflicting = conflicting

    def update_with_pod(self, pod: dict, multiplier: int) -> None:
        for key in pvc_keys_of(pod):
            if key in self.rwop_claims:
                self.conflicting += multiplier

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicting)


class VolumeRestrictions:
    name = NAME
    reads = (PODS, PERSISTENT_VOLUME_CLAIMS)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def _rwop_claims(self, pod: dict) -> tuple[frozenset[str], Status | None]:
        lister = self.handle.lister(PERSISTENT_VOLUME_CLAIMS)
        namespace = meta(pod).get("namespace", "")
        keys: set[str] = set()
        for volume in spec(pod).get("volumes") or ():
            if volume.get("persistentVolumeClaim") is None:
                continue
            name = volume["persistentVolumeClaim"].get("claimName") or ""
            pvc = lister.get(namespace, name)
            if pvc is None:
                return frozenset(), unresolvable(not_found("persistentvolumeclaim", name))
            if READ_WRITE_ONCE_POD in (spec(pvc).get("accessModes") or ()):
                keys.add(claim_key(namespace, name))
        return frozenset(keys), None

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(needs_restrictions_check(v) for v in spec(pod).get("volumes") or ())
        claims, status = self._rwop_claims(pod)
        if status is not None:
            return None, status
        conflicting = 0
        if claims:
            snapshot = state.snapshot
            infos = snapshot if snapshot is not None else nodes
            for info in infos:
                for existing in info.pods:
                    for key in pvc_keys_of(existing.pod):
                        if key in claims:
                            conflicting += 1
                            break
        if not needs_check and conflicting == 0:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _State(claims, conflicting))
        return None, None

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_add, 1)

    def remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_remove, -1)

    def _update(self, state: CycleState, info: PodInfo, multiplier: int) -> Status | None:
        try:
            stored: _State = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycleState', plugin=NAME)
        stored.update_with_pod(info.pod, multiplier)
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod, node_info):
            return unschedulable(ERR_REASON_DISK_CONFLICT)
        try:
            stored: _State = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycleState', plugin=NAME)
        if stored.conflicting > 0:
            return unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A holder deleted frees its disk or ReadWriteOncePod claim.
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE),
                is_schedulable_after_pod_deleted,
            ),
            # A new node has no pods, so no conflicting disks.
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            # The claim the pod waits for may appear.
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pvc_change,
            ),
        ]


def is_schedulable_after_pvc_change(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if new is None:
        return QueueingHint.QUEUE_SKIP
    key = claim_key(meta(new).get("namespace", ""), meta(new).get("name", ""))
    return QueueingHint.QUEUE if key in pvc_keys_of(pod) else QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_deleted(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE_SKIP
    if meta(old).get("namespace") != meta(pod).get("namespace"):
        return QueueingHint.QUEUE_SKIP
    if set(pvc_keys_of(old)) & set(pvc_keys_of(pod)):
        return QueueingHint.QUEUE
    for volume in spec(pod).get("volumes") or ():
        if needs_restrictions_check(volume) and is_volume_conflict(volume, old):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
