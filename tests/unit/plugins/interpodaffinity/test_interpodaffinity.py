"""InterPodAffinity: exact statuses and scores from upstream semantics (upstream
``pkg/scheduler/framework/plugins/interpodaffinity``)."""

from __future__ import annotations

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, QueueingHint, Resource
from extender.framework.pod_info import PodInfo
from extender.framework.results import NodeScore
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
)
from tests.unit.builders import make_handle, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

AFFINITY_FAIL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI_FAIL = Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING_FAIL = Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

NODES = [
    make_node("n1", labels={ZONE: "a"}),
    make_node("n2", labels={ZONE: "a"}),
    make_node("n3", labels={ZONE: "b"}),
    make_node("n4"),
]


def term(labels: dict[str, str], key: str, **extra) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def weighted(weight: int, labels: dict[str, str], key: str) -> dict:
    return {"weight": weight, "podAffinityTerm": term(labels, key)}


def affinity(
    required: list[dict] | None = None,
    anti: list[dict] | None = None,
    preferred: list[dict] | None = None,
    preferred_anti: list[dict] | None = None,
) -> dict:
    result: dict = {}
    if required or preferred:
        result["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": required or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred or [],
        }
    if anti or preferred_anti:
        result["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred_anti or [],
        }
    return result


def run_pre_filter(plugin, pod, pods=(), nodes=NODES):
    snapshot = Snapshot.from_objects(nodes, pods)
    state = CycleState()
    state.snapshot = snapshot
    result, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert result is None
    return state, snapshot, status


def filter_all(plugin, state, pod, snapshot) -> dict[str, Status | None]:
    return {n.name: plugin.filter(state, pod, n) for n in snapshot.node_info_list}


def run_scoring(plugin, pod, pods=(), nodes=NODES) -> tuple[dict[str, int], dict[str, int]]:
    snapshot = Snapshot.from_objects(nodes, pods)
    state = CycleState()
    state.snapshot = snapshot
    assert plugin.pre_score(state, pod, snapshot.node_info_list) is None
    scores = []
    for info in snapshot.node_info_list:
        score, status = plugin.score(state, pod, info)
        assert status is None
        scores.append(NodeScore(info.name, score))
    raw = {s.name: s.score for s in scores}
    assert plugin.normalize_score(state, pod, scores) is None
    return raw, {s.name: s.score for s in scores}


# -- Filter -------------------------------------------------------------------------------


def test_required_affinity_needs_a_matching_pod_in_the_domain():
    plugin = InterPodAffinity({}, make_handle())
    db = make_pod("db", labels={"app": "db"}, node_name="n1")
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([term({"app": "db"}, ZONE)]))
    state, snapshot, status = run_pre_filter(plugin, pod, [db])
    assert status is None
    assert filter_all(plugin, state, pod, snapshot) == {
        "n1": None,
        "n2": None,  # same zone as the db pod
        "n3": AFFINITY_FAIL,
        "n4": AFFINITY_FAIL,  # no zone label at all
    }
    assert filter_all(plugin, state, pod, snapshot)["n3"].code == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )


def test_first_pod_matching_its_own_affinity_is_allowed():
    plugin = InterPodAffinity({}, make_handle())
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([term({"app": "web"}, ZONE)]))
    unrelated = make_pod("db", labels={"app": "db"}, node_name="n1")
    state, snapshot, _ = run_pre_filter(plugin, pod, [unrelated])
    # Nobody matches anywhere and the pod matches itself; the key must still exist.
    assert filter_all(plugin, state, pod, snapshot) == {
        "n1": None,
        "n2": None,
        "n3": None,
        "n4": AFFINITY_FAIL,
    }


def test_first_pod_rule_needs_the_pod_to_match_its_own_terms():
    plugin = InterPodAffinity({}, make_handle())
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([term({"app": "db"}, ZONE)]))
    state, snapshot, _ = run_pre_filter(plugin, pod)
    assert set(filter_all(plugin, state, pod, snapshot).values()) == {AFFINITY_FAIL}


def test_first_pod_rule_does_not_apply_once_a_match_exists_elsewhere():
    plugin = InterPodAffinity({}, make_handle())
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([term({"app": "web"}, ZONE)]))
    other = make_pod("web-0", labels={"app": "web"}, node_name="n3")
    state, snapshot, _ = run_pre_filter(plugin, pod, [other])
    got = filter_all(plugin, state, pod, snapshot)
    assert (got["n1"], got["n3"]) == (AFFINITY_FAIL, None)


