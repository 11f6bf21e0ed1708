"""Feature gate SchedulerPopFromBackoffQ (beta, on by default since v1.33; kubernetes
``pkg/scheduler/backend/queue/active_queue.go`` ``unlockedPop``, ``backoff_queue.go``): when
activeQ is empty the queue pops the head of backoffQ, whose pods are ordered by their backoff
expiry aligned to whole seconds and, within one second, as activeQ orders them. Errored pods
wait out their backoff. With the gate off the queue waits, as before v1.33."""

from __future__ import annotations

import threading
import time

import pytest

from extender import testing
from extender.framework.events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
)
from extender.framework.pod_info import QueuedPodInfo
from extender.framework.status import unresolvable
from extender.plugins.priority_sort import PrioritySort
from extender.scheduler.queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    GATED,
    SchedulingQueue,
)
from tests.unit.builders import make_pod

REJECTOR = "NodeResourcesFit"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_queue(clock: Clock, *, gate: bool = True, pre_enqueue=None) -> SchedulingQueue:
    sort = PrioritySort({}, testing.handle())
    events = {REJECTOR: [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    return SchedulingQueue(
        sort.less,
        clock=clock,
        plugin_events=lambda pod: events,
        pre_enqueue=pre_enqueue or (lambda pod: None),
        pop_from_backoff=gate,
    )


def reject_into_backoff(q: SchedulingQueue, pod: dict) -> QueuedPodInfo:
    """Pop ``pod`` and reject it by a plugin; a node added meanwhile sends it to backoffQ."""
    q.add(pod)
    info = q.pop(timeout=0)
    assert info is not None and info.pod_info.name == pod["metadata"]["name"]
    q.move_all_to_active_or_backoff(NODE_ADD)  # while in flight: may help, after backoff
    info.unschedulable_plugins = {REJECTOR}
    q.add_unschedulable_if_not_present(info, rejected=True)
    q.done(info.pod_info.key)
    assert q.where(pod) == BACKOFF_Q
    return info


def fail_into_backoff(q: SchedulingQueue, pod: dict) -> None:
    """Pop ``pod`` and fail it with an error (no rejecting plugin)."""
    q.add(pod)
    info = q.pop(timeout=0)
    assert info is not None
    q.add_unschedulable_if_not_present(info, rejected=False)
    assert q.where(pod) == BACKOFF_Q


def test_pop_takes_the_backoff_head_when_active_is_empty() -> None:
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p")
    reject_into_backoff(q, pod)
    info = q.pop(timeout=0)  # its second of backoff has not passed: popped all the same
    assert info is not None and info.pod_info.name == "p"
    assert info.attempts == 2
    assert q.where(pod) == "in-flight"
    assert q.popped_from_backoff == 1
    assert q.pending_pods()[BACKOFF_Q] == 0


def test_pop_prefers_active_pods() -> None:
    clock = Clock()
    q = make_queue(clock)
    backing_off = make_pod("backing-off", priority=100)
    reject_into_backoff(q, backing_off)
    q.add(make_pod("active", priority=1))
    assert q.pop(timeout=0).pod_info.name == "active"  # lower priority, but in activeQ
    assert q.where(backing_off) == BACKOFF_Q
    assert q.pop(timeout=0).pod_info.name == "backing-off"
    assert q.pop(timeout=0) is None


def test_errored_pods_wait_out_their_backoff() -> None:
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p")
    fail_into_backoff(q, pod)
    assert q.pop(timeout=0) is None
    assert q.where(pod) == BACKOFF_Q
    clock.now += 2
    assert q.flush_backoff_completed() == 1
    assert q.pop(timeout=0).pod_info.name == "p"
    assert q.popped_from_backoff == 0


def test_a_group_that_did_not_fit_counts_as_an_error() -> None:
    # Upstream: an attempt no plugin rejected (a pod group unschedulable as a whole names
    # none) counts as an error and waits in the error backoff heap.
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    q.add_unschedulable_if_not_present(info, rejected=True)
    assert (info.consecutive_errors_count, info.unschedulable_count) == (1, 0)
    assert q.where(pod) == BACKOFF_Q
    assert q.pop(timeout=0) is None


def test_gate_off_waits_out_the_backoff() -> None:
    clock = Clock()
    q = make_queue(clock, gate=False)
    pod = make_pod("p")
    reject_into_backoff(q, pod)
    assert q.pop(timeout=0) is None
    clock.now += 0.5
    assert q.flush_backoff_completed() == 0
    clock.now += 0.6  # 1.1 s: not aligned to whole seconds without the gate
    assert q.flush_backoff_completed() == 1
    assert q.pop(timeout=0).pod_info.name == "p"
    assert q.popped_from_backoff == 0


def test_backoff_ends_with_its_whole_second() -> None:
    clock = Clock()
    clock.now = 1000.3
    q = make_queue(clock)
    pod = make_pod("p")
    reject_into_backoff(q, pod)  # 1 s of backoff from 1000.3: expiry aligned to 1001
    clock.now = 1001.9
    assert q.flush_backoff_completed() == 0  # its window (1001-1002) has not passed
    clock.now = 1002.0
    assert q.flush_backoff_completed() == 1
    assert q.where(pod) == ACTIVE_Q


def test_backoff_order_is_expiry_window_then_priority() -> None:
    clock = Clock()
    q = make_queue(clock)
    clock.now = 1000.1
    reject_into_backoff(q, make_pod("low-early", priority=1))  # window 1001
    clock.now = 1000.8
    reject_into_backoff(q, make_pod("high-late", priority=10))  # window 1001
    clock.now = 1001.2
    reject_into_backoff(q, make_pod("highest-next", priority=100))  # window 1002
    names = [q.pop(timeout=0).pod_info.name for _ in range(3)]
    assert names == ["high-late", "low-early", "highest-next"]


def test_gate_off_orders_backoff_by_expiry_alone() -> None:
    clock = Clock()
    q = make_queue(clock, gate=False)
    clock.now = 1000.1
    reject_into_backoff(q, make_pod("low-early", priority=1))
    clock.now = 1000.8
    reject_into_backoff(q, make_pod("high-late", priority=10))
    clock.now = 1010.0
    assert q.flush_backoff_completed() == 2
    # In activeQ now: priority decides there.
    assert [q.pop(timeout=0).pod_info.name for _ in range(2)] == ["high-late", "low-early"]


def test_update_reorders_a_backoff_window() -> None:
    clock = Clock()
    q = make_queue(clock)
    a, b = make_pod("a", priority=5), make_pod("b", priority=1)
    reject_into_backoff(q, a)
    reject_into_backoff(q, b)
    q.update(b, {**b, "spec": {**b["spec"], "priority": 50}})
    assert q.pop(timeout=0).pod_info.name == "b"


def test_pre_enqueue_runs_on_entering_backoff_not_on_leaving() -> None:
    clock = Clock()
    gated: set[str] = set()
    calls: list[str] = []

    def pre_enqueue(pod):
        name = pod["metadata"]["name"]
        calls.append(name)
        return unresolvable("gated").with_plugin("Gate") if name in gated else None

    q = make_queue(clock, pre_enqueue=pre_enqueue)
    kept, stopped = make_pod("kept"), make_pod("stopped")
    reject_into_backoff(q, kept)
    assert calls == ["kept", "kept"]  # on add, then on entering backoffQ
    # Gated on entering backoffQ: the unschedulable pool, not backoffQ.
    gated.add("stopped")
    q.add(stopped)
    assert q.where(stopped) == GATED
    gated.clear()
    q.update(stopped, {**stopped, "metadata": {**stopped["metadata"], "labels": {"x": "y"}}})
    assert q.where(stopped) == ACTIVE_Q
    # Leaving backoffQ (flush, activate, pop) does not run it again.
    calls.clear()
    clock.now += 5
    q.flush_backoff_completed()
    assert q.where(kept) == ACTIVE_Q
    assert calls == []


def test_gate_off_runs_pre_enqueue_on_leaving_backoff() -> None:
    clock = Clock()
    calls: list[str] = []
    q = make_queue(clock, gate=False, pre_enqueue=lambda pod: calls.append("x"))
    reject_into_backoff(q, make_pod("p"))
    calls.clear()
    clock.now += 5
    assert q.flush_backoff_completed() == 1
    assert calls == ["x"]


def test_a_waiting_pop_wakes_when_a_pod_enters_backoff() -> None:
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p")
    q.add(pod)
    info = q.pop(timeout=0)
    got: list[QueuedPodInfo | None] = []
    waiter = threading.Thread(target=lambda: got.append(q.pop(timeout=5)))
    waiter.start()
    time.sleep(0.05)
    q.move_all_to_active_or_backoff(NODE_ADD)
    info.unschedulable_plugins = {REJECTOR}
    start = time.monotonic()
    q.add_unschedulable_if_not_present(info, rejected=True)
    waiter.join(timeout=5)
    assert got and got[0] is info
    assert time.monotonic() - start < 1.0  # woken, not its one-second poll


def test_pop_specific_takes_a_member_from_backoff() -> None:
    clock = Clock()
    q = make_queue(clock)
    pod = make_pod("p")
    reject_into_backoff(q, pod)
    info = q.pop_specific(pod)
    assert info is not None and q.where(pod) == "in-flight"
    assert q.pending_pods()[BACKOFF_Q] == 0


@pytest.mark.parametrize(("gate", "now", "delay"), [(True, 1000.25, 0.75), (False, 1000.25, 1.0)])
def test_flush_runs_at_whole_seconds_with_the_gate(gate: bool, now: float, delay: float) -> None:
    clock = Clock()
    clock.now = now
    q = make_queue(clock, gate=gate)
    assert q._until_next_flush() == pytest.approx(delay)


def test_backoff_of_thousands_of_attempts_is_the_maximum() -> None:
    # A pending gang popped from backoffQ again and again runs up its attempt count.
    q = make_queue(Clock())
    info = QueuedPodInfo(make_pod("p"))
    for count, expected in ((1, 1.0), (4, 8.0), (5, 10.0), (1100, 10.0), (10**6, 10.0)):
        info.unschedulable_count = count
        assert q.backoff_duration(info) == expected
