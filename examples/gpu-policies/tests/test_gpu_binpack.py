"""GPUBinPack on small clusters of plain dicts, in both GPU mappings, with the testing kit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpu_objects import (
    claim,
    dra_cluster,
    dra_node,
    dra_pod,
    ext_cluster,
    ext_node,
    ext_pod,
    gpu_slice,
)
from gpu_policies import GPUBinPack
from gpu_policies.gpus import GPUConfig, GPUView

from extender.framework import RESOURCE_CLAIMS, Lister, NodeInfo
from extender.testing import Cluster, ConfigError, handle, run_plugin, run_profile

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "scheduler-config" / "replay" / "gpu-binpack.yaml"


def scores(result) -> dict[str, int]:
    return {n: s["GPUBinPack"] for n, s in result.scores.items()}


# -- extended resource: whole GPUs -------------------------------------------------------------

EXT_NODES = [ext_node("busy", 4), ext_node("idle", 4), ext_node("big", 8), ext_node("cpu")]
EXT_USED = {"busy": 3, "big": 2}


def test_whole_gpu_pod_goes_to_the_node_with_fewest_gpus_left() -> None:
    result = run_plugin(GPUBinPack, ext_pod("p", 1), ext_cluster(EXT_NODES, EXT_USED))
    # 50 (the GPU it takes is whole) + 50 * node used after: busy 4/4, big 3/8, idle 1/4.
    assert scores(result) == {"busy": 100, "big": 68, "idle": 62, "cpu": 0}
    assert result.chosen == ["busy"]


def test_cpu_only_pod_prefers_nodes_without_gpus_then_busy_gpu_nodes() -> None:
    result = run_plugin(GPUBinPack, ext_pod("p"), ext_cluster(EXT_NODES, EXT_USED))
    # 100 without GPUs, else 50 * used before: busy 3/4, big 2/8, idle 0.
    assert scores(result) == {"cpu": 100, "busy": 37, "big": 12, "idle": 0}


def test_pod_that_does_not_fit_scores_zero() -> None:
    result = run_plugin(GPUBinPack, ext_pod("p", 2), ext_cluster(EXT_NODES, EXT_USED))
    assert scores(result)["busy"] == 0
    # big: 50 + 50 * 4/8, idle: 50 + 50 * 2/4, a tie.
    assert scores(result) == {"busy": 0, "big": 75, "idle": 75, "cpu": 0}
    assert result.chosen == ["big", "idle"]


# -- DRA: shared GPUs ------------------------------------------------------------------------


def test_shared_pod_goes_to_a_partly_used_gpu() -> None:
    cluster = dra_cluster(
        {"half": 2, "whole": 2, "free": 2},
        used={"half": [("gpu-0", 500)], "whole": [("gpu-0", 1000)]},
        pending=[claim("c", share=300)],
    )
    result = run_plugin(GPUBinPack, dra_pod("p", "c"), cluster)
    # half: gpu-0 500 -> 800 (40) and 800/2000 of the node (20); whole: gpu-1 0 -> 300 (15),
    # 1300/2000 (32); free: gpu-0 0 -> 300 (15), 300/2000 (7).
    assert scores(result) == {"half": 60, "whole": 47, "free": 22}
    assert result.chosen == ["half"]


def test_the_gpu_scored_is_the_allocators_first_fit_not_the_best_fit() -> None:
    # gpu-0 has 900 free, gpu-1 400: the allocator gives a 300 share gpu-0 (first that fits).
    cluster = dra_cluster(
        {"n": 2}, used={"n": [("gpu-0", 100), ("gpu-1", 600)]}, pending=[claim("c", share=300)]
    )
    result = run_plugin(GPUBinPack, dra_pod("p", "c"), cluster)
    # device gpu-0: 400/1000 -> 20; node (100 + 600 + 300)/2000 -> 25.
    assert scores(result) == {"n": 45}


def test_claim_of_an_assumed_pod_without_allocation_counts_as_first_fit() -> None:
    # A pod already on "n" whose claim has no allocation yet (in flight) takes 600 of gpu-0.
    cluster = dra_cluster({"n": 2, "m": 2}, pending=[claim("c", share=300), claim("flight", 600)])
    cluster.add(dra_pod("assumed", "flight", on="n"))
    result = run_plugin(GPUBinPack, dra_pod("p", "c"), cluster)
    # n: gpu-0 600 -> 900 (45), node 900/2000 (22); m: 300 (15), 300/2000 (7).
    assert scores(result) == {"n": 67, "m": 22}


def test_multi_gpu_claim_and_cpu_only_pods_with_dra() -> None:
    cluster = dra_cluster(
        {"used": 4, "free": 4},
        used={"used": [("gpu-0", 1000), ("gpu-1", 1000)]},
        cpu_nodes=["cpu"],
        pending=[claim("two", count=2)],
    )
    two = run_plugin(GPUBinPack, dra_pod("p", "two"), cluster)
    assert scores(two) == {"used": 100, "free": 75, "cpu": 0}
    cpu_only = run_plugin(GPUBinPack, dra_pod("q"), cluster)
    assert scores(cpu_only) == {"cpu": 100, "used": 25, "free": 0}


# -- args and the shipped config ----------------------------------------------------------------


def test_bad_args_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=re.escape("args: driverName: unknown field")):
        run_plugin(GPUBinPack, ext_pod("p"), ext_cluster(EXT_NODES), args={"driverName": "x"})


def test_config_builds_its_framework_with_the_plugin() -> None:
    # The config names the plugin; the package's entry point or `plugins=` registers it.
    result = run_profile(ext_pod("p"), ext_cluster([ext_node("n")]), CONFIG, plugins=[GPUBinPack])
    assert result.scores["n"]["GPUBinPack"] == 100
    assert result.weighted["n"]["GPUBinPack"] == 500
    assert "NodeResourcesFit" in result.scores["n"]  # the default profile is kept


def test_config_packs_whole_gpus_with_the_default_profile() -> None:
    cluster = ext_cluster(EXT_NODES, EXT_USED)
    result = run_profile(ext_pod("p", 1), cluster, CONFIG, plugins=[GPUBinPack])
    assert result.feasible == ["big", "busy", "idle"]  # NodeResourcesFit: no GPU on "cpu"
    assert result.chosen == ["busy"]
    assert result.weighted["busy"]["GPUBinPack"] == 500


def test_config_packs_shared_gpus_through_dynamic_resources() -> None:
    cluster = dra_cluster(
        {"half": 2, "free": 2},
        used={"half": [("gpu-0", 500)]},
        cpu_nodes=["cpu"],
        pending=[claim("c", share=300)],
    )
    result = run_profile(dra_pod("p", "c"), cluster, CONFIG, plugins=[GPUBinPack])
    assert result.rejected_by("cpu") == "DynamicResources"
    assert result.chosen == ["half"]


# -- the memos across cycles --------------------------------------------------------------------


def claims_of(*claims: dict) -> Lister:
    return handle(Cluster(objects={"resourceclaims.resource.k8s.io": list(claims)})).lister(
        RESOURCE_CLAIMS
    )


def test_view_keeps_nothing_stale_across_cycles() -> None:
    view = GPUView(GPUConfig())
    slices = [gpu_slice("n", 2)]
    devices = view.devices(slices)
    assert view.devices(list(slices)) is devices  # the same slice objects: not parsed again
    info = NodeInfo(dra_node("n"), [dra_pod("a", "c", on="n")])
    node = view.node(info, devices, claims_of(claim("c", share=600)))
    assert node.free == [400, 1000]  # in flight: the allocator's first fit, not kept
    claims = claims_of(claim("c", share=600, allocated=[("gpu-1", 600)], node_name="n"))
    node = view.node(info, devices, claims)
    assert node.free == [1000, 400]  # the allocation written: where it really went
    assert view.node(info, devices, claims) is node  # kept for this generation
    info.add_pod(dra_pod("b", "d", on="n"))  # a new generation
    assert view.node(info, devices, claims) is not node
    assert len(view.devices([gpu_slice("n", 3)])["n"]) == 3  # a changed slice is read again
