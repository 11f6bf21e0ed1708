"""simulate tracks devices: a placed DRA pod takes its devices, claims from templates are
created in the simulation, and ``--max`` counts devices (on dumps, offline)."""

from __future__ import annotations

import json
import re

import yaml

from extender.cli import simulate as simulate_cli
from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.simulate import Simulation
from extender.testing import Cluster

from .dra_dumps import claim, claim_template, dra_pod, gpu_cluster


def simulation(cluster: Cluster) -> Simulation:
    config, profile = pick_profile(None, "default-scheduler")
    return Simulation(dry_run_framework(config, profile, cluster), cluster)


def claims_of(cluster: Cluster) -> list[dict]:
    return cluster.objects["resourceclaims.resource.k8s.io"]


def test_a_placed_pod_takes_its_device_and_the_next_pod_does_not_get_it() -> None:
    cluster = gpu_cluster(gpus=1, objects=[claim("c1"), claim("c2")])
    sim = simulation(cluster)
    first, second = sim.run([dra_pod("p1", {"gpu": "c1"}), dra_pod("p2", {"gpu": "c2"})])
    assert first.node == "node-0"
    assert not second.node and second.why_not is not None
    assert second.why_not.reason_counts() == {"cannot allocate all claims": 1}
    assert "allocated, to claim default/c1" in second.why_not.node("node-0").detail[0]
    c1 = next(c for c in claims_of(cluster) if c["metadata"]["name"] == "c1")
    results = c1["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("node-0", "gpu-0")]
    assert c1["status"]["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": "uid-p1"}]
    assert "resource.kubernetes.io/delete-protection" in c1["metadata"]["finalizers"]
    # nothing in flight is left behind
    assert sim.fwk.plugins["DynamicResources"].tracker.in_flight_count() == 0


def test_claims_from_templates_are_created_as_the_controller_creates_them() -> None:
    cluster = gpu_cluster(gpus=2, objects=[claim_template()])
    sim = simulation(cluster)
    placements = sim.run([dra_pod(f"p{i}", template="single-gpu") for i in range(3)])
    assert [bool(p.node) for p in placements] == [True, True, False]
    created = claims_of(cluster)
    assert len(created) == 3
    for p, c in zip(placements, created, strict=True):
        name = p.pod["metadata"]["name"]
        assert re.fullmatch(
            rf"{name}-gpu-[bcdfghjklmnpqrstvwxz2456789]{{5}}", c["metadata"]["name"]
        )
        assert c["metadata"]["ownerReferences"][0]["uid"] == f"uid-{name}"
        assert p.pod["status"]["resourceClaimStatuses"] == [
            {"name": "gpu", "resourceClaimName": c["metadata"]["name"]}
        ]
    devices = {c["status"]["allocation"]["devices"]["results"][0]["device"] for c in created[:2]}
    assert devices == {"gpu-0", "gpu-1"}


def test_a_missing_template_leaves_the_pod_waiting_with_upstreams_reason() -> None:
    sim = simulation(gpu_cluster())
    (placement,) = sim.run([dra_pod("p", template="nowhere")])
    assert not placement.node and placement.why_not is not None
    assert placement.why_not.fit_error is not None
    assert 'pod "default/p": ResourceClaim not created yet' in placement.why_not.fit_error


def test_max_counts_devices() -> None:
    # 10 nodes with 8 GPUs each, one GPU per pod: 80, stopped by DynamicResources
    cluster = gpu_cluster(nodes=10, gpus=8, objects=[claim_template()])
    count, why, per_node = simulation(cluster).max_replicas(
        dra_pod("gpu-pod", template="single-gpu")
    )
    assert count == 80
    assert per_node == {f"node-{i}": 8 for i in range(10)}
    assert why is not None and why.fit_error is not None
    assert why.fit_error.startswith("0/10 nodes are available: 10 cannot allocate all claims.")
    assert {v.status.plugin for v in why.nodes if v.status is not None} == {"DynamicResources"}


def test_the_cli_max_report_names_dynamic_resources(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    cluster = gpu_cluster(nodes=2, gpus=3)
    dump = tmp_path / "cluster.yaml"
    objects = [*cluster.nodes, *(o for items in cluster.objects.values() for o in items)]
    dump.write_text(yaml.safe_dump_all(objects))
    podspec = tmp_path / "pod.yaml"
    podspec.write_text(
        yaml.safe_dump_all([claim_template(), dra_pod("gpu-pod", template="single-gpu")])
    )
    assert simulate_cli.main(["--cluster", str(dump), "--max", str(podspec), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["max"]["replicas"] == 6
    assert report["max"]["stoppedByPlugins"] == {"DynamicResources": 2}
    details = report["max"]["stoppedByDetail"]
    assert len(details) == 2 and {d["nodes"] for d in details} == {1}  # each names its claims
    assert simulate_cli.main(["--cluster", str(dump), "--max", str(podspec)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # wrapped at 80 columns
    assert "6 more replicas of gpu-pod fit" in text
    assert "rejected by DynamicResources on 2 nodes" in text
    assert "request gpu: needs 1 device of DeviceClass gpu: 3 match, 0 free" in text


def test_an_evicted_pod_gives_its_devices_back() -> None:
    # DRA's own rejection is UnschedulableAndUnresolvable, which preemption never tries to
    # resolve (as upstream); a pod evicted for CPU releases its claim, as the controller does.
    low = dra_pod("low", {"gpu": "c-low"})
    low["spec"]["nodeName"] = "node-0"
    low["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "60"}
    held = claim("c-low", allocated=[("node-0", "gpu-0")])
    held["status"]["reservedFor"] = [{"resource": "pods", "name": "low", "uid": "uid-low"}]
    cluster = gpu_cluster(gpus=1, objects=[held, claim("c-next")])
    cluster.pods.append(low)
    high = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "high", "namespace": "default", "uid": "uid-high"},
        "spec": {
            "priority": 1000,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "60"}}}],
        },
    }
    sim = simulation(cluster)
    (placement,) = sim.run([high])
    assert placement.victims == ["default/low"] and placement.node == "node-0"
    c_low = next(c for c in claims_of(cluster) if c["metadata"]["name"] == "c-low")
    assert "allocation" not in c_low["status"] and "reservedFor" not in c_low["status"]
    # the freed GPU goes to the next pod
    (after,) = sim.run([dra_pod("next", {"gpu": "c-next"})])
    assert after.node == "node-0"
