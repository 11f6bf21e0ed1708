"""``kube-extender simulate`` of a dump taken from the control plane agrees with what
``kube-extender run`` then does on the live cluster: the same feasible sets (checked against
``explain`` of the live pending pods) and the same node where one node is clearly best."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from extender.config import load
from extender.controlplane import kube_extender
from extender.framework.handle import CACHE_KINDS
from extender.framework.registry import kinds_read

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
