"""DefaultPreemption: victim selection, PDBs, eligibility, messages and args (the evaluator
under it: tests/unit/framework/test_preemption.py)."""

from __future__ import annotations

import pytest

from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo
from extender.framework.results import NominatingInfo, NominatingMode
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.plugins.default_preemption import (
    DefaultPreemption,
    filter_pods_with_pdb_violation,
    num_candidates_to_find,
    pod_eligible_to_preempt_others,
    select_victims_on_node,
)
from extender.scheduler.queue import Nominator
from tests.unit.builders import make_node
from tests.unit.preemption_fixtures import (
    FIT,
    T0,
    T1,
    T2,
    make_framework,
    names,
    pdb,
    pod,
    post_filter,
    prefiltered,
    three_nodes,
)

# -- select_victims_on_node ---------------------------------------------------------------------


def test_lowest_priority_pods_are_victims_and_fitting_ones_reprieved():
    node = make_node("n1", cpu="4")
    pods = [
        pod("p1", "1", 1, node="n1", start=T0),
        pod("p2", "1", 2, node="n1", start=T0),
        pod("p3", "1", 3, node="n1", start=T0),
        pod("high", "1", 10, node="n1", start=T0),
    ]
    snapshot = Snapshot.from_objects([node], pods)
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)
    info = snapshot.get("n1")

    victims, violations, status = select_victims_on_node(fwk, state, preemptor, info, [])

    assert status is None
    # p3 is reprieved first (highest priority) and fits; p2 then p1 do not.
    assert names(victims) == ["p2", "p1"]
    assert violations == 0
    # Dry run mutates neither the snapshot nor the cycle state.
    assert len(info.pods) == 4
    assert info.requested.milli_cpu == 4000
    assert state.read("PreFilter" + FIT).removed == set()


