"""kube-extender simulate: controllers expanded, queue order, assume, dry-run preemption, --max."""

from __future__ import annotations

import subprocess
import sys

import yaml

from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.simulate import Simulation, expand, utilisation
from extender.testing import Cluster, node, pod


def simulation(cluster: Cluster) -> Simulation:
    config, profile = pick_profile(None, "default-scheduler")
    return Simulation(dry_run_framework(config, profile, cluster), cluster)


def deployment(replicas: int, cpu: str = "2") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "d1"},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            },
        },
    }


def test_controllers_expand_like_their_controllers_name_pods() -> None:
    sts = {**deployment(2), "kind": "StatefulSet", "metadata": {"name": "db", "uid": "s"}}
    pods = expand([deployment(3), sts])
    names = [p["metadata"]["name"] for p in pods]
    assert len(names) == 5 and names[3:] == ["db-0", "db-1"]
    assert all(n.startswith("web-") and len(n.split("-")) == 3 for n in names[:3])
    assert pods[0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert pods[0]["metadata"]["namespace"] == "shop"
    assert pods[0]["metadata"]["labels"]["app"] == "web"


def test_pods_are_assumed_in_place_and_preemption_evicts_victims() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="4"), node("b", cpu="4")],
        pods=[
            pod("low", cpu="3", node_name="a", priority=0),
            pod("mid", cpu="1", node_name="b", priority=50),
        ],
    )
    sim = simulation(cluster)
    snapshot = sim.snapshot
    placements = sim.run(
        [*expand([deployment(2)]), pod("urgent", cpu="4", priority=100), pod("huge", cpu="64")]
    )
    by_pod = {p.key: p for p in placements}
    assert sim.snapshot is snapshot  # never rebuilt
    assert by_pod["default/urgent"].victims == ["default/low"]  # placed first: priority
    assert by_pod["default/urgent"].node == "a"
    assert by_pod["default/huge"].node == "" and by_pod["default/huge"].why_not is not None
    assert by_pod["default/huge"].why_not.fit_error.startswith("0/2 nodes are available")
    assert [p.node for p in placements[1:3]] == ["b", ""]  # b has 3 cpu left: one replica
    assert utilisation(sim.snapshot)["cpu"]["percent"] == 87.5


def test_max_replicas_and_the_reason_that_stops_the_next() -> None:
    cluster = Cluster(nodes=[node(f"n{i}", cpu="4") for i in range(5)])
    count, why, per_node = simulation(cluster).max_replicas(pod("r", cpu="1500m"))
    assert count == 10 and set(per_node.values()) == {2}
    assert why is not None and why.fit_error == "0/5 nodes are available: 5 Insufficient cpu."


def test_cli_bad_dump_is_one_line_and_exit_2(tmp_path) -> None:
    (tmp_path / "bad.yaml").write_text("a: [\n")
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(pod("p")))
    done = subprocess.run(
        [sys.executable, "-m", "extender", "simulate", "--cluster", str(tmp_path / "bad.yaml"),
         "--pods", str(tmp_path / "pods.yaml")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not YAML" in done.stderr
