"""DefaultPreemption: victim selection, PDBs, candidate choice, eligibility and messages.

The profile uses a small local CPU-fit plugin (PreFilter with AddPod/RemovePod extensions plus
Filter) so that the tests depend only on the framework runtime.
"""

from __future__ import annotations

import random

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.handle import POD_DISRUPTION_BUDGETS, Services
from extender.framework.preemption import (
    Candidate,
    dry_run_preemption,
    nodes_where_preemption_might_help,
    select_candidate,
)
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm
from extender.framework.status import Code, Status
from extender.framework.types import (
    NodeInfo,
    NominatingInfo,
    NominatingMode,
    PodInfo,
    Snapshot,
)
from extender.plugins.default_preemption import (
    DefaultPreemption,
    filter_pods_with_pdb_violation,
    num_candidates_to_find,
    pod_eligible_to_preempt_others,
    select_victims_on_node,
)
from extender.scheduler.queue import Nominator
from tests.unit.builders import make_listers, make_node, make_pod

FIT = "FakeCPUFit"


class _Removed:
    """PreFilter state: pods the extensions removed minus those added back."""

    def __init__(self) -> None:
        self.removed: set[str] = set()

    def clone(self) -> _Removed:
        copy = _Removed()
        copy.removed = set(self.removed)
        return copy


class FakeCPUFit:
    """Fits when the node's requested CPU plus the pod's stays within allocatable."""

    name = FIT

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def pre_filter(self, state, pod, nodes):
        state.write("PreFilter" + FIT, _Removed())
        return None, None

    def pre_filter_extensions(self):
        return self

    def add_pod(self, state, pod, pod_to_add, node_info):
        state.read("PreFilter" + FIT).removed.discard(pod_to_add.name)
        return None

    def remove_pod(self, state, pod, pod_to_remove, node_info):
        state.read("PreFilter" + FIT).removed.add(pod_to_remove.name)
        return None

    def filter(self, state, pod, node_info):
        need = PodInfo(pod).requests.milli_cpu
        if node_info.requested.milli_cpu + need > node_info.allocatable.milli_cpu:
            return Status(Code.UNSCHEDULABLE, "Insufficient cpu")
        return None


class FakeClient:
    def __init__(self) -> None:
        self.deleted: list[tuple[str, str, str]] = []
        self.patches: list[tuple[str, str, dict]] = []

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        self.deleted.append((namespace, name, uid))

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> None:
        self.patches.append((namespace, name, patch))


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def record_event(self, pod, event_type, reason, action, note) -> None:
        self.events.append((pod["metadata"]["name"], event_type, reason, note))


def make_framework(*, pdbs=(), client=None, nominator=None, recorder=None, args=None, extenders=()):
    registry = Registry()
    registry.register(FIT, FakeCPUFit)
    registry.register("DefaultPreemption", DefaultPreemption)
    profile = Profile(
        plugins={
            "preFilter": [PluginSpec(FIT)],
            "filter": [PluginSpec(FIT)],
            "postFilter": [PluginSpec("DefaultPreemption")],
        },
        plugin_config={"DefaultPreemption": args or {}},
    )
    services = Services(
        client=client or FakeClient(),
        nominator=nominator or Nominator(),
        rng=random.Random(0),
        listers=make_listers({POD_DISRUPTION_BUDGETS: list(pdbs)}),
        event_recorder=recorder or FakeRecorder(),
        extenders=extenders,
    )
    return Framework(profile, registry, services)


def pod(name, cpu, priority, *, node=None, start=None, labels=None, **spec):
    p = make_pod(name, cpu=cpu, priority=priority, node_name=node, labels=labels, **spec)
    if start is not None:
        p["status"]["startTime"] = start
    return p


def prefiltered(fwk, preemptor, snapshot) -> CycleState:
    state = CycleState()
    state.snapshot = snapshot
    _, status, _ = fwk.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    assert status is None
    return state


def names(infos) -> list[str]:
    return [i.name for i in infos]


def pdb(name, match_labels, allowed, namespace="default", disrupted=None):
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted or {}},
    }


T0 = "2024-01-01T00:00:00Z"
T1 = "2024-01-01T01:00:00Z"
T2 = "2024-01-01T02:00:00Z"


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


# -- dry run ------------------------------------------------------------------------------------


def _three_nodes():
    nodes = [make_node(f"n{i}", cpu="2") for i in range(3)]
    pods = [
        pod("a", "2", 1, node="n0", start=T0),
        pod("b", "2", 3, node="n1", start=T0),
        pod("c", "2", 9, node="n2", start=T0),
    ]
    return Snapshot.from_objects(nodes, pods)


