"""Storage informer events requeue pods (``extender/scheduler/storage_events.py``)."""

from __future__ import annotations

from extender.framework.events import ActionType, Resource
from extender.framework.handle import PERSISTENT_VOLUME_CLAIMS, SERVICES
from extender.kube import Informer
from extender.scheduler.storage_events import wire_storage_events


class RecordingQueue:
    def __init__(self) -> None:
        self.events: list = []

    def move_all_to_active_or_backoff(self, event, old=None, new=None) -> int:
        self.events.append((event, old, new))
        return 0


def test_claim_events_reach_the_queue_and_other_kinds_are_left_alone() -> None:
    claims = Informer(None, PERSISTENT_VOLUME_CLAIMS.path)
    services = Informer(None, SERVICES.path)
    queue = RecordingQueue()
    wire_storage_events({PERSISTENT_VOLUME_CLAIMS: claims, SERVICES: services}, queue)
    claim = {"metadata": {"name": "data", "namespace": "a", "resourceVersion": "1"}}
    claims._apply("ADDED", claim)
    services._apply("ADDED", {"metadata": {"name": "s", "namespace": "a"}})
    ((event, old, new),) = queue.events
    assert event.resource == Resource.PERSISTENT_VOLUME_CLAIM
    assert event.action == ActionType.ADD and old is None and new is claim


def test_dra_events_reach_the_queue_with_upstream_resource_names() -> None:
    from extender.framework.handle import DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_SLICES

    informers = {kind: Informer(None, kind.path) for kind in (DEVICE_CLASSES, RESOURCE_SLICES)}
    informers[RESOURCE_CLAIMS] = Informer(None, RESOURCE_CLAIMS.path)
    queue = RecordingQueue()
    wire_storage_events(informers, queue)
    informers[RESOURCE_SLICES]._apply("ADDED", {"metadata": {"name": "s", "resourceVersion": "1"}})
    informers[DEVICE_CLASSES]._apply("ADDED", {"metadata": {"name": "c", "resourceVersion": "1"}})
    claim = {"metadata": {"name": "x", "namespace": "a", "resourceVersion": "1"}}
    informers[RESOURCE_CLAIMS]._apply("ADDED", claim)
    changed = {**claim, "metadata": {**claim["metadata"], "resourceVersion": "2"}}
    informers[RESOURCE_CLAIMS]._apply("MODIFIED", changed)
    assert [(e.resource, e.action) for e, _, _ in queue.events] == [
        (Resource.RESOURCE_SLICE, ActionType.ADD),
        (Resource.DEVICE_CLASS, ActionType.ADD),
        (Resource.RESOURCE_CLAIM, ActionType.ADD),
        (Resource.RESOURCE_CLAIM, ActionType.UPDATE),
    ]
    assert [e.resource.value for e, _, _ in queue.events[:3]] == [
        "ResourceSlice",
        "DeviceClass",
        "ResourceClaim",
    ]


def test_a_custom_resource_a_plugin_registered_reaches_the_queue_in_upstreams_form() -> None:
    """Coscheduling registers PodGroup add/update as ``podgroups.v1alpha1.scheduling.x-k8s.io``
    (upstream's GVK form): the PodGroup informer's events carry that name; a custom kind no
    plugin registered stays silent."""
    from extender.framework.events import ClusterEvent
    from extender.framework.handle import Kind
    from extender.plugins.coscheduling.podgroup import PODGROUP_EVENT_RESOURCE, PODGROUPS

    widgets = Kind("example.com", "v1", "widgets")
    informers = {PODGROUPS: Informer(None, PODGROUPS.path), widgets: Informer(None, widgets.path)}
    queue = RecordingQueue()
    wire_storage_events(informers, queue, {PODGROUP_EVENT_RESOURCE})
    group = {"metadata": {"name": "pg", "namespace": "a", "resourceVersion": "1"}}
    informers[PODGROUPS]._apply("ADDED", group)
    informers[widgets]._apply("ADDED", {"metadata": {"name": "w", "resourceVersion": "1"}})
    ((event, _, new),) = queue.events
    assert event.resource == "podgroups.v1alpha1.scheduling.x-k8s.io"
    assert new is group
    registered = ClusterEvent(PODGROUP_EVENT_RESOURCE, ActionType.ADD | ActionType.UPDATE)
    assert registered.matches(event)
