"""Cluster events from the storage and DRA informers (upstream ``pkg/scheduler/eventhandlers.go``,
``addAllEventHandlers`` for PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
CSIDrivers, CSIStorageCapacities, for ResourceClaims, ResourceSlices and DeviceClasses, and for
PodGroups): an add, update or delete requeues the unschedulable pods whose rejecting plugins
registered the event (with their queueing hints).

Only the kinds some enabled plugin reads have informers, so only those produce events.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from extender.framework.events import ActionType, ClusterEvent, Resource, custom_resource
from extender.framework.handle import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    DEVICE_CLASSES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    STORAGE_CLASSES,
    Kind,
)
from extender.framework.podgroups import PODGROUPS

STORAGE_RESOURCES: dict[Kind, Resource] = {
    PERSISTENT_VOLUMES: Resource.PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIMS: Resource.PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASSES: Resource.STORAGE_CLASS,
    CSI_NODES: Resource.CSI_NODE,
    CSI_DRIVERS: Resource.CSI_DRIVER,
    CSI_STORAGE_CAPACITIES: Resource.CSI_STORAGE_CAPACITY,
    # Dynamic Resource Allocation (DynamicResources).
    RESOURCE_CLAIMS: Resource.RESOURCE_CLAIM,
    RESOURCE_SLICES: Resource.RESOURCE_SLICE,
    DEVICE_CLASSES: Resource.DEVICE_CLASS,
    # Workload-aware scheduling (GangScheduling waits for its PodGroup to be added).
    PODGROUPS: Resource.POD_GROUP,
}


class _Requeue:
    def __init__(self, queue: Any, resource: Resource | str) -> None:
        self.queue = queue
        self.resource = resource

    def on_add(self, obj: dict) -> None:
        event = ClusterEvent(self.resource, ActionType.ADD, f"{self.resource}Add")
        self.queue.move_all_to_active_or_backoff(event, None, obj)

    def on_update(self, old: dict, new: dict) -> None:
        event = ClusterEvent(self.resource, ActionType.UPDATE, f"{self.resource}Update")
        self.queue.move_all_to_active_or_backoff(event, old, new)

    def on_delete(self, obj: dict) -> None:
        event = ClusterEvent(self.resource, ActionType.DELETE, f"{self.resource}Delete")
        self.queue.move_all_to_active_or_backoff(event, obj, None)


def wire_storage_events(
    informers: Mapping[Kind, Any], queue: Any, registered: Collection[str] = ()
) -> None:
    """Point the storage kinds' informers (unstarted) at the queue, and those of the custom
    resources a plugin registered events for (``registered``, in upstream's
    ``<resource>.<version>.<group>`` form, as upstream's dynamic informers for them)."""
    for kind, informer in informers.items():
        resource: Resource | str | None = STORAGE_RESOURCES.get(kind)
        if resource is None:
            custom = custom_resource(kind.resource, kind.version, kind.group)
            if custom not in registered:
                continue
            resource = custom
        handler = _Requeue(queue, resource)
        informer.on_add = handler.on_add
        informer.on_update = handler.on_update
        informer.on_delete = handler.on_delete
