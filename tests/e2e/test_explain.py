"""kube-extender explain (and simulate) against the real control plane and kube-scheduler."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from extender.controlplane import kube_extender

from .harness import events_for, scheduler_config, wait_until
from .test_dra import (  # fixtures and helpers of the DRA e2e module
    claim_controller,  # noqa: F401
    claim_template,
    device_class,
    dra,  # noqa: F401
    gpu_pod,
    pod_claim,
    publish_slice,
)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(kube_extender(*args), capture_output=True, text=True, timeout=60)


def explain(control_plane, kube, pod: str, *extra: str) -> dict:
    done = run(
        "explain", pod, "-n", kube.namespace, "--kubeconfig", str(control_plane.kubeconfig),
        "-o", "json", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def counts(message: str) -> dict[str, int]:
    """``0/5 nodes are available: 2 A, 3 B. ...`` -> {A: 2, B: 3} (the Filter counts; the
    PostFilter messages follow the first ". ")."""
    body = message.split(": ", 1)[1].split(". ", 1)[0].rstrip(".")
    found = {}
    for item in body.split(", "):
        number, reason = item.split(" ", 1)
        found[reason] = int(number)
    return found


@pytest.fixture
def dkube(kube, kube_scheduler):
    """Pods for the real kube-scheduler's default profile."""
    kube.scheduler_name = "default-scheduler"
    kube_scheduler(scheduler_config(None))
    return kube


def test_pending_pod_reasons_equal_kube_schedulers(dkube, control_plane) -> None:
    ns = dkube.namespace
    for i in range(3):
        dkube.create_node(f"{ns}-small-{i}", cpu="1")
    for i in range(2):
        dkube.create_node(f"{ns}-cordoned-{i}", unschedulable=True)
    dkube.create_node(f"{ns}-tainted", taints=[{"key": "x", "effect": "NoSchedule"}])
    dkube.create_pod("big", cpu="2")
    event = wait_until(lambda: events_for(dkube, "big", "FailedScheduling"), 30, "event")[-1]
    note = event["note"]
    data = explain(control_plane, dkube, "big")
    assert data["version"] == 1 and data["verdict"] == "Unschedulable"
    assert data["numNodes"] == 6
    assert counts(data["fitError"]) == counts(note), (data["fitError"], note)
    assert data["reasonCounts"] == counts(note)
    # The whole message, DynamicResources' PostFilter reason ("no new claims to deallocate")
    # and DefaultPreemption's included.
    assert data["fitError"] == note
    assert data["preemption"] is not None


def test_bound_pod_is_on_a_chosen_node(dkube, control_plane) -> None:
    ns = dkube.namespace
    dkube.create_node(f"{ns}-a", cpu="2")
    dkube.create_node(f"{ns}-b", cpu="8")
    dkube.create_node(f"{ns}-off", unschedulable=True)
    dkube.create_pod("filler", cpu="1500m", nodeName=f"{ns}-a")
    dkube.create_pod("web", cpu="1")
    node = dkube.wait_bound("web")
    data = explain(control_plane, dkube, "web")
    assert data["pod"]["boundTo"] == node
    assert node in data["chosen"], data["chosen"]
    table = run("explain", "web", "-n", ns, "--kubeconfig", str(control_plane.kubeconfig)).stdout
    assert "Would choose" in table and max(len(line) for line in table.splitlines()) <= 80


def test_bad_input_is_one_line_and_exit_2(kube, control_plane, tmp_path) -> None:
    kc = str(control_plane.kubeconfig)
    missing = run("explain", "nope", "-n", kube.namespace, "--kubeconfig", kc)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "not found" in missing.stderr
    kube.scheduler_name = "no-such-profile"
    kube.create_node(f"{kube.namespace}-n")
    kube.create_pod("orphan")
    unknown = run("explain", "orphan", "-n", kube.namespace, "--kubeconfig", kc,
                  "--config", str(_config(tmp_path)))  # fmt: skip
    assert unknown.returncode == 2, unknown.stderr
    assert re.search(r"unknown profile 'no-such-profile'", unknown.stderr), unknown.stderr
    assert unknown.stderr.strip().count("\n") == 0