def test_required_anti_affinity_rejects_the_domain_of_a_matching_pod():
    plugin = InterPodAffinity({}, make_handle())
    web = make_pod("web-0", labels={"app": "web"}, node_name="n1")
    pod = make_pod(
        "web-1", labels={"app": "web"}, affinity=affinity(anti=[term({"app": "web"}, HOST)])
    )
    state, snapshot, _ = run_pre_filter(plugin, pod, [web])
    assert filter_all(plugin, state, pod, snapshot) == {
        "n1": ANTI_FAIL,
        "n2": None,
        "n3": None,
        "n4": None,
    }
    assert ANTI_FAIL.code == Code.UNSCHEDULABLE


def test_existing_pods_anti_affinity_is_symmetric():
    plugin = InterPodAffinity({}, make_handle())
    hater = make_pod(
        "hater",
        labels={"app": "db"},
        node_name="n1",
        affinity=affinity(anti=[term({"app": "web"}, ZONE)]),
    )
    pod = make_pod("web", labels={"app": "web"})
    state, snapshot, status = run_pre_filter(plugin, pod, [hater])
    assert status is None
    assert filter_all(plugin, state, pod, snapshot) == {
        "n1": EXISTING_FAIL,
        "n2": EXISTING_FAIL,
        "n3": None,
        "n4": None,
    }


def test_pre_filter_skips_when_nothing_constrains_the_pod():
    plugin = InterPodAffinity({}, make_handle())
    hater = make_pod(
        "hater", node_name="n1", affinity=affinity(anti=[term({"app": "other"}, ZONE)])
    )
    _, _, status = run_pre_filter(plugin, make_pod("web", labels={"app": "web"}), [hater])
    assert status is not None and status.code == Code.SKIP


def test_add_and_remove_pod_update_a_cloned_state():
    plugin = InterPodAffinity({}, make_handle())
    hater = make_pod(
        "hater",
        labels={"app": "db"},
        node_name="n1",
        affinity=affinity(anti=[term({"app": "web"}, HOST)]),
    )
    web = make_pod("web-0", labels={"app": "web"}, node_name="n3")
    pod = make_pod(
        "web-1", labels={"app": "web"}, affinity=affinity(anti=[term({"app": "web"}, HOST)])
    )
    state, snapshot, _ = run_pre_filter(plugin, pod, [hater, web])
    n1, n2, n3 = snapshot.get("n1"), snapshot.get("n2"), snapshot.get("n3")
    assert (plugin.filter(state, pod, n1), plugin.filter(state, pod, n3)) == (
        EXISTING_FAIL,
        ANTI_FAIL,
    )

    ext = plugin.pre_filter_extensions()
    sim = state.clone()
    assert ext.remove_pod(sim, pod, n1.pods[0], n1) is None
    assert ext.remove_pod(sim, pod, n3.pods[0], n3) is None
    assert plugin.filter(sim, pod, n1) is None
    assert plugin.filter(sim, pod, n3) is None
    assert ext.add_pod(sim, pod, PodInfo(make_pod("web-2", labels={"app": "web"})), n2) is None
    assert plugin.filter(sim, pod, n2) == ANTI_FAIL
    # A simulated pod whose anti-affinity hates the incoming pod blocks its node too.
    ext.add_pod(sim, pod, PodInfo(hater), n3)
    assert plugin.filter(sim, pod, n3) == EXISTING_FAIL

    # The original state did not change.
    assert plugin.filter(state, pod, n1) == EXISTING_FAIL
    assert plugin.filter(state, pod, n2) is None


def test_removing_the_only_match_reenables_the_first_pod_rule():
    plugin = InterPodAffinity({}, make_handle())
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([term({"app": "web"}, ZONE)]))
    other = make_pod("web-0", labels={"app": "web"}, node_name="n3")
    state, snapshot, _ = run_pre_filter(plugin, pod, [other])
    n1, n3 = snapshot.get("n1"), snapshot.get("n3")
    assert plugin.filter(state, pod, n1) == AFFINITY_FAIL
    sim = state.clone()
    plugin.pre_filter_extensions().remove_pod(sim, pod, n3.pods[0], n3)
    assert plugin.filter(sim, pod, n1) is None


def namespace_handle(labels: dict[str, dict]):
    return make_handle(namespace_labels=labels.get)


def test_namespace_selector_uses_handle_namespace_labels():
    db = make_pod("db", labels={"app": "db"}, node_name="n3", namespace="data")
    selected = term({"app": "db"}, ZONE, namespaceSelector={"matchLabels": {"team": "x"}})
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([selected]))

    plugin = InterPodAffinity({}, namespace_handle({"data": {"team": "x"}}))
    state, snapshot, _ = run_pre_filter(plugin, pod, [db])
    got = filter_all(plugin, state, pod, snapshot)
    assert (got["n1"], got["n3"]) == (AFFINITY_FAIL, None)

    # Without namespace labels the db pod is out of the term's namespaces: no match anywhere,
    # and the pod does not match its own term, so every node fails.
    plugin = InterPodAffinity({}, make_handle())
    state, snapshot, _ = run_pre_filter(plugin, pod, [db])
    assert set(filter_all(plugin, state, pod, snapshot).values()) == {AFFINITY_FAIL}


