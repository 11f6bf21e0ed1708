"""``kube-extender simulate`` of a dump taken from the control plane agrees with what
``kube-extender run`` then does on the live cluster: the same feasible sets (checked against
``explain`` of the live pending pods) and the same node where one node is clearly best."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from extender.config import load
from extender.controlplane import (
    WORKLOAD_RUNTIME_CONFIG,
    ControlPlane,
    apiserver_args,
    feature_gates_value,
    kube_extender,
    running,
)
from extender.framework.handle import CACHE_KINDS
from extender.framework.registry import kinds_read
from extender.kube import api_client
from extender.scenario.kube import Kube

from .harness import Standalone, standalone_config, wait_until

PROFILE = "kube-extender"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(kube_extender(*args), capture_output=True, text=True, timeout=300)


def _prefer(node: str) -> dict:
    term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    preferred = [{"weight": 100, "preference": {"matchExpressions": [term]}}]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}


def _dump(kube, config: Path, path: Path) -> None:
    """What ``kubectl get nodes,pods,namespaces,<the kinds the profile reads> -A -o yaml``
    writes: one v1 List, each item with its apiVersion and kind."""
    cfg = load(str(config))
    kinds = kinds_read(cfg.profiles, cfg.registry) - CACHE_KINDS
    paths = ["/api/v1/nodes", "/api/v1/pods", "/api/v1/namespaces"]
    paths += sorted(kind.path for kind in kinds)
    items: list[dict] = []
    for collection in paths:
        listed = kube.get(collection)
        api_version = listed.get("apiVersion", "v1")
        kind = listed["kind"].removesuffix("List")
        for item in listed.get("items") or ():
            items.append({"apiVersion": api_version, "kind": kind, **item})
    body = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
    path.write_text(yaml.safe_dump(body, sort_keys=False))


def test_simulate_of_a_dump_agrees_with_run(kube, control_plane, processes, tmp_path) -> None:
    ns = kube.namespace
    kube.scheduler_name = PROFILE
    group = {"e2e.io/group": ns}
    node = {x: f"{ns}-{x}" for x in "abcde"}
    kube.create_node(node["a"], cpu="9", labels=group)
    kube.create_node(node["b"], cpu="4", labels=group)
    kube.create_node(node["c"], cpu="2", labels={**group, "e2e.io/zone": "z2"})
    kube.create_node(node["d"], cpu="2", labels={**group, "e2e.io/zone": "z2"})
    kube.create_node(node["e"], cpu="16", labels=group, unschedulable=True)
    # Each pod's feasible set and best node do not depend on the order the others go in.
    # Pods wait: nothing serves their scheduler until the dump has been taken.
    pods = {
        "big": ({"cpu": "5"}, {}, set("a")),  # only a has 5 CPUs
        "mid": ({"cpu": "3"}, {"affinity": _prefer(node["b"])}, set("ab")),
        "pref-c": ({"cpu": "200m"}, {"affinity": _prefer(node["c"])}, set("abcd")),
        "sel-d": (
            {"cpu": "200m"},
            {"affinity": _prefer(node["d"]), "nodeSelector": {**group, "e2e.io/zone": "z2"}},
            set("cd"),
        ),
        "nofit": ({"cpu": "16"}, {}, set()),
    }
    best = {"big": "a", "mid": "b", "pref-c": "c", "sel-d": "d"}
    for name, (requests, spec, _) in pods.items():
        spec = {"nodeSelector": group, **spec}
        kube.create_pod(name, **requests, **spec)

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(standalone_config(PROFILE), sort_keys=False))
    kc = str(control_plane.kubeconfig)

    # explain on the live pending pods: their feasible sets and best nodes.
    live: dict[str, dict] = {}
    for name in pods:
        done = run("explain", name, "-n", ns, "--kubeconfig", kc, "--config", str(config),
                   "-o", "json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        live[name] = json.loads(done.stdout)
        feasible = {n["name"] for n in live[name]["nodes"] if n["fits"]}
        assert feasible == {node[x] for x in pods[name][2]}, (name, feasible)
        assert live[name]["numFeasible"] == len(feasible)
        if name in best:
            assert live[name]["chosen"] == [node[best[name]]], (name, live[name]["chosen"])

    # The dump, and the same pending pods as the pods to place.
    dump, new = tmp_path / "dump.yaml", tmp_path / "pods.yaml"
    _dump(kube, config, dump)
    mine = kube.get(f"/api/v1/namespaces/{ns}/pods")["items"]
    order = {name: i for i, name in enumerate(pods)}
    mine.sort(key=lambda p: order[p["metadata"]["name"]])
    items = [{"apiVersion": "v1", "kind": "Pod", **p} for p in mine]
    new.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    done = run("simulate", "--cluster", str(dump), "--pods", str(new), "--config", str(config),
               "-o", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "Simulation" and report["profile"] == PROFILE
    simulated = {p["pod"].split("/", 1)[1]: p for p in report["placements"]}
    assert set(simulated) == set(pods), simulated

    # Now the standalone scheduler places them on the live cluster.
    proc = Standalone(control_plane, standalone_config(PROFILE))
    processes.append(proc)
    proc.wait_ready(timeout=60)
    placed = {name: kube.wait_bound(name, timeout=60) for name in best}
    wait_until(lambda: "Insufficient cpu" in kube.why_pending("nofit"), 60, "nofit's condition")
    assert kube.node_of("nofit") is None

    for name, (_, _, feasible) in pods.items():
        sim = simulated[name]
        if name in best:
            assert sim["node"] == placed[name] == node[best[name]], (name, sim, placed)
            assert sim["feasibleNodes"] == len(feasible) == live[name]["numFeasible"], sim
            assert not sim["victims"]
        else:
            assert sim["node"] is None
            assert sim["reasonCounts"] == live[name]["reasonCounts"], (sim, live[name])
            assert sim["fitError"] == live[name]["fitError"]
    # The run's message for the pod that does not fit is the same diagnosis.
    assert kube.why_pending("nofit").startswith(live["nofit"]["fitError"].split(". ", 1)[0])


# -- gangs -------------------------------------------------------------------------------------

GANG_GATES = {"GenericWorkload": True, "GangScheduling": True}
GANG_GATES_FLAG = feature_gates_value(GANG_GATES)


@pytest.fixture(scope="module")
def gated_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane serving PodGroups (scheduling.k8s.io/v1alpha2) with the gang gates."""
    args = apiserver_args(GANG_GATES, WORKLOAD_RUNTIME_CONFIG)
    with running(tmp_path_factory.mktemp("gang-plane"), args) as cp:
        yield cp


