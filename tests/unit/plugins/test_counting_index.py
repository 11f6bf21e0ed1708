"""InterPodAffinity and PodTopologySpread count through NodeInfo's label index
(``NodeInfo.candidates``); on random clusters their states, statuses and scores equal the walk
over every pod that upstream does (``processExistingPod`` in
``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``,
``getIncomingAffinityAntiAffinityCounts`` in ``.../interpodaffinity/filtering.go``,
``countPodsMatchSelector`` in ``.../podtopologyspread/common.go``).

Two references: the plugins with ``candidates`` patched to return every pod (the walk), and,
for InterPodAffinity, the pre-index walks written out below.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState
from extender.framework.labels import RequiredNodeAffinity
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo
from extender.framework.results import NodeScore
from extender.framework.snapshot import Snapshot
from extender.framework.status import Status
from extender.plugins.interpodaffinity import InterPodAffinity, NamespaceLabels, term_matches
from extender.plugins.interpodaffinity import filtering as ipa_filtering
from extender.plugins.podtopologyspread import (
    DO_NOT_SCHEDULE,
    PodTopologySpread,
    count_pods_matching,
    node_has_all_keys,
)
from tests.unit.builders import make_handle, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
KEYS = ("app", "tier", "env")
VALUES = ("a", "b", "c")
NAMESPACES = ("default", "ns1", "ns2")
NAMESPACE_LABELS = {"default": {"team": "x"}, "ns1": {"team": "y"}, "ns2": {}}


def labels(rng: random.Random) -> dict[str, str]:
    return {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.7}


def requirement(rng: random.Random, keys: tuple[str, ...] = KEYS) -> dict:
    op = rng.choice(("In", "In", "NotIn", "Exists", "DoesNotExist"))
    req: dict = {"key": rng.choice(keys), "operator": op}
    if op in ("In", "NotIn"):
        req["values"] = [rng.choice(VALUES) for _ in range(rng.randint(1, 3))]
    return req


def selector(rng: random.Random) -> dict | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.12:
        return {}
    out: dict = {}
    if rng.random() < 0.6:
        out["matchLabels"] = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(1, 2))}
    if rng.random() < 0.5 or not out:
        out["matchExpressions"] = [requirement(rng) for _ in range(rng.randint(1, 2))]
    return out


def affinity_term(rng: random.Random) -> dict:
    term: dict = {"topologyKey": rng.choice((ZONE, ZONE, HOST, "rack"))}
    sel = selector(rng)
    if sel is not None:
        term["labelSelector"] = sel
    roll = rng.random()
    if roll < 0.2:
        term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif roll < 0.3:
        term["namespaceSelector"] = {}
    elif roll < 0.4:
        term["namespaceSelector"] = {"matchLabels": {"team": rng.choice(("x", "y"))}}
    if rng.random() < 0.15:
        term["matchLabelKeys"] = [rng.choice(KEYS)]
    if rng.random() < 0.1:
        term["mismatchLabelKeys"] = [rng.choice(KEYS)]
    return term


def pod_affinity(rng: random.Random, p: float) -> dict:
    """Random podAffinity/podAntiAffinity, each list present with probability ``p``."""
    out: dict = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        block: dict = {}
        if rng.random() < p:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [
                affinity_term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < p:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": affinity_term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
        if block:
            out[kind] = block
    return out


def spread_constraints(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(rng.randint(1, 2)):
        c: dict = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": rng.choice((ZONE, HOST)),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
        }
        sel = selector(rng)
        if sel is not None:
            c["labelSelector"] = sel
        if rng.random() < 0.2:
            c["matchLabelKeys"] = [rng.choice(KEYS)]
        if rng.random() < 0.2:
            c["minDomains"] = rng.randint(1, 4)
        if rng.random() < 0.2:
            c["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.2:
            c["nodeAffinityPolicy"] = "Ignore"
        out.append(c)
    # One (key, whenUnsatisfiable) pair per constraint, as validation requires.
    return list({(c["topologyKey"], c["whenUnsatisfiable"]): c for c in out}.values())


def cluster(rng: random.Random) -> tuple[list[dict], list[dict]]:
    nodes = []
    for i in range(rng.randint(3, 10)):
        node_labels: dict[str, str] = {"pool": rng.choice(("p0", "p1"))}
        if rng.random() < 0.85:
            node_labels[ZONE] = f"z{rng.randint(0, 2)}"
        if rng.random() < 0.5:
            node_labels["rack"] = f"r{rng.randint(0, 1)}"
        taints = [{"key": "t", "value": "v", "effect": "NoSchedule"}] if rng.random() < 0.2 else []
        nodes.append(make_node(f"n{i}", labels=node_labels, taints=taints))
    pods = []
    for j in range(rng.randint(0, 8 * len(nodes))):
        spec: dict[str, Any] = {}
        if rng.random() < 0.25:
            spec["affinity"] = pod_affinity(rng, 0.5)
        pod = make_pod(
            f"e{j}",
            namespace=rng.choice(NAMESPACES),
            labels=labels(rng),
            node_name=rng.choice(nodes)["metadata"]["name"],
            **spec,
        )
        if rng.random() < 0.15:
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        pods.append(pod)
    return nodes, pods


def mutated_snapshot(rng: random.Random, nodes: list[dict], pods: list[dict]) -> Snapshot:
    """The cluster's snapshot with some nodes replaced by clones that lost and gained pods
    (as preemption's simulations and the cache's per-cycle clones do)."""
    snapshot = Snapshot.from_objects(nodes, pods)
    replaced = []
    for info in snapshot.node_info_list:
        if rng.random() < 0.4:
            copy = info.clone()
            for existing in list(copy.pods):
                if rng.random() < 0.3:
                    assert copy.remove_pod(existing.key) is not None
            for k in range(rng.randint(0, 3)):
                copy.add_pod(
                    make_pod(
                        f"{info.name}-new{k}",
                        namespace=rng.choice(NAMESPACES),
                        labels=labels(rng),
                        node_name=info.name,
                    )
                )
            replaced.append(copy)
            # The original changes too: the clone must not see it.
            info.add_pod(make_pod(f"{info.name}-late", labels=labels(rng), node_name=info.name))
    return snapshot.overlay(replaced)


def incoming(rng: random.Random) -> dict:
    spec: dict[str, Any] = {"affinity": pod_affinity(rng, 0.6)}
    if rng.random() < 0.7:
        spec["topologySpreadConstraints"] = spread_constraints(rng)
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"pool": "p0"}
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    return make_pod("incoming", namespace=rng.choice(NAMESPACES), labels=labels(rng), **spec)


def status_of(status: Status | None) -> tuple | None:
    return None if status is None else (status.code, tuple(status.reasons))


def run(plugin: Any, pod: dict, snapshot: Snapshot, feasible: list[NodeInfo]) -> dict:
    """Everything the plugin decides for ``pod``: its states' counts, statuses and scores."""
    out: dict[str, Any] = {}
    state = CycleState()
    state.snapshot = snapshot
    _, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
    out["pre_filter"] = status_of(status)
    if status is None:
        s = state.read("PreFilter" + plugin.name)
        out["pre_filter_state"] = {
            k: getattr(s, k)
            for k in (
                "existing_anti_affinity_counts",
                "affinity_counts",
                "anti_affinity_counts",
                "tp_counts",
            )
            if hasattr(s, k)
        }
        out["filter"] = {
            info.name: status_of(plugin.filter(state, pod, info))
            for info in snapshot.node_info_list
        }
    status = plugin.pre_score(state, pod, feasible)
    out["pre_score"] = status_of(status)
    if status is None:
        s = state.read("PreScore" + plugin.name)
        out["pre_score_state"] = {
            k: getattr(s, k)
            for k in ("topology_score", "tp_counts", "ignored_nodes")
            if hasattr(s, k)
        }
        scores = []
        for info in feasible:
            value, score_status = plugin.score(state, pod, info)
            assert score_status is None
            scores.append(NodeScore(info.name, value))
        assert plugin.score_extensions().normalize_score(state, pod, scores) is None
        out["scores"] = {ns.name: ns.score for ns in scores}
    return out


