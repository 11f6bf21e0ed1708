"""The scheduling algorithm over a real profile runner: filter, diagnosis, scoring, selection."""

from __future__ import annotations

import random

import pytest

from extender.framework import (
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    PluginSpec,
    Profile,
    SchedulingAlgorithm,
    Snapshot,
    Status,
    fit_error_message,
)
from extender.framework.schedule import num_feasible_nodes_to_find
from extender.framework.status import Code
from extender.plugins import in_tree_registry
from tests.unit.builders import make_node, make_pod


def framework(filters=("NodeUnschedulable", "NodeName"), scores=()) -> Framework:
    profile = Profile(
        plugins={
            "filter": [PluginSpec(n) for n in filters],
            "score": [PluginSpec(n, w) for n, w in scores],
        }
    )
    return Framework(profile, in_tree_registry())


@pytest.mark.parametrize(
    "n, expected",
    [(50, 50), (99, 99), (100, 100), (200, 100), (1000, 420), (5000, 500), (6000, 300)],
)
def test_num_feasible_nodes_to_find_adaptive(n, expected):
    assert num_feasible_nodes_to_find(0, n) == expected


def test_num_feasible_nodes_to_find_percentage():
    assert num_feasible_nodes_to_find(100, 5000) == 5000
    assert num_feasible_nodes_to_find(1, 5000) == 100
    assert num_feasible_nodes_to_find(30, 1000) == 300


def test_fit_error_lists_reasons_sorted_as_strings():
    nodes = [make_node(f"node{i}", unschedulable=i < 9) for i in range(10)]
    nodes[9]["metadata"]["name"] = "node9"  # one schedulable node
    snapshot = Snapshot.from_objects(nodes)
    pod = make_pod("pod1", nodeName=None)
    pod["spec"]["nodeName"] = "other"
    with pytest.raises(FitError) as info:
        SchedulingAlgorithm().schedule_pod(framework(), CycleState(), pod, snapshot)
    assert str(info.value) == (
        "0/10 nodes are available: 1 node(s) didn't match the requested node name, "
        "9 node(s) were unschedulable."
    )
    assert info.value.diagnosis.unschedulable_plugins == {"NodeUnschedulable", "NodeName"}


def test_fit_error_message_with_absent_status_and_post_filter():
    diagnosis = Diagnosis(
        node_to_status={"a": Status(Code.UNSCHEDULABLE, "Insufficient cpu")},
        absent_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy x"),
        post_filter_msg="preemption: no candidate node for preemption",
    )
    assert fit_error_message(12, diagnosis) == (
        "0/12 nodes are available: 1 Insufficient cpu, 11 node(s) didn't satisfy x. "
        "preemption: no candidate node for preemption"
    )


def test_fit_error_message_prefilter_and_empty_histogram():
    assert (
        fit_error_message(3, Diagnosis(pre_filter_msg="pod affinity terms conflict"))
        == "0/3 nodes are available: pod affinity terms conflict."
    )
    assert (
        fit_error_message(3, Diagnosis(post_filter_msg="preemption: x"))
        == "0/3 nodes are available: preemption: x"
    )


def test_single_feasible_node_is_chosen_without_scoring():
    nodes = [make_node("a", unschedulable=True), make_node("b")]
    result = SchedulingAlgorithm().schedule_pod(
        framework(), CycleState(), make_pod("p"), Snapshot.from_objects(nodes)
    )
    assert result.suggested_host == "b"
    assert result.feasible_nodes == 1
    assert result.scores == []


def test_round_robin_start_index_advances_by_evaluated_nodes():
    nodes = [make_node(f"n{i}") for i in range(300)]
    snapshot = Snapshot.from_objects(nodes)
    algo = SchedulingAlgorithm()
    fwk = framework(scores=(("NodeNumber", 1),))
    feasible, _ = algo.find_nodes_that_fit(fwk, CycleState(), make_pod("p1"), snapshot)
    # 300 nodes: adaptive 48% -> 144 feasible, starting at 0
    assert len(feasible) == 144
    assert feasible[0].name == "n0"
    assert algo.next_start_node_index == 144
    feasible, _ = algo.find_nodes_that_fit(fwk, CycleState(), make_pod("p2"), snapshot)
    assert feasible[0].name == "n144"
    assert algo.next_start_node_index == 288


def test_no_score_plugins_and_no_extenders_finds_one_node():
    nodes = [make_node(f"n{i}") for i in range(5)]
    feasible, _ = SchedulingAlgorithm().find_nodes_that_fit(
        framework(), CycleState(), make_pod("p"), Snapshot.from_objects(nodes)
    )
    assert len(feasible) == 1


def test_select_host_breaks_ties_at_random():
    from extender.framework.results import NodePluginScores

    algo = SchedulingAlgorithm(rng=random.Random(7))
    scores = [NodePluginScores("a", total_score=5), NodePluginScores("b", total_score=5)]
    picks = {algo.select_host(scores) for _ in range(50)}
    assert picks == {"a", "b"}
    scores.append(NodePluginScores("c", total_score=6))
    assert algo.select_host(scores) == "c"


def test_no_nodes_is_unresolvable_error():
    from extender.framework import SchedulingError

    with pytest.raises(SchedulingError) as info:
        SchedulingAlgorithm().schedule_pod(framework(), CycleState(), make_pod("p"), Snapshot())
    assert info.value.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert info.value.status.message == "no nodes available to schedule pods"


class _FavouringExtender:
    """A prioritizer that gives one node the top extender score and the others none."""

    name = "favour"
    weight = 5
    ignorable = False

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite

    def is_interested(self, pod):
        return True

    def is_filter(self):
        return False

    def is_prioritizer(self):
        return True

    def is_binder(self):
        return False

    def supports_preemption(self):
        return False

    def prioritize(self, pod, nodes):
        return {info.name: (10 if info.name == self.favourite else 0) for info in nodes}


def test_extender_priorities_count_in_the_pick_with_plugin_scores():
    """Plugin scores (a batch-scored, column-backed score list) plus extender priorities: the
    host is picked on the sum, not on the plugins' totals alone."""
    nodes = [make_node(f"node{i}") for i in range(6)]
    snapshot = Snapshot.from_objects(nodes)
    profile = Profile(
        plugins={
            "preScore": [PluginSpec("NodeNumber")],
            "score": [PluginSpec("NodeNumber", 1)],
        }
    )
    fwk = Framework(profile, in_tree_registry())
    pod = make_pod("pod-3")
    plain = SchedulingAlgorithm(rng=random.Random(1))
    assert plain.schedule_pod(fwk, CycleState(), pod, snapshot).suggested_host == "node3"
    algo = SchedulingAlgorithm(extenders=[_FavouringExtender("node5")], rng=random.Random(1))
    result = algo.schedule_pod(fwk, CycleState(), pod, snapshot)
    assert result.suggested_host == "node5"
    totals = {entry.name: entry.total_score for entry in result.scores}
    assert totals["node5"] == 500 and totals["node3"] == 100
