"""PodTopologySpread: exact statuses and scores from upstream semantics (spec §7.10)."""

from __future__ import annotations

import re

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, QueueingHint, Resource
from extender.framework.handle import SERVICES
from extender.framework.status import Code, Status
from extender.framework.types import NodeScore, PodInfo, Snapshot
from extender.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PodTopologySpread,
)
from tests.unit.builders import make_handle, make_listers, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"app": "web"}


def constraint(key: str, max_skew: int = 1, when: str = "DoNotSchedule", **extra) -> dict:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": WEB},
        **extra,
    }


def web_pods(counts: dict[str, int], namespace: str = "default") -> list[dict]:
    pods = []
    for node, n in counts.items():
        for i in range(n):
            pods.append(
                make_pod(f"web-{node}-{i}", labels=WEB, node_name=node, namespace=namespace)
            )
    return pods


def incoming(*constraints: dict, **spec) -> dict:
    return make_pod("incoming", labels=WEB, topologySpreadConstraints=list(constraints), **spec)


def run_pre_filter(plugin, pod, nodes, pods=()):
    snapshot = Snapshot.from_objects(nodes, pods)
    state = CycleState()
    state.snapshot = snapshot
    result, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert result is None
    return state, snapshot, status


def filter_all(plugin, state, pod, snapshot) -> dict[str, Status | None]:
    return {n.name: plugin.filter(state, pod, n) for n in snapshot.node_info_list}


def run_scoring(plugin, pod, nodes, pods=(), feasible=None) -> dict[str, int]:
    snapshot = Snapshot.from_objects(nodes, pods)
    state = CycleState()
    state.snapshot = snapshot
    infos = [snapshot.get(n) for n in feasible] if feasible else snapshot.node_info_list
    assert plugin.pre_score(state, pod, infos) is None
    scores = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status is None
        scores.append(NodeScore(info.name, score))
    raw = {s.name: s.score for s in scores}
    assert plugin.normalize_score(state, pod, scores) is None
    return raw | {f"norm:{s.name}": s.score for s in scores}


ZONED = [
    make_node("n1", labels={ZONE: "a"}),
    make_node("n2", labels={ZONE: "a"}),
    make_node("n3", labels={ZONE: "b"}),
]


# -- Filter -------------------------------------------------------------------------------


def test_skew_violation_rejects_crowded_zone():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE))
    state, snapshot, status = run_pre_filter(plugin, pod, ZONED, web_pods({"n1": 2}))
    assert status is None
    got = filter_all(plugin, state, pod, snapshot)
    # zone a holds 2, zone b 0: 2 + 1 - 0 = 3 > 1 on both zone-a nodes.
    assert got["n1"] == Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert got["n1"].code == Code.UNSCHEDULABLE
    assert got["n2"] == Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert got["n3"] is None


def test_skew_within_max_skew_passes():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE, max_skew=3))
    state, snapshot, _ = run_pre_filter(plugin, pod, ZONED, web_pods({"n1": 2}))
    assert all(s is None for s in filter_all(plugin, state, pod, snapshot).values())


def test_pod_not_matching_its_selector_does_not_count_itself():
    plugin = PodTopologySpread({}, make_handle())
    pod = make_pod("other", labels={"app": "db"}, topologySpreadConstraints=[constraint(ZONE)])
    state, snapshot, _ = run_pre_filter(plugin, pod, ZONED, web_pods({"n1": 1}))
    # 1 + 0 - 0 = 1 <= 1.
    assert filter_all(plugin, state, pod, snapshot)["n1"] is None


def test_min_domains_forces_global_minimum_to_zero():
    nodes = [make_node("n1", labels={ZONE: "a"}), make_node("n2", labels={ZONE: "a"})]
    pods = web_pods({"n1": 1})
    plugin = PodTopologySpread({}, make_handle())

    plain = incoming(constraint(ZONE))
    state, snapshot, _ = run_pre_filter(plugin, plain, nodes, pods)
    # One domain, min = 1: 1 + 1 - 1 = 1 <= 1.
    assert filter_all(plugin, state, plain, snapshot) == {"n1": None, "n2": None}

    with_min = incoming(constraint(ZONE, minDomains=2))
    state, snapshot, _ = run_pre_filter(plugin, with_min, nodes, pods)
    # Fewer than 2 domains: min = 0, 1 + 1 - 0 = 2 > 1.
    unsched = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert filter_all(plugin, state, with_min, snapshot) == {"n1": unsched, "n2": unsched}


