"""bench/gang.py's sizes: which gangs of the saturated scenario fit the benchmark's nodes, and
the objects it creates (a PodGroup with the Gang policy, a pod naming it)."""

from __future__ import annotations

import random

import pytest

from bench.gang import gang_pod, pod_group, scenario, usable_nodes
from bench.workload import make_node


@pytest.mark.parametrize("nodes", [1, 9, 10, 11, 50, 500])
def test_usable_nodes_are_those_without_a_no_schedule_taint(nodes: int) -> None:
    rng = random.Random(1)
    untainted = sum(
        1
        for i in range(nodes)
        if not any(t["effect"] == "NoSchedule" for t in make_node(i, rng)["spec"].get("taints", ()))
    )
    assert usable_nodes(nodes) == untainted


def test_saturated_fits_one_gang_per_size_usable_nodes() -> None:
    sc = scenario("saturated", 500, 100, 10, 5)
    assert (sc.fitting_gangs, sc.expected, sc.min_count) == (45, 450, 10)


def test_saturated_refuses_a_size_where_every_gang_fits() -> None:
    with pytest.raises(SystemExit, match="all 10 gangs"):
        scenario("saturated", 500, 10, 10, 5)


def test_min_uses_the_given_min_count_and_every_gang_fits() -> None:
    sc = scenario("min", 500, 100, 10, 3)
    assert (sc.min_count, sc.fitting_gangs, sc.expected) == (3, 100, 1000)


def test_gang_pod_names_its_group_and_the_group_has_the_gang_policy() -> None:
    pod = gang_pod("ks-all-g0001-003", "ks-all-g0001", "ks-all", "10")
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "ks-all-g0001"}
    assert pod["spec"]["schedulerName"] == "ks-all"
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "10"
    group = pod_group("ks-all-g0001", 7)
    assert group["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 7}}
