"""Our standalone scheduler (``kube-extender run``) against the real control plane."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli.scenario import run_scenario
from extender.scenario.kube import Kube, ScenarioError

from .harness import Standalone, events_for, standalone_config, wait_until

REPO = Path(__file__).resolve().parents[2]
PROFILE = "kube-extender"


@pytest.fixture
def standalone(control_plane, processes):
    def start(config: dict | None = None, name: str = "standalone", **kwargs) -> Standalone:
        proc = Standalone(control_plane, config or standalone_config(), name=name, **kwargs)
        processes.append(proc)
        proc.wait_ready()
        return proc

    return start


@pytest.fixture
def skube(kube):
    kube.scheduler_name = PROFILE
    return kube


def test_seed_scenario(skube, standalone):
    """Nine cordoned nodes; pod1 waits; node10 appears (a Node/Add event); pod1 lands there."""
    sched = standalone()
    lines: list[str] = []
    skube.out = lambda *a: lines.append(" ".join(map(str, a)))
    run_scenario(str(REPO / "scenarios/seed.py"), skube)
    text = "\n".join(lines)
    assert "0/9 nodes are available: 9 node(s) were unschedulable." in text, text
    assert "pod1" in text and "node10" in text
    assert sched.metric("scheduler_schedule_attempts_total", result="scheduled") >= 1
    assert sched.metric("scheduler_schedule_attempts_total", result="unschedulable") >= 1
    metrics = sched.get("/metrics")[1].decode()
    for name in ("scheduler_scheduling_attempt_duration_seconds", "scheduler_pending_pods"):
        assert name in metrics, name


def test_events_and_condition(skube, standalone):
    standalone()
    skube.create_node(f"{skube.namespace}-small", cpu="1")
    skube.create_pod("big", cpu="2")
    skube.create_pod("fits", cpu="500m")
    node = skube.wait_bound("fits")
    assert node == f"{skube.namespace}-small"
    wait_until(lambda: events_for(skube, "fits", "Scheduled"), 10, "Scheduled event")
    note = events_for(skube, "fits", "Scheduled")[0]["note"]
    assert note == f"Successfully assigned {skube.namespace}/fits to {node}", note
    message = skube.expect_pending("big", seconds=2)
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu."), message
    failed = wait_until(lambda: events_for(skube, "big", "FailedScheduling"), 10, "event")
    assert failed[0]["note"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_permit_wait_and_timeout(skube, standalone):
    """NodeNumber makes a pod wait N seconds at Permit on nodeN; a 2 s timeout rejects N=5."""
    plugins = {"multiPoint": {"enabled": [{"name": "NodeNumber"}]}}
    args = [{"name": "NodeNumber", "args": {"permitTimeoutSeconds": 2}}]
    standalone(standalone_config(plugins=plugins, plugin_config=args))
    ns = skube.namespace
    skube.create_node(f"{ns}-node1")
    skube.create_pod("wait-1")
    assert skube.wait_bound("wait-1", timeout=15) == f"{ns}-node1"
    skube.delete_node(f"{ns}-node1")
    skube.create_node(f"{ns}-node5")
    skube.create_pod("wait-5")
    wait_until(lambda: "timeout" in skube.why_pending("wait-5"), 20, "the permit timeout to reject")
    assert "rejected due to timeout after waiting 2s at plugin NodeNumber" in skube.why_pending(
        "wait-5"
    )
    assert skube.node_of("wait-5") is None


def test_requeue_on_node_add(skube, standalone):
    standalone()
    skube.create_pod("early")
    with pytest.raises(ScenarioError):
        skube.wait_bound("early", timeout=2)
    skube.create_node(f"{skube.namespace}-late")
    # Requeued by the Node/Add event, not by the 5-minute unschedulable flush.
    assert skube.wait_bound("early", timeout=15) == f"{skube.namespace}-late"


def test_preemption(skube, standalone):
    sched = standalone()
    skube.create_priority_class("e2e-low", 10)
    skube.create_priority_class("e2e-high", 1000)
    node = f"{skube.namespace}-only"
    skube.create_node(node, cpu="1")
    skube.create_pod("victim", cpu="800m", priority_class="e2e-low")
    assert skube.wait_bound("victim") == node
    skube.create_pod("preemptor", cpu="800m", priority_class="e2e-high")
    skube.wait_gone("victim", timeout=20)
    assert skube.wait_bound("preemptor", timeout=20) == node
    assert sched.metric("scheduler_preemption_attempts_total") >= 1
    assert sched.metric("scheduler_preemption_victims_count") >= 1
    preempted = events_for(skube, "victim", "Preempted")
    assert preempted and "Preempted by pod" in preempted[0]["note"]


def test_leader_failover_binds_every_pod_once(skube, standalone):
    lease = f"lease-{skube.namespace}"
    config = standalone_config(leader_elect=True, lease=lease)
    first = standalone(config, name="leader-a", identity="a")
    wait_until(
        lambda: skube.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}"),
        10,
        "the lease",
    )
    second = standalone(config, name="leader-b", identity="b")
    for i in range(3):
        skube.create_node(f"{skube.namespace}-n{i}", cpu="64")
    names = [f"p{i}" for i in range(40)]
    for name in names[:20]:
        skube.create_pod(name, cpu="10m")
    holder = skube.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")
    leader, follower = (
        (first, second) if holder["spec"]["holderIdentity"] == "a" else (second, first)
    )
    leader.kill()
    for name in names[20:]:
        skube.create_pod(name, cpu="10m")
    for name in names:
        assert skube.wait_bound(name, timeout=40)
    wait_until(
        lambda: (
            skube.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")[
                "spec"
            ]["holderIdentity"]
            == ("b" if leader is first else "a")
        ),
        10,
        "the follower to hold the lease",
    )
    # Bound once: never two Scheduled events, and no bind ever hit an already-bound pod (a
    # second binder would get 409 "already assigned"). A pod bound by the leader in its last
    # instant may miss its event: SIGKILL can land between the bind and the event.
    for name in names:
        # A repeat with the same pod version folds into the first's series (client-go).
        scheduled = sum(
            (e.get("series") or {}).get("count", 1) for e in events_for(skube, name, "Scheduled")
        )
        assert scheduled <= 1, f"{name}: {scheduled} Scheduled events"
        failed = events_for(skube, name, "FailedScheduling")
        assert not [e for e in failed if "already" in e.get("note", "")], failed
    assert follower.alive()


def test_apiserver_restart(skube, standalone, control_plane):
    sched = standalone()
    skube.create_node(f"{skube.namespace}-n", cpu="16")
    for i in range(5):
        skube.create_pod(f"before-{i}", cpu="10m")
    control_plane.restart_apiserver()
    for i in range(5):
        skube.create_pod(f"after-{i}", cpu="10m")
    for i in range(5):
        assert skube.wait_bound(f"before-{i}", timeout=40)
        assert skube.wait_bound(f"after-{i}", timeout=40)
    assert sched.alive()


def _replica_set(kube: Kube, name: str, labels: dict[str, str]) -> dict:
    """A ReplicaSet object (no controller manager runs it: it is what the scheduler reads)."""
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": kube.namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    return kube.request("POST", f"/apis/apps/v1/namespaces/{kube.namespace}/replicasets", body)


def _create_pod(kube: Kube, name: str, labels: dict, group: str, owner: dict | None = None) -> None:
    """A pod without spreading constraints of its own, confined to the nodes of ``group``."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": kube.namespace, "labels": labels},
        "spec": {
            "schedulerName": kube.scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"e2e.io/group": group},
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    if owner is not None:
        meta = owner["metadata"]
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
            }
        ]
    kube.request("POST", f"/api/v1/namespaces/{kube.namespace}/pods", pod)
    kube.created_pods.append(name)


