"""NodeResourcesFit (extender/plugins/noderesources/fit.py): filter reasons/codes, scores per
strategy through the plugin, PreFilter/PreScore state, queueing hints."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, QueueingHint, Resource
from extender.framework.node_info import NodeInfo
from extender.framework.resources import Resource as Amounts
from extender.framework.status import Code
from extender.plugins.noderesources.fit import (
    PRE_FILTER_KEY,
    PRE_SCORE_KEY,
    InsufficientResource,
    NodeResourcesFit,
    insufficient_resources,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_event,
)
from tests.unit.builders import make_node, make_pod

from ..helpers import cycle, filter_all, score_all

MI = 1024 * 1024
GI = 1024 * MI
UNSCHED = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def fit(args: dict | None = None) -> NodeResourcesFit:
    return NodeResourcesFit(args or {}, testing.handle())


def strategy(kind: str, resources: list | None = None, shape: list | None = None) -> dict:
    body: dict = {"type": kind}
    if resources is not None:
        body["resources"] = resources
    if shape is not None:
        body["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": s} for u, s in shape]
        }
    return {"scoringStrategy": body}


def pod_with(requests: dict[str, str], name: str = "p") -> dict:
    """A one-container pod requesting ``requests``."""
    return make_pod(name, containers=[{"name": "c", "resources": {"requests": requests}}])


def placed(name: str, node: str, requests: dict[str, str]) -> dict:
    pod = pod_with(requests, name)
    pod["spec"]["nodeName"] = node
    return pod


# -- Filter -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (make_pod("p", cpu="1"), None),
        (make_pod("p", cpu="2", memory="4Gi"), None),  # exactly what is left
        (make_pod("p", cpu="2001m"), (UNSCHED, ("Insufficient cpu",))),
        (
            make_pod("p", cpu="3", memory="5Gi"),
            (UNSCHED, ("Insufficient cpu", "Insufficient memory")),
        ),
        # more than the whole node: no eviction could help
        (make_pod("p", cpu="5"), (UNRESOLVABLE, ("Insufficient cpu",))),
        # one unresolvable shortfall makes the whole status unresolvable
        (
            make_pod("p", cpu="3", memory="9Gi"),
            (UNRESOLVABLE, ("Insufficient cpu", "Insufficient memory")),
        ),
        (make_pod("p"), None),  # best-effort pods always fit (pod count aside)
    ],
)
def test_filter_cpu_memory(pod: dict, expected: tuple | None) -> None:
    node = make_node("n", cpu="4", memory="8Gi")
    used = make_pod("used", cpu="2", memory="4Gi", node_name="n")
    assert filter_all(fit(), pod, [node], [used])["n"] == expected


def test_filter_lists_every_shortfall_in_upstream_order() -> None:
    extra = {"ephemeral-storage": "2Gi", "example.com/gpu": "2"}
    node = make_node("n", cpu="4", memory="8Gi", pods="1", extra_allocatable=extra)
    used = placed(
        "used",
        "n",
        {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "2Gi", "example.com/gpu": "2"},
    )
    pod = pod_with(
        {"cpu": "3", "memory": "5Gi", "ephemeral-storage": "1Gi", "example.com/gpu": "1"}
    )
    assert filter_all(fit(), pod, [node], [used])["n"] == (
        UNSCHED,
        (
            "Too many pods",
            "Insufficient cpu",
            "Insufficient memory",
            "Insufficient ephemeral-storage",
            "Insufficient example.com/gpu",
        ),
    )


def test_too_many_pods_is_resolvable_even_for_a_zero_pod_node() -> None:
    assert filter_all(fit(), make_pod("p"), [make_node("n", pods="0")])["n"] == (
        UNSCHED,
        ("Too many pods",),
    )
    full = make_node("n", pods="2")
    existing = [make_pod("a", node_name="n"), make_pod("b", node_name="n")]
    assert filter_all(fit(), make_pod("p", cpu="1"), [full], existing)["n"] == (
        UNSCHED,
        ("Too many pods",),
    )
    assert filter_all(fit(), make_pod("p"), [full], existing[:1])["n"] is None


def test_ephemeral_storage() -> None:
    node = make_node("n", extra_allocatable={"ephemeral-storage": "10Gi"})
    used = placed("used", "n", {"ephemeral-storage": "4Gi"})
    assert filter_all(fit(), pod_with({"ephemeral-storage": "6Gi"}), [node], [used])["n"] is None
    assert filter_all(fit(), pod_with({"ephemeral-storage": "7Gi"}), [node], [used])["n"] == (
        UNSCHED,
        ("Insufficient ephemeral-storage",),
    )
    # the node reports no ephemeral storage at all
    assert filter_all(fit(), pod_with({"ephemeral-storage": "1"}), [make_node("m")])["m"] == (
        UNRESOLVABLE,
        ("Insufficient ephemeral-storage",),
    )


def test_extended_and_hugepages_resources() -> None:
    node = make_node("n", extra_allocatable={"example.com/gpu": "2", "hugepages-2Mi": "8Mi"})
    used = placed("used", "n", {"example.com/gpu": "1"})
    assert filter_all(fit(), pod_with({"example.com/gpu": "1"}), [node], [used])["n"] is None
    assert filter_all(fit(), pod_with({"example.com/gpu": "2"}), [node], [used])["n"] == (
        UNSCHED,
        ("Insufficient example.com/gpu",),
    )
    assert filter_all(fit(), pod_with({"example.com/gpu": "3"}), [node], [used])["n"] == (
        UNRESOLVABLE,
        ("Insufficient example.com/gpu",),
    )
    assert filter_all(fit(), pod_with({"hugepages-2Mi": "10Mi"}), [node])["n"] == (
        UNRESOLVABLE,
        ("Insufficient hugepages-2Mi",),
    )
    # a resource the node does not have at all, and a zero request (never checked)
    assert filter_all(fit(), pod_with({"vendor.io/fpga": "1"}), [node])["n"] == (
        UNRESOLVABLE,
        ("Insufficient vendor.io/fpga",),
    )
    assert filter_all(fit(), pod_with({"vendor.io/fpga": "0"}), [node])["n"] is None


def test_ignored_resources_and_groups_only_apply_to_extended_resources() -> None:
    args = {
        "ignoredResources": ["example.com/fpga", "hugepages-2Mi"],
        "ignoredResourceGroups": ["vendor.io"],
    }
    node = make_node("n")
    pod = pod_with({"example.com/fpga": "1", "vendor.io/x": "2", "example.com/gpu": "1"})
    assert filter_all(fit(args), pod, [node])["n"] == (
        UNRESOLVABLE,
        ("Insufficient example.com/gpu",),
    )
    # hugepages are not an extended resource: ignoring them has no effect
    assert filter_all(fit(args), pod_with({"hugepages-2Mi": "2Mi"}), [node])["n"] == (
        UNRESOLVABLE,
        ("Insufficient hugepages-2Mi",),
    )
    assert filter_all(fit(args), pod_with({"vendor.io/x": "5", "cpu": "1"}), [node])["n"] is None


def sidecar_pod() -> dict:
    # regular: 500m/256Mi + 250m/0; sidecar first: 200m/128Mi; then an init container 1/512Mi.
    # running: 950m / 384Mi; init peak: 1000m + 200m / 512Mi + 128Mi = 1200m / 640Mi;
    # max -> 1200m / 640Mi; + overhead 100m / 64Mi -> 1300m / 704Mi.
    return make_pod(
        "p",
        containers=[
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
        ],
        initContainers=[
            {
                "name": "side",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "200m", "memory": "128Mi"}},
            },
            {"name": "init", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
        ],
        overhead={"cpu": "100m", "memory": "64Mi"},
    )


def test_prefilter_state_holds_init_sidecar_and_overhead_requests() -> None:
    state, snapshot = cycle([make_node("n")])
    result, status = fit().pre_filter(state, sidecar_pod(), snapshot.node_info_list)
    assert (result, status) == (None, None)
    stored = state.read(PRE_FILTER_KEY)
    assert stored.request == Amounts(milli_cpu=1300, memory=704 * MI)
    assert state.clone().read(PRE_FILTER_KEY).request == stored.request
    assert fit().pre_filter_extensions() is None


def test_filter_uses_init_sidecar_and_overhead_requests() -> None:
    nodes = [
        make_node("ok", cpu="1300m", memory="704Mi"),
        make_node("cpu", cpu="1299m", memory="704Mi"),
        make_node("mem", cpu="1300m", memory="703Mi"),
    ]
    assert filter_all(fit(), sidecar_pod(), nodes) == {
        "ok": None,
        "cpu": (UNRESOLVABLE, ("Insufficient cpu",)),
        "mem": (UNRESOLVABLE, ("Insufficient memory",)),
    }


def test_pod_level_requests_replace_container_sum() -> None:
    pod = make_pod("p", cpu="500m", resources={"requests": {"cpu": "2"}})
    result = filter_all(fit(), pod, [make_node("big", cpu="2"), make_node("small", cpu="1500m")])
    assert result == {"big": None, "small": (UNRESOLVABLE, ("Insufficient cpu",))}


def test_filter_without_prefilter_is_an_error() -> None:
    _, snapshot = cycle([make_node("n")])
    status = fit().filter(CycleState(), make_pod("p", cpu="1"), snapshot.get("n"))
    assert status is not None and status.code == Code.ERROR


def test_insufficient_resources_function_reports_amounts() -> None:
    info = NodeInfo(make_node("n", cpu="4", memory="8Gi"), [placed("u", "n", {"cpu": "3"})])
    request = Amounts(milli_cpu=2000, memory=GI)
    assert insufficient_resources(request, info) == [
        InsufficientResource("cpu", "Insufficient cpu", 2000, 3000, 4000, unresolvable=False)
    ]
    gpu = Amounts(scalar={"example.com/gpu": 1})
    assert insufficient_resources(gpu, info, ignored_resources={"example.com/gpu"}) == []
    assert insufficient_resources(gpu, info, ignored_resource_groups={"example.com"}) == []


# -- Score --------------------------------------------------------------------------------------

# Node 4 cpu / 8Gi with two pods: one asking 1 cpu / 2Gi, one asking nothing (counted as
# 100m / 200Mi for scoring). Non-zero requested: 1100m / 2248Mi.


def scored(args: dict | None, pod: dict) -> int:
    node = make_node("n", cpu="4", memory="8Gi")
    pods = [make_pod("a", cpu="1", memory="2Gi", node_name="n"), make_pod("b", node_name="n")]
    return score_all(fit(args), pod, [node], pods)["n"]


def test_least_allocated_spec_worked_example() -> None:
    node = make_node("n", cpu="4", memory="8Gi")
    used = make_pod("used", cpu="1", memory="2Gi", node_name="n")
    pod = make_pod("p", cpu="500m", memory="1Gi")
    assert score_all(fit(), pod, [node], [used]) == {"n": 62}


POD_2CPU_512MI = make_pod("p", cpu="2", memory="512Mi")
# with the pod: cpu 3100m of 4000m, memory 2760Mi of 8192Mi


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # cpu (4000-3100)*100//4000 = 22; memory (8192-2760)*100//8192 = 66; (22+66)//2 = 44
        ({}, 44),
        (strategy("LeastAllocated", [{"name": "cpu", "weight": 3}, {"name": "memory"}]), 33),
        # cpu 3100*100//4000 = 77; memory 2760*100//8192 = 33; (77+33)//2 = 55
        (strategy("MostAllocated"), 55),
        (strategy("MostAllocated", [{"name": "memory", "weight": 5}]), 33),
        # utilization 77 / 33 through (0,0)-(100,100): 77, 33 -> round(55.0)
        (strategy("RequestedToCapacityRatio", shape=[(0, 0), (100, 10)]), 55),
        (
            strategy(
                "RequestedToCapacityRatio",
                [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                [(0, 0), (100, 10)],
            ),
            62,  # round((77*2 + 33) / 3) = round(62.33)
        ),
        # spreading shape: 100-77 = 23, 100-33 = 67 -> 45
        (strategy("RequestedToCapacityRatio", shape=[(0, 10), (100, 0)]), 45),
        # (0,100),(30,50),(100,0): cpu 50 + trunc(-50*47/70 = -33.6) = 17;
        # memory 50 + trunc(-50*3/70 = -2.1) = 48; round(32.5) = 33 (half away from zero)
        (strategy("RequestedToCapacityRatio", shape=[(0, 10), (30, 5), (100, 0)]), 33),
        # memory scores 0 and is left out of the average: cpu 100*(77-50)//50 = 54 alone
        (strategy("RequestedToCapacityRatio", shape=[(0, 0), (50, 0), (100, 10)]), 54),
        # below the first point -> the first point's score
        (strategy("RequestedToCapacityRatio", shape=[(80, 2), (90, 10)]), 20),
    ],
)
def test_strategies(args: dict, expected: int) -> None:
    assert scored(args, POD_2CPU_512MI) == expected


def test_best_effort_pod_counts_non_zero_defaults() -> None:
    node = make_node("n", cpu="4", memory="8Gi")
    # cpu (4000-100)*100//4000 = 97; memory (8192-200)*100//8192 = 97
    assert score_all(fit(), make_pod("p"), [node]) == {"n": 97}
    # 100*100//4000 = 2; 200*100//8192 = 2
    assert score_all(fit(strategy("MostAllocated")), make_pod("p"), [node]) == {"n": 2}


def test_over_capacity_requests() -> None:
    node = make_node("n", cpu="1", memory="8Gi")
    pod = make_pod("p", cpu="2", memory="8Gi")
    cpu_only = [{"name": "cpu", "weight": 1}]
    assert score_all(fit(strategy("LeastAllocated", cpu_only)), pod, [node]) == {"n": 0}
    assert score_all(fit(strategy("MostAllocated", cpu_only)), pod, [node]) == {"n": 100}
    rtcr = strategy("RequestedToCapacityRatio", cpu_only, [(0, 0), (50, 7), (100, 3)])
    assert score_all(fit(rtcr), pod, [node]) == {"n": 30}  # shape(100)


def test_extended_resource_scoring_skips_unrequested_or_absent_resources() -> None:
    args = strategy(
        "LeastAllocated", [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 2}]
    )
    gpu_node = make_node("gpu", cpu="4", extra_allocatable={"example.com/gpu": "8"})
    plain = make_node("plain", cpu="4")
    used = make_pod(
        "u",
        node_name="gpu",
        containers=[{"name": "c", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}}],
    )
    pod = make_pod(
        "p",
        containers=[{"name": "c", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}}],
    )
    # gpu: cpu (4000-2000)*100//4000 = 50, gpu (8-2)*100//8 = 75 -> (50 + 150)//3 = 66
    # plain: the node has no gpu -> cpu only: (4000-1000)*100//4000 = 75
    assert score_all(fit(args), pod, [gpu_node, plain], [used]) == {"gpu": 66, "plain": 75}
    # a pod without a gpu request: the gpu is left out everywhere -> cpu only
    assert score_all(fit(args), make_pod("q", cpu="1"), [gpu_node, plain], [used]) == {
        "gpu": 50,
        "plain": 75,
    }


def test_prescore_state_and_score_without_it() -> None:
    plugin = fit()
    pod = make_pod("p", memory="1Gi")
    state, snapshot = cycle([make_node("n")])
    assert plugin.pre_score(state, pod, snapshot.node_info_list) is None
    assert state.read(PRE_SCORE_KEY).pod_requests == [100, GI]  # cpu defaulted to 100m
    info = snapshot.get("n")
    assert plugin.score(state, pod, info) == plugin.score(CycleState(), pod, info) == (92, None)
    assert plugin.score_extensions() is None


# -- events and queueing hints ------------------------------------------------------------------


def test_events_to_register() -> None:
    events = fit().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        # DRAExtendedResource (on in v1.36).
        (Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
    ]
    assert all(e.hint is not None for e in events)


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_pod_deletion_hint() -> None:
    target = make_pod("target", cpu="1")
    assert is_schedulable_after_pod_event(target, make_pod("gone", cpu="1"), None) == SKIP
    assigned = make_pod("gone", cpu="1", node_name="n")
    assert is_schedulable_after_pod_event(target, assigned, None) == QUEUE
    nominated = make_pod("gone", cpu="1")
    nominated["status"]["nominatedNodeName"] = "n"
    assert is_schedulable_after_pod_event(target, nominated, None) == QUEUE


def test_pod_scale_down_hint() -> None:
    target = make_pod("target", cpu="1")
    before = make_pod("other", cpu="2", memory="2Gi", node_name="n", uid="o")
    cpu_down = make_pod("other", cpu="1", memory="2Gi", node_name="n", uid="o")
    mem_down = make_pod("other", cpu="2", memory="1Gi", node_name="n", uid="o")
    assert is_schedulable_after_pod_event(target, before, cpu_down) == QUEUE
    # the target does not request memory: a memory scale-down cannot help it
    assert is_schedulable_after_pod_event(target, before, mem_down) == SKIP
    # an unscheduled pod shrinking frees nothing
    pending_before = make_pod("other", cpu="2", uid="o")
    pending_after = make_pod("other", cpu="1", uid="o")
    assert is_schedulable_after_pod_event(target, pending_before, pending_after) == SKIP
    # the target itself shrinking always helps
    me = make_pod("target", cpu="1", uid="me")
    assert is_schedulable_after_pod_event(me, make_pod("target", cpu="2", uid="me"), me) == QUEUE


def test_node_change_hint() -> None:
    pod = make_pod("p", cpu="3")
    small = make_node("n", cpu="2", memory="8Gi")
    big = make_node("n", cpu="4", memory="8Gi")
    assert is_schedulable_after_node_change(pod, None, big) == QUEUE
    assert is_schedulable_after_node_change(pod, None, small) == SKIP
    assert is_schedulable_after_node_change(pod, small, big) == QUEUE
    # fits, but nothing the pod needs grew
    more_memory = make_node("n", cpu="4", memory="16Gi")
    assert is_schedulable_after_node_change(pod, big, more_memory) == SKIP
    more_pods = make_node("n", cpu="4", memory="8Gi", pods="200")
    assert is_schedulable_after_node_change(pod, big, more_pods) == QUEUE
    # grew, but still too small
    assert is_schedulable_after_node_change(pod, make_node("n", cpu="1"), small) == SKIP
    gpu_pod = pod_with({"example.com/gpu": "1"})
    with_gpu = make_node("n", extra_allocatable={"example.com/gpu": "1"})
    assert is_schedulable_after_node_change(gpu_pod, make_node("n"), with_gpu) == QUEUE


def test_score_reads_container_requests_even_with_pod_level_ones() -> None:
    """Upstream v1.36's scoring strategies build their scorer without the PodLevelResources
    gate (``fit.go`` getScorer), so Score counts the containers' non-zero requests where the
    Filter and BalancedAllocation count the pod-level ones. Seen in kube-scheduler's log (v=10)
    for this pod on an empty 4 cpu / 8Gi node: requestedResource=[200,1283457024] score 90."""
    from extender.plugins.noderesources.balanced_allocation import (
        NodeResourcesBalancedAllocation,
    )

    pod = make_pod(
        "p",
        containers=[{"name": "c0", "image": "pause"}],
        initContainers=[
            {
                "name": "sidecar",
                "image": "db",
                "restartPolicy": "Always",
                "resources": {"requests": {"memory": "1Gi"}},
            }
        ],
        resources={"requests": {"cpu": "200m", "memory": "5435817984"}},
    )
    node = make_node("n", cpu="4", memory="8Gi")
    # cpu (4000 - 200) / 4000 = 95, memory (8Gi - 1Gi - 200Mi) / 8Gi = 85: mean 90.
    assert score_all(fit(), pod, [node], [])["n"] == 90
    balanced = NodeResourcesBalancedAllocation({}, testing.handle())
    assert score_all(balanced, pod, [node], [])["n"] == 60  # the pod-level 5435817984