def _pod_group(kube: Kube, name: str, min_count: int) -> None:
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": kube.namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    kube.create(f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{kube.namespace}/podgroups", body)


def test_explain_and_simulate_of_gangs_agree_with_run(gated_plane, processes, tmp_path) -> None:
    """A gang that fits (both members bound by ``run``) and one whose second member fits
    nowhere (neither bound): explain of the live pending gangs, simulate of their dump and
    ``run`` with the gates say the same, through the same pod group cycle."""
    kube = Kube(api_client(str(gated_plane.kubeconfig)), namespace="gangs", out=lambda *a: None)
    kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": "gangs"}, "apiVersion": "v1"})
    kube.scheduler_name = PROFILE
    kube.create_node("gang-a", cpu="4")
    kube.create_node("gang-b", cpu="4")
    _pod_group(kube, "fits", 2)
    _pod_group(kube, "stuck", 2)
    members = {"f0": ("fits", "2"), "f1": ("fits", "2"), "s0": ("stuck", "1"), "s1": ("stuck", "6")}
    for name, (group, cpu) in members.items():
        kube.create_pod(name, cpu=cpu, schedulingGroup={"podGroupName": group})
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(standalone_config(PROFILE), sort_keys=False))
    kc = str(gated_plane.kubeconfig)
    common = ("-n", "gangs", "--kubeconfig", kc, "--config", str(config), "-o", "json")

    explained = {}
    for group in ("fits", "stuck"):
        done = run("explain", f"podgroup/{group}", *common, "--feature-gates", GANG_GATES_FLAG)
        assert done.returncode == 0, done.stderr
        explained[group] = json.loads(done.stdout)["podGroup"]
    assert explained["fits"]["verdict"] == "Schedulable"
    assert explained["fits"]["placeableNow"] == 2
    assert explained["stuck"]["verdict"] == "Unschedulable"
    assert explained["stuck"]["placeableNow"] == 0
    assert explained["stuck"]["blocking"]["pod"] == "gangs/s1"
    done = run("explain", "s0", *common, "--feature-gates", GANG_GATES_FLAG)
    member = json.loads(done.stdout)
    assert member["verdict"] == "Schedulable" and member["podGroup"]["verdict"] == "Unschedulable"

    dump, new = tmp_path / "dump.yaml", tmp_path / "pods.yaml"
    paths = ["/api/v1/nodes", "/api/v1/namespaces"]
    paths += ["/apis/scheduling.k8s.io/v1alpha2/podgroups"]
    items = []
    for collection in paths:
        listed = kube.get(collection)
        kind = listed["kind"].removesuffix("List")
        items += [{"apiVersion": listed["apiVersion"], "kind": kind, **i} for i in listed["items"]]
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    pods = kube.get("/api/v1/namespaces/gangs/pods")["items"]
    pods.sort(key=lambda p: list(members).index(p["metadata"]["name"]))
    new.write_text(yaml.safe_dump_all([{"apiVersion": "v1", "kind": "Pod", **p} for p in pods]))
    done = run("simulate", "--cluster", str(dump), "--pods", str(new), "--config", str(config),
               "-o", "json", "--feature-gates", GANG_GATES_FLAG)  # fmt: skip
    assert done.returncode == 0, done.stderr
    simulated = {p["pod"].split("/", 1)[1]: p for p in json.loads(done.stdout)["placements"]}
    assert simulated["f0"]["node"] and simulated["f1"]["node"]
    assert simulated["s0"]["node"] is None and simulated["s1"]["node"] is None
    assert simulated["s0"]["outcome"] == "fits" and simulated["s1"]["outcome"] == "unschedulable"

    proc = Standalone(gated_plane, standalone_config(PROFILE), feature_gates=GANG_GATES)
    processes.append(proc)
    proc.wait_ready(timeout=60)
    assert {kube.wait_bound("f0", timeout=60), kube.wait_bound("f1", timeout=60)} == {
        "gang-a",
        "gang-b",
    }
    wait_until(lambda: "pod group is unschedulable" in kube.why_pending("s0"), 60, "s0's condition")
    assert kube.node_of("s0") is None and kube.node_of("s1") is None
