"""NominatedNodeNameForExpectation in the binding cycle (upstream ``bindingCycle`` in
``pkg/scheduler/schedule_one.go``, v1.36.3): when a PreBindPreFlight answers Success or Permit
parks the pod, ``status.nominatedNodeName`` is set to the chosen node before WaitOnPermit and
PreBind; a failed PreBindPreFlight fails the binding cycle; the failure handler clears the
nomination; the pod's own updates while it is assumed are no queue event
(``updatePodInSchedulingQueue`` in ``eventhandlers.go``).

Over the real loop of ``test_scheduler.py`` (real Cache, SchedulingQueue, Frameworks)."""

from __future__ import annotations

import copy
import time

from extender.framework.pod_info import pod_key
from extender.framework.status import SKIP, Code, Status
from extender.scheduler.queue import BACKOFF_Q
from tests.unit.builders import make_node, make_pod
from tests.unit.scheduler.test_scheduler import Probe, make_harness

NOMINATED_N1 = ("default", "p", {"status": {"nominatedNodeName": "n1"}})


class FlightProbe(Probe):
    """The Probe with PreBindPreFlight (answer ``pre_bind_pre_flight``, Success by default)."""

    def pre_bind_pre_flight(self, state, pod, node_name):
        return self._answer("pre_bind_pre_flight", pod)


def test_pre_bind_with_work_nominates_the_pod_before_pre_bind() -> None:
    seen: list[list] = []
    probe = FlightProbe(pre_bind=lambda pod: seen.append(list(h.reporter.patches)))
    h = make_harness([make_node("n1")], probe=probe)
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "pre_bind_pre_flight", "pre_bind", "post_bind"]
    assert seen == [[NOMINATED_N1]]  # written before PreBind ran
    assert h.reporter.patches == [NOMINATED_N1]
    assert h.api.bindings == [("p", "n1")]
    assert h.reporter.reasons() == ["Scheduled"]
    # The API write only: the nominator does not count the assumed pod a second time.
    assert h.queue.nominator.nominated_node_of(pod) == ""


def test_pre_bind_with_nothing_to_do_neither_nominates_nor_runs_that_pre_bind() -> None:
    h = make_harness([make_node("n1")], probe=FlightProbe(pre_bind_pre_flight=SKIP))
    h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "pre_bind_pre_flight", "post_bind"]
    assert h.reporter.patches == []
    assert h.api.bindings == [("p", "n1")]


def test_a_pod_waiting_on_permit_is_nominated_even_when_pre_bind_skips() -> None:
    probe = FlightProbe(pre_bind_pre_flight=SKIP, permit=(Status(Code.WAIT), 5.0))
    h = make_harness([make_node("n1")], probe=probe)
    pod = h.submit(make_pod("p"))
    assert h.sched.schedule_one(timeout=0)

    deadline = time.monotonic() + 5
    while not h.reporter.patches and time.monotonic() < deadline:
        time.sleep(0.01)
    assert h.reporter.patches == [NOMINATED_N1]
    assert h.api.bindings == []  # still waiting on Permit
    h.fwk().get_waiting_pod(pod_key(pod)).allow("Probe")
    h.drain()

    assert h.api.bindings == [("p", "n1")]
    assert h.reporter.patches == [NOMINATED_N1]


def test_a_pod_already_nominated_to_the_node_is_not_patched_again() -> None:
    h = make_harness([make_node("n1")], probe=FlightProbe())
    pod = make_pod("p")
    pod["status"]["nominatedNodeName"] = "n1"
    h.run(pod)

    assert h.reporter.patches == []
    assert h.api.bindings == [("p", "n1")]


def test_a_pod_nominated_elsewhere_is_nominated_to_the_chosen_node() -> None:
    h = make_harness([make_node("n1")], probe=FlightProbe())
    pod = make_pod("p")
    pod["status"]["nominatedNodeName"] = "gone"
    h.run(pod)

    assert h.reporter.patches == [NOMINATED_N1]


def test_a_failed_pre_flight_fails_the_binding_cycle_before_permit_and_pre_bind() -> None:
    probe = FlightProbe(
        pre_bind_pre_flight=Status.error("no state"), permit=(Status(Code.WAIT), 5.0)
    )
    h = make_harness([make_node("n1")], probe=probe)
    pod = h.run(make_pod("p"))

    assert h.probe.points() == ["reserve", "permit", "pre_bind_pre_flight", "unreserve"]
    assert h.reporter.events[0].note == 'running PreBindPreFlight "Probe": no state'
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert "nominatedNodeName" not in h.reporter.patches[-1][2]["status"]
    assert len(h.reporter.patches) == 1
    assert h.where(pod) == BACKOFF_Q
    assert h.cache.pod_count() == 0
    assert h.fwk().get_waiting_pod(pod_key(pod)) is None
    assert h.api.bindings == []


def test_a_rejecting_pre_flight_is_an_error_not_unschedulable() -> None:
    probe = FlightProbe(pre_bind_pre_flight=Status(Code.UNSCHEDULABLE, "no"))
    h = make_harness([make_node("n1")], probe=probe)
    pod = h.run(make_pod("p"))

    assert h.reporter.events[0].note == (
        'PreBindPreFlight Probe returned "Unschedulable", which is unsupported. '
        "It is supposed to return Success, Skip, or Error status"
    )
    assert h.reporter.condition()["reason"] == "SchedulerError"
    assert h.where(pod) == BACKOFF_Q


def test_a_failed_pre_bind_clears_the_nomination_the_binding_cycle_wrote() -> None:
    def fail(pod: dict) -> Status:
        # The informer has seen the nomination by now (PreBind is the slow part).
        seen = copy.deepcopy(h.api.pods["default/p"])
        seen["status"]["nominatedNodeName"] = "n1"
        h.api.pods["default/p"] = seen
        return Status.error("volume not ready")

    h = make_harness([make_node("n1")], probe=FlightProbe(pre_bind=fail))
    pod = h.run(make_pod("p"))

    assert h.reporter.patches[0] == NOMINATED_N1
    status = h.reporter.patches[-1][2]["status"]
    assert status["nominatedNodeName"] is None  # deleted by the strategic merge patch
    assert status["conditions"][0]["reason"] == "SchedulerError"
    assert h.where(pod) == BACKOFF_Q
    assert h.queue.nominator.nominated_node_of(pod) == ""


def test_a_failed_nomination_write_does_not_stop_the_binding() -> None:
    h = make_harness([make_node("n1")], probe=FlightProbe())
    h.reporter.patch_error = RuntimeError("apiserver down")
    h.run(make_pod("p"))

    assert h.api.bindings == [("p", "n1")]
    assert h.reporter.reasons() == ["Scheduled"]


def test_the_assumed_pods_own_update_is_not_queued_again() -> None:
    # The watch delivers the nomination while PreBind runs (after the queue let the pod go).
    def nominated_update(pod: dict) -> None:
        stored = h.api.pods["default/p"]
        new = copy.deepcopy(stored)
        new["metadata"]["resourceVersion"] = "2"
        new["status"]["nominatedNodeName"] = "n1"
        h.sched.on_unassigned_pod_update(stored, new)
        after.append((h.where(new), h.queue.nominator.nominated_node_of(new)))

    after: list[tuple] = []
    h = make_harness([make_node("n1")], probe=FlightProbe(pre_bind=nominated_update))
    pod = make_pod("p")
    pod["metadata"]["resourceVersion"] = "1"
    h.run(pod)

    assert after == [(None, "")]
    assert h.api.bindings == [("p", "n1")]
    assert h.sched.schedule_one(timeout=0) is False
