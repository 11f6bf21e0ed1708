"""Coscheduling (scheduler-plugins' gang scheduling) in ``kube-extender run`` against the real
control plane: the PodGroup CRD of deploy/ installed, the scheduler running with exactly the
permissions of deploy/standalone.yaml and deploy/rbac-coscheduling.yaml (a ServiceAccount
token), its profile enabling Coscheduling as docs/gang.md says. A gang of three binds when the
cluster has room for three, and none of it binds (every member pending with Coscheduling's
reason) when it has room for two."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from extender.controlplane.apply import apply, documents, service_account_kubeconfig
from extender.kube import ApiError, KubeClient, api_client
from extender.plugins.coscheduling.coscheduling import (
    MSG_REJECTED_IN_POST_FILTER,
    MSG_REJECTED_IN_UNRESERVE,
)
from extender.plugins.coscheduling.podgroup import POD_GROUP_LABEL, PODGROUPS

from .harness import Standalone, wait_until

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NS = "kube-extender"
SERVICE_ACCOUNT = "kube-extender-standalone"
GANG_PLUGINS = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
}
# What a member of a gang that cannot be placed whole is told (the last attempt's word).
GANG_REASONS = (
    "gets rejected due to Pod",  # PostFilter, the member that fits nowhere
    MSG_REJECTED_IN_POST_FILTER,  # its waiting siblings
    MSG_REJECTED_IN_UNRESERVE,
    "cannot find enough sibling pods",
    "rejected due to timeout after waiting",
)


def manifest(name: str) -> list[dict]:
    return documents((DEPLOY / name).read_text())


@pytest.fixture(scope="module")
def admin(control_plane):
    return KubeClient(api_client(str(control_plane.kubeconfig)))


@pytest.fixture(scope="module")
def deployed(admin):
    """The namespace, the standalone's manifests, the PodGroup CRD and its RBAC, server-side."""
    stored = apply(admin, manifest("namespace.yaml") + manifest("standalone.yaml"))
    stored += apply(admin, manifest("scheduling.x-k8s.io_podgroups.yaml"))
    stored += apply(admin, manifest("rbac-coscheduling.yaml"))

    def served() -> bool:
        try:
            admin.request("GET", PODGROUPS.path)
            return True
        except ApiError:
            return False

    wait_until(served, 30, "the PodGroup kind to be served")
    return stored


@pytest.fixture
def gang_scheduler(control_plane, admin, deployed, processes):
    """deploy/standalone.yaml's config with Coscheduling enabled, run as its ServiceAccount."""
    text = next(d for d in deployed if d["kind"] == "ConfigMap")["data"]["config.yaml"]
    config = yaml.safe_load(text)
    config["leaderElection"] = {"leaderElect": False}
    config["profiles"][0]["plugins"] = GANG_PLUGINS
    path = control_plane.directory / f"sa-{SERVICE_ACCOUNT}.kubeconfig"
    kubeconfig = service_account_kubeconfig(
        admin,
        NS,
        SERVICE_ACCOUNT,
        path,
        control_plane.server,
        control_plane.directory / "pki/ca.crt",
    )
    proc = Standalone(control_plane, config, name="coscheduling", kubeconfig=kubeconfig)
    processes.append(proc)
    proc.wait_ready(timeout=60)
    return config["profiles"][0]["schedulerName"], proc


def create_pod_group(kube, name: str, min_member: int, timeout: int | None = None) -> None:
    spec: dict = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    body = {
        "apiVersion": f"{PODGROUPS.group}/{PODGROUPS.version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": kube.namespace},
        "spec": spec,
    }
    kube.request(
        "POST",
        f"/apis/{PODGROUPS.group}/{PODGROUPS.version}/namespaces/{kube.namespace}/podgroups",
        body,
    )


def create_gang(kube, scheduler: str, group: str, count: int, cpu: str = "1") -> list[str]:
    kube.scheduler_name = scheduler
    names = [f"{group}-{i}" for i in range(1, count + 1)]
    for name in names:
        kube.create_pod(name, cpu=cpu, labels={POD_GROUP_LABEL: group})
    return names


def test_a_gang_with_room_binds_whole(kube, gang_scheduler) -> None:
    scheduler, proc = gang_scheduler
    kube.create_node(f"{kube.namespace}-n1", cpu="4")
    create_pod_group(kube, "gang", 3)
    names = create_gang(kube, scheduler, "gang", 3)
    for name in names:
        assert kube.wait_bound(name, timeout=60) == f"{kube.namespace}-n1"
    assert "forbidden" not in proc.log(400).lower(), proc.log()


def test_a_gang_without_room_binds_nothing(kube, gang_scheduler) -> None:
    scheduler, proc = gang_scheduler
    kube.create_node(f"{kube.namespace}-n1", cpu="2")  # room for two members of three
    create_pod_group(kube, "gang", 3, timeout=5)
    names = create_gang(kube, scheduler, "gang", 3)
    wait_until(lambda: all(kube.why_pending(n) != "not tried yet" for n in names), 30, "every try")
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline:  # two members fit, yet none may bind
        assert [kube.node_of(n) for n in names] == [None, None, None]
        time.sleep(0.5)
    reasons = {name: kube.why_pending(name) for name in names}
    for name, reason in reasons.items():
        assert any(r in reason for r in GANG_REASONS), (name, reasons)
    assert any(
        "gets rejected due to Pod" in r or MSG_REJECTED_IN_POST_FILTER in r
        for r in reasons.values()
    ), reasons
    assert "forbidden" not in proc.log(400).lower(), proc.log()


def test_a_member_without_its_pod_group_is_rejected_at_permit(kube, gang_scheduler) -> None:
    scheduler, _ = gang_scheduler
    kube.create_node(f"{kube.namespace}-n1")
    (name,) = create_gang(kube, scheduler, "nowhere", 1)
    reason = kube.wait_pending(name, "PodGroup not found", timeout=30)
    assert reason == "0/1 nodes are available: 1 PodGroup not found.", reason
