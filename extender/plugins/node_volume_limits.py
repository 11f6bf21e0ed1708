"""NodeVolumeLimits (PreFilter, Filter): a node's CSI attach limits (upstream
``pkg/scheduler/framework/plugins/nodevolumelimits``, ``CSILimits``).

Limits come from the node's CSINode object: ``spec.drivers[].allocatable.count`` per driver; a
node without a CSINode or without counts has no limit. The pod's new volumes are its PVC-backed
volumes (``persistentVolumeClaim`` and generic ``ephemeral``) resolved to ``(driver, handle)``:
a bound claim through its PV's ``spec.csi``, an unbound one through its StorageClass's
provisioner with a per-claim handle. The node's existing pods' volumes are counted the same
way, each unique ``driver/handle`` once; a volume the node already has is not new. More than
the limit for a driver: Unschedulable "node(s) exceed max volume count". A missing PVC of the
incoming pod is UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import uuid

from extender.framework.cycle_state import CycleState
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import (
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
    Handle,
)
from extender.framework.node_info import NodeInfo
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unresolvable, unschedulable

from .volume_util import claim_class, meta, not_found, pod_claims, spec, volume_is_for_pod

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"


class _PVCMissing(Exception):
    pass


def volume_limits(csi_node: dict | None) -> dict[str, int]:
    """driver -> attach limit from the CSINode's allocatable counts."""
    if csi_node is None:
        return {}
    limits: dict[str, int] = {}
    for driver in spec(csi_node).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[driver.get("name", "")] = int(count)
    return limits


class NodeVolumeLimits:
    name = NAME
    reads = (PODS, CSI_NODES, PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        # Unbound claims counted by class get a handle no real volume can have.
        self.random_prefix = uuid.uuid4().hex

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for volume in spec(pod).get("volumes") or ():
            if volume.get("persistentVolumeClaim") is not None or volume.get("ephemeral"):
                return None, None
        # In-tree inline volumes are counted only once migrated to CSI (not modelled).
        return None, SKIP

    def pre_filter_extensions(self) -> None:
        return None

    def _driver_info(self, pvc: dict) -> tuple[str, str]:
        pv_name = spec(pvc).get("volumeName") or ""
        if pv_name:
            pv = self.handle.lister(PERSISTENT_VOLUMES).get("", pv_name)
            if pv is not None:
                csi = spec(pv).get("csi")
                if csi is None:
                    return "", ""  # in-tree PV: counted only once migrated (not modelled)
                return csi.get("driver", ""), csi.get("volumeHandle", "")
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""
        storage_class = self.handle.lister(STORAGE_CLASSES).get("", class_name)
        if storage_class is None:
            return "", ""
        handle = (
            f"{self.random_prefix}-{meta(pvc).get('namespace', '')}/{meta(pvc).get('name', '')}"
        )
        return storage_class.get("provisioner", ""), handle

    def _attachable(self, pod: dict, new_pod: bool, result: dict[str, str]) -> None:
        """Adds ``driver/handle -> driver`` for the pod's CSI volumes to ``result``; raises
        :class:`_PVCMissing` for a missing claim of the new pod, ValueError for a bad one."""
        lister = self.handle.lister(PERSISTENT_VOLUME_CLAIMS)
        namespace = meta(pod).get("namespace", "")
        for claim_name, ephemeral in pod_claims(pod):
            if not claim_name:
                raise ValueError("PersistentVolumeClaim had no name")
            pvc = lister.get(namespace, claim_name)
            if pvc is None:
                if new_pod:
                    raise _PVCMissing(
                        f"looking up PVC {namespace}/{claim_name}: "
                        + not_found("persistentvolumeclaim", claim_name)
                    )
                continue
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    raise ValueError(problem)
            driver, handle = self._driver_info(pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = driver

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if not spec(pod).get("volumes"):
            return None
        csi_node = self.handle.lister(CSI_NODES).get("", node_info.name)
        new_volumes: dict[str, str] = {}
        try:
            self._attachable(pod, True, new_volumes)
        except _PVCMissing as missing:
            return unresolvable(str(missing))
        except ValueError as exc:
            return Status.error(str(exc), plugin=NAME)
        if not new_volumes:
            return None
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for existing in node_info.pods:
            try:
                self._attachable(existing.pod, False, attached)
            except ValueError as exc:
                return Status.error(str(exc), plugin=NAME)
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A CSINode gains or raises its limits.
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, ActionType.ADD | ActionType.UPDATE)
            ),
            # A pod on the node deleted frees attachments.
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE),
                is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)),
        ]


def is_schedulable_after_pod_deleted(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if old is None or not spec(old).get("nodeName"):
        return QueueingHint.QUEUE_SKIP
    for volume in spec(old).get("volumes") or ():
        if volume.get("persistentVolumeClaim") is not None or volume.get("ephemeral"):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
