"""The scheduling queue: ordering, backoff, the unschedulable pool, hints and in-flight events."""

from __future__ import annotations

from extender import testing
from extender.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.status import unresolvable
from extender.plugins.priority_sort import PrioritySort
from extender.scheduler.queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    GATED,
    UNSCHEDULABLE_Q,
    SchedulingQueue,
    pod_update_event,
)
from tests.unit.builders import make_pod


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_queue(clock: Clock, events=None, pre_enqueue=None) -> SchedulingQueue:
    sort = PrioritySort({}, testing.handle())
    return SchedulingQueue(
        sort.less,
        clock=clock,
        plugin_events=lambda pod: events or {},
        pre_enqueue=pre_enqueue or (lambda pod: None),
    )


def test_pop_orders_by_priority_then_timestamp():
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("low", priority=1))
    clock.now += 1
    q.add(make_pod("high", priority=10))
    clock.now += 1
    q.add(make_pod("low2", priority=1))
    names = [q.pop(timeout=0).pod_info.name for _ in range(3)]
    assert names == ["high", "low", "low2"]
    assert q.pop(timeout=0) is None


def test_backoff_doubles_to_max():
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p")
    q.add(pod)
    durations = []
    for _ in range(6):
        info = q.pop(timeout=0)
        q.add_unschedulable_if_not_present(info, rejected=False)  # error path: no hints
        durations.append(q.backoff_duration(info))
        assert q.where(pod) == BACKOFF_Q
        clock.now += 100
        assert q.flush_backoff_completed() == 1
    assert durations == [1, 2, 4, 8, 10, 10]


def test_rejected_pod_waits_for_a_registered_event():
    clock = Clock()
    events = {
        "NodeUnschedulable": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
    }
    q = make_queue(clock, events)
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    info.unschedulable_plugins = {"NodeUnschedulable"}
    q.add_unschedulable_if_not_present(info, rejected=True)
    assert q.where(pod) == UNSCHEDULABLE_Q
    # an event nobody registered for moves nothing
    assert q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE) == 0
    assert q.where(pod) == UNSCHEDULABLE_Q
    # node add: registered; still backing off (1 s) -> backoffQ, then active
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, {"metadata": {"name": "n"}}) == 1
    assert q.where(pod) == BACKOFF_Q
    clock.now += 2  # past the one-second window its backoff ends in
    q.flush_backoff_completed()
    assert q.where(pod) == ACTIVE_Q


def test_hint_queue_skip_keeps_pod_and_exceptions_queue():
    clock = Clock()

    def skip(pod, old, new):
        return QueueingHint.QUEUE_SKIP

    def boom(pod, old, new):
        raise RuntimeError("bug")

    q = make_queue(
        clock,
        {
            "A": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), skip)],
            "B": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), boom)],
        },
    )
    p1, p2 = make_pod("p1"), make_pod("p2")
    for pod, plugin in ((p1, "A"), (p2, "B")):
        q.add(pod)
        info = q.pop(timeout=0)
        info.unschedulable_plugins = {plugin}
        q.add_unschedulable_if_not_present(info, rejected=True)
    clock.now += 20  # past backoff
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where(p1) == UNSCHEDULABLE_Q
    assert q.where(p2) == ACTIVE_Q


def test_event_during_attempt_is_replayed():
    clock = Clock()
    events = {"X": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    q = make_queue(clock, events)
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    q.move_all_to_active_or_backoff(NODE_ADD)  # while in flight
    info.unschedulable_plugins = {"X"}
    q.add_unschedulable_if_not_present(info, rejected=True)
    assert q.where(pod) == BACKOFF_Q  # not lost in the unschedulable pool


def test_pending_plugin_queues_immediately():
    clock = Clock()
    events = {"P": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    q = make_queue(clock, events)
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    info.pending_plugins = {"P"}
    q.add_unschedulable_if_not_present(info, rejected=True)
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where(pod) == ACTIVE_Q


def test_unschedulable_flush_after_five_minutes():
    clock = Clock()
    q = make_queue(clock, {"X": []})
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    info.unschedulable_plugins = {"X"}
    q.add_unschedulable_if_not_present(info, rejected=True)
    clock.now += 299
    assert q.flush_unschedulable_leftover() == 0
    clock.now += 2
    assert q.flush_unschedulable_leftover() == 1
    assert q.where(pod) == ACTIVE_Q


def test_gated_pod_enters_active_when_gates_removed():
    clock = Clock()

    def pre_enqueue(pod):
        gates = pod["spec"].get("schedulingGates")
        return (
            unresolvable("waiting for scheduling gates").with_plugin("SchedulingGates")
            if gates
            else None
        )

    q = make_queue(clock, pre_enqueue=pre_enqueue)
    gated = make_pod("g", schedulingGates=[{"name": "wait"}])
    q.add(gated)
    assert q.where(gated) == GATED
    assert q.pending_pods()[GATED] == 1
    ungated = {**gated, "spec": {**gated["spec"], "schedulingGates": []}}
    q.update(gated, ungated)
    assert q.where(gated) == ACTIVE_Q


def test_delete_removes_from_every_queue_and_update_reorders():
    clock = Clock()
    q = make_queue(clock)
    a, b = make_pod("a", priority=1), make_pod("b", priority=2)
    q.add(a)
    q.add(b)
    q.delete(b)
    assert q.where(b) is None
    bumped = {**a, "spec": {**a["spec"], "priority": 100}}
    q.update(a, bumped)
    c = make_pod("c", priority=50)
    q.add(c)
    assert q.pop(timeout=0).pod_info.name == "a"
    assert q.pop(timeout=0).pod_info.name == "c"


def test_activate_skips_backoff():
    clock = Clock()
    q = make_queue(clock, {"X": []})
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    info.unschedulable_plugins = {"X"}
    q.add_unschedulable_if_not_present(info, rejected=True)
    q.activate([pod])
    assert q.where(pod) == ACTIVE_Q


def test_nominator_tracks_nominated_pods():
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p", priority=5)
    pod["status"]["nominatedNodeName"] = "n1"
    q.add(pod)
    assert [p.name for p in q.nominator.nominated_pods_for_node("n1")] == ["p"]
    q.delete(pod)
    assert q.nominator.nominated_pods_for_node("n1") == []


def test_pod_update_event_actions():
    old = make_pod("p", labels={"a": "1"})
    new = {**old, "metadata": {**old["metadata"], "labels": {"a": "2"}}}
    assert pod_update_event(old, new).action == ActionType.UPDATE_POD_LABEL


def test_pod_update_event_generated_resource_claim():
    # The resource-claim controller names the claim it created from the pod's template.
    old = make_pod("p")
    new = {**old, "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c"}]}}
    assert pod_update_event(old, new).action == ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    assert pod_update_event(new, new).action == ActionType.UPDATE
