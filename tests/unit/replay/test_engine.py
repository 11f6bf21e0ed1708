"""The virtual-time replay engine: the standalone scheduler's own loop over the trace's events."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from extender.replay.engine import replay
from extender.replay.trace import Trace, TracePod

from .sweep_inputs import DEFAULT as PROFILE
from .sweep_inputs import MOST_ALLOCATED


def node(name: str, cpu: int = 8, gpus: int = 0) -> dict:
    allocatable = {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(name: str, cpu: int = 1000, gpus: int = 0, priority: int | None = None) -> dict:
    requests = {"cpu": f"{cpu}m", "memory": "1Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec: dict = {
        "schedulerName": "default-scheduler",
        "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
    }
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "default.yaml"
    path.write_text(PROFILE)
    return path


def events(log: dict, kind: str) -> list[list]:
    return [e for e in log["events"] if e[1] == kind]


def test_a_pod_runs_its_duration_from_its_binding_and_leaves(config: Path) -> None:
    trace = Trace(
        metadata={"name": "t"},
        duration=1000.0,
        nodes=[node("n1", cpu=2)],
        pods=[
            TracePod(arrival=10.0, pod=pod("a", cpu=2000), duration=100.0),
            # No room until a leaves at 110: bound then (a's delete requeues it), runs 50.
            TracePod(arrival=20.0, pod=pod("b", cpu=2000), duration=50.0),
        ],
    )
    log = replay(trace, config)
    assert [e[:4] for e in events(log, "bind")] == [
        [10.0, "bind", "default/a", "n1"],
        [110.0, "bind", "default/b", "n1"],
    ]
    assert [e[:3] for e in events(log, "leave")] == [
        [110.0, "leave", "default/a"],
        [160.0, "leave", "default/b"],
    ]
    assert events(log, "fail")[0][:3] == [20.0, "fail", "default/b"]
    assert log["pods"]["default/b"]["arrival"] == 20.0


def test_a_pod_still_pending_at_its_abandon_time_is_deleted(config: Path) -> None:
    trace = Trace(
        metadata={"name": "t"},
        duration=1000.0,
        nodes=[node("n1", cpu=2)],
        pods=[
            TracePod(arrival=0.0, pod=pod("a", cpu=2000), duration=None),
            TracePod(arrival=5.0, pod=pod("b", cpu=2000), duration=10.0, abandon=60.0),
        ],
    )
    log = replay(trace, config)
    assert events(log, "abandon") == [[60.0, "abandon", "default/b"]]
    assert [e[2] for e in events(log, "bind")] == ["default/a"]


def test_an_unschedulable_pod_is_retried_after_the_pool_timeout(config: Path) -> None:
    """No event helps it: the queue's 5-minute timeout moves it back, in virtual time."""
    trace = Trace(
        metadata={"name": "t"},
        duration=700.0,
        nodes=[node("n1", cpu=1)],
        pods=[TracePod(arrival=0.0, pod=pod("big", cpu=4000))],
    )
    log = replay(trace, config)
    # At 0 (twice: its own status patch is an update the queue asks the plugins about),
    # then each time the pool's timeout moves it back.
    assert sorted({e[0] for e in events(log, "fail")}) == [0.0, 300.0, 600.0]


def test_preemption_evicts_a_lower_priority_pod(config: Path) -> None:
    trace = Trace(
        metadata={"name": "t"},
        duration=1000.0,
        nodes=[node("n1", cpu=2)],
        pods=[
            TracePod(arrival=0.0, pod=pod("low", cpu=2000, priority=0), duration=500.0),
            TracePod(arrival=10.0, pod=pod("high", cpu=2000, priority=100), duration=50.0),
        ],
    )
    log = replay(trace, config)
    assert [e[:4] for e in events(log, "preempt")] == [[10.0, "preempt", "default/low", "n1"]]
    binds = {e[2]: e[0] for e in events(log, "bind")}
    assert binds == {"default/low": 0.0, "default/high": 10.0}
    # The victim's planned end never comes: it is gone.
    assert [e[2] for e in events(log, "leave")] == ["default/high"]


def test_whole_gpus_are_logged_as_a_device_plugin_hands_them_out(config: Path) -> None:
    trace = Trace(
        metadata={"name": "t"},
        duration=100.0,
        nodes=[node("g1", gpus=4)],
        pods=[
            TracePod(arrival=0.0, pod=pod("a", gpus=2), duration=10.0),
            TracePod(arrival=1.0, pod=pod("b", gpus=1)),
            TracePod(arrival=20.0, pod=pod("c", gpus=3)),
        ],
    )
    log = replay(trace, config)
    gpus = {e[2]: e[4] for e in events(log, "bind")}
    assert gpus["default/a"] == [["g1/gpu-0", 1000], ["g1/gpu-1", 1000]]
    assert gpus["default/b"] == [["g1/gpu-2", 1000]]
    # a left at 10: its two GPUs are free again.
    assert gpus["default/c"] == [["g1/gpu-0", 1000], ["g1/gpu-1", 1000], ["g1/gpu-3", 1000]]
    assert [n["gpus"][0] for n in log["nodes"]] == [{"id": "g1/gpu-0", "model": "", "milli": 1000}]