def test_equal_priority_reprieves_earlier_started_pod_first():
    node = make_node("n1", cpu="2")
    pods = [
        pod("young", "1", 1, node="n1", start=T2),
        pod("old", "1", 1, node="n1", start=T0),
    ]
    snapshot = Snapshot.from_objects([node], pods)
    fwk = make_framework()
    preemptor = pod("preemptor", "1", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    victims, _, status = select_victims_on_node(fwk, state, preemptor, snapshot.get("n1"), [])

    assert status is None
    assert names(victims) == ["young"]


def test_no_lower_priority_pods_is_unresolvable():
    node = make_node("n1", cpu="1")
    snapshot = Snapshot.from_objects([node], [pod("same", "1", 5, node="n1")])
    fwk = make_framework()
    preemptor = pod("preemptor", "1", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    victims, _, status = select_victims_on_node(fwk, state, preemptor, snapshot.get("n1"), [])

    assert victims == []
    assert status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "No preemption victims found for incoming pod"
    )


def test_not_fitting_even_without_victims_returns_filter_status():
    node = make_node("n1", cpu="2")
    snapshot = Snapshot.from_objects(
        [node], [pod("low", "1", 1, node="n1"), pod("high", "1", 9, node="n1")]
    )
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    victims, _, status = select_victims_on_node(fwk, state, preemptor, snapshot.get("n1"), [])

    assert victims == []
    assert status == Status(Code.UNSCHEDULABLE, "Insufficient cpu")


def test_nominated_higher_priority_pods_count_during_dry_run():
    node = make_node("n1", cpu="3")
    snapshot = Snapshot.from_objects(
        [node], [pod("a", "1", 1, node="n1", start=T0), pod("b", "1", 1, node="n1", start=T1)]
    )
    nominator = Nominator()
    nominated = pod("nominated", "1", 7)
    nominator.add_nominated_pod(PodInfo(nominated), NominatingInfo("n1", NominatingMode.OVERRIDE))
    fwk = make_framework(nominator=nominator)
    preemptor = pod("preemptor", "1", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    victims, _, status = select_victims_on_node(fwk, state, preemptor, snapshot.get("n1"), [])

    # 3 cpu: nominated(1) + preemptor(1) leave room for one of a/b; the older one stays.
    assert status is None
    assert names(victims) == ["b"]


# -- PDBs ---------------------------------------------------------------------------------------


def _pdb_node():
    node = make_node("n1", cpu="3")
    pods = [
        pod("p1", "1", 1, node="n1", start=T0, labels={"app": "a"}),
        pod("p2", "1", 1, node="n1", start=T1, labels={"app": "a"}),
        pod("p3", "1", 2, node="n1", start=T0, labels={"app": "b"}),
    ]
    return Snapshot.from_objects([node], pods)


def test_without_pdbs_higher_priority_pod_is_reprieved():
    snapshot = _pdb_node()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    victims, violations, status = select_victims_on_node(
        fwk, state, preemptor, snapshot.get("n1"), []
    )

    assert status is None
    assert names(victims) == ["p1", "p2"]
    assert violations == 0


def test_pdb_violating_pods_are_reprieved_first():
    snapshot = _pdb_node()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)
    pdbs = [pdb("a", {"app": "a"}, 1)]

    victims, violations, status = select_victims_on_node(
        fwk, state, preemptor, snapshot.get("n1"), pdbs
    )

    # Evicting both app=a pods would exceed the budget of 1: p2 (less important) violates,
    # gets the first reprieve and stays; p3 and p1 go, most important first.
    assert status is None
    assert names(victims) == ["p3", "p1"]
    assert violations == 0


def test_pdb_violations_are_counted():
    snapshot = _pdb_node()
    fwk = make_framework()
    preemptor = pod("preemptor", "3", 5)
    state = prefiltered(fwk, preemptor, snapshot)
    pdbs = [pdb("a", {"app": "a"}, 0)]

    victims, violations, status = select_victims_on_node(
        fwk, state, preemptor, snapshot.get("n1"), pdbs
    )

    assert status is None
    assert names(victims) == ["p3", "p1", "p2"]
    assert violations == 2


def test_pdb_violation_rules():
    infos = [
        PodInfo(pod("p1", "1", 1, node="n1", start=T0, labels={"app": "a"})),
        PodInfo(pod("p2", "1", 1, node="n1", start=T1, labels={"app": "a"})),
        PodInfo(pod("nolabels", "1", 1, node="n1")),
    ]
    # Already-disrupted pods spend nothing.
    violating, ok = filter_pods_with_pdb_violation(
        infos, [pdb("a", {"app": "a"}, 0, disrupted={"p1": T0})]
    )
    assert names(violating) == ["p2"]
    assert names(ok) == ["p1", "nolabels"]
    # Other namespaces and empty selectors do not match.
    other_ns = pdb("a", {"app": "a"}, 0, namespace="other")
    empty = {"metadata": {"namespace": "default"}, "spec": {"selector": {}}, "status": {}}
    no_selector = {"metadata": {"namespace": "default"}, "spec": {}, "status": {}}
    violating, ok = filter_pods_with_pdb_violation(infos, [other_ns, empty, no_selector])
    assert violating == []
    assert names(ok) == ["p1", "p2", "nolabels"]


@pytest.mark.parametrize(
    "nodes, pct, absolute, expected",
    [(10, 10, 100, 10), (5000, 10, 100, 500), (500, 10, 100, 100), (50, 0, 3, 3)],
)
def test_num_candidates(nodes, pct, absolute, expected):
    assert num_candidates_to_find(nodes, pct, absolute) == expected


# -- eligibility --------------------------------------------------------------------------------


def test_preemption_policy_never_is_not_eligible():
    snapshot = three_nodes()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5, preemptionPolicy="Never")
    state = prefiltered(fwk, preemptor, snapshot)
    statuses = {n: Status(Code.UNSCHEDULABLE, "Insufficient cpu") for n in ("n0", "n1", "n2")}

    result, status = fwk.plugin("DefaultPreemption").post_filter(state, preemptor, statuses)

    assert result is None
    assert status == Status(
        Code.UNSCHEDULABLE, "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert fwk.client.deleted == []


def _terminating(name, priority, node):
    p = pod(name, "1", priority, node=node)
    p["metadata"]["deletionTimestamp"] = T1
    p["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    return p


def test_terminating_victim_on_nominated_node_blocks_preemption():
    snapshot = Snapshot.from_objects([make_node("n1", cpu="1")], [_terminating("v", 1, "n1")])
    preemptor = pod("preemptor", "1", 5)
    preemptor["status"]["nominatedNodeName"] = "n1"
    unschedulable = Status(Code.UNSCHEDULABLE, "Insufficient cpu")

    assert pod_eligible_to_preempt_others(preemptor, snapshot, unschedulable) == (
        False,
        "not eligible due to a terminating pod on the nominated node.",
    )
    # Unresolvable on the nominated node: preempt elsewhere.
    unresolvable = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gone")
    assert pod_eligible_to_preempt_others(preemptor, snapshot, unresolvable) == (True, "")
    # A terminating pod of higher priority does not block.
    snapshot = Snapshot.from_objects([make_node("n1", cpu="1")], [_terminating("v", 9, "n1")])
    assert pod_eligible_to_preempt_others(preemptor, snapshot, unschedulable) == (True, "")


# -- post_filter --------------------------------------------------------------------------------


def test_post_filter_message_when_no_node_has_victims():
    snapshot = Snapshot.from_objects([make_node(f"n{i}", cpu="1") for i in range(3)])
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)

    result, status = post_filter(fwk, preemptor, snapshot)

    assert status == Status(
        Code.UNSCHEDULABLE,
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
    )
    assert result.nominating_info == NominatingInfo("", NominatingMode.OVERRIDE)


def test_post_filter_message_mixes_not_helpful_and_dry_run_statuses():
    nodes = [make_node("n0", cpu="1", unschedulable=True)] + [
        make_node(f"n{i}", cpu="1") for i in (1, 2)
    ]
    snapshot = Snapshot.from_objects(nodes, [pod("same", "1", 5, node="n1")])
    fwk = make_framework()
    preemptor = pod("preemptor", "1", 5)
    statuses = {
        "n0": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "ext says never"),
        "n1": Status(Code.UNSCHEDULABLE, "ext says no"),
        "n2": Status(Code.UNSCHEDULABLE, "ext says no"),
    }
    state = prefiltered(fwk, preemptor, snapshot)

    result, status = fwk.plugin("DefaultPreemption").post_filter(state, preemptor, statuses)

    # Same text as kube-scheduler v1.36 (samples/extender-replies-and-outcomes.json).
    assert status == Status(
        Code.UNSCHEDULABLE,
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.",
    )
    assert result.nominating_info == NominatingInfo("", NominatingMode.OVERRIDE)