def test_node_missing_topology_key_is_unresolvable():
    nodes = [*ZONED, make_node("bare")]
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE, max_skew=5))
    state, snapshot, _ = run_pre_filter(plugin, pod, nodes)
    status = plugin.filter(state, pod, snapshot.get("bare"))
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
    assert status.reasons == (
        "node(s) didn't match pod topology spread constraints (missing required label)",
    )


def test_node_affinity_policy_honor_excludes_unselected_domains():
    nodes = [
        make_node("n1", labels={ZONE: "a", "pool": "x"}),
        make_node("n2", labels={ZONE: "b"}),
        make_node("n3", labels={ZONE: "c", "pool": "x"}),
    ]
    pods = web_pods({"n1": 1, "n3": 1})
    plugin = PodTopologySpread({}, make_handle())

    honor = incoming(constraint(ZONE), nodeSelector={"pool": "x"})
    state, snapshot, _ = run_pre_filter(plugin, honor, nodes, pods)
    # Zone b is not eligible: domains {a: 1, c: 1}, min 1, 1 + 1 - 1 = 1.
    assert plugin.filter(state, honor, snapshot.get("n1")) is None

    ignore = incoming(constraint(ZONE, nodeAffinityPolicy="Ignore"), nodeSelector={"pool": "x"})
    state, snapshot, _ = run_pre_filter(plugin, ignore, nodes, pods)
    # Zone b counts with 0: min 0, 1 + 1 - 0 = 2 > 1.
    assert plugin.filter(state, ignore, snapshot.get("n1")) == Status(
        Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH
    )


def test_node_taints_policy_honor_excludes_tainted_domains():
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    nodes = [
        make_node("n1", labels={ZONE: "a"}),
        make_node("n2", labels={ZONE: "b"}, taints=[taint]),
    ]
    pods = web_pods({"n1": 1})
    plugin = PodTopologySpread({}, make_handle())

    ignore = incoming(constraint(ZONE))
    state, snapshot, _ = run_pre_filter(plugin, ignore, nodes, pods)
    assert plugin.filter(state, ignore, snapshot.get("n1")) is not None  # 1 + 1 - 0 = 2

    honor = incoming(constraint(ZONE, nodeTaintsPolicy="Honor"))
    state, snapshot, _ = run_pre_filter(plugin, honor, nodes, pods)
    assert plugin.filter(state, honor, snapshot.get("n1")) is None  # only zone a: 1 + 1 - 1


def test_terminating_and_foreign_namespace_pods_are_not_counted():
    terminating = make_pod("dying", labels=WEB, node_name="n1")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pods = [terminating, *web_pods({"n1": 3}, namespace="other")]
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE))
    state, snapshot, _ = run_pre_filter(plugin, pod, ZONED, pods)
    assert state.read(PRE_FILTER_STATE_KEY).tp_counts == [{"a": 0, "b": 0}]
    assert filter_all(plugin, state, pod, snapshot)["n1"] is None


def test_match_label_keys_narrow_the_selector():
    pods = [
        make_pod("old", labels={"app": "web", "rev": "1"}, node_name="n1"),
        make_pod("old2", labels={"app": "web", "rev": "1"}, node_name="n1"),
    ]
    plugin = PodTopologySpread({}, make_handle())
    pod = make_pod(
        "incoming",
        labels={"app": "web", "rev": "2"},
        topologySpreadConstraints=[constraint(ZONE, matchLabelKeys=["rev"])],
    )
    state, snapshot, _ = run_pre_filter(plugin, pod, ZONED, pods)
    # Only rev=2 pods count: none exist, so zone a is as good as zone b.
    assert filter_all(plugin, state, pod, snapshot) == {"n1": None, "n2": None, "n3": None}


def test_pre_filter_skips_without_hard_constraints():
    plugin = PodTopologySpread({}, make_handle())
    soft_only = incoming(constraint(ZONE, when="ScheduleAnyway"))
    _, _, status = run_pre_filter(plugin, soft_only, ZONED)
    assert status is not None and status.code == Code.SKIP
    _, _, status = run_pre_filter(plugin, make_pod("bare"), ZONED)
    assert status is not None and status.code == Code.SKIP