def many_pods_trace() -> Trace:
    return Trace(
        metadata={"name": "t"},
        duration=5000.0,
        nodes=[node(f"n{i}") for i in range(6)],
        pods=[
            TracePod(
                arrival=float(i * 7), pod=pod(f"p{i}", cpu=500 + (i % 4) * 250), duration=100.0
            )
            for i in range(60)
        ],
    )


def test_a_replay_is_deterministic_for_a_seed(config: Path) -> None:
    trace = many_pods_trace()
    first = replay(trace, config, seed=3)
    assert replay(trace, config, seed=3)["events"] == first["events"]
    # Ties among the empty nodes are drawn from the seed: some seed places differently.
    others = [replay(trace, config, seed=s)["events"] for s in range(4, 8)]
    assert any(other != first["events"] for other in others)


def test_the_policy_decides_the_placements(config: Path, tmp_path: Path) -> None:
    """LeastAllocated (the default) spreads; MostAllocated packs onto fewer nodes."""
    packing = tmp_path / "most-allocated.yaml"
    packing.write_text(MOST_ALLOCATED)
    trace = many_pods_trace()
    spread = Counter(e[3] for e in events(replay(trace, config), "bind"))
    packed = Counter(e[3] for e in events(replay(trace, packing), "bind"))
    assert len(packed) < len(spread)
    assert replay(trace, packing)["policy"] == "most-allocated"


def test_shared_gpus_through_dra_are_logged_with_their_share(config: Path) -> None:
    """The DRA mapping: claims are created with their pods, allocated by DynamicResources
    (consumable capacity), logged per GPU with the share consumed, and deleted with the pod."""
    from extender.replay import gpus

    gpu_node = node("g1")
    trace = Trace(
        metadata={"name": "t", "gpuMapping": "dra"},
        duration=100.0,
        nodes=[gpu_node],
        objects=[gpus.device_class(), gpus.resource_slice("g1", 2, "V100M32")],
        pods=[],
    )
    for i, (share, end) in enumerate([(460, 50.0), (460, None), (460, None), (460, None)]):
        p = pod(f"s{i}")
        claim = gpus.resource_claim(gpus.claim_name(f"s{i}"), "default", 1, share, ["V100M32"])
        p["spec"]["resourceClaims"] = [
            {"name": gpus.POD_CLAIM, "resourceClaimName": claim["metadata"]["name"]}
        ]
        p["spec"]["containers"][0]["resources"]["claims"] = [{"name": gpus.POD_CLAIM}]
        trace.pods.append(TracePod(arrival=float(i), pod=p, claims=[claim], duration=end))
    # A pod wanting a whole GPU never fits: after s0 leaves, each GPU still holds a share.
    whole = pod("w")
    claim = gpus.resource_claim(gpus.claim_name("w"), "default", 1, 1000)
    whole["spec"]["resourceClaims"] = [
        {"name": gpus.POD_CLAIM, "resourceClaimName": claim["metadata"]["name"]}
    ]
    trace.pods.append(TracePod(arrival=10.0, pod=whole, claims=[claim]))
    log = replay(trace, config)
    shares = {e[2]: e[4] for e in events(log, "bind")}
    assert sorted(shares) == ["default/s0", "default/s1", "default/s2", "default/s3"]
    per_gpu: Counter = Counter()
    for taken in shares.values():
        assert len(taken) == 1 and taken[0][1] == 460
        per_gpu[taken[0][0]] += 1
    assert per_gpu == Counter({"g1/gpu-0": 2, "g1/gpu-1": 2})
    assert log["pods"]["default/s0"]["gpuModel"] == "V100M32"
    assert log["pods"]["default/w"]["gpuModel"] is None
    assert log["pods"]["default/w"]["gpuMilli"] == 1000
    assert [n["gpus"] for n in log["nodes"]] == [
        [
            {"id": "g1/gpu-0", "model": "V100M32", "milli": 1000},
            {"id": "g1/gpu-1", "model": "V100M32", "milli": 1000},
        ]
    ]
    assert events(log, "leave") == [[50.0, "leave", "default/s0", "g1", "completed"]]


def test_the_model_a_pod_accepts_is_logged_from_its_node_affinity(config: Path) -> None:
    from extender.replay import gpus

    gpu_node = node("g1", gpus=1)
    gpu_node["metadata"]["labels"][gpus.GPU_MODEL_LABEL] = "T4"
    p = pod("a", gpus=1)
    p["spec"]["affinity"] = gpus.model_affinity(["T4", "P100"])
    trace = Trace(metadata={"name": "t"}, duration=10.0, nodes=[gpu_node], pods=[TracePod(0.0, p)])
    log = replay(trace, config)
    assert log["pods"]["default/a"]["gpuModel"] == "T4|P100"
    assert log["nodes"][0]["gpus"][0]["model"] == "T4"
