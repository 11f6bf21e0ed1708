"""NodeResourcesFit and NodeResourcesBalancedAllocation (spec §7.6, §7.7)."""

from __future__ import annotations

import pytest

from extender.framework.status import Code
from extender.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from extender.plugins.node_resources_fit import NodeResourcesFit
from tests.unit.builders import make_node, make_pod

from .helpers import filter_all, score_all

GI = "Gi"


def fit(args: dict | None = None) -> NodeResourcesFit:
    return NodeResourcesFit(args or {}, None)


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (make_pod("p", cpu="1"), None),
        (make_pod("p", cpu="3"), (Code.UNSCHEDULABLE, ("Insufficient cpu",))),
        (
            make_pod("p", cpu="3", memory="7Gi"),
            (Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory")),
        ),
        # more than the whole node: no eviction can help
        (make_pod("p", cpu="5"), (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",))),
        (
            make_pod(
                "p", containers=[{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}]
            ),
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/gpu",)),
        ),
        (make_pod("p"), None),
    ],
)
def test_fit_filter(pod, expected) -> None:  # noqa: ANN001
    node = make_node("n", cpu="4", memory="8Gi")
    used = make_pod("used", cpu="2", memory="4Gi", node_name="n")
    assert filter_all(fit(), pod, [node], [used])["n"] == expected


def test_fit_too_many_pods() -> None:
    node = make_node("n", pods="1")
    result = filter_all(fit(), make_pod("p"), [node], [make_pod("old", node_name="n")])
    assert result["n"] == (Code.UNSCHEDULABLE, ("Too many pods",))


def test_fit_requests_with_init_containers_sidecars_and_overhead() -> None:
    # regular 500m + sidecar 200m = 700m; init peak = 1500m + sidecar so far (0) -> 1500m;
    # max(700, 1500) = 1500m, + overhead 250m = 1750m: fits 2 cpus, not 1.5.
    pod = make_pod(
        "p",
        containers=[{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
        initContainers=[
            {"name": "init", "resources": {"requests": {"cpu": "1500m"}}},
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
        ],
        overhead={"cpu": "250m"},
    )
    result = filter_all(fit(), pod, [make_node("ok", cpu="1750m"), make_node("no", cpu="1749m")])
    assert result["ok"] is None
    assert result["no"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",))


def test_fit_ignored_extended_resources() -> None:
    pod = make_pod(
        "p",
        containers=[
            {"name": "c", "resources": {"requests": {"example.com/fpga": "1", "vendor.io/x": "2"}}}
        ],
    )
    node = make_node("n")
    assert (
        filter_all(
            fit({"ignoredResources": ["example.com/fpga"], "ignoredResourceGroups": ["vendor.io"]}),
            pod,
            [node],
        )["n"]
        is None
    )


def test_least_allocated_worked_example() -> None:
    # spec §7.6: node 4000m / 8Gi, existing 1000m / 2Gi, pod 500m / 1Gi -> 62
    node = make_node("n", cpu="4", memory="8Gi")
    used = make_pod("used", cpu="1", memory="2Gi", node_name="n")
    pod = make_pod("p", cpu="500m", memory="1Gi")
    assert score_all(fit(), pod, [node], [used]) == {"n": 62}


def test_most_allocated_and_non_zero_defaults() -> None:
    args = {"scoringStrategy": {"type": "MostAllocated"}}
    node = make_node("n", cpu="4", memory="8Gi")
    # a pod without requests counts as 100m / 200Mi for scoring
    # cpu 100*100//4000 = 2; memory 200Mi*100//8Gi = 2 -> 2
    assert score_all(fit(args), make_pod("p"), [node]) == {"n": 2}
    pod = make_pod("p", cpu="2", memory="6Gi")
    # cpu 50, memory 75 -> 62
    assert score_all(fit(args), pod, [node]) == {"n": 62}


def test_requested_to_capacity_ratio() -> None:
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 1}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        }
    }
    node = make_node("n", cpu="4")
    # utilization 2000*100//4000 = 50 -> shape(50) = 0 + (100 - 0) * 50 // 100 = 50
    assert score_all(fit(args), make_pod("p", cpu="2"), [node]) == {"n": 50}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"scoringStrategy": {"type": "Spread"}}, "scoringStrategy.type"),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}},
            "scoringStrategy.resources[0].weight",
        ),
        ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "shape"),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "sorted",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}]},
                }
            },
            "score",
        ),
        ({"ignoredResourceGroups": ["a/b"]}, "ignoredResourceGroups[0]"),
    ],
)
def test_fit_bad_args(args, needle) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        fit(args)


def test_balanced_allocation_v136_formula() -> None:
    plugin = NodeResourcesBalancedAllocation({}, None)
    node = make_node("n", cpu="4", memory="8Gi")
    used = make_pod("used", cpu="1", memory="4Gi", node_name="n")
    # without: cpu .25 mem .5 -> std .125 -> 87; with pod 1 cpu / 0 mem: .5/.5 -> 100
    # 50 + (50 + 100 - 87) // 2 = 50 + 31 = 81
    assert score_all(plugin, make_pod("p", cpu="1"), [node], [used]) == {"n": 81}
    # a pod that unbalances: with 0 cpu / 2Gi mem: .25/.75 -> std .25 -> 75
    # 50 + (50 + 75 - 87) // 2 = 50 + 19 = 69
    assert score_all(plugin, make_pod("p", memory="2Gi"), [node], [used]) == {"n": 69}


def test_balanced_allocation_skips_best_effort_pods() -> None:
    plugin = NodeResourcesBalancedAllocation({}, None)
    assert score_all(plugin, make_pod("p"), [make_node("n")]) == {"n": None}