def test_add_and_remove_pod_update_a_cloned_state():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE))
    state, snapshot, _ = run_pre_filter(plugin, pod, ZONED, web_pods({"n1": 2}))
    n1, n3 = snapshot.get("n1"), snapshot.get("n3")
    unsched = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)

    sim = state.clone()
    ext = plugin.pre_filter_extensions()
    assert ext.add_pod(sim, pod, PodInfo(make_pod("b1", labels=WEB)), n3) is None
    assert sim.read(PRE_FILTER_STATE_KEY).tp_counts == [{"a": 2, "b": 1}]
    assert plugin.filter(sim, pod, n1) == unsched  # 2 + 1 - 1 = 2
    ext.add_pod(sim, pod, PodInfo(make_pod("b2", labels=WEB)), n3)
    assert plugin.filter(sim, pod, n1) is None  # 2 + 1 - 2 = 1
    # A pod of another namespace or not matching the selector changes nothing.
    ext.add_pod(sim, pod, PodInfo(make_pod("x", labels=WEB, namespace="other")), n1)
    ext.add_pod(sim, pod, PodInfo(make_pod("y", labels={"app": "db"})), n1)
    assert sim.read(PRE_FILTER_STATE_KEY).tp_counts == [{"a": 2, "b": 2}]

    # The original state is untouched by the simulation.
    assert state.read(PRE_FILTER_STATE_KEY).tp_counts == [{"a": 2, "b": 0}]
    assert plugin.filter(state, pod, n1) == unsched

    sim2 = state.clone()
    victim = snapshot.get("n1").pods[0]
    assert ext.remove_pod(sim2, pod, victim, n1) is None
    ext.remove_pod(sim2, pod, snapshot.get("n1").pods[1], n1)
    assert sim2.read(PRE_FILTER_STATE_KEY).tp_counts == [{"a": 0, "b": 0}]
    assert plugin.filter(sim2, pod, n1) is None


def test_filter_without_pre_filter_state_is_an_error():
    plugin = PodTopologySpread({}, make_handle())
    snapshot = Snapshot.from_objects(ZONED)
    status = plugin.filter(CycleState(), incoming(constraint(ZONE)), snapshot.get("n1"))
    assert status is not None and status.code == Code.ERROR


# -- Score --------------------------------------------------------------------------------


def test_zone_scores_prefer_the_emptier_zone():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE, when="ScheduleAnyway"))
    got = run_scoring(plugin, pod, ZONED, web_pods({"n1": 2, "n3": 1}))
    # w = ln(2 + 2); a: 2 * 1.386 = 2.77 -> 3, b: 1.386 -> 1.
    assert (got["n1"], got["n2"], got["n3"]) == (3, 3, 1)
    # 100 * (max + min - s) // max with max 3, min 1.
    assert (got["norm:n1"], got["norm:n2"], got["norm:n3"]) == (33, 33, 100)


def test_hostname_scores_count_pods_per_node():
    nodes = [make_node("n1"), make_node("n2"), make_node("n3")]
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(HOST, when="ScheduleAnyway"))
    got = run_scoring(plugin, pod, nodes, web_pods({"n1": 3, "n2": 1}))
    # w = ln(3 + 2) = 1.609: 4.83 -> 5, 1.61 -> 2, 0.
    assert (got["n1"], got["n2"], got["n3"]) == (5, 2, 0)
    assert (got["norm:n1"], got["norm:n2"], got["norm:n3"]) == (0, 60, 100)


def test_nodes_missing_a_key_are_ignored_and_max_skew_waters_down():
    nodes = [
        make_node("n1", labels={ZONE: "a"}),
        make_node("n2", labels={ZONE: "b"}),
        make_node("n4"),
    ]
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(
        constraint(ZONE, max_skew=3, when="ScheduleAnyway"),
        constraint(HOST, when="ScheduleAnyway"),
    )
    got = run_scoring(plugin, pod, nodes, web_pods({"n1": 2, "n4": 5}))
    # Both weights ln(2 + 2) (n4 ignored): n1 = 2w + 2 + 2w = 7.55 -> 8; n2 = 0 + 2 = 2.
    assert (got["n1"], got["n2"], got["n4"]) == (8, 2, 0)
    assert (got["norm:n1"], got["norm:n2"], got["norm:n4"]) == (25, 100, 0)


def test_all_zero_scores_normalize_to_max():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE, when="ScheduleAnyway"))
    got = run_scoring(plugin, pod, ZONED)
    assert (got["norm:n1"], got["norm:n2"], got["norm:n3"]) == (100, 100, 100)


def test_only_feasible_nodes_define_domains():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE, when="ScheduleAnyway"))
    got = run_scoring(plugin, pod, ZONED, web_pods({"n1": 1, "n3": 4}), feasible=["n1", "n2"])
    # Only zone a is a candidate domain: size 1, w = ln 3 = 1.0986; zone b is never counted.
    assert (got["n1"], got["n2"]) == (1, 1)
    assert (got["norm:n1"], got["norm:n2"]) == (100, 100)


