"""PodTopologySpread: exact statuses and scores from upstream semantics
(``pkg/scheduler/framework/plugins/podtopologyspread``)."""

from __future__ import annotations

import re

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, QueueingHint, Resource
from extender.framework.handle import (
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
)
from extender.framework.pod_info import PodInfo
from extender.framework.results import NodeScore
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PodTopologySpread,
    default_selector,
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


# -- default constraints: the selector from Services and the pod's controller ---------------
#
# Upstream: DefaultSelector and GetPodServices in pkg/scheduler/framework/plugins/helper/
# spread.go, buildDefaultConstraints in .../podtopologyspread/common.go. Three hostname-only
# nodes; web pods of two tiers already run there, so which selector the defaults use shows in
# the scores:
#   fe pods: n1 2, n2 1, n3 0 -> raw (5, 4, 2) -> normalized (40, 60, 100)
#   all web: n1 2, n2 1, n3 3 -> raw (5, 4, 7) -> normalized (85, 100, 57)
# (hostname maxSkew 3, weight ln(3 + 2); the nodes lack the zone key, so no zone term).

FE = {"app": "web", "tier": "fe"}
BE = {"app": "web", "tier": "be"}
HOSTS = [make_node("n1"), make_node("n2"), make_node("n3")]
TIERED = [
    make_pod("fe-1", labels=FE, node_name="n1"),
    make_pod("fe-2", labels=FE, node_name="n1"),
    make_pod("fe-3", labels=FE, node_name="n2"),
    *(make_pod(f"be-{i}", labels=BE, node_name="n3") for i in range(3)),
]
FE_SCORES = (40, 60, 100)
ALL_WEB_SCORES = (85, 100, 57)


def owner(kind: str, name: str, api_version: str = "apps/v1", controller: bool = True) -> dict:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
    }


def owned_pod(*owners: dict, **kwargs) -> dict:
    pod = make_pod("owned", labels=FE, **kwargs)
    pod["metadata"]["ownerReferences"] = list(owners)
    return pod


def workload(name: str, selector: dict, namespace: str = "default") -> dict:
    """A ReplicaSet / StatefulSet / ReplicationController / Service: only the selector counts."""
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"selector": selector}}


def default_spread_scores(objects: dict, pod: dict, args: dict | None = None):
    """Normalized (n1, n2, n3) scores, or "skip" when PreScore finds no constraint."""
    plugin = PodTopologySpread(args or {}, make_handle(listers=make_listers(objects)))
    snapshot = Snapshot.from_objects(HOSTS, TIERED)
    state = CycleState()
    state.snapshot = snapshot
    status = plugin.pre_score(state, pod, snapshot.node_info_list)
    if status is not None:
        assert status.code == Code.SKIP, status
        return "skip"
    return tuple(s.score for s in _normalized(plugin, state, pod, snapshot.node_info_list))


def _normalized(plugin, state, pod, infos) -> list[NodeScore]:
    scores = [NodeScore(info.name, plugin.score(state, pod, info)[0]) for info in infos]
    assert plugin.normalize_score(state, pod, scores) is None
    return scores


def test_replica_set_selector_with_match_expressions_drives_default_spreading():
    rs = workload(
        "web-rs",
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
        },
    )
    pod = owned_pod(owner("ReplicaSet", "web-rs"))
    assert default_spread_scores({REPLICA_SETS: [rs]}, pod) == FE_SCORES


def test_replica_set_match_labels_only():
    rs = workload("web-rs", {"matchLabels": {"app": "web"}})
    pod = owned_pod(owner("ReplicaSet", "web-rs"))
    assert default_spread_scores({REPLICA_SETS: [rs]}, pod) == ALL_WEB_SCORES


def test_stateful_set_selector():
    sts = workload("web-sts", {"matchLabels": FE})
    pod = owned_pod(owner("StatefulSet", "web-sts"))
    assert default_spread_scores({STATEFUL_SETS: [sts]}, pod) == FE_SCORES