def test_empty_namespace_selector_matches_all_namespaces():
    db = make_pod("db", labels={"app": "db"}, node_name="n3", namespace="data")
    everywhere = term({"app": "db"}, ZONE, namespaceSelector={})
    pod = make_pod("web", labels={"app": "web"}, affinity=affinity([everywhere]))
    plugin = InterPodAffinity({}, make_handle())
    state, snapshot, _ = run_pre_filter(plugin, pod, [db])
    got = filter_all(plugin, state, pod, snapshot)
    assert (got["n1"], got["n3"]) == (AFFINITY_FAIL, None)


def test_filter_without_pre_filter_state_is_an_error():
    plugin = InterPodAffinity({}, make_handle())
    status = plugin.filter(CycleState(), make_pod("p"), Snapshot.from_objects(NODES).get("n1"))
    assert status is not None and status.code == Code.ERROR


# -- Score --------------------------------------------------------------------------------


def test_scores_from_incoming_and_existing_terms():
    plugin = InterPodAffinity({}, make_handle())
    pods = [
        make_pod("db", labels={"app": "db"}, node_name="n1"),
        make_pod("web", labels={"app": "web"}, node_name="n2"),
        make_pod(
            "cache",
            labels={"app": "cache"},
            node_name="n3",
            affinity=affinity([term({"app": "frontend"}, HOST)]),
        ),
    ]
    pod = make_pod(
        "frontend",
        labels={"app": "frontend"},
        affinity=affinity(
            preferred=[weighted(10, {"app": "db"}, ZONE)],
            preferred_anti=[weighted(5, {"app": "web"}, HOST)],
        ),
    )
    raw, norm = run_scoring(plugin, pod, pods)
    # zone a +10, host n2 -5, host n3 +1 (hard affinity of the cache pod, weight 1).
    assert raw == {"n1": 10, "n2": 5, "n3": 1, "n4": 0}
    # 100 * (s - min) / (max - min), truncated: min 0, max 10.
    assert norm == {"n1": 100, "n2": 50, "n3": 10, "n4": 0}


def test_existing_pods_terms_and_hard_pod_affinity_weight():
    plugin = InterPodAffinity({"hardPodAffinityWeight": 2}, make_handle())
    frontend = {"app": "frontend"}
    pods = [
        make_pod("a", node_name="n1", affinity=affinity(preferred=[weighted(50, frontend, ZONE)])),
        make_pod("b", node_name="n2", affinity=affinity([term(frontend, HOST)])),
        make_pod(
            "c", node_name="n3", affinity=affinity(preferred_anti=[weighted(30, frontend, HOST)])
        ),
    ]
    raw, norm = run_scoring(plugin, make_pod("frontend", labels=frontend), pods)
    # zone a +50, host n2 +2, host n3 -30.
    assert raw == {"n1": 50, "n2": 52, "n3": -30, "n4": 0}
    # min -30, max 52: n1 = 100 * 80 / 82 = 97.56 -> 97; n4 = 100 * 30 / 82 = 36.6 -> 36.
    assert norm == {"n1": 97, "n2": 100, "n3": 0, "n4": 36}


