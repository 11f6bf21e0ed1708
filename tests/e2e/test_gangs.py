"""Gang scheduling end to end: ``kube-extender run --feature-gates
GenericWorkload=true,GangScheduling=true`` against a real kube-apiserver that serves
``scheduling.k8s.io/v1alpha2`` (docs/gang.md).

The tests share the gang control plane (conftest ``gang_control_plane``: the session's runs
without the workload gates) and one standalone scheduler; each test works in its own namespace
with its own nodes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.cli.scenario import run_scenario
from extender.controlplane import ControlPlane
from extender.scenario.kube import Kube

from .harness import GANG_GATES, Standalone, standalone_config, wait_until

REPO = Path(__file__).resolve().parents[2]
PROFILE = "kube-extender"

# What the pods and PodGroups say (upstream pkg/scheduler/schedule_one_podgroup.go, the
# GangScheduling plugin's Permit and the framework's RunPermitPlugins).
GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_AT_PERMIT = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)
NO_ROOM_ON_TWO = (
    "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
    "0/2 nodes are available: 2 No preemption victims found for incoming pod."
)


@pytest.fixture(scope="module")
def scheduler(gang_control_plane: ControlPlane) -> Iterator[Standalone]:
    proc = Standalone(
        gang_control_plane, standalone_config(PROFILE), name="gangs", feature_gates=GANG_GATES
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def gkube(gang_kube: Kube, scheduler: Standalone) -> Kube:
    """A client in a fresh namespace of the gang control plane whose pods the module's
    scheduler schedules."""
    gang_kube.scheduler_name = PROFILE
    return gang_kube


def node(kube: Kube, name: str, cpu: str = "3") -> str:
    """A node named after the test's namespace (nodes are cluster-wide)."""
    full = f"{kube.namespace}-{name}"
    kube.create_node(full, cpu=cpu)
    return full


def gang(kube: Kube, name: str, size: int, min_count: int) -> list[str]:
    kube.create_pod_group(name, min_count=min_count)
    pods = [f"{name}-{i}" for i in range(size)]
    for pod in pods:
        kube.create_pod(pod, cpu="1", pod_group=name)
    return pods


def pod_scheduled(kube: Kube, pod: str) -> dict | None:
    """The pod's PodScheduled condition: None while the scheduler has not tried it."""
    conditions = ((kube.pod(pod) or {}).get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


def untried(kube: Kube, pods: list[str], seconds: float = 3.0) -> None:
    """For ``seconds``, no pod is bound and none has a PodScheduled condition (the scheduler
    never tried them: they wait in the queue, gated by PreEnqueue)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for pod in pods:
            assert kube.node_of(pod) is None, f"{pod} was bound"
            assert pod_scheduled(kube, pod) is None, (pod, pod_scheduled(kube, pod))
        time.sleep(0.3)


def gated(scheduler: Standalone, count: int) -> None:
    """The queue holds ``count`` pods gated at PreEnqueue (``scheduler_pending_pods``, updated
    every 5 s)."""
    wait_until(
        lambda: scheduler.metric("scheduler_pending_pods", queue="gated") == count,
        15,
        f"{count} gated pods",
    )


def test_two_gangs_on_room_for_one(gkube: Kube) -> None:
    """The scenario's story: gang a is bound whole, gang b waits whole (two of its pods would
    fit), and a new node lets all of gang b bind."""
    node(gkube, "n1")
    node(gkube, "n2")
    first = gang(gkube, "a", size=4, min_count=4)
    for pod in first:
        gkube.wait_bound(pod)
    condition = gkube.wait_pod_group("a", "True")
    assert (condition["reason"], condition["message"]) == ("Scheduled", "")

    second = gang(gkube, "b", size=4, min_count=4)
    condition = gkube.wait_pod_group("b", "False")
    assert (condition["reason"], condition["message"]) == ("Unschedulable", GROUP_UNSCHEDULABLE)
    messages = {pod: gkube.wait_unschedulable(pod, timeout=10) for pod in second}
    # Two fit in the room left and waited at Permit for a quorum that never came; the other two
    # did not fit. None is bound.
    assert sorted(messages.values()) == [NO_ROOM_ON_TWO] * 2 + [WAITING_AT_PERMIT] * 2, messages
    for pod in second:
        assert pod_scheduled(gkube, pod)["reason"] == "Unschedulable"  # type: ignore[index]
    assert all(gkube.node_of(pod) is None for pod in second)

    third = node(gkube, "n3")
    placed = {pod: gkube.wait_bound(pod, timeout=60) for pod in second}
    assert third in placed.values(), placed
    condition = gkube.wait_pod_group("b", "True")
    assert condition["reason"] == "Scheduled"


def test_the_gang_scenario_runs(gkube: Kube) -> None:
    """scenarios/gang.py as `kube-extender demo --scenario` runs it (the standalone path)."""
    lines: list[str] = []
    gkube.out = lambda *a: lines.append(" ".join(map(str, a)))
    run_scenario(str(REPO / "scenarios/gang.py"), gkube)
    text = "\n".join(lines)
    assert "gang-b: 2 of its pods would fit, none is bound" in text, text
    assert "podgroup gang-b   PodGroupScheduled=False (Unschedulable, pod group is" in text, text
    assert "podgroup gang-b   PodGroupScheduled=True (Scheduled)" in text, text


def test_pod_group_created_after_its_pods(gkube: Kube, scheduler: Standalone) -> None:
    """Pods naming a PodGroup that does not exist yet wait at PreEnqueue, untried; the
    PodGroup's creation lets them in, and the gang binds."""
    node(gkube, "n1")
    pods = [f"late-{i}" for i in range(3)]
    for pod in pods:
        gkube.create_pod(pod, cpu="1", pod_group="late")
    gated(scheduler, 3)
    untried(gkube, pods)
    gkube.create_pod_group("late", min_count=3)
    for pod in pods:
        gkube.wait_bound(pod)
    gkube.wait_pod_group("late", "True")
    gated(scheduler, 0)


