"""NodeResourcesBalancedAllocation (extender/plugins/noderesources/balanced_allocation.py):
the v1.36 balance-change score and Skip."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.status import Code
from extender.plugins.noderesources.balanced_allocation import (
    PRE_SCORE_KEY,
    NodeResourcesBalancedAllocation,
    balance_score,
    balanced_resource_scorer,
)
from tests.unit.builders import make_node, make_pod

from ..helpers import cycle, score_all

GI = 1024 * 1024 * 1024
GPU = "example.com/gpu"


def plugin(args: dict | None = None) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(args or {}, testing.handle())


def requesting(name: str, requests: dict[str, str], node: str | None = None) -> dict:
    return make_pod(
        name, node_name=node, containers=[{"name": "c", "resources": {"requests": requests}}]
    )


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        ([1500, 3 * GI], [4000, 8 * GI], 100),  # 0.375 / 0.375: perfectly balanced
        ([800, 2], [1000, 10], 70),  # 0.8 / 0.2 -> std 0.3
        ([6000, 0], [4000, 8], 50),  # fractions are capped at 1: 1 / 0 -> std 0.5
        ([1000, 0], [4000, 0], 100),  # one resource left -> std 0
        ([1000, 2, 0], [4000, 8, 4], 88),  # .25 .25 0: population std 0.1179 -> 88.2
        ([3000, 0, 1], [4000, 8, 4], 68),  # .75 0 .25: std 0.3118
    ],
)
def test_balance_score(requested: list[int], allocatable: list[int], expected: int) -> None:
    assert balance_score(requested, allocatable) == expected


def test_scorer_is_the_change_of_balance() -> None:
    # unchanged balance -> 75; from 87 to 100 -> 50 + (50 + 13) // 2 = 81 (truncated)
    assert balanced_resource_scorer([2, 2], [1, 1], [4, 4]) == 75
    assert balanced_resource_scorer([2000, 4], [1000, 4], [4000, 8]) == 81
    # the worst change possible (perfect -> fully skewed) still scores 50
    assert balanced_resource_scorer([4, 0], [0, 0], [4, 4]) == 50


def test_score_v136_on_a_node() -> None:
    node = make_node("n", cpu="4", memory="8Gi")
    used = make_pod("used", cpu="1", memory="4Gi", node_name="n")
    # without the pod: .25 / .5 -> std .125 -> 87
    # pod 1 cpu: .5 / .5 -> 100 -> 50 + (50 + 100 - 87) // 2 = 81
    assert score_all(plugin(), make_pod("p", cpu="1"), [node], [used]) == {"n": 81}
    # pod 2Gi memory: .25 / .75 -> std .25 -> 75 -> 50 + (50 + 75 - 87) // 2 = 69
    assert score_all(plugin(), make_pod("p", memory="2Gi"), [node], [used]) == {"n": 69}


def test_prefers_the_node_the_pod_balances() -> None:
    cpu_heavy = make_node("cpu-heavy", cpu="4", memory="8Gi")
    mem_heavy = make_node("mem-heavy", cpu="4", memory="8Gi")
    pods = [
        make_pod("a", cpu="3", memory="1Gi", node_name="cpu-heavy"),
        make_pod("b", cpu="500m", memory="6Gi", node_name="mem-heavy"),
    ]
    pod = make_pod("p", cpu="500m", memory="4Gi")
    # cpu-heavy: without .75/.125 -> 68; with .875/.625 -> 87 -> 50 + 69 // 2 = 84
    # mem-heavy: without .125/.75 -> 68; with .25/1.0 (capped) -> 62 -> 50 + 44 // 2 = 72
    assert score_all(plugin(), pod, [cpu_heavy, mem_heavy], pods) == {
        "cpu-heavy": 84,
        "mem-heavy": 72,
    }


def test_uses_actual_requests_not_non_zero_defaults() -> None:
    node = make_node("n", cpu="4", memory="8Gi")
    best_effort = make_pod("be", node_name="n")  # would count 100m / 200Mi for NodeResourcesFit
    # without: 0 / 0 -> 100; with: .5 / .5 -> 100 -> 50 + 50 // 2 = 75
    pod = make_pod("p", cpu="2", memory="4Gi")
    assert score_all(plugin(), pod, [node], [best_effort]) == {"n": 75}
    # a pod asking for cpu only (memory 0, not 200Mi): .5 / 0 -> 75 -> 50 + 25 // 2 = 62
    assert score_all(plugin(), make_pod("p", cpu="2"), [node], [best_effort]) == {"n": 62}


def test_extended_resource_only_counted_when_requested_and_offered() -> None:
    args = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}
    gpu_node = make_node("gpu", cpu="4", memory="8Gi", extra_allocatable={GPU: "4"})
    plain = make_node("plain", cpu="4", memory="8Gi")
    used = [
        make_pod("u1", cpu="1", memory="2Gi", node_name="gpu"),
        make_pod("u2", cpu="1", memory="2Gi", node_name="plain"),
    ]
    pod = requesting("p", {"cpu": "1", "memory": "2Gi", GPU: "2"})
    # gpu: without .25/.25/0 -> 88; with .5/.5/.5 -> 100 -> 50 + 62 // 2 = 81
    # plain: no gpu allocatable -> two resources: .25/.25 -> 100 both -> 75
    assert score_all(plugin(args), pod, [gpu_node, plain], used) == {"gpu": 81, "plain": 75}
    # without a gpu request the gpu is left out on both nodes
    no_gpu = make_pod("q", cpu="1", memory="2Gi")
    assert score_all(plugin(args), no_gpu, [gpu_node, plain], used) == {"gpu": 75, "plain": 75}


def test_best_effort_pod_skips() -> None:
    state, snapshot = cycle([make_node("n")])
    status = plugin().pre_score(state, make_pod("p"), snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP
    # requests outside the configured resources do not count
    storage_only = requesting("p", {"ephemeral-storage": "1Gi"})
    status = plugin().pre_score(state, storage_only, snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP
    # Score without PreScore state: 0 for a best-effort pod, as upstream
    assert plugin().score(CycleState(), make_pod("p"), snapshot.get("n")) == (0, None)


def test_prescore_state_and_score_without_it() -> None:
    pa = plugin()
    node = make_node("n", cpu="4", memory="8Gi")
    pod = make_pod("p", cpu="1")
    state, snapshot = cycle([node], [make_pod("used", cpu="1", memory="4Gi", node_name="n")])
    assert pa.pre_score(state, pod, snapshot.node_info_list) is None
    assert state.read(PRE_SCORE_KEY).pod_requests == [1000, 0]
    assert state.clone().read(PRE_SCORE_KEY).pod_requests == [1000, 0]
    info = snapshot.get("n")
    assert pa.score(state, pod, info) == pa.score(CycleState(), pod, info) == (81, None)
    assert pa.score_extensions() is None