def test_post_filter_all_unresolvable_is_not_helpful():
    snapshot = three_nodes()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)
    statuses = {
        n: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable")
        for n in ("n0", "n1", "n2")
    }

    _, status = fwk.plugin("DefaultPreemption").post_filter(state, preemptor, statuses)

    assert status.message == (
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


# -- args ---------------------------------------------------------------------------------------


def test_args_defaults_and_validation():
    fwk = make_framework()
    plugin = fwk.plugin("DefaultPreemption")
    assert plugin.min_candidate_nodes_percentage == 10
    assert plugin.min_candidate_nodes_absolute == 100
    with pytest.raises(ValueError, match="minCandidateNodesPercentage"):
        DefaultPreemption({"minCandidateNodesPercentage": 101}, fwk)
    with pytest.raises(ValueError, match="minCandidateNodesAbsolute"):
        DefaultPreemption({"minCandidateNodesAbsolute": -1}, fwk)
    with pytest.raises(ValueError, match="cannot be zero at the same time"):
        DefaultPreemption({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, fwk)


def test_node_info_type_is_untouched_by_clone_use():
    # select_victims_on_node must accept a NodeInfo built outside a snapshot (preempt verb).
    info = NodeInfo(make_node("solo", cpu="1"), [pod("low", "1", 1, node="solo")])
    fwk = make_framework()
    preemptor = pod("preemptor", "1", 5)
    state = prefiltered(fwk, preemptor, Snapshot([info]))
    victims, violations, status = select_victims_on_node(fwk, state, preemptor, info, [])
    assert (names(victims), violations, status) == (["low"], 0, None)
    assert names(info.pods) == ["low"]