def walk_pre_filter_counts(pod_info: PodInfo, nodes: list[NodeInfo], ns: NamespaceLabels) -> dict:
    """The incoming pod's required (anti-)affinity counts by walking every pod (upstream
    ``getIncomingAffinityAntiAffinityCounts``)."""
    affinity: dict = {}
    anti: dict = {}
    for info in nodes:
        for existing in info.pods:
            terms = pod_info.required_affinity_terms
            if terms and all(term_matches(t, existing, ns) for t in terms):
                for t in terms:
                    ipa_filtering._bump(affinity, info.labels, t.topology_key, 1)
            for t in pod_info.required_anti_affinity_terms:
                if term_matches(t, existing, ns):
                    ipa_filtering._bump(anti, info.labels, t.topology_key, 1)
    return {"affinity_counts": affinity, "anti_affinity_counts": anti}


def walk_topology_score(
    plugin: InterPodAffinity, incoming_pod: PodInfo, nodes: list[NodeInfo], ns: NamespaceLabels
) -> dict:
    """Upstream's ``processExistingPod`` over every pod of every node, as one function."""
    score: dict[str, dict[str, int]] = {}
    for info in nodes:
        if not info.labels:
            continue
        for existing in info.pods:
            pairs = [
                (wt.term, wt.weight * sign, existing)
                for terms, sign in (
                    (incoming_pod.preferred_affinity_terms, 1),
                    (incoming_pod.preferred_anti_affinity_terms, -1),
                )
                for wt in terms
            ]
            if plugin.hard_pod_affinity_weight > 0:
                pairs += [
                    (t, plugin.hard_pod_affinity_weight, incoming_pod)
                    for t in existing.required_affinity_terms
                ]
            pairs += [
                (wt.term, wt.weight, incoming_pod) for wt in existing.preferred_affinity_terms
            ]
            pairs += [
                (wt.term, -wt.weight, incoming_pod) for wt in existing.preferred_anti_affinity_terms
            ]
            for term, weight, target in pairs:
                value = info.labels.get(term.topology_key)
                if term_matches(term, target, ns) and value is not None:
                    values = score.setdefault(term.topology_key, {})
                    values[value] = values.get(value, 0) + weight
    return score