def test_replication_controller_map_selector():
    rc = workload("web-rc", {"app": "web"})
    pod = owned_pod(owner("ReplicationController", "web-rc", api_version="v1"))
    assert default_spread_scores({REPLICATION_CONTROLLERS: [rc]}, pod) == ALL_WEB_SCORES
    # Merged with a Service's selector into one label set.
    service = workload("tier", {"tier": "fe"})
    objects = {REPLICATION_CONTROLLERS: [rc], SERVICES: [service]}
    assert default_spread_scores(objects, pod) == FE_SCORES


def test_one_service_or_two_merged():
    web = workload("web", {"app": "web"})
    fe = workload("fe", {"tier": "fe"})
    pod = make_pod("bare", labels=FE)
    assert default_spread_scores({SERVICES: [web]}, pod) == ALL_WEB_SCORES
    assert default_spread_scores({SERVICES: [web, fe]}, pod) == FE_SCORES
    # A Service that does not select the pod adds nothing.
    be = workload("be", {"tier": "be"})
    assert default_spread_scores({SERVICES: [web, be]}, pod) == ALL_WEB_SCORES


def test_service_and_replica_set_selectors_are_combined():
    service = workload("web", {"app": "web"})
    rs = workload("fe-rs", {"matchLabels": {"tier": "fe"}})
    pod = owned_pod(owner("ReplicaSet", "fe-rs"))
    assert default_spread_scores({SERVICES: [service], REPLICA_SETS: [rs]}, pod) == FE_SCORES


@pytest.mark.parametrize(
    ("objects", "pod"),
    [
        pytest.param(
            {SERVICES: [workload("web", {"app": "web"}, namespace="other")]},
            make_pod("bare", labels=FE),
            id="service-in-another-namespace",
        ),
        pytest.param(
            {SERVICES: [{"metadata": {"name": "headless", "namespace": "default"}, "spec": {}}]},
            make_pod("bare", labels=FE),
            id="service-without-selector",
        ),
        pytest.param(
            {REPLICA_SETS: [workload("web-rs", {"matchLabels": FE})]},
            owned_pod(owner("ReplicaSet", "web-rs", controller=False)),
            id="owner-not-controller",
        ),
        pytest.param(
            {REPLICA_SETS: [workload("web-rs", {"matchLabels": FE})]},
            owned_pod(owner("ReplicaSet", "gone-rs")),
            id="owner-missing-from-lister",
        ),
        pytest.param(
            {REPLICA_SETS: [workload("web-rs", {"matchLabels": FE}, namespace="other")]},
            owned_pod(owner("ReplicaSet", "web-rs")),
            id="owner-in-another-namespace",
        ),
        pytest.param(
            {REPLICA_SETS: [workload("web-rs", {"matchLabels": FE})]},
            owned_pod(owner("ReplicaSet", "web-rs", api_version="extensions/v1beta1")),
            id="owner-of-another-api-version",
        ),
        pytest.param(
            {REPLICA_SETS: [workload("web-rs", {})]},
            owned_pod(owner("ReplicaSet", "web-rs")),
            id="empty-controller-selector",
        ),
    ],
)
def test_no_default_spreading_without_a_selecting_object(objects, pod):
    assert default_spread_scores(objects, pod) == "skip"


def test_pod_with_own_constraints_ignores_the_defaults():
    rs = workload("web-rs", {"matchLabels": FE})
    own = constraint(HOST, max_skew=1, when="ScheduleAnyway")
    own["labelSelector"] = {"matchLabels": BE}
    pod = owned_pod(owner("ReplicaSet", "web-rs"), topologySpreadConstraints=[own])
    # be pods: n1 0, n2 0, n3 3 -> raw (0, 0, 5); the RS's fe pods play no part.
    assert default_spread_scores({REPLICA_SETS: [rs]}, pod) == (100, 100, 0)
    # Own hard constraints only: nothing to score, the defaults are not used either.
    own["whenUnsatisfiable"] = "DoNotSchedule"
    assert default_spread_scores({REPLICA_SETS: [rs]}, pod) == "skip"


