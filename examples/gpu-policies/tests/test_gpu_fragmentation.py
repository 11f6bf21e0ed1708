"""GPUFragmentation (FGD) on small clusters of plain dicts, in both GPU mappings."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from gpu_objects import MODEL_LABEL, claim, dra_cluster, dra_pod, ext_cluster, ext_node, ext_pod
from gpu_policies import GPUBinPack, GPUFragmentation, TaskType, node_fragmentation
from gpu_policies.fragmentation import Distribution, task_type
from gpu_policies.gpus import GPUConfig, pod_gpus

from extender.framework import RESOURCE_CLAIMS, Lister
from extender.replay.metrics import compute  # kube-extender's report, not a plugin API
from extender.testing import (
    Cluster,
    ConfigError,
    apiserver_defaults,
    handle,
    run_plugin,
    run_profile,
)

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "scheduler-config" / "replay" / "gpu-fgd.yaml"
NAME = "GPUFragmentation"
GIB = 2**30


def scores(result) -> dict[str, int]:
    return {n: s[NAME] for n, s in result.scores.items()}


# -- the fragmentation of one node ------------------------------------------------------------


def dist(*weighted: tuple[TaskType, float]) -> Distribution:
    return Distribution.of(dict(weighted), 64)


def test_fragmentation_counts_what_each_task_type_cannot_use() -> None:
    half = TaskType(cpu=4000, gpus=1, milli=500, memory=GIB)
    two = TaskType(cpu=4000, gpus=2, milli=1000)
    cpu = TaskType(cpu=1000, gpus=0, milli=0)
    d = dist((half, 2), (two, 1), (cpu, 1))  # p = 0.5, 0.25, 0.25
    free = [300, 1000, 600, 0]  # 1900 free
    # half: fits; its fragment is the GPUs with less than 500 free: 300.
    # two: only one GPU with 1000 free: all 1900. cpu-only: all 1900.
    expected = 0.5 * 300 + 0.25 * 1900 * 2
    assert node_fragmentation(d, free, "V100", 8000, GIB) == pytest.approx(expected)
    # Without the CPU, or the memory, no GPU task fits: everything is a fragment.
    assert node_fragmentation(d, free, "V100", 2000, GIB) == pytest.approx(1900)
    assert node_fragmentation(d, free, "V100", 8000, GIB - 1) == pytest.approx(1900)
    # A node without free GPUs has no fragmentation.
    assert node_fragmentation(d, [0, 0], "V100", 8000, GIB) == 0


def test_fragmentation_of_a_model_the_type_does_not_accept_is_everything() -> None:
    d = dist((TaskType(0, 1, 1000, frozenset({"A100"})), 1))
    assert node_fragmentation(d, [1000, 1000], "V100", 8000, 0) == 2000
    assert node_fragmentation(d, [1000, 1000], "A100", 8000, 0) == 0


# -- extended resource: whole GPUs -------------------------------------------------------------

NODES = [ext_node("one-left", 4), ext_node("two-left", 4), ext_node("empty", 4)]
USED = {"one-left": 3, "two-left": 2}


def test_whole_gpu_pod_closes_a_fragment_instead_of_opening_one() -> None:
    # A workload of 2-GPU pods only: a lone free GPU is a fragment.
    args = {"taskTypes": [{"cpu": "1", "gpus": 2}]}
    cluster = ext_cluster([*NODES, ext_node("cpu")], USED)
    result = run_plugin(GPUFragmentation, ext_pod("p", 1), cluster, args=args)
    # one-left: 1000 -> 0 (+1000); two-left: 0 -> 1000 (-1000); empty: 0 -> 0 (0); no GPU on
    # "cpu" (the kit runs the plugin alone, NodeResourcesFit would have filtered it): 0.
    assert scores(result) == {"one-left": 100, "empty": 50, "two-left": 0, "cpu": 0}


def test_learnt_distribution_from_the_pods_on_the_nodes_and_the_pod() -> None:
    # Three 2-GPU pods run on "full": with the pods of USED (3 and 2 GPUs) and the pod (1 GPU)
    # the workload is 1/6 three-GPU, 4/6 two-GPU and 1/6 one-GPU pods.
    nodes = [*NODES, ext_node("full", 6)]
    cluster = ext_cluster(nodes, USED)
    for i in range(3):
        cluster.add(ext_pod(f"two-{i}", 2, on="full"))
    result = run_plugin(GPUFragmentation, ext_pod("p", 1), cluster)
    # one-left: 1000 * 5/6 -> 0 (+833); two-left: 2000 * 1/6 -> 1000 * 5/6 (-500); empty:
    # 0 -> 0; full has no GPU left for it. Normalized: (x + 500) * 100 // 1333.
    assert scores(result) == {"one-left": 100, "empty": 37, "two-left": 0, "full": 0}


def test_cpu_only_pod_goes_where_its_cpu_strands_no_gpu() -> None:
    nodes = [ext_node("small", 2, cpu="8"), ext_node("large", 2, cpu="64"), ext_node("cpu")]
    args = {"taskTypes": [{"cpu": "4", "gpus": 1}]}
    result = run_plugin(GPUFragmentation, ext_pod("p", cpu="6"), ext_cluster(nodes), args=args)
    # small: 2 CPUs left, no room for a 4-CPU GPU task: its 2000 free milli-GPUs are stranded.
    assert scores(result) == {"cpu": 100, "large": 100, "small": 0}


# -- DRA: shared GPUs ----------------------------------------------------------------------


def test_shared_pod_fills_the_sliver_a_half_gpu_task_cannot_use() -> None:
    cluster = dra_cluster(
        {"sliver": 2, "roomy": 2, "free": 2},
        used={"sliver": [("gpu-0", 700)], "roomy": [("gpu-0", 400)]},
        pending=[claim("c", share=300)],
    )
    args = {"taskTypes": [{"gpus": 1, "gpuMilli": 500}]}
    result = run_plugin(GPUFragmentation, dra_pod("p", "c"), cluster, args=args)
    # sliver: gpu-0's 300 free is a fragment for a 500 task, the pod fills it (+300);
    # roomy: gpu-0 600 -> 300 becomes one (-300); free: 1000 -> 700 is not (0).
    assert scores(result) == {"sliver": 100, "free": 50, "roomy": 0}


def test_learnt_shared_distribution_and_pod_that_does_not_fit() -> None:
    cluster = dra_cluster(
        {"sliver": 1, "full": 1},
        used={"sliver": [("gpu-0", 700)], "full": [("gpu-0", 1000)]},
        pending=[claim("c", share=300)],
    )
    result = run_plugin(GPUFragmentation, dra_pod("p", "c"), cluster)
    # Learnt: the running whole-GPU pods and the pod: the sliver's 300 is a fragment for the
    # whole-GPU type and the pod uses it up; "full" has no room: 0.
    assert scores(result) == {"sliver": 100, "full": 0}


def test_equal_increase_everywhere_scores_100() -> None:
    cluster = dra_cluster({"a": 1, "b": 1}, pending=[claim("c", share=1000)])
    result = run_plugin(GPUFragmentation, dra_pod("p", "c"), cluster)
    assert scores(result) == {"a": 100, "b": 100}


# -- args and the shipped config ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"taskTypes": [{"gpuMilli": 0}]}, "taskTypes[0].gpuMilli: Must be greater than"),
        ({"taskTypes": [{"cpu": "lots"}]}, "taskTypes[0].cpu: must be a quantity"),
        ({"taskTypes": [{"memory": "-1Gi"}]}, "taskTypes[0].memory: must not be negative"),
        ({"taskTypes": [{"weight": 0}]}, "taskTypes[0].weight: Must be greater than 0"),
        ({"maxTaskTypes": 0}, "maxTaskTypes: Must be greater than or equal to 1"),
        ({"taskType": []}, "taskType: unknown field"),
    ],
)
def test_bad_args_are_config_errors(args: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        run_plugin(GPUFragmentation, ext_pod("p"), ext_cluster(NODES), args=args)


def test_config_builds_its_framework_with_the_plugin() -> None:
    # The config names the plugin; the package's entry point or `plugins=` registers it.
    result = run_profile(
        ext_pod("p"), ext_cluster([ext_node("n")]), CONFIG, plugins=[GPUFragmentation]
    )
    assert result.scores["n"][NAME] == 100
    assert result.weighted["n"][NAME] == 500
    assert "NodeResourcesFit" in result.scores["n"]  # the default profile is kept


def test_config_with_dynamic_resources_places_the_shared_pod_on_the_sliver() -> None:
    cluster = dra_cluster(
        {"sliver": 2, "roomy": 2, "busy": 2},
        used={"sliver": [("gpu-0", 700)], "roomy": [("gpu-0", 400)]},
        cpu_nodes=["cpu"],
        pending=[claim("c", share=300)],
    )
    for i in range(4):  # a workload of half-GPU pods, filling up "busy"
        name = f"half-{i}"
        device = f"gpu-{i // 2}"
        cluster.add(claim(name, share=500, allocated=[(device, 500)], node_name="busy"))
        cluster.add(dra_pod(name, name, on="busy"))
    result = run_profile(dra_pod("p", "c"), cluster, CONFIG, plugins=[GPUFragmentation])
    assert result.rejected_by("cpu") == "DynamicResources"
    assert result.rejected_by("busy") == "DynamicResources"
    # Learnt: whole GPUs 2/7, half GPUs 4/7, the pod's 300 1/7. sliver [300, 1000] -> [0, 1000]
    # closes a fragment (+257); roomy [600, 1000] -> [300, 1000] opens one for the halves (-86).
    assert result.scores["sliver"][NAME] == 100
    assert result.scores["roomy"][NAME] == 0
    assert result.chosen == ["sliver"]


# -- the GPU models a pod accepts (its task type's) ---------------------------------------------


def test_models_from_a_claim_selector_and_from_node_selection() -> None:
    config = GPUConfig()
    no_claims = claims_lister()
    shared = claim("c", share=500, model="A100")
    demand = pod_gpus(dra_pod("p", "c"), claims_lister(shared), config)
    assert (demand.count, demand.dra, demand.models) == (1, True, frozenset({"A100"}))
    assert task_type(demand, 1000) == TaskType(1000, 1, 500, frozenset({"A100"}))
    # As the apiserver stores them: the GPU limits are the requests too.
    picked = apiserver_defaults(ext_pod("p", 2))
    picked["spec"]["nodeSelector"] = {MODEL_LABEL: "V100"}
    assert pod_gpus(picked, no_claims, config).models == frozenset({"V100"})
    either = apiserver_defaults(ext_pod("p", 1))
    term = {"matchExpressions": [{"key": MODEL_LABEL, "operator": "In", "values": ["T4", "P100"]}]}
    either["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert pod_gpus(either, no_claims, config).models == frozenset({"T4", "P100"})
    assert pod_gpus(ext_pod("p"), no_claims, config).wants_gpus is False


def claims_lister(*claims: dict) -> Lister:
    return handle(Cluster(objects={"resourceclaims.resource.k8s.io": list(claims)})).lister(
        RESOURCE_CLAIMS
    )


@pytest.mark.parametrize("plugin", [GPUBinPack, GPUFragmentation])
def test_a_profile_that_enables_only_score_works(plugin: type) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "only-score",
                "plugins": {
                    "multiPoint": {"disabled": [{"name": "*"}]},
                    "score": {"enabled": [{"name": plugin.name}]},
                },
            }
        ],
    }
    result = run_profile(ext_pod("p", 1), ext_cluster(NODES, USED), config, plugins=[plugin])
    assert result.error is None
    assert result.chosen == ["one-left"]


# -- the same fragmentation as the replay report measures ----------------------------------------


def test_node_fragmentation_is_the_replay_metrics() -> None:
    """What GPUFragmentation minimises is what `kube-extender replay` reports (its FGD metric,
    extender.replay.metrics, read through its public `compute`): one node, one workload."""
    gib = 2**30
    shapes = [  # (cpu milli, memory, gpus, milli, models): the workload's pods
        (4000, 8 * gib, 1, 300, None),
        (4000, 8 * gib, 1, 300, None),
        (8000, 16 * gib, 1, 500, ["V100"]),
        (16000, 32 * gib, 2, 1000, None),
        (2000, 4 * gib, 0, 0, None),
        (32000, 8 * gib, 1, 1000, ["A100"]),
    ]
    pods = {
        f"default/p{i}": {"cpu": c, "memory": m, "gpus": g, "gpuMilli": s, "gpuModel": models}
        for i, (c, m, g, s, models) in enumerate(shapes)
    }
    # On the node: p0 on gpu-0 (300), p2 on gpu-1 (500), p3 on gpu-2 and gpu-3.
    bound = [("p0", [0], 300), ("p2", [1], 500), ("p3", [2, 3], 1000)]
    events: list[list] = [[0.0, "arrive", key] for key in pods]
    for name, gpus, share in bound:
        taken = [[f"n/gpu-{i}", share] for i in gpus]
        events.append([0.0, "bind", f"default/{name}", "n", taken])
    cpu, memory = 48000, 128 * gib
    gpus = [{"id": f"n/gpu-{i}", "model": "V100", "milli": 1000} for i in range(5)]
    log = {
        "version": 1,
        "policy": "p",
        "nodes": [{"name": "n", "cpu": cpu, "memory": memory, "labels": {}, "gpus": gpus}],
        "pods": pods,
        "events": events,
        "end": 1.0,
    }
    measured = compute(log)["fragmentation"]["end_gpus"]

    counts = Counter(TaskType(c, g, s, frozenset(models or ()), m) for c, m, g, s, models in shapes)
    dist = Distribution.of(dict(counts), 64)
    used_cpu = sum(shapes[int(n[1:])][0] for n, _, _ in bound)
    used_memory = sum(shapes[int(n[1:])][1] for n, _, _ in bound)
    free = [700, 500, 0, 0, 1000]
    ours = node_fragmentation(dist, free, "V100", cpu - used_cpu, memory - used_memory)
    assert ours > 0
    assert measured == pytest.approx(ours / 1000)