def test_dry_run_reports_candidates_and_node_statuses():
    snapshot = _three_nodes()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    candidates, statuses = dry_run_preemption(
        fwk.plugin("DefaultPreemption").select_victims_on_node,
        state,
        preemptor,
        snapshot.node_info_list,
        [],
        0,
        3,
    )

    assert [(c.name, names(c.victims), c.num_pdb_violations) for c in candidates] == [
        ("n0", ["a"], 0),
        ("n1", ["b"], 0),
    ]
    assert statuses == {
        "n2": Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "No preemption victims found for incoming pod"
        )
    }


def test_dry_run_starts_at_offset_and_stops_at_enough_candidates():
    snapshot = _three_nodes()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    candidates, statuses = dry_run_preemption(
        fwk.plugin("DefaultPreemption").select_victims_on_node,
        state,
        preemptor,
        snapshot.node_info_list,
        [],
        1,
        1,
    )

    assert names(candidates) == ["n1"]
    assert statuses == {}


def test_dry_run_lists_pdb_respecting_candidates_first():
    nodes = [make_node(f"n{i}", cpu="1") for i in range(2)]
    pods = [
        pod("guarded", "1", 1, node="n0", labels={"app": "a"}),
        pod("free", "1", 1, node="n1", labels={"app": "b"}),
    ]
    snapshot = Snapshot.from_objects(nodes, pods)
    fwk = make_framework()
    preemptor = pod("preemptor", "1", 5)
    state = prefiltered(fwk, preemptor, snapshot)

    candidates, _ = dry_run_preemption(
        fwk.plugin("DefaultPreemption").select_victims_on_node,
        state,
        preemptor,
        snapshot.node_info_list,
        [pdb("a", {"app": "a"}, 0)],
        0,
        2,
    )

    assert [(c.name, c.num_pdb_violations) for c in candidates] == [("n1", 0), ("n0", 1)]


def test_nodes_where_preemption_might_help_keeps_only_unschedulable():
    snapshot = _three_nodes()
    statuses = {
        "n0": Status(Code.UNSCHEDULABLE, "Insufficient cpu"),
        "n1": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable"),
    }
    assert names(nodes_where_preemption_might_help(statuses, snapshot)) == ["n0"]


@pytest.mark.parametrize(
    "nodes, pct, absolute, expected",
    [(10, 10, 100, 10), (5000, 10, 100, 500), (500, 10, 100, 100), (50, 0, 3, 3)],
)
def test_num_candidates(nodes, pct, absolute, expected):
    assert num_candidates_to_find(nodes, pct, absolute) == expected


# -- select_candidate ---------------------------------------------------------------------------


def _victim(name, priority, start=T0):
    return PodInfo(pod(name, "1", priority, node="x", start=start))


def test_select_candidate_criteria_in_order():
    assert select_candidate([]) is None
    # 1. fewest PDB violations, even with higher-priority victims
    a = Candidate("a", [_victim("a1", 10)], 0)
    b = Candidate("b", [_victim("b1", 1)], 1)
    assert select_candidate([b, a]).name == "a"
    # 2. lowest highest-priority victim
    a = Candidate("a", [_victim("a1", 5)], 0)
    b = Candidate("b", [_victim("b1", 4), _victim("b2", 4), _victim("b3", 4)], 0)
    assert select_candidate([a, b]).name == "b"
    # 3. lowest (shifted) sum of priorities: two -5 pods cost more than one -5 pod
    a = Candidate("a", [_victim("a1", -5), _victim("a2", -5)], 0)
    b = Candidate("b", [_victim("b1", -5)], 0)
    assert select_candidate([a, b]).name == "b"
    a = Candidate("a", [_victim("a1", 5), _victim("a2", 1)], 0)
    b = Candidate("b", [_victim("b1", 5), _victim("b2", 2)], 0)
    assert select_candidate([b, a]).name == "a"
    # 4. fewest victims at an equal shifted sum (20 + 2 * 2**31 on both nodes)
    a = Candidate("a", [_victim("a1", 10), _victim("a2", 10)], 0)
    b = Candidate("b", [_victim("b1", 10), _victim("b2", 5), _victim("b3", 5 - 2**31)], 0)
    assert select_candidate([b, a]).name == "a"
    # 5. latest start time among the highest-priority victims
    a = Candidate("a", [_victim("a1", 3, T0), _victim("a2", 1, T2)], 0)
    b = Candidate("b", [_victim("b1", 3, T1), _victim("b2", 1, T0)], 0)
    assert select_candidate([a, b]).name == "b"
    # 6. otherwise the first
    a = Candidate("a", [_victim("a1", 3)], 0)
    b = Candidate("b", [_victim("b1", 3)], 0)
    assert select_candidate([b, a]).name == "b"


# -- eligibility --------------------------------------------------------------------------------


def test_preemption_policy_never_is_not_eligible():
    snapshot = _three_nodes()
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