def test_fewer_than_min_count_wait_untried(gkube: Kube, scheduler: Standalone) -> None:
    """A gang with fewer pods than minCount is not even tried (its pods stay gated at
    PreEnqueue, so no attempt and no condition); the last pod's creation completes it."""
    node(gkube, "n1")
    attempts = scheduler.metric("scheduler_schedule_attempts_total", profile=PROFILE)
    gkube.create_pod_group("short", min_count=3)
    pods = [f"short-{i}" for i in range(3)]
    for pod in pods[:2]:
        gkube.create_pod(pod, cpu="1", pod_group="short")
    gated(scheduler, 2)
    untried(gkube, pods[:2])
    assert scheduler.metric("scheduler_schedule_attempts_total", profile=PROFILE) == attempts
    assert gkube.pod_group_condition("short") is None

    gkube.create_pod(pods[2], cpu="1", pod_group="short")
    for pod in pods:
        gkube.wait_bound(pod)
    gkube.wait_pod_group("short", "True")
    assert scheduler.metric("scheduler_schedule_attempts_total", profile=PROFILE) >= attempts + 3


def test_min_count_below_the_gang_size(gkube: Kube) -> None:
    """minCount 2 of 4 pods, room for 3: the quorum binds and so does every other pod that
    fits; the fourth waits alone (its own fit error) and binds when a node appears. The
    PodGroup stays Scheduled: the condition never goes back from True."""
    node(gkube, "n1")
    pods = gang(gkube, "part", size=4, min_count=2)

    def three_bound() -> list[str] | None:
        bound = [pod for pod in pods if gkube.node_of(pod)]
        return bound if len(bound) == 3 else None

    bound = wait_until(three_bound, 30, "three of the four pods bound")
    (left,) = set(pods) - set(bound)
    why = gkube.wait_unschedulable(left, timeout=20)
    assert "1 Insufficient cpu" in why and GROUP_UNSCHEDULABLE not in why, why
    assert gkube.wait_pod_group("part", "True")["reason"] == "Scheduled"

    node(gkube, "n2")
    assert gkube.wait_bound(left, timeout=60) == f"{gkube.namespace}-n2"
    assert gkube.pod_group_condition("part")["status"] == "True"  # type: ignore[index]


def test_basic_policy_binds_what_fits(gkube: Kube) -> None:
    """A PodGroup with the Basic policy (no minCount) is scheduled in pod group cycles too, but
    without a quorum: what fits is bound, the rest waits with its own fit error."""
    node(gkube, "n1", cpu="2")
    gkube.create_pod_group("basic")
    assert "basic" in gkube.pod_group("basic")["spec"]["schedulingPolicy"]  # type: ignore[index]
    pods = [f"basic-{i}" for i in range(3)]
    for pod in pods:
        gkube.create_pod(pod, cpu="1", pod_group="basic")

    def two_bound() -> list[str] | None:
        bound = [pod for pod in pods if gkube.node_of(pod)]
        return bound if len(bound) == 2 else None

    bound = wait_until(two_bound, 30, "two of the three pods bound")
    (left,) = set(pods) - set(bound)
    why = gkube.wait_unschedulable(left, timeout=20)
    assert "1 Insufficient cpu" in why and GROUP_UNSCHEDULABLE not in why, why