def test_hard_pod_affinity_weight_zero_ignores_required_terms_of_existing_pods():
    plugin = InterPodAffinity({"hardPodAffinityWeight": 0}, make_handle())
    frontend = {"app": "frontend"}
    pods = [make_pod("b", node_name="n2", affinity=affinity([term(frontend, HOST)]))]
    snapshot = Snapshot.from_objects(NODES, pods)
    state = CycleState()
    state.snapshot = snapshot
    status = plugin.pre_score(state, make_pod("f", labels=frontend), snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP


def test_equal_scores_normalize_to_zero():
    plugin = InterPodAffinity({}, make_handle())
    nodes = [make_node("n1", labels={ZONE: "a"}), make_node("n2", labels={ZONE: "a"})]
    pods = [make_pod("db", labels={"app": "db"}, node_name="n1")]
    pod = make_pod("f", affinity=affinity(preferred=[weighted(10, {"app": "db"}, ZONE)]))
    raw, norm = run_scoring(plugin, pod, pods, nodes)
    assert raw == {"n1": 10, "n2": 10}
    assert norm == {"n1": 0, "n2": 0}


def test_ignore_preferred_terms_of_existing_pods_skips_pods_without_preferences():
    frontend = {"app": "frontend"}
    pods = [
        make_pod("a", node_name="n1", affinity=affinity(preferred=[weighted(50, frontend, ZONE)]))
    ]
    snapshot = Snapshot.from_objects(NODES, pods)
    pod = make_pod("frontend", labels=frontend)

    state = CycleState()
    state.snapshot = snapshot
    assert (
        InterPodAffinity({}, make_handle()).pre_score(state, pod, snapshot.node_info_list) is None
    )

    state = CycleState()
    state.snapshot = snapshot
    plugin = InterPodAffinity({"ignorePreferredTermsOfExistingPods": True}, make_handle())
    status = plugin.pre_score(state, pod, snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP


def test_pre_score_skips_when_no_term_matches():
    plugin = InterPodAffinity({}, make_handle())
    snapshot = Snapshot.from_objects(NODES, [make_pod("x", labels={"app": "x"}, node_name="n1")])
    state = CycleState()
    state.snapshot = snapshot
    pod = make_pod("f", affinity=affinity(preferred=[weighted(10, {"app": "db"}, ZONE)]))
    status = plugin.pre_score(state, pod, snapshot.node_info_list)
    assert status is not None and status.code == Code.SKIP


# -- args and events -----------------------------------------------------------------------


@pytest.mark.parametrize("weight", [-1, 101, "5", 1.5])
def test_invalid_hard_pod_affinity_weight(weight):
    with pytest.raises(ValueError, match="^hardPodAffinityWeight"):
        InterPodAffinity({"hardPodAffinityWeight": weight}, make_handle())


def test_default_args():
    plugin = InterPodAffinity({}, make_handle())
    assert plugin.hard_pod_affinity_weight == 1
    assert plugin.ignore_preferred_terms_of_existing_pods is False
    assert (
        InterPodAffinity({"hardPodAffinityWeight": 100}, make_handle()).hard_pod_affinity_weight
        == 100
    )


def test_events_to_register():
    events = InterPodAffinity({}, make_handle()).events_to_register()
    by_resource = {e.event.resource: e for e in events}
    assert by_resource[Resource.POD].event.action == (
        ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    )
    assert by_resource[Resource.NODE].event.action == (
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    )
    assert all(e.hint is not None for e in events)


def test_pod_queueing_hints():
    plugin = InterPodAffinity({}, make_handle())
    hint = plugin.is_schedulable_after_pod_change
    pod = make_pod(
        "web",
        labels={"app": "web"},
        affinity=affinity([term({"app": "db"}, ZONE)], anti=[term({"app": "spam"}, HOST)]),
    )
    db = make_pod("db", labels={"app": "db"}, node_name="n1")
    spam = make_pod("spam", labels={"app": "spam"}, node_name="n1")
    assert hint(pod, None, db) == QueueingHint.QUEUE
    assert hint(pod, None, spam) == QueueingHint.QUEUE_SKIP
    assert hint(pod, None, make_pod("db2", labels={"app": "db"})) == QueueingHint.QUEUE_SKIP
    assert hint(pod, spam, None) == QueueingHint.QUEUE
    assert hint(pod, db, None) == QueueingHint.QUEUE_SKIP
    relabelled = make_pod("spam", labels={"app": "ham"}, node_name="n1")
    assert hint(pod, spam, relabelled) == QueueingHint.QUEUE
    hater = make_pod("hater", node_name="n1", affinity=affinity(anti=[term({"app": "web"}, ZONE)]))
    assert hint(make_pod("plain", labels={"app": "web"}), hater, None) == QueueingHint.QUEUE


def test_node_queueing_hints():
    plugin = InterPodAffinity({}, make_handle())
    hint = plugin.is_schedulable_after_node_change
    pod = make_pod("web", affinity=affinity([term({"app": "db"}, ZONE)]))
    assert hint(pod, None, make_node("n9", labels={ZONE: "c"})) == QueueingHint.QUEUE
    assert hint(pod, None, make_node("n9")) == QueueingHint.QUEUE_SKIP
    old = make_node("n9", labels={ZONE: "c"})
    assert hint(pod, old, make_node("n9", labels={ZONE: "d"})) == QueueingHint.QUEUE
    assert hint(pod, old, make_node("n9", labels={ZONE: "c", "x": "y"})) == (
        QueueingHint.QUEUE_SKIP
    )
    anti = make_pod("web", affinity=affinity(anti=[term({"app": "db"}, ZONE)]))
    assert hint(anti, old, make_node("n9")) == QueueingHint.QUEUE
    assert hint(anti, make_node("n9"), old) == QueueingHint.QUEUE_SKIP