def test_list_defaulting_filters_with_the_replica_set_selector():
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    rs = workload("web-rs", {"matchLabels": FE})
    handle = make_handle(listers=make_listers({REPLICA_SETS: [rs]}))
    plugin = PodTopologySpread(args, handle)
    pod = owned_pod(owner("ReplicaSet", "web-rs"))
    state, snapshot, status = run_pre_filter(plugin, pod, HOSTS, TIERED)
    assert status is None
    got = filter_all(plugin, state, pod, snapshot)
    # fe pods n1 2, n2 1, n3 0; minimum 0: skews 3, 2, 1 against maxSkew 1.
    assert got["n1"] == Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert got["n2"] == Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert got["n3"] is None
    # No ScheduleAnyway default: nothing to score.
    assert default_spread_scores({REPLICA_SETS: [rs]}, pod, args) == "skip"
    # A bare pod gets no default constraints at all.
    state, _, status = run_pre_filter(plugin, make_pod("bare", labels=FE), HOSTS, TIERED)
    assert status is not None and status.code == Code.SKIP


def lookup(objects: dict):
    listers = make_listers(objects)
    return lambda kind, namespace, name: listers(kind).get(namespace, name)


def test_default_selector_adds_replica_set_requirements_to_the_service_labels():
    """A key both the Services and the ReplicaSet constrain must satisfy both (upstream
    ``selector.Add``), not take the ReplicaSet's value."""
    service = workload("web", {"app": "web"})
    rs = workload("api-rs", {"matchLabels": {"app": "api"}})
    pod = owned_pod(owner("ReplicaSet", "api-rs"))
    selector = default_selector(pod, [service], lookup({REPLICA_SETS: [rs]}))
    assert not selector.empty
    assert not selector.matches({"app": "web"})
    assert not selector.matches({"app": "api"})


def test_default_selector_replication_controller_value_wins_on_a_shared_key():
    """A ReplicationController's map is merged (``labels.Merge``): its value replaces the
    Service's."""
    service = workload("web", {"app": "web"})
    rc = workload("api-rc", {"app": "api"})
    pod = owned_pod(owner("ReplicationController", "api-rc", api_version="v1"))
    selector = default_selector(pod, [service], lookup({REPLICATION_CONTROLLERS: [rc]}))
    assert selector.matches({"app": "api"})
    assert not selector.matches({"app": "web"})


@pytest.mark.parametrize(
    ("api_version", "kind", "counts"),
    [
        ("v1", "ReplicationController", True),
        ("/v1", "ReplicationController", True),  # ParseGroupVersion: the core group
        ("apps/v1", "ReplicationController", False),
        ("apps/v1", "ReplicaSet", True),
        ("apps/v1beta2", "ReplicaSet", False),
        ("apps/v1/x", "ReplicaSet", False),  # does not parse
        ("apps/v1", "Deployment", False),
        ("apps/v1", "StatefulSet", True),
    ],
)
def test_default_selector_owner_api_version_and_kind(api_version, kind, counts):
    rc_selector = {"tier": "fe"}
    objects = {
        REPLICATION_CONTROLLERS: [workload("owner", rc_selector)],
        REPLICA_SETS: [workload("owner", {"matchLabels": rc_selector})],
        STATEFUL_SETS: [workload("owner", {"matchLabels": rc_selector})],
    }
    pod = owned_pod(owner(kind, "owner", api_version=api_version))
    selector = default_selector(pod, [], lookup(objects))
    assert selector.empty is not counts
    if counts:
        assert selector.matches(FE) and not selector.matches(BE)


def test_default_selector_ignores_an_invalid_controller_selector():
    """``LabelSelectorAsSelector`` fails on an unknown operator: upstream adds nothing."""
    bad = {"matchExpressions": [{"key": "tier", "operator": "Near", "values": ["fe"]}]}
    pod = owned_pod(owner("ReplicaSet", "bad-rs"))
    service = workload("web", {"app": "web"})
    objects = {REPLICA_SETS: [workload("bad-rs", bad)]}
    selector = default_selector(pod, [service], lookup(objects))
    assert selector.matches(BE)


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
