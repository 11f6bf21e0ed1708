"""extender/replay/metrics.py against hand-computed figures on logs small enough to follow.

The two-node log (``_two_nodes``): node ``a`` (8 CPUs, 2 V100s), node ``b`` (2.5 CPUs, 1 T4);
the workload's shapes: ``s1`` 1 CPU + half a GPU (two pods, p = 1/2), ``s2`` 2 CPUs + a whole
GPU (p = 1/4), ``s3`` 1 CPU, no GPU (p = 1/4). Fragmentation in milli-GPU, by hand:

- t=0, all free: a = 1/4 * 2000 (s3 uses no GPU) = 500; b = 1/4 * 1000 = 250: 750 of 3000.
- t=10, p1 (s1) on a/gpu-0 (500): a's GPUs free [500, 1000]: s1 fits, nothing too small;
  s2 fits on gpu-1, gpu-0's 500 too small: 1/4 * 500; s3: 1/4 * 1500. a = 500, b = 250:
  750 of 2500.
- t=20, p2 (s1) on a/gpu-1 (500): a free [500, 500]: s2 fits on no GPU: all, 1/4 * 1000;
  s3: 1/4 * 1000. a = 500; total 750 of 2000.
- t=30, p4 (s3, 1 CPU) on b: b has 1.5 CPUs free, s2 asks 2: it cannot run, all of b's GPU
  is fragmented for it: 1/4 * 1000; s3: 1/4 * 1000; s1 fits. b = 500; total 1000 of 2000.
- t=40, p1 leaves: a free [1000, 500]: s2 fits on gpu-0, gpu-1's 500 too small: 1/4 * 500;
  s3: 1/4 * 1500. a = 500; total 1000 of 2500.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.replay_logs import synthetic_log
from extender.replay.metrics import MetricsError, compute

GIB = 1 << 30


def _gpu(node: str, i: int, model: str) -> dict:
    return {"id": f"{node}/gpu-{i}", "model": model, "milli": 1000}


def _two_nodes() -> dict:
    s1 = {"cpu": 1000, "memory": GIB, "gpus": 1, "gpuMilli": 500, "owner": "ReplicaSet/s1"}
    s2 = {"cpu": 2000, "memory": 2 * GIB, "gpus": 1, "gpuMilli": 1000, "owner": "ReplicaSet/s2"}
    s3 = {"cpu": 1000, "memory": GIB, "gpus": 0, "gpuMilli": 0, "owner": "ReplicaSet/s3"}
    return {
        "version": 1,
        "policy": "hand",
        "nodes": [
            {
                "name": "a",
                "cpu": 8000,
                "memory": 16 * GIB,
                "labels": {},
                "gpus": [_gpu("a", 0, "V100"), _gpu("a", 1, "V100")],
            },
            {
                "name": "b",
                "cpu": 2500,
                "memory": 8 * GIB,
                "labels": {},
                "gpus": [_gpu("b", 0, "T4")],
            },
        ],
        "pods": {
            "d/p1": {**s1, "arrival": 0.0},
            "d/p2": {**s1, "arrival": 5.0},
            "d/p3": {**s2, "arrival": 5.0},
            "d/p4": {**s3, "arrival": 25.0},
        },
        "events": [
            [0.0, "arrive", "d/p1"],
            [5.0, "arrive", "d/p2"],
            [5.0, "arrive", "d/p3"],
            [7.0, "fail", "d/p3"],
            [10.0, "bind", "d/p1", "a", [["a/gpu-0", 500]]],
            [20.0, "bind", "d/p2", "a", [["a/gpu-1", 500]]],
            [25.0, "arrive", "d/p4"],
            [30.0, "bind", "d/p4", "b", []],
            [40.0, "leave", "d/p1", "a", "completed"],
            [50.0, "abandon", "d/p3"],
            [100.0, "leave", "d/p2", "a", "end"],
            [100.0, "leave", "d/p4", "b", "end"],
        ],
        "end": 100.0,
    }


def test_fragmentation_by_hand_on_two_nodes() -> None:
    m = compute(_two_nodes(), points=11)
    s = m["series"]
    assert s["t"] == [float(10 * i) for i in range(11)]
    assert s["frag_gpus"] == pytest.approx([0.75, 0.75, 0.75] + [1.0] * 8)
    fractions = [750 / 3000, 750 / 2500, 750 / 2000, 1000 / 2000] + [1000 / 2500] * 7
    assert s["frag_fraction"] == pytest.approx(fractions, abs=1e-6)
    assert m["fragmentation"]["task_types"] == 3
    # Exact, time-weighted: 0.75 GPUs over [0, 30), 1.0 over [30, 100].
    assert m["means"]["frag_gpus"] == pytest.approx(0.925)
    assert m["fragmentation"]["end_gpus"] == pytest.approx(1.0)


def test_time_series_steps_at_the_grid_times() -> None:
    m = compute(_two_nodes(), points=11)
    s = m["series"]
    # The state after every event at or before the grid time: p1 arrived at 0; p2 and p3
    # at 5; p1 bound at 10, p2 at 20; p4 arrived at 25 and was bound at 30; p3 abandoned at 50.
    assert s["pending"] == [1, 2, 1, 1, 1] + [0] * 6
    assert s["running"] == [0, 1, 2, 3, 2] + [2] * 6
    assert s["nodes_in_use"] == [0, 1, 1, 2, 2] + [2] * 6
    # The "end" leaves at t=100 mark pods still running: they free nothing.
    # (The series are rounded to 6 decimals.)
    gpu = [0, 500 / 3000, 1000 / 3000, 1000 / 3000] + [500 / 3000] * 7
    assert s["gpu"] == pytest.approx(gpu, abs=1e-6)
    cpu = [0, 1 / 10.5, 2 / 10.5, 3 / 10.5] + [2 / 10.5] * 7
    assert s["cpu"] == pytest.approx(cpu, abs=1e-6)
    # Pending, time-weighted: 1 x 5 + 3 x 5 + 2 x 10 + 1 x 5 + 2 x 5 + 1 x 20 = 75 over 100 s.
    assert m["means"]["pending"] == pytest.approx(0.75)
    assert m["peaks"]["nodes_in_use"] == 2


def test_pods_and_queueing() -> None:
    m = compute(_two_nodes(), points=11)
    assert m["pods"] == {
        "total": 4,
        "arrived": 4,
        "scheduled": 3,
        "never_scheduled": 1,
        "abandoned": 1,
        "pending_at_end": 0,
        "not_arrived": 0,
        "failed_attempts": 1,
    }
    q = m["queueing"]
    # Waits 10 (p1), 15 (p2), 5 (p4): sorted 5, 10, 15; p90 at rank 1.8: 10 + 0.8 x 5.
    assert (q["count"], q["mean"], q["p50"], q["max"]) == (3, 10.0, 10.0, 15.0)
    assert q["p90"] == pytest.approx(14.0)
    assert q["p99"] == pytest.approx(14.9)
    cdf = q["cdf"]
    assert len(cdf["percent"]) == len(cdf["seconds"]) == 281
    assert (cdf["percent"][0], cdf["percent"][50], cdf["percent"][-1]) == (0.0, 50.0, 100.0)
    assert (cdf["seconds"][0], cdf["seconds"][50], cdf["seconds"][-1]) == (5.0, 10.0, 15.0)


def test_queueing_percentiles_interpolate_between_ranks() -> None:
    log = {
        "nodes": [{"name": "n", "cpu": 1000, "memory": GIB}],
        "pods": {f"d/p{i}": {"cpu": 1, "memory": 1, "arrival": 0.0} for i in range(5)},
        "events": [[10.0 * i, "bind", f"d/p{i}", "n", []] for i in range(5)],
        "end": 50.0,
    }
    q = compute(log)["queueing"]
    assert (q["p50"], q["p90"], q["p99"]) == pytest.approx((20.0, 36.0, 39.6))
    # No arrive events: the arrival is the pod's; every pod counts as arrived.
    assert compute(log)["pods"]["never_scheduled"] == 0


def test_spread_skew_per_owner_over_nodes() -> None:
    m = compute(_two_nodes(), points=11)
    spread = m["spread"]
    assert spread["domain"] == "node"
    # s1's two pods both on a at t=20 and t=30: {a: 2, b: 0}, skew 2; no other owner has two.
    assert spread["per_owner"] == {"ReplicaSet/s1": {"mean_skew": 2.0, "max_skew": 2, "samples": 2}}
    assert (spread["owners"], spread["mean_skew"], spread["max_skew"]) == (1, 2.0, 2)


def test_spread_skew_over_zones_when_every_node_has_one() -> None:
    zone = "topology.kubernetes.io/zone"
    nodes = [
        {"name": n, "cpu": 4000, "memory": GIB, "labels": {zone: z}}
        for n, z in (("a", "z1"), ("b", "z1"), ("c", "z2"))
    ]
    pod = {"cpu": 1000, "memory": 1, "owner": "ReplicaSet/w"}
    log = {
        "nodes": nodes,
        "pods": {"d/1": pod, "d/2": pod, "d/3": pod},
        "events": [
            [0.0, "bind", "d/1", "a", []],
            [0.0, "bind", "d/2", "b", []],  # z1: 2, z2: 0 -> 2
            [10.0, "bind", "d/3", "c", []],  # z1: 2, z2: 1 -> 1
        ],
        "end": 20.0,
    }
    spread = compute(log, points=3)["spread"]
    assert spread["domain"] == "zone"
    assert spread["per_owner"]["ReplicaSet/w"] == {"mean_skew": 4 / 3, "max_skew": 2, "samples": 3}


def test_a_shape_that_asks_another_gpu_model_finds_all_of_it_fragmented() -> None:
    log = {
        "nodes": [
            {"name": "n", "cpu": 8000, "memory": GIB, "gpus": [_gpu("n", 0, "V100")]},
        ],
        "pods": {
            "d/t4": {"cpu": 1000, "memory": 1, "gpus": 1, "gpuMilli": 200, "gpuModel": "T4"},
            "d/any": {"cpu": 1000, "memory": 1, "gpus": 1, "gpuMilli": 200},
            "d/either": {
                "cpu": 1000,
                "memory": 1,
                "gpus": 1,
                "gpuMilli": 200,
                "gpuModel": "T4|V100",
            },
        },
        "events": [],
        "end": 1.0,
    }
    m = compute(log, points=2)
    # Only d/t4's shape (p = 1/3) cannot use the V100: 1000 / 3.
    assert m["series"]["frag_gpus"] == pytest.approx([1 / 3, 1 / 3])


def test_memory_counts_as_well_as_cpu() -> None:
    log = {
        "nodes": [{"name": "n", "cpu": 8000, "memory": 2 * GIB, "gpus": [_gpu("n", 0, "V100")]}],
        "pods": {"d/big": {"cpu": 1000, "memory": 4 * GIB, "gpus": 1, "gpuMilli": 1000}},
        "events": [],
        "end": 1.0,
    }
    assert compute(log, points=2)["series"]["frag_gpus"] == [1.0, 1.0]


def test_a_multi_gpu_shape_needs_enough_whole_gpus() -> None:
    log = {
        "nodes": [
            {"name": "n", "cpu": 8000, "memory": GIB, "gpus": [_gpu("n", i, "A") for i in range(3)]}
        ],
        "pods": {
            "d/two": {"cpu": 1, "memory": 1, "gpus": 2, "gpuMilli": 1000},
            "d/x": {"cpu": 1, "memory": 1, "gpus": 1, "gpuMilli": 1000},
        },
        "events": [[1.0, "bind", "d/x", "n", [["n/gpu-0", 1000]]]],
        "end": 2.0,
    }
    m = compute(log, points=3)
    # t=0: three free, both shapes fit, nothing too small: 0. After d/x: two whole GPUs free,
    # still 0. A half-used GPU would be too small for both (see the next case).
    assert m["series"]["frag_gpus"] == [0.0, 0.0, 0.0]
    log["events"] = [[1.0, "bind", "d/x", "n", [["n/gpu-0", 1000], ["n/gpu-1", 500]]]]
    log["pods"]["d/x"]["gpus"] = 2
    # gpu-1 has 500 free, gpu-2 1000: "two" (p = 1/2) runs nowhere: all 1500; "x" (now a
    # 2-GPU shape too) likewise: 1500.
    assert compute(log, points=3)["series"]["frag_gpus"] == [0.0, 1.5, 1.5]


def test_preemption_frees_the_victim() -> None:
    log = {
        "nodes": [{"name": "n", "cpu": 2000, "memory": GIB}],
        "pods": {"d/low": {"cpu": 2000, "memory": 1}, "d/high": {"cpu": 2000, "memory": 1}},
        "events": [
            [0.0, "bind", "d/low", "n", []],
            [5.0, "arrive", "d/high"],
            [5.0, "preempt", "d/low", "n", "d/high"],
            [6.0, "bind", "d/high", "n", []],
            [8.0, "leave", "d/low", "n", "completed"],  # already gone: changes nothing
        ],
        "end": 10.0,
    }
    m = compute(log, points=11)
    assert m["preemptions"] == {"count": 1, "victims": 1, "preemptors": 1}
    assert m["series"]["cpu"] == [1.0] * 5 + [0.0] + [1.0] * 5


def test_heatmap_is_nodes_by_time() -> None:
    m = compute(_two_nodes(), points=11, heat_columns=6)
    heat = m["heatmap"]
    assert heat["resource"] == "gpu"
    assert heat["nodes"] == ["a", "b"]
    assert heat["t"] == [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    assert heat["values"] == [[0.0, 0.5, 0.25, 0.25, 0.25, 0.25], [0.0] * 6]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda log: log.pop("end"), "end: must be a number"),
        (lambda log: log["events"].append([60.0, "explode", "d/p1"]), "unknown kind 'explode'"),
        (lambda log: log["events"].append([60.0, "arrive", "d/nope"]), "'d/nope' is not in pods"),
        (lambda log: log["events"].append(["x", "arrive"]), "must be [time, kind, pod, ...]"),
        (
            lambda log: log["events"].append([60.0, "bind", "d/p3", "b", [["a/gpu-0", 1]]]),
            "GPU 'a/gpu-0' is not on node 'b'",
        ),
        (lambda log: log["nodes"][0].update(cpu=-1), "nodes[0].cpu: must be a number >= 0"),
        (lambda log: log["pods"]["d/p1"].update(gpuModel=3), "gpuModel: must be null"),
    ],
)
def test_a_bad_log_is_refused_naming_the_field(change, message: str) -> None:
    log = _two_nodes()
    change(log)
    with pytest.raises(MetricsError) as error:
        compute(log)
    assert message in str(error.value)


def test_a_synthetic_log_is_consistent() -> None:
    m = compute(synthetic_log(nodes=60, pods=300, seed=3))
    pods = m["pods"]
    assert pods["scheduled"] + pods["never_scheduled"] == pods["arrived"] == 300
    assert all(0.0 <= v <= 1.0 for k in ("cpu", "memory", "gpu") for v in m["series"][k])
    assert all(0.0 <= v <= 1.0 for v in m["series"]["frag_fraction"])
    assert len(m["heatmap"]["values"]) == len(m["heatmap"]["nodes"]) == 50


def test_the_engines_logs_tell_packing_from_spreading(tmp_path: Path) -> None:
    """Logs written by the virtual-time engine (extender/replay/engine.py): the default profile
    (LeastAllocated) spreads the 60 pods, MostAllocated packs them onto fewer nodes."""
    from extender.replay.engine import replay

    from .test_engine import MOST_ALLOCATED, PROFILE, many_pods_trace

    (tmp_path / "default.yaml").write_text(PROFILE)
    (tmp_path / "most-allocated.yaml").write_text(MOST_ALLOCATED)
    trace = many_pods_trace()
    spread, packed = (
        compute(replay(trace, tmp_path / name)) for name in ("default.yaml", "most-allocated.yaml")
    )
    for m in (spread, packed):
        assert m["pods"]["scheduled"] == m["pods"]["arrived"] == 60
        assert m["queueing"]["p99"] == 0.0
        assert m["series"]["running"][-1] == 0  # every pod ran 100 s and left
    assert packed["means"]["nodes_in_use"] < spread["means"]["nodes_in_use"]
    # The same work: the same CPU allocated over time.
    assert packed["means"]["cpu"] == pytest.approx(spread["means"]["cpu"])


def test_the_window_start_leaves_the_idle_beginning_out_of_the_means() -> None:
    """One pod holding all CPU from 50 to 100: over [0, 100] the mean is 0.5, from 50 it is 1."""
    log = {
        "end": 100.0,
        "nodes": [{"name": "n", "cpu": 1000, "memory": 1, "labels": {}, "gpus": []}],
        "pods": {"d/a": {"cpu": 1000, "memory": 1, "gpus": 0, "gpuMilli": 0, "arrival": 50.0}},
        "events": [[50.0, "arrive", "d/a"], [50.0, "bind", "d/a", "n", []]],
    }
    assert compute(log)["means"]["cpu"] == pytest.approx(0.5)
    later = compute(log, start=50.0)
    assert later["means"]["cpu"] == pytest.approx(1.0)
    assert later["series"]["t"][0] == 50.0
    assert later["pods"]["scheduled"] == 1
    with pytest.raises(MetricsError, match="start: must be between 0"):
        compute(log, start=200.0)
