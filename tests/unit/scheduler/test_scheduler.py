"""The standalone scheduler's loop (upstream ``pkg/scheduler/schedule_one.go``,
``pkg/scheduler/eventhandlers.go``) over real parts.

A real Cache, a real SchedulingQueue and real Frameworks built from in-tree plugins plus a
few small test plugins; the API (pods, binding) and the reporter are plain fakes that record
what they were asked. Binding cycles run on the scheduler's own executor; ``drain`` waits for
them and fails the test if an exception escaped one.
"""

from __future__ import annotations

import copy
import logging
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import pytest

from extender.cache import Cache
from extender.framework.events import ActionType
from extender.framework.handle import Services
from extender.framework.pod_info import pod_key
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.status import Code, Status, unschedulable
from extender.plugins import in_tree_registry
from extender.scheduler.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, SchedulingQueue
from extender.scheduler.scheduler import Scheduler, node_update_action
from tests.unit.builders import make_node, make_pod

# -- fakes ----------------------------------------------------------------------------------


class Clock:
    """Frozen time: a failed pod stays in backoff until the test moves the clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Api:
    """The apiserver as the loop sees it: the pods it reads back and the bindings it creates."""

    def __init__(self) -> None:
        self.pods: dict[str, dict] = {}
        self.bindings: list[tuple[str, str]] = []
        self.bind_error: Exception | None = None
        self.get_error: Exception | None = None

    def store(self, pod: dict) -> None:
        meta = pod["metadata"]
        self.pods[f"{meta['namespace']}/{meta['name']}"] = pod

    def get_pod(self, namespace: str, name: str) -> dict | None:
        if self.get_error is not None:
            raise self.get_error
        pod = self.pods.get(f"{namespace}/{name}")
        return copy.deepcopy(pod) if pod is not None else None

    def bind(self, pod: dict, node_name: str) -> None:  # DefaultBinder's client call
        if self.bind_error is not None:
            raise self.bind_error
        self.bindings.append((pod["metadata"]["name"], node_name))


@dataclass
class Event:
    pod: str
    type: str
    reason: str
    action: str
    note: str


class Reporter:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.patches: list[tuple[str, str, dict]] = []
        self.patch_error: Exception | None = None

    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append(Event(pod["metadata"]["name"], event_type, reason, action, note))

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> None:
        if self.patch_error is not None:
            raise self.patch_error
        self.patches.append((namespace, name, patch))

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]

    def condition(self, index: int = -1) -> dict:
        return self.patches[index][2]["status"]["conditions"][0]


class Probe:
    """A Reserve/Permit/PreBind/PostBind plugin answering from data (a value, or a function of
    the pod) and recording its calls as ``(point, pod name)``."""

    name = "Probe"

    def __init__(self, **answers: object) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def _answer(self, point: str, pod: dict, default: object = None) -> object:
        self.calls.append((point, pod["metadata"]["name"]))
        answer = self.answers.get(point, default)
        if isinstance(answer, BaseException):
            raise answer
        return answer(pod) if callable(answer) else answer

    def points(self) -> list[str]:
        return [point for point, _ in self.calls]

    def reserve(self, state, pod, node_name):
        return self._answer("reserve", pod)

    def unreserve(self, state, pod, node_name) -> None:
        self._answer("unreserve", pod)

    def permit(self, state, pod, node_name):
        return self._answer("permit", pod, (None, 0))

    def pre_bind(self, state, pod, node_name):
        return self._answer("pre_bind", pod)

    def post_bind(self, state, pod, node_name) -> None:
        self._answer("post_bind", pod)


class BrokenFilter:
    """A Filter plugin that answers ``status`` or raises ``exc``."""

    name = "BrokenFilter"

    def __init__(self, status: Status | None = None, exc: Exception | None = None) -> None:
        self.status, self.exc = status, exc

    def filter(self, state, pod, node_info):
        if self.exc is not None:
            raise self.exc
        return self.status


class RaisingScore:
    name = "RaisingScore"

    def score(self, state, pod, node_info):
        raise RuntimeError("score exploded")

    def score_extensions(self) -> None:
        return None


class SkippingBinder:
    name = "SkippingBinder"

    def bind(self, state, pod, node_name):
        return Status(Code.SKIP)


_EXECUTORS: list[ThreadPoolExecutor] = []


class RecordingExecutor(ThreadPoolExecutor):
    """The binder pool, keeping the futures so a test can wait for every binding cycle."""

    def __init__(self) -> None:
        super().__init__(4, thread_name_prefix="test-bind")
        self.futures: list[Future] = []
        _EXECUTORS.append(self)

    def submit(self, fn, /, *args, **kwargs):
        future = super().submit(fn, *args, **kwargs)
        self.futures.append(future)
        return future


# -- harness --------------------------------------------------------------------------------

BASE_POINTS = {
    "queueSort": ["PrioritySort"],
    "preFilter": ["NodeResourcesFit"],
    "filter": ["NodeUnschedulable", "NodeResourcesFit"],
    "bind": ["DefaultBinder"],
}
PROBE_POINTS = {
    "reserve": ["Probe"],
    "permit": ["Probe"],
    "preBind": ["Probe"],
    "postBind": ["Probe"],
}


def _factory(plugin: object):
    return lambda args, handle: plugin


@dataclass
class Harness:
    sched: Scheduler
    cache: Cache
    queue: SchedulingQueue
    api: Api
    reporter: Reporter
    clock: Clock
    probe: Probe
    executor: RecordingExecutor
    frameworks: dict[str, Framework] = field(default_factory=dict)

    def submit(self, pod: dict) -> dict:
        """The pod is created: the API stores it and the informer hands it to the loop."""
        self.api.store(pod)
        self.sched.on_unassigned_pod_add(pod)
        return pod

    def run(self, pod: dict) -> dict:
        """Submit the pod, run one scheduling cycle and wait for its binding cycle."""
        self.submit(pod)
        assert self.sched.schedule_one(timeout=0) is True
        self.drain()
        return pod

    def drain(self, timeout: float = 5.0) -> None:
        done, not_done = wait(self.executor.futures, timeout)
        assert not not_done, "a binding cycle did not finish"
        for future in done:
            assert future.exception() is None, f"escaped the binding cycle: {future.exception()!r}"

    def where(self, pod: dict) -> str | None:
        return self.queue.where(pod)

    def fwk(self, name: str = "default-scheduler") -> Framework:
        return self.frameworks[name]


def make_harness(
    nodes: list[dict],
    *,
    probe: Probe | None = None,
    extra: dict[str, object] | None = None,
    points: dict[str, list[str]] | None = None,
    profiles: tuple[str, ...] = ("default-scheduler",),
) -> Harness:
    """A scheduler over ``nodes``; ``points`` add (or replace, for ``bind``) profile plugins;
    ``extra`` are test plugin instances by name. The Probe is always at its four points."""
    clock = Clock()
    cache = Cache()
    for node in nodes:
        cache.add_node(node)
    probe = probe or Probe()
    plugins = {"Probe": probe, **(extra or {})}
    registry = in_tree_registry().merge(
        Registry({name: _factory(plugin) for name, plugin in plugins.items()})
    )
    merged = {point: list(names) for point, names in BASE_POINTS.items()}
    for point, names in PROBE_POINTS.items():
        merged.setdefault(point, []).extend(names)
    for point, names in (points or {}).items():
        merged[point] = list(names) if point == "bind" else merged.get(point, []) + names

    frameworks: dict[str, Framework] = {}

    def profile_of(pod: dict) -> Framework | None:
        return frameworks.get((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")

    queue = SchedulingQueue(
        lambda a, b: frameworks[profiles[0]].queue_sort_less(a, b),
        pre_enqueue=lambda pod: f.run_pre_enqueue_plugins(pod) if (f := profile_of(pod)) else None,
        plugin_events=lambda pod: f.events_to_register() if (f := profile_of(pod)) else {},
        clock=clock,
    )
    api, reporter = Api(), Reporter()
    for name in profiles:
        profile = Profile(name, {p: [PluginSpec(n) for n in ns] for p, ns in merged.items()})
        frameworks[name] = Framework(
            profile, registry, Services(client=api, nominator=queue.nominator)
        )
    sched = Scheduler(
        frameworks, cache, queue, reporter, reporter, get_pod=api.get_pod, clock=clock
    )
    sched._binders.shutdown(wait=False)
    executor = sched._binders = RecordingExecutor()
    return Harness(sched, cache, queue, api, reporter, clock, probe, executor, frameworks)


def bound(pod: dict, node: str) -> dict:
    out = copy.deepcopy(pod)
    out["spec"]["nodeName"] = node
    return out


@pytest.fixture(autouse=True)
def _shutdown_binders():
    yield
    while _EXECUTORS:
        _EXECUTORS.pop().shutdown(wait=False, cancel_futures=True)


# -- the happy path -------------------------------------------------------------------------


def test_schedule_one_returns_false_when_no_pod_is_ready() -> None:
    h = make_harness([make_node("n1")])
    assert h.sched.schedule_one(timeout=0) is False


def test_pod_is_assumed_and_bound_to_the_only_fitting_node() -> None:
    h = make_harness([make_node("small", cpu="1"), make_node("big", cpu="4")])
    pod = h.run(make_pod("p", cpu="2"))

    assert h.api.bindings == [("p", "big")]
    assert h.probe.points() == ["reserve", "permit", "pre_bind", "post_bind"]
    assert h.reporter.events == [
        Event("p", "Normal", "Scheduled", "Binding", "Successfully assigned default/p to big")
    ]
    # The Probe's PreBind has no PreBindPreFlight, so it may have work: the pod is nominated
    # before it (NominatedNodeNameForExpectation); no condition is written on success.
    assert h.reporter.patches == [("default", "p", {"status": {"nominatedNodeName": "big"}})]
    # Assumed on its node until the watch confirms it; finish_binding marked it.
    assert h.cache.is_assumed(pod_key(pod))
    assert h.cache.snapshot().node_info_map["big"].requested.milli_cpu == 2000
    assert h.cache.dump()["assumed"][pod_key(pod)]["bindingFinished"]
    # The attempt is over: the pod is nowhere in the queue, not even in flight.
    assert h.where(pod) is None
    assert set(h.queue.pending_pods().values()) == {0}


def test_assumed_pod_takes_room_from_the_next_pod() -> None:
    h = make_harness([make_node("n1", cpu="4")])
    h.run(make_pod("first", cpu="3"))
    second = h.run(make_pod("second", cpu="3"))

    assert h.api.bindings == [("first", "n1")]
    assert h.reporter.events[-1].note == "0/1 nodes are available: 1 Insufficient cpu."
    assert h.where(second) == UNSCHEDULABLE_Q


# -- no node fits -----------------------------------------------------------------------------


def test_no_fitting_node_reports_upstream_fit_error_and_parks_the_pod() -> None:
    h = make_harness([make_node("small", cpu="1"), make_node("cordoned", unschedulable=True)])
    pod = h.run(make_pod("p", cpu="2"))

    message = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."
    assert h.reporter.events == [Event("p", "Warning", "FailedScheduling", "Scheduling", message)]
    assert h.reporter.patches[0][:2] == ("default", "p")
    assert h.reporter.condition() == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
    }
    assert h.where(pod) == UNSCHEDULABLE_Q
    assert h.queue.pending_pods()[UNSCHEDULABLE_Q] == 1
    assert h.api.bindings == [] and h.cache.pod_count() == 0


def test_unchanged_condition_is_not_patched_again() -> None:
    h = make_harness([make_node("small", cpu="1")])
    pod = h.run(make_pod("p", cpu="2"))
    assert len(h.reporter.patches) == 1

    # The informer delivers the patched pod; the pod is retried and fails the same way.
    patched = copy.deepcopy(pod)
    patched["metadata"]["resourceVersion"] = "2"
    patched["status"]["conditions"] = [h.reporter.condition()]
    h.api.store(patched)
    h.sched.on_unassigned_pod_update(pod, patched)
    h.queue.activate([patched])
    assert h.sched.schedule_one(timeout=0)

    assert h.reporter.reasons() == ["FailedScheduling", "FailedScheduling"]
    assert len(h.reporter.patches) == 1
    assert h.where(pod) == UNSCHEDULABLE_Q


def test_node_that_fits_wakes_the_parked_pod_which_then_binds() -> None:
    h = make_harness([make_node("small", cpu="1")])
    pod = h.run(make_pod("p", cpu="2"))

    h.sched.on_node_add(make_node("tiny", cpu="1"))  # still too small: the hint skips it
    assert h.where(pod) == UNSCHEDULABLE_Q
    big = make_node("big", cpu="4")
    h.cache.add_node(big)
    h.sched.on_node_add(big)
    assert h.where(pod) == BACKOFF_Q  # first failure: 1 s of backoff
    h.clock.now += 2  # past the one-second window its backoff ends in
    assert h.queue.flush_backoff_completed() == 1
    assert h.sched.schedule_one(timeout=0)
    h.drain()
    assert h.api.bindings == [("p", "big")]


# -- Error statuses ---------------------------------------------------------------------------


def test_plugin_error_status_is_a_scheduler_error_and_backs_off() -> None:
    broken = BrokenFilter(status=Status(Code.ERROR, "disk on fire"))
    h = make_harness(
        [make_node("n1")], extra={"BrokenFilter": broken}, points={"filter": ["BrokenFilter"]}
    )
    pod = h.run(make_pod("p"))

    message = 'running "BrokenFilter" filter plugin: disk on fire'
    assert h.reporter.events == [Event("p", "Warning", "FailedScheduling", "Scheduling", message)]
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert h.reporter.condition()["message"] == message
    assert h.where(pod) == BACKOFF_Q
    assert h.probe.calls == [] and h.cache.pod_count() == 0


def test_filter_plugin_exception_becomes_an_error_status_naming_the_plugin() -> None:
    broken = BrokenFilter(exc=RuntimeError("boom"))
    h = make_harness(
        [make_node("n1")], extra={"BrokenFilter": broken}, points={"filter": ["BrokenFilter"]}
    )
    pod = h.run(make_pod("p"))

    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert h.reporter.events[0].note == 'running "BrokenFilter" filter plugin: boom'
    assert h.where(pod) == BACKOFF_Q


# -- Reserve and Permit -----------------------------------------------------------------------


def test_reserve_rejection_unreserves_forgets_and_requeues() -> None:
    h = make_harness([make_node("n1")], probe=Probe(reserve=unschedulable("no room left")))
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "unreserve"]
    assert h.cache.pod_count() == 0 and not h.cache.is_assumed(pod_key(pod))
    assert h.reporter.events[0].note == "0/1 nodes are available: 1 no room left."
    assert h.reporter.condition()["reason"] == "Unschedulable"
    assert h.where(pod) == UNSCHEDULABLE_Q
    assert h.api.bindings == []


def test_permit_rejection_unreserves_forgets_and_requeues() -> None:
    h = make_harness([make_node("n1")], probe=Probe(permit=(unschedulable("not yet"), 0)))
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "unreserve"]
    assert h.cache.pod_count() == 0
    assert h.reporter.events[0].note == "0/1 nodes are available: 1 not yet."
    assert h.where(pod) == UNSCHEDULABLE_Q
    assert h.api.bindings == []


def test_permit_wait_then_allow_binds() -> None:
    h = make_harness([make_node("n1")], probe=Probe(permit=(Status(Code.WAIT), 5.0)))
    pod = h.submit(make_pod("p"))
    assert h.sched.schedule_one(timeout=0)

    waiting = h.fwk().get_waiting_pod(pod_key(pod))
    assert waiting is not None and waiting.node_name == "n1"
    assert h.api.bindings == [] and h.cache.is_assumed(pod_key(pod))
    waiting.allow("Probe")
    h.drain()

    assert h.api.bindings == [("p", "n1")]
    assert h.reporter.reasons() == ["Scheduled"]
    assert h.fwk().get_waiting_pod(pod_key(pod)) is None
    assert h.where(pod) is None


def test_permit_wait_timeout_unreserves_and_requeues_with_the_timeout_message() -> None:
    h = make_harness([make_node("n1")], probe=Probe(permit=(Status(Code.WAIT), 0.05)))
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "unreserve"]
    assert h.cache.pod_count() == 0
    assert h.reporter.events == [
        Event(
            "p",
            "Warning",
            "FailedScheduling",
            "Scheduling",
            "0/1 nodes are available: "
            "1 rejected due to timeout after waiting 50ms at plugin Probe.",
        )
    ]
    assert h.reporter.condition()["reason"] == "Unschedulable"
    assert h.where(pod) == UNSCHEDULABLE_Q
    assert h.api.bindings == []


# -- PreBind and Bind ---------------------------------------------------------------------------


def test_prebind_failure_unreserves_forgets_and_requeues() -> None:
    h = make_harness([make_node("n1")], probe=Probe(pre_bind=Status.error("volume not ready")))
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "pre_bind", "unreserve"]
    assert h.cache.pod_count() == 0
    assert h.reporter.events[0].note == 'running PreBind plugin "Probe": volume not ready'
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert h.where(pod) == BACKOFF_Q
    assert h.api.bindings == []


def test_bind_failure_unreserves_forgets_and_requeues() -> None:
    h = make_harness([make_node("n1")])
    h.api.bind_error = RuntimeError("409 conflict")
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "pre_bind", "unreserve"]
    assert h.cache.pod_count() == 0
    assert h.reporter.reasons() == ["FailedScheduling"]
    assert "409 conflict" in h.reporter.events[0].note
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert h.where(pod) == BACKOFF_Q


def test_failed_binding_frees_room_and_wakes_the_pods_it_kept_out() -> None:
    # "holder" waits at Permit holding 3 of 4 CPUs; "other" is rejected meanwhile.
    probe = Probe(
        permit=lambda pod: (
            (Status(Code.WAIT), 5.0) if pod["metadata"]["name"] == "holder" else (None, 0)
        )
    )
    h = make_harness([make_node("n1", cpu="4")], probe=probe)
    holder = h.submit(make_pod("holder", cpu="3"))
    assert h.sched.schedule_one(timeout=0)
    other = h.submit(make_pod("other", cpu="3"))
    assert h.sched.schedule_one(timeout=0)
    assert h.where(other) == UNSCHEDULABLE_Q

    h.api.bind_error = RuntimeError("apiserver said no")
    h.fwk().get_waiting_pod(pod_key(holder)).allow("Probe")
    h.drain()

    assert h.cache.pod_count() == 0
    assert h.where(holder) == BACKOFF_Q
    assert h.where(other) == BACKOFF_Q  # moved by the forgotten reservation


def test_bind_skipped_by_every_binder_is_an_error() -> None:
    h = make_harness(
        [make_node("n1")],
        extra={"SkippingBinder": SkippingBinder()},
        points={"bind": ["SkippingBinder"]},
    )
    pod = h.run(make_pod("p"))

    assert h.reporter.events[0].note == "no bind plugin bound the pod"
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert "unreserve" in h.probe.points()
    assert h.cache.pod_count() == 0
    assert h.where(pod) == BACKOFF_Q


# -- the failure handler and the API ------------------------------------------------------------


def test_pod_deleted_meanwhile_is_not_requeued() -> None:
    h = make_harness([make_node("small", cpu="1")])
    pod = h.submit(make_pod("p", cpu="2"))
    del h.api.pods["default/p"]
    assert h.sched.schedule_one(timeout=0)

    assert h.where(pod) is None
    assert set(h.queue.pending_pods().values()) == {0}


def test_pod_bound_meanwhile_is_not_requeued() -> None:
    h = make_harness([make_node("small", cpu="1")])
    pod = h.submit(make_pod("p", cpu="2"))
    h.api.store(bound(pod, "elsewhere"))
    assert h.sched.schedule_one(timeout=0)

    assert h.where(pod) is None
    assert set(h.queue.pending_pods().values()) == {0}


def test_pod_deleted_during_a_failed_binding_is_not_requeued() -> None:
    h = make_harness([make_node("n1")])
    h.api.bind_error = RuntimeError('pods "p" not found')
    pod = make_pod("p")
    h.submit(pod)
    del h.api.pods["default/p"]
    assert h.sched.schedule_one(timeout=0)
    h.drain()

    assert h.cache.pod_count() == 0
    assert h.where(pod) is None


def test_apiserver_down_in_the_failure_handler_still_requeues_the_pod() -> None:
    h = make_harness([make_node("small", cpu="1")])
    h.api.get_error = ConnectionError("connection refused")
    pod = h.run(make_pod("p", cpu="2"))

    assert h.where(pod) == UNSCHEDULABLE_Q
    assert h.reporter.reasons() == ["FailedScheduling"]


def test_status_patch_failure_does_not_lose_the_pod() -> None:
    h = make_harness([make_node("small", cpu="1")])
    h.reporter.patch_error = ConnectionError("connection refused")
    pod = h.run(make_pod("p", cpu="2"))

    assert h.where(pod) == UNSCHEDULABLE_Q
    assert h.reporter.reasons() == ["FailedScheduling"]


# -- pods the loop does not schedule ------------------------------------------------------------


def test_deleting_pod_is_skipped_with_an_event() -> None:
    h = make_harness([make_node("n1")])
    pod = make_pod("p")
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    h.run(pod)

    assert h.reporter.events == [
        Event(
            "p",
            "Warning",
            "FailedScheduling",
            "Scheduling",
            "skip schedule deleting pod: default/p",
        )
    ]
    assert h.api.bindings == [] and h.probe.calls == [] and h.cache.pod_count() == 0
    assert h.where(pod) is None


def test_pod_of_an_unknown_profile_is_dropped_with_a_log(caplog: pytest.LogCaptureFixture) -> None:
    h = make_harness([make_node("n1")])
    pod = make_pod("p", schedulerName="someone-else")
    h.queue.add(pod)  # the informer would not route it; the loop must still cope
    with caplog.at_level(logging.ERROR, logger="extender.scheduler.scheduler"):
        assert h.sched.schedule_one(timeout=0)

    assert "no profile for scheduler name 'someone-else'" in caplog.text
    assert h.where(pod) is None
    assert h.reporter.events == [] and h.api.bindings == []


def test_already_assumed_pod_is_skipped() -> None:
    h = make_harness([make_node("n1")])
    pod = h.submit(make_pod("p"))
    h.cache.assume_pod(bound(pod, "n1"))
    h.run(pod)

    assert h.reporter.events == [] and h.api.bindings == [] and h.probe.calls == []
    assert h.where(pod) is None


# -- informer handlers --------------------------------------------------------------------------


def test_unassigned_pods_are_queued_only_for_our_scheduler_names() -> None:
    h = make_harness([make_node("n1")], profiles=("default-scheduler", "second"))
    default = make_pod("default")
    second = make_pod("second", schedulerName="second")
    foreign = make_pod("foreign", schedulerName="someone-else")
    for pod in (default, second, foreign):
        h.sched.on_unassigned_pod_add(pod)

    assert [h.where(p) for p in (default, second, foreign)] == [ACTIVE_Q, ACTIVE_Q, None]
    h.sched.on_unassigned_pod_update(None, foreign)
    assert h.where(foreign) is None


def test_unassigned_pod_update_is_applied_only_for_a_new_resource_version() -> None:
    h = make_harness([make_node("n1")])
    pod = make_pod("p")
    pod["metadata"]["resourceVersion"] = "1"
    h.sched.on_unassigned_pod_add(pod)

    same = copy.deepcopy(pod)
    same["metadata"]["labels"] = {"seen": "no"}
    h.sched.on_unassigned_pod_update(pod, same)
    newer = copy.deepcopy(pod)
    newer["metadata"].update(resourceVersion="2", labels={"seen": "yes"})
    h.sched.on_unassigned_pod_update(pod, newer)

    assert h.queue.pop(timeout=0).pod_info.labels == {"seen": "yes"}


def test_unassigned_pod_delete_removes_it_from_the_queue() -> None:
    h = make_harness([make_node("n1")])
    pod = h.submit(make_pod("p"))
    h.sched.on_unassigned_pod_delete(pod)

    assert h.where(pod) is None
    assert h.sched.schedule_one(timeout=0) is False


def test_unassigned_pod_delete_rejects_its_waiting_pod() -> None:
    h = make_harness([make_node("n1")], probe=Probe(permit=(Status(Code.WAIT), 5.0)))
    pod = h.submit(make_pod("p"))
    assert h.sched.schedule_one(timeout=0)
    assert h.fwk().get_waiting_pod(pod_key(pod)) is not None

    del h.api.pods["default/p"]
    h.sched.on_unassigned_pod_delete(pod)
    h.drain()

    assert h.api.bindings == []
    assert "unreserve" in h.probe.points()
    assert h.cache.pod_count() == 0
    assert h.where(pod) is None


def test_assigned_pod_add_removes_it_from_the_queue() -> None:
    h = make_harness([make_node("n1")])
    pod = h.submit(make_pod("p"))
    h.sched.on_assigned_pod_add(bound(pod, "n1"))

    assert h.where(pod) is None
    assert h.sched.schedule_one(timeout=0) is False


def test_assigned_pod_delete_wakes_pods_rejected_for_room() -> None:
    h = make_harness([make_node("n1", cpu="4")])
    running = bound(make_pod("running", cpu="3"), "n1")
    h.cache.add_pod(running)
    pod = h.run(make_pod("p", cpu="3"))
    assert h.where(pod) == UNSCHEDULABLE_Q

    h.sched.on_assigned_pod_update(running, running)  # nothing shrank: no move
    assert h.where(pod) == UNSCHEDULABLE_Q
    h.sched.on_assigned_pod_delete(running)
    assert h.where(pod) == BACKOFF_Q


def test_node_update_wakes_parked_pods_only_for_changes_that_may_help() -> None:
    old = make_node("n1", cpu="1")
    h = make_harness([old])
    pod = h.run(make_pod("p", cpu="2"))

    relabeled = make_node("n1", cpu="1", labels={"zone": "a"})
    h.sched.on_node_update(old, relabeled)
    h.sched.on_node_update(relabeled, copy.deepcopy(relabeled))
    assert h.where(pod) == UNSCHEDULABLE_Q
    h.sched.on_node_update(relabeled, make_node("n1", cpu="4", labels={"zone": "a"}))
    assert h.where(pod) == BACKOFF_Q


def _node(**changes: object) -> dict:
    node = make_node("n1")
    node["metadata"]["annotations"] = {"a": "1"}
    node["status"]["conditions"] = [
        {"type": "Ready", "status": "True"},
        {"type": "DiskPressure", "status": "False"},
    ]
    for path, value in changes.items():
        section, key = path.split("__")
        node[section][key] = value
    return node


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, ActionType(0)),
        ({"status__allocatable": {"cpu": "8"}}, ActionType.UPDATE_NODE_ALLOCATABLE),
        ({"metadata__labels": {"zone": "b"}}, ActionType.UPDATE_NODE_LABEL),
        ({"spec__taints": [{"key": "k", "effect": "NoSchedule"}]}, ActionType.UPDATE_NODE_TAINT),
        ({"spec__unschedulable": True}, ActionType.UPDATE_NODE_TAINT),
        ({"spec__unschedulable": False}, ActionType(0)),  # absent and false are the same
        (
            {"status__conditions": [{"type": "Ready", "status": "False"}]},
            ActionType.UPDATE_NODE_CONDITION,
        ),
        (  # same conditions in another order, other fields ignored
            {
                "status__conditions": [
                    {"type": "DiskPressure", "status": "False", "reason": "x"},
                    {"type": "Ready", "status": "True", "lastHeartbeatTime": "now"},
                ]
            },
            ActionType(0),
        ),
        ({"metadata__annotations": {"a": "2"}}, ActionType.UPDATE_NODE_ANNOTATION),
        (
            {
                "status__allocatable": {"cpu": "8"},
                "metadata__labels": {"zone": "b"},
                "spec__unschedulable": True,
                "metadata__annotations": {},
            },
            ActionType.UPDATE_NODE_ALLOCATABLE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
            | ActionType.UPDATE_NODE_ANNOTATION,
        ),
    ],
    ids=[
        "nothing",
        "allocatable",
        "labels",
        "taints",
        "cordon",
        "uncordoned-is-default",
        "conditions",
        "conditions-reordered",
        "annotations",
        "combined",
    ],
)
def test_node_update_action_flags(changes: dict, expected: ActionType) -> None:
    assert node_update_action(_node(), _node(**changes)) == expected


# -- plugin exceptions (the failure contract) -----------------------------------------------


def test_score_plugin_exception_fails_the_pod_not_the_loop() -> None:
    h = make_harness(
        [make_node("n1"), make_node("n2")],  # two feasible nodes, so Score runs
        extra={"RaisingScore": RaisingScore()},
        points={"score": ["RaisingScore"]},
    )
    pod = h.submit(make_pod("p"))
    assert h.sched.schedule_one(timeout=0) is True

    assert h.where(pod) == BACKOFF_Q
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert "RaisingScore" in h.reporter.events[0].note
    assert "score exploded" in h.reporter.events[0].note
    assert h.cache.pod_count() == 0 and h.api.bindings == []


def test_reserve_plugin_exception_unreserves_and_requeues() -> None:
    h = make_harness([make_node("n1")], probe=Probe(reserve=RuntimeError("reserve exploded")))
    pod = h.submit(make_pod("p"))
    assert h.sched.schedule_one(timeout=0) is True

    assert h.probe.points() == ["reserve", "unreserve"]
    assert h.cache.pod_count() == 0
    assert h.where(pod) == BACKOFF_Q
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert "Probe" in h.reporter.events[0].note
    assert "reserve exploded" in h.reporter.events[0].note


def test_prebind_plugin_exception_unreserves_and_requeues() -> None:
    h = make_harness([make_node("n1")], probe=Probe(pre_bind=RuntimeError("prebind exploded")))
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "pre_bind", "unreserve"]
    assert h.cache.pod_count() == 0
    assert h.where(pod) == BACKOFF_Q
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert "prebind exploded" in h.reporter.events[0].note
    assert h.api.bindings == []


def test_prebind_plugin_exception_message_names_the_plugin() -> None:
    h = make_harness([make_node("n1")], probe=Probe(pre_bind=RuntimeError("prebind exploded")))
    h.run(make_pod("p"))

    assert "Probe" in h.reporter.events[0].note


def test_postbind_plugin_exception_keeps_the_bound_pod() -> None:
    # PostBind is informational and runs after the binding exists: the pod is scheduled.
    h = make_harness([make_node("n1")], probe=Probe(post_bind=RuntimeError("postbind exploded")))
    pod = h.run(make_pod("p"))

    assert h.api.bindings == [("p", "n1")]
    assert h.reporter.reasons() == ["Scheduled"]
    assert "unreserve" not in h.probe.points()
    assert h.cache.is_assumed(pod_key(pod))  # still accounted until the watch confirms it
    assert h.where(pod) is None


def test_prebind_rejection_is_charged_to_the_prebind_plugin() -> None:
    # Attempt 1: rejected by NodeResourcesFit. Attempt 2: room, but PreBind rejects.
    probe = Probe(pre_bind=lambda pod: unschedulable("volume not bound"))
    small = make_node("n1", cpu="1")
    h = make_harness([small], probe=probe)
    pod = h.run(make_pod("p", cpu="2"))
    grown = make_node("n1", cpu="4")
    h.cache.update_node(small, grown)
    h.sched.on_node_update(small, grown)
    h.clock.now += 1
    h.queue.flush_backoff_completed()
    assert h.sched.schedule_one(timeout=0)
    h.drain()

    assert h.reporter.events[-1].note == "0/1 nodes are available: 1 volume not bound."
    assert h.where(pod) == UNSCHEDULABLE_Q
    # Probe registers no events (so every event may help): a label change wakes the pod,
    # which it would not if the rejection were still charged to NodeResourcesFit.
    h.sched.on_node_update(grown, make_node("n1", cpu="4", labels={"zone": "a"}))
    assert h.where(pod) in (ACTIVE_Q, BACKOFF_Q)


# -- the pod budget -------------------------------------------------------------------------


class SpinsForHostile:
    """A Filter that computes without end (pure Python) for pods labelled hostile."""

    name = "SpinsForHostile"

    def filter(self, state, pod, node_info):
        if (pod["metadata"].get("labels") or {}).get("hostile"):
            while True:
                pass
        return None


def test_a_pod_whose_plugin_never_returns_fails_within_its_budget_and_others_go_on() -> None:
    """The watchdog ends the call; the attempt is an Error (retried with backoff, its
    FailedScheduling naming the plugin and the budget), and the next pod is scheduled."""
    h = make_harness(
        [make_node("n1")],
        extra={"SpinsForHostile": SpinsForHostile()},
        points={"filter": ["SpinsForHostile"]},
    )
    h.fwk().profile.pod_budget = 0.2
    hostile = make_pod("hostile")
    hostile["metadata"]["labels"] = {"hostile": "yes"}
    h.run(hostile)
    assert h.where(hostile) == BACKOFF_Q
    [event] = h.reporter.events
    assert event.reason == "FailedScheduling"
    assert event.note == (
        'running "SpinsForHostile" filter plugin: the pod\'s scheduling budget of 0.2s ran out'
    )
    canary = h.run(make_pod("canary"))
    assert h.api.bindings == [("canary", "n1")]
    assert h.where(canary) is None
