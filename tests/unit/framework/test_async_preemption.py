"""SchedulerAsyncPreemption (upstream ``preemption/executor.go`` ``prepareCandidateAsync``,
``defaultpreemption`` PreEnqueue): the victims' API calls run on a background thread while
PreEnqueue holds the preemptor; the queue lets a pod deletion reach the held preemptor."""

from __future__ import annotations

import threading

from extender.framework.events import (
    ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    Resource,
)
from extender.framework.results import NominatingInfo, NominatingMode
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.plugins.default_preemption import MSG_WAITING_FOR_PREEMPTION
from extender.scheduler.queue import ACTIVE_Q, BACKOFF_Q, GATED, UNSCHEDULABLE_Q
from tests.unit.builders import make_node
from tests.unit.preemption_fixtures import (
    FIT,
    FakeClient,
    make_framework,
    pod,
    post_filter,
)
from tests.unit.scheduler.test_queue import Clock, make_queue


class BlockingClient(FakeClient):
    """Holds every delete until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        assert self.release.wait(10)
        super().delete_pod(namespace, name, uid)


def _cluster():
    nodes = [make_node("n0", cpu="2")]
    victims = [pod("v1", "1", 1, node="n0"), pod("v2", "1", 1, node="n0")]
    return Snapshot.from_objects(nodes, victims), victims


def _preemption(fwk):
    return fwk.plugin("DefaultPreemption")


def _wait_done(plugin, uid: str) -> None:
    for thread in threading.enumerate():
        if thread.name.startswith(f"preemption-{uid[:8]}"):
            thread.join(10)


def test_async_preemption_nominates_at_once_and_holds_the_preemptor_until_done():
    snapshot, victims = _cluster()
    client = BlockingClient()
    fwk = make_framework(client=client, async_preemption=True, pods=victims)
    preemptor = pod("preemptor", "2", 5)
    preemptor["metadata"]["uid"] = "uid-preemptor"
    plugin = _preemption(fwk)

    result, status = post_filter(fwk, preemptor, snapshot)

    assert status == Status(Code.SUCCESS)
    assert result.nominating_info == NominatingInfo("n0", NominatingMode.OVERRIDE)
    assert client.deleted == []  # the calls wait on the background thread
    gate = plugin.pre_enqueue(preemptor)
    assert gate == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_WAITING_FOR_PREEMPTION)
    assert plugin.pre_enqueue(pod("other", "1", 5)) is None

    client.release.set()
    _wait_done(plugin, "uid-preemptor")
    assert sorted(name for _, name, _ in client.deleted) == ["v1", "v2"]
    assert len(client.patches) == 2  # DisruptionTarget on each victim
    assert plugin.pre_enqueue(preemptor) is None


def test_sync_preemption_has_made_its_calls_when_post_filter_returns():
    snapshot, victims = _cluster()
    client = FakeClient()
    fwk = make_framework(client=client, async_preemption=False, pods=victims)
    preemptor = pod("preemptor", "2", 5)
    preemptor["metadata"]["uid"] = "uid-preemptor"
    post_filter(fwk, preemptor, snapshot)
    assert sorted(name for _, name, _ in client.deleted) == ["v1", "v2"]
    assert _preemption(fwk).pre_enqueue(preemptor) is None
    assert _preemption(fwk).events_to_register() == []


def test_preemptor_is_released_once_the_informer_lost_the_last_victim():
    snapshot, victims = _cluster()
    fwk = make_framework(async_preemption=True, pods=victims)
    evaluator = _preemption(fwk).evaluator
    evaluator._preempting.add("u")
    assert evaluator.is_pod_running_preemption("u")  # no last victim recorded yet
    evaluator._last_victim["u"] = ("default", "v2")
    assert evaluator.is_pod_running_preemption("u")  # still in the informer
    evaluator._last_victim["u"] = ("default", "gone")
    assert not evaluator.is_pod_running_preemption("u")
    terminating = pod("t", "1", 1, node="n0")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    fwk2 = make_framework(async_preemption=True, pods=[terminating])
    ev2 = _preemption(fwk2).evaluator
    ev2._preempting.add("u")
    ev2._last_victim["u"] = ("default", "t")
    assert not ev2.is_pod_running_preemption("u")


def test_pod_delete_reaches_a_preemptor_gated_by_default_preemption():
    """Upstream: the gating plugin's events let the event through; the pod's other
    rejectors' hints decide (DefaultPreemption's own hint is Skip)."""
    fwk = make_framework(async_preemption=True)
    events = {
        "DefaultPreemption": _preemption(fwk).events_to_register(),
        FIT: [],
    }
    from extender.framework.events import ClusterEventWithHint

    events[FIT] = [ClusterEventWithHint(ASSIGNED_POD_DELETE)]
    held = {"on": True}

    def pre_enqueue(p):
        if held["on"]:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                MSG_WAITING_FOR_PREEMPTION,
                plugin="DefaultPreemption",
            )
        return None

    clock = Clock()
    q = make_queue(clock, events=events, pre_enqueue=pre_enqueue)
    preemptor = pod("preemptor", "2", 5)
    held["on"] = False
    q.add(preemptor)
    info = q.pop(timeout=0)
    info.unschedulable_plugins = {FIT}
    q.add_unschedulable_if_not_present(info, rejected=True)
    assert q.where(preemptor) == UNSCHEDULABLE_Q
    held["on"] = True
    clock.now += 100  # past backoff
    victim = pod("v1", "1", 1, node="n0")
    q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, victim, None)
    assert q.where(preemptor) == GATED  # FIT's hint queued it; PreEnqueue held it
    # A node event is none of DefaultPreemption's: the gated pod stays.
    held["on"] = False
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.ADD), None, {})
    assert q.where(preemptor) == GATED
    # The last victim's deletion: DefaultPreemption registered it, FIT's hint queues.
    q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, victim, None)
    assert q.where(preemptor) in (ACTIVE_Q, BACKOFF_Q)
