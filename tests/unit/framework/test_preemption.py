"""The preemption evaluator (extender/framework/preemption.py): dry run, candidate choice,
extenders, and the API side effects on the chosen node."""

from __future__ import annotations

from extender.framework.pod_info import PodInfo
from extender.framework.preemption import (
    Candidate,
    dry_run_preemption,
    fits_without_victims,
    nodes_where_preemption_might_help,
    select_candidate,
)
from extender.framework.results import NominatingInfo, NominatingMode
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.kube import NotFound
from extender.scheduler.queue import Nominator
from tests.unit.builders import make_node
from tests.unit.preemption_fixtures import (
    T0,
    T1,
    T2,
    FakeClient,
    FakeExtender,
    FakeRecorder,
    make_framework,
    names,
    pdb,
    pod,
    post_filter,
    prefiltered,
    three_nodes,
)

# -- dry run ------------------------------------------------------------------------------------


def _dry_run(snapshot, cpu, offset, num, pdbs=()):
    """DefaultPreemption's victims, the evaluator's dry run over every node."""
    fwk = make_framework()
    preemptor = pod("preemptor", cpu, 5)
    state = prefiltered(fwk, preemptor, snapshot)
    select_victims = fwk.plugin("DefaultPreemption").select_victims_on_node
    return dry_run_preemption(
        select_victims, state, preemptor, snapshot.node_info_list, list(pdbs), offset, num
    )


def test_dry_run_reports_candidates_and_node_statuses():
    candidates, statuses = _dry_run(three_nodes(), "2", 0, 3)

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
    candidates, statuses = _dry_run(three_nodes(), "2", 1, 1)

    assert names(candidates) == ["n1"]
    assert statuses == {}


def test_dry_run_lists_pdb_respecting_candidates_first():
    nodes = [make_node(f"n{i}", cpu="1") for i in range(2)]
    pods = [
        pod("guarded", "1", 1, node="n0", labels={"app": "a"}),
        pod("free", "1", 1, node="n1", labels={"app": "b"}),
    ]
    snapshot = Snapshot.from_objects(nodes, pods)

    candidates, _ = _dry_run(snapshot, "1", 0, 2, [pdb("a", {"app": "a"}, 0)])

    assert [(c.name, c.num_pdb_violations) for c in candidates] == [("n1", 0), ("n0", 1)]


def test_nodes_where_preemption_might_help_keeps_only_unschedulable():
    snapshot = three_nodes()
    statuses = {
        "n0": Status(Code.UNSCHEDULABLE, "Insufficient cpu"),
        "n1": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable"),
    }
    assert names(nodes_where_preemption_might_help(statuses, snapshot)) == ["n0"]


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


# -- prepare_candidate ----------------------------------------------------------------------------


def test_post_filter_preempts_on_best_node_and_clears_lower_nominations():
    snapshot = three_nodes()
    client = FakeClient()
    recorder = FakeRecorder()
    nominator = Nominator()
    lower = pod("lower-nominated", "0", 2)
    lower["status"]["nominatedNodeName"] = "n0"
    nominator.add_nominated_pod(PodInfo(lower))
    fwk = make_framework(client=client, nominator=nominator, recorder=recorder)
    preemptor = pod("preemptor", "2", 5)
    preemptor["metadata"]["uid"] = "uid-preemptor"

    result, status = post_filter(fwk, preemptor, snapshot)

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

    result, status = post_filter(fwk, preemptor, snapshot)

    assert result.nominating_info == NominatingInfo("n0", NominatingMode.OVERRIDE)
    assert fwk.client.deleted == []


def test_extender_answering_no_nodes_leaves_no_candidate():
    snapshot = three_nodes()
    extender = FakeExtender(lambda victims: {})
    fwk = make_framework(extenders=[extender])
    preemptor = pod("preemptor", "2", 5)

    result, status = post_filter(fwk, preemptor, snapshot)

    assert extender.requests == [{"n0": (["a"], 0), "n1": (["b"], 0)}]
    assert result is None
    assert status == Status(Code.UNSCHEDULABLE, "preemption: no candidate node for preemption")
    assert fwk.client.deleted == []


def test_extender_narrowing_to_one_node_decides():
    snapshot = three_nodes()
    uid_b = snapshot.get("n1").pods[0].uid
    fwk = make_framework(extenders=[FakeExtender(lambda v: {"n1": ([uid_b], 0)})])
    preemptor = pod("preemptor", "2", 5)

    result, status = post_filter(fwk, preemptor, snapshot)

    assert status == Status(Code.SUCCESS)
    assert result.nominating_info == NominatingInfo("n1", NominatingMode.OVERRIDE)
    assert fwk.client.deleted == [("default", "b", uid_b)]


def test_extender_naming_unknown_pod_is_an_error():
    snapshot = three_nodes()
    fwk = make_framework(extenders=[FakeExtender(lambda v: {"n1": (["nope"], 0)})])
    preemptor = pod("preemptor", "2", 5)

    result, status = post_filter(fwk, preemptor, snapshot)

    assert result is None
    assert status.code == Code.ERROR
    assert "claims to preempt pod (UID: nope) on node: n1" in status.message


def test_select_candidate_uses_the_plugins_score_funcs_instead_of_the_default():
    a = Candidate("a", [_victim("a1", 1)], 0)
    b = Candidate("b", [_victim("b1", 9)], 1)
    assert select_candidate([a, b]).name == "a"
    assert select_candidate([a, b], [lambda node: {"a": 0, "b": 1}[node]]).name == "b"


# -- fits_without_victims (the dry run the webhook's preempt verb reuses) --------------------------


def test_fits_without_victims_works_on_clones():
    snapshot = three_nodes()
    fwk = make_framework()
    preemptor = pod("preemptor", "2", 5)
    state = prefiltered(fwk, preemptor, snapshot)
    info = snapshot.get("n0")
    on_node = info.pods[0]

    assert fits_without_victims(fwk, state, preemptor, info, []) == Status(
        Code.UNSCHEDULABLE, "Insufficient cpu"
    )
    assert fits_without_victims(fwk, state, preemptor, info, [on_node]) is None
    # A victim that is not on the node is skipped; nothing was mutated.
    stranger = PodInfo(pod("stranger", "2", 1, node="n0"))
    assert fits_without_victims(fwk, state, preemptor, info, [stranger]) is not None
    assert names(info.pods) == ["a"]


class _GoneClient(FakeClient):
    def patch_pod_status(self, namespace, name, patch):
        raise NotFound(message=f'pods "{name}" not found')


def test_victim_already_gone_is_neither_an_error_nor_an_event():
    snapshot = three_nodes()
    recorder = FakeRecorder()
    fwk = make_framework(client=_GoneClient(), recorder=recorder)
    preemptor = pod("preemptor", "2", 5)

    result, status = post_filter(fwk, preemptor, snapshot)

    assert status == Status(Code.SUCCESS)
    assert result.nominating_info == NominatingInfo("n0", NominatingMode.OVERRIDE)
    assert fwk.client.deleted == []
    assert recorder.events == []