def test_default_spreading_of_replica_set_pods(skube: Kube, standalone) -> None:
    """PodTopologySpread's System default constraints (upstream
    ``pkg/scheduler/framework/plugins/podtopologyspread``, selector from
    ``helper.DefaultSelector``) spread a ReplicaSet's pods one per node, against the resource
    scores: n1 of each group is nearly empty, n2 and n3 carry a filler pod. Bare pods, which
    get no default constraints, all go to n1."""
    ns = skube.namespace
    web = {"app": "web"}
    rs = _replica_set(skube, "web", web)
    standalone()  # after the ReplicaSet: its informer's first list has it
    for group in ("owned", "bare"):
        for i in (1, 2, 3):
            skube.create_node(f"{ns}-{group}{i}", labels={"e2e.io/group": group})
            if i > 1:
                skube.create_pod(
                    f"filler-{group}{i}", cpu="1", memory="4Gi", nodeName=f"{ns}-{group}{i}"
                )
    try:
        owned, bare = [], []
        for i in range(3):
            # One at a time: each pod's choice sees where the previous ones went.
            _create_pod(skube, f"web-{i}", web, "owned", owner=rs)
            owned.append(skube.wait_bound(f"web-{i}"))
            _create_pod(skube, f"bare-{i}", {"app": "bare"}, "bare")
            bare.append(skube.wait_bound(f"bare-{i}"))
        assert sorted(owned) == [f"{ns}-owned{i}" for i in (1, 2, 3)], owned
        assert bare == [f"{ns}-bare1"] * 3, bare
    finally:
        skube.request("DELETE", f"/apis/apps/v1/namespaces/{ns}/replicasets/web")
