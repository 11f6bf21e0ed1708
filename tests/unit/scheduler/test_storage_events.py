"""Storage informer events requeue pods (``extender/scheduler/storage_events.py``)."""

from __future__ import annotations

from extender.framework.events import ActionType, Resource
from extender.framework.handle import PERSISTENT_VOLUME_CLAIMS, SERVICES
from extender.kube import Informer
from extender.scheduler.storage_events import wire_storage_events


class RecordingQueue:
    def __init__(self) -> None:
        self.events: list = []

    def move_all_to_active_or_backoff(self, event, old=None, new=None) -> int:  # noqa: ANN001
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