def _post_filter(fwk, preemptor, snapshot):
    state = CycleState()
    feasible, diagnosis = SchedulingAlgorithm().find_nodes_that_fit(
        fwk, state, preemptor, snapshot, evaluate_all=True
    )
    assert feasible == []
    statuses = {
        info.name: diagnosis.status_of(info.name)
        for info in snapshot.node_info_list
        if diagnosis.status_of(info.name) is not None
    }
    return fwk.run_post_filter_plugins(state, preemptor, statuses)


def test_post_filter_message_when_no_node_has_victims():
    snapshot = Snapshot.from_objects([make_node(f"n{i}", cpu="1") for i in range(3)])
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)

    result, status = _post_filter(fwk, preemptor, snapshot)

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
    snapshot = _three_nodes()
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


def test_post_filter_preempts_on_best_node_and_clears_lower_nominations():
    snapshot = _three_nodes()
    client = FakeClient()
    recorder = FakeRecorder()
    nominator = Nominator()
    lower = pod("lower-nominated", "0", 2)
    lower["status"]["nominatedNodeName"] = "n0"
    nominator.add_nominated_pod(PodInfo(lower))
    fwk = make_framework(client=client, nominator=nominator, recorder=recorder)
    preemptor = pod("preemptor", "2", 5)
    preemptor["metadata"]["uid"] = "uid-preemptor"

    result, status = _post_filter(fwk, preemptor, snapshot)

    # n0's victim has priority 1, n1's has 3; n2's pod outranks the preemptor.
    assert status == Status(Code.SUCCESS)
    assert result.nominating_info == NominatingInfo("n0", NominatingMode.OVERRIDE)
    victim = snapshot.get("n0").pods[0]
    assert client.deleted == [("default", "a", victim.uid)]
    assert client.patches[0] == (
        "default",
        "a",
        {
            "status": {
                "conditions": [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                        "message": "default-scheduler: preempting to accommodate a higher "
                        "priority pod",
                    }
                ]
            }
        },
    )
    assert client.patches[1] == (
        "default",
        "lower-nominated",
        {"status": {"nominatedNodeName": None}},
    )
    assert nominator.nominated_pods_for_node("n0") == []
    assert recorder.events == [
        ("a", "Normal", "Preempted", "Preempted by pod uid-preemptor on node n0")
    ]


def test_post_filter_skips_deleting_victims_api_calls():
    nodes = [make_node("n0", cpu="1")]
    victim = pod("v", "1", 1, node="n0")
    victim["metadata"]["deletionTimestamp"] = T1
    snapshot = Snapshot.from_objects(nodes, [victim])
    fwk = make_framework()
    preemptor = pod("preemptor", "1", 5)

    result, status = _post_filter(fwk, preemptor, snapshot)

    assert result.nominating_info == NominatingInfo("n0", NominatingMode.OVERRIDE)
    assert fwk.client.deleted == []


# -- extenders -----------------------------------------------------------------------------------


class FakeExtender:
    name = "http://ext"
    ignorable = False

    def __init__(self, reply):
        self.reply = reply
        self.requests = []

    def supports_preemption(self):
        return True

    def is_interested(self, pod):
        return True

    def process_preemption(self, pod, node_to_victims):
        self.requests.append(
            {n: ([p["metadata"]["name"] for p in ps], v) for n, (ps, v) in node_to_victims.items()}
        )
        return self.reply(node_to_victims)


def test_extender_answering_no_nodes_leaves_no_candidate():
    snapshot = _three_nodes()
    extender = FakeExtender(lambda victims: {})
    fwk = make_framework(extenders=[extender])
    preemptor = pod("preemptor", "2", 5)

    result, status = _post_filter(fwk, preemptor, snapshot)

    assert extender.requests == [{"n0": (["a"], 0), "n1": (["b"], 0)}]
    assert result is None
    assert status == Status(Code.UNSCHEDULABLE, "preemption: no candidate node for preemption")
    assert fwk.client.deleted == []


def test_extender_narrowing_to_one_node_decides():
    snapshot = _three_nodes()
    uid_b = snapshot.get("n1").pods[0].uid
    fwk = make_framework(extenders=[FakeExtender(lambda v: {"n1": ([uid_b], 0)})])
    preemptor = pod("preemptor", "2", 5)

    result, status = _post_filter(fwk, preemptor, snapshot)

    assert status == Status(Code.SUCCESS)
    assert result.nominating_info == NominatingInfo("n1", NominatingMode.OVERRIDE)
    assert fwk.client.deleted == [("default", "b", uid_b)]


def test_extender_naming_unknown_pod_is_an_error():
    snapshot = _three_nodes()
    fwk = make_framework(extenders=[FakeExtender(lambda v: {"n1": (["nope"], 0)})])
    preemptor = pod("preemptor", "2", 5)

    result, status = _post_filter(fwk, preemptor, snapshot)

    assert result is None
    assert status.code == Code.ERROR
    assert "claims to preempt pod (UID: nope) on node: n1" in status.message


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