def walk_spread_counts(plugin: PodTopologySpread, pod: dict, nodes: list[NodeInfo]) -> list:
    """PreFilter's per-domain counts by walking every pod of every eligible node (upstream
    ``calPreFilterState`` in ``.../podtopologyspread/filtering.go``)."""
    constraints = plugin._constraints(pod, DO_NOT_SCHEDULE)
    namespace = pod["metadata"]["namespace"]
    required = RequiredNodeAffinity(pod)
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for info in nodes:
        if info.node is None or not node_has_all_keys(info.labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.matches_inclusion_policies(pod, info, required):
                value = info.labels[c.topology_key]
                found = count_pods_matching(info.pods, c.selector, namespace)
                counts[i][value] = counts[i].get(value, 0) + found
    return counts


@pytest.fixture
def walk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A context in which ``NodeInfo.candidates`` offers every pod and the table's index
    offers nothing (the plugins walk the nodes): the walk."""

    class Walk:
        def __enter__(self) -> None:
            monkeypatch.setattr(NodeInfo, "candidates", lambda self, selector: self.pods)
            monkeypatch.setattr(NodeTable, "candidates", lambda self, selector: None)

        def __exit__(self, *exc: object) -> None:
            monkeypatch.undo()

    yield Walk()


def scenarios(count: int) -> Iterator[tuple[random.Random, Snapshot, dict, list[NodeInfo]]]:
    for seed in range(count):
        rng = random.Random(seed)
        nodes, pods = cluster(rng)
        snapshot = mutated_snapshot(rng, nodes, pods)
        infos = snapshot.node_info_list
        feasible = [i for i in infos if rng.random() < 0.8] or infos[:1]
        yield rng, snapshot, incoming(rng), feasible


def handle() -> Any:
    return make_handle(namespace_labels=NAMESPACE_LABELS.get)


@pytest.mark.parametrize("args", [{}, {"hardPodAffinityWeight": 0}])
def test_inter_pod_affinity_indexed_equals_walk(walk: Any, args: dict) -> None:
    compared = scored = 0
    for _, snapshot, pod, feasible in scenarios(150):
        indexed = run(InterPodAffinity(args, handle()), pod, snapshot, feasible)
        with walk:
            walked = run(InterPodAffinity(args, handle()), pod, snapshot, feasible)
        assert indexed == walked

        plugin = InterPodAffinity(args, handle())
        pod_info = PodInfo(pod)
        ns = NamespaceLabels(plugin.handle)
        if "pre_filter_state" in indexed:
            counts = walk_pre_filter_counts(pod_info, snapshot.node_info_list, ns)
            for key, value in counts.items():
                assert indexed["pre_filter_state"][key] == value
        expected = walk_topology_score(plugin, pod_info, snapshot.node_info_list, ns)
        assert indexed.get("pre_score_state", {}).get("topology_score", {}) == expected
        compared += 1
        scored += bool(expected)
    # The random clusters do exercise scoring, not only Skip.
    assert scored > compared // 4


def test_pod_topology_spread_indexed_equals_walk(walk: Any) -> None:
    counted = 0
    for _, snapshot, pod, feasible in scenarios(200):
        indexed = run(PodTopologySpread({}, handle()), pod, snapshot, feasible)
        with walk:
            walked = run(PodTopologySpread({}, handle()), pod, snapshot, feasible)
        assert indexed == walked
        state = indexed.get("pre_filter_state", {})
        if state:
            plugin = PodTopologySpread({}, handle())
            assert state["tp_counts"] == walk_spread_counts(plugin, pod, snapshot.node_info_list)
        counted += any(any(m.values()) for m in state.get("tp_counts", ()))
    assert counted > 20


def test_pod_topology_spread_memo_follows_clones(walk: Any) -> None:
    """PreScore's memo (per node generation) with the index, over snapshots that change."""
    rng = random.Random(7)
    plugin = PodTopologySpread({}, handle())
    nodes, pods = cluster(rng)
    pod = make_pod(
        "incoming",
        labels={"app": "a"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "a"}},
            }
        ],
    )
    for _ in range(10):
        snapshot = mutated_snapshot(rng, nodes, pods)
        infos = snapshot.node_info_list
        indexed = run(plugin, pod, snapshot, infos)
        with walk:
            walked = run(PodTopologySpread({}, handle()), pod, snapshot, infos)
        assert indexed == walked
        assert indexed["pre_score"] is None