def _config(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    return path


def test_explain_calls_the_configs_extender_and_refuses_unknown_profiles(
    kube,
    control_plane,
    tmp_path,
) -> None:
    """A pod for a profile nobody serves stays Pending; explain with the config runs that
    profile and the config's extender (a real HTTP extender rejecting one node); without the
    config, its schedulerName is no profile: one line, exit 2. A plugin whose constructor
    raises is one line and exit 2 too."""
    from tests.unit.test_explain_extenders import RejectsB, serving

    kc = str(control_plane.kubeconfig)
    ns = kube.namespace
    kube.scheduler_name = "e2e-explain"
    for name in ("a", "b", "c"):
        kube.create_node(f"{ns}-{name}", cpu="4")
    kube.create_pod("waiting", cpu="1")
    with serving(RejectsB, reject=f"{ns}-b", prefer=f"{ns}-c") as url:
        config = tmp_path / "config.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "profiles:\n- schedulerName: e2e-explain\n"
            f"extenders:\n- urlPrefix: {url}\n  filterVerb: filter\n"
            "  prioritizeVerb: prioritize\n  weight: 5\n  nodeCacheCapable: true\n"
        )
        data = explain(control_plane, kube, "waiting", "--config", str(config))
    by_name = {n["name"]: n for n in data["nodes"]}
    assert by_name[f"{ns}-b"]["plugin"] == "Extender", by_name[f"{ns}-b"]
    assert by_name[f"{ns}-b"]["reasons"] == ["node(s) had no licence"]
    assert data["chosen"] == [f"{ns}-c"]
    assert data["extenders"][0]["called"] == ["filter", "prioritize"]

    unknown = run("explain", "waiting", "-n", ns, "--kubeconfig", kc)
    assert unknown.returncode == 2, unknown.stderr
    assert unknown.stderr.strip().count("\n") == 0
    assert "unknown profile 'e2e-explain'" in unknown.stderr
    assert "the only profile is 'default-scheduler'" in unknown.stderr

    (tmp_path / "raising.py").write_text(
        "class Raising:\n    name = 'Raising'\n"
        "    def __init__(self, args, handle):\n        raise ValueError('no licence server')\n"
        "    def filter(self, state, pod, node_info):\n        return None\n"
    )
    (tmp_path / "raising.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: e2e-explain\n  plugins:\n"
        "    multiPoint:\n      enabled: [{name: Raising}]\n---\n"
        "apiVersion: kube-extender.io/v1alpha1\nkind: ExtenderConfiguration\n"
        "pluginModules: ['raising.py:Raising']\n"
    )
    raising = run("explain", "waiting", "-n", ns, "--kubeconfig", kc,
                  "--config", str(tmp_path / "raising.yaml"))  # fmt: skip
    assert raising.returncode == 2, raising.stderr
    assert raising.stderr.strip().count("\n") == 0 and "Traceback" not in raising.stderr
    assert "plugin 'Raising' failed to start: ValueError: no licence server" in raising.stderr


def test_a_pod_only_the_extender_rejects_is_noted_without_the_config(
    kube,
    control_plane,
    kube_scheduler,
) -> None:
    """The real kube-scheduler with an extender that rejects the only node: the pod's
    PodScheduled condition says why. explain without --config runs the default plugins only,
    finds the node, and says that the pod's own condition disagrees and to give --config;
    with the scheduler's config it agrees (no note)."""
    from tests.unit.test_explain_extenders import RejectsB, serving

    ns = kube.namespace
    kube.scheduler_name = "default-scheduler"
    gpu = f"{ns}-gpu-1"
    with serving(RejectsB, reject=gpu, prefer=gpu) as url:
        config = kube_scheduler(scheduler_config(None, urlPrefix=url))
        kube.create_node(gpu, cpu="4")
        kube.create_pod("trainer", cpu="1")
        message = kube.wait_pending("trainer", "node(s) had no licence")
        without = explain(control_plane, kube, "trainer")
        table = run("explain", "trainer", "-n", ns, "--kubeconfig", str(control_plane.kubeconfig))
        given = explain(control_plane, kube, "trainer", "--config", str(config))
    assert without["verdict"] == "Schedulable" and without["chosen"] == [gpu]
    assert without["podScheduled"] == {
        "status": "False", "reason": "Unschedulable", "message": message
    }  # fmt: skip
    assert without["contradictsPodScheduled"] is True
    note = without["notes"][0]
    assert note.startswith(f'the scheduler that handled this pod reported "{message}"'), note
    assert "rerun with --config <that scheduler's KubeSchedulerConfiguration>" in note
    lines = table.stdout.splitlines()
    assert lines[1].startswith("Note: the scheduler that handled this pod reported"), lines
    assert given["verdict"] == "Unschedulable" and given["contradictsPodScheduled"] is False
    assert not any("the scheduler that handled this pod" in n for n in given["notes"])


# -- DRA -----------------------------------------------------------------------------------------


def test_dra_pending_pod_detail_names_the_claim_holding_the_device(
    dra,  # noqa: F811
    control_plane,
    kube_scheduler,
) -> None:
    """The real kube-scheduler and resource-claim controller: the second GPU pod on a node with
    one GPU stays Pending; explain's FitError is the Event's and its detail names the claim
    the first pod got the device for."""
    kube = dra
    kube.scheduler_name = "default-scheduler"
    kube_scheduler(scheduler_config(None))
    node = f"{kube.namespace}-gpu"
    kube.create_node(node)
    publish_slice(kube, node, devices=1)
    template = claim_template(kube, device_class(kube))
    gpu_pod(kube, "first", template)
    assert kube.wait_bound("first", timeout=60) == node
    holder = pod_claim(kube, "first")["metadata"]["name"]
    gpu_pod(kube, "second", template)
    event = wait_until(lambda: events_for(kube, "second", "FailedScheduling"), 30, "event")[-1]
    data = explain(control_plane, kube, "second")
    assert data["fitError"] == event["note"]
    (verdict,) = [n for n in data["nodes"] if n["name"] == node]
    assert verdict["plugin"] == "DynamicResources"
    assert verdict["reasons"] == ["cannot allocate all claims"]
    (device,) = verdict["devices"]
    assert device["reason"] == "DevicesAllocated", device
    assert f"to claim {kube.namespace}/{holder}" in device["message"], device