def test_pre_score_skips_without_soft_constraints_or_default_selector():
    plugin = PodTopologySpread({}, make_handle())
    snapshot = Snapshot.from_objects(ZONED)
    state = CycleState()
    state.snapshot = snapshot
    status = plugin.pre_score(state, incoming(constraint(ZONE)), snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP
    # System defaults need a Service/controller selector; there are no listers here.
    status = plugin.pre_score(state, make_pod("bare", labels=WEB), snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP


def service_handle(services: list[dict]):
    return make_handle(listers=make_listers({SERVICES: services}))


def test_system_defaults_apply_with_a_service_selector():
    service = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": WEB}}
    plugin = PodTopologySpread({}, service_handle([service]))
    nodes = [
        make_node("n1", labels={ZONE: "a"}),
        make_node("n2", labels={ZONE: "a"}),
        make_node("n3"),
    ]
    got = run_scoring(plugin, make_pod("bare", labels=WEB), nodes, web_pods({"n1": 1}))
    # hostname maxSkew 3 (w ln 5), zone maxSkew 5 (w ln 4; n3 is not ignored with System
    # defaults and counts in domain ""): n1 = 1.61 + 2 + 1.39 + 4 = 9.0 -> 9,
    # n2 = 2 + 1.39 + 4 = 7.39 -> 7, n3 = 2 (no zone label, so no zone term).
    assert (got["n1"], got["n2"], got["n3"]) == (9, 7, 2)
    assert (got["norm:n1"], got["norm:n2"], got["norm:n3"]) == (22, 44, 100)


def test_list_defaults_with_do_not_schedule_filter():
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    service = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": WEB}}
    plugin = PodTopologySpread(args, service_handle([service]))
    pod = make_pod("bare", labels=WEB)
    state, snapshot, status = run_pre_filter(plugin, pod, ZONED, web_pods({"n1": 2}))
    assert status is None
    got = filter_all(plugin, state, pod, snapshot)
    assert got["n1"] == Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert got["n3"] is None


# -- args and events -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"defaultingType": "Nope"}, "defaultingType"),
        (
            {
                "defaultingType": "System",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "defaultingType",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "defaultConstraints[0].maxSkew",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ],
            },
            "defaultConstraints[0].labelSelector",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
            "defaultConstraints[1]",
        ),
    ],
)
def test_invalid_args_name_the_field(args, field):
    with pytest.raises(ValueError, match="^" + re.escape(field)):
        PodTopologySpread(args, make_handle())


def test_events_to_register():
    events = PodTopologySpread({}, make_handle()).events_to_register()
    by_resource = {e.event.resource: e for e in events}
    assert by_resource[Resource.POD].event.action == (
        ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.UPDATE_POD_TOLERATION
        | ActionType.DELETE
    )
    assert by_resource[Resource.NODE].event.action == (
        ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT
    )
    assert all(e.hint is not None for e in events)


def test_queueing_hints():
    plugin = PodTopologySpread({}, make_handle())
    pod = incoming(constraint(ZONE))
    assigned_web = make_pod("w", labels=WEB, node_name="n1")
    assigned_db = make_pod("d", labels={"app": "db"}, node_name="n1")
    unassigned_web = make_pod("u", labels=WEB)
    other_ns = make_pod("o", labels=WEB, node_name="n1", namespace="other")
    hint = plugin.is_schedulable_after_pod_change
    assert hint(pod, None, assigned_web) == QueueingHint.QUEUE
    assert hint(pod, assigned_web, None) == QueueingHint.QUEUE
    assert hint(pod, None, assigned_db) == QueueingHint.QUEUE_SKIP
    assert hint(pod, None, unassigned_web) == QueueingHint.QUEUE_SKIP
    assert hint(pod, None, other_ns) == QueueingHint.QUEUE_SKIP
    relabelled = make_pod("w", labels={"app": "db"}, node_name="n1", uid="same")
    before = make_pod("w", labels=WEB, node_name="n1", uid="same")
    assert hint(pod, before, relabelled) == QueueingHint.QUEUE

    node_hint = plugin.is_schedulable_after_node_change
    zoned = make_node("n9", labels={ZONE: "c"})
    bare = make_node("n9")
    assert node_hint(pod, None, zoned) == QueueingHint.QUEUE
    assert node_hint(pod, None, bare) == QueueingHint.QUEUE_SKIP
    assert node_hint(pod, bare, zoned) == QueueingHint.QUEUE
    assert node_hint(pod, zoned, make_node("n9", labels={ZONE: "c", "x": "y"})) == (
        QueueingHint.QUEUE_SKIP
    )
    assert node_hint(pod, zoned, make_node("n9", labels={ZONE: "d"})) == QueueingHint.QUEUE
