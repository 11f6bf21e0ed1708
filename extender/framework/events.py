"""Cluster events and queueing hints (upstream
``staging/src/k8s.io/kube-scheduler/framework/types.go``,
``pkg/scheduler/backend/queue/scheduling_queue.go``).

A plugin that can reject pods says which cluster events might make them schedulable again;
the standalone scheduler's queue uses that to requeue only the pods an event may help.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntFlag, StrEnum


class ActionType(IntFlag):
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    UPDATE_NODE_DECLARED_FEATURE = 1 << 12

    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_NODE_DECLARED_FEATURE
    )
    ALL = ADD | DELETE | UPDATE


class Resource(StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULABLE_POD = "UnschedulablePod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    POD_GROUP = "PodGroup"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """``resource``: a :class:`Resource`, or a custom resource in upstream's
    ``<resource>.<version>.<group>`` form (e.g. ``podgroups.v1alpha1.scheduling.x-k8s.io``),
    whose events come from the informer of a kind some plugin reads."""

    resource: Resource | str
    action: ActionType
    label: str = ""

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether this registered event matches an incoming one."""
        if self.resource == Resource.WILDCARD:
            return True
        if self.resource != incoming.resource and not (
            self.resource == Resource.POD
            and incoming.resource in (Resource.ASSIGNED_POD, Resource.UNSCHEDULABLE_POD)
        ):
            return False
        return bool(self.action & incoming.action)


def custom_resource(resource: str, version: str, group: str) -> str:
    """A custom resource's name in a :class:`ClusterEvent` (upstream's GVK form)."""
    return f"{resource}.{version}.{group}"


class QueueingHint(Enum):
    QUEUE_SKIP = 0
    QUEUE = 1


# fn(pod, old_obj, new_obj) -> QueueingHint; an exception counts as QUEUE.
QueueingHintFn = Callable[[dict, "dict | None", "dict | None"], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


# Well-known incoming events.
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULABLE_POD, ActionType.ADD, "UnscheduledPodAdd")
POD_GROUP_ADD = ClusterEvent(Resource.POD_GROUP, ActionType.ADD, "PodGroupAdd")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")
