"""PodTopologySpread and InterPodAffinity count from the node table's label-pair index
(``NodeTable.pods_with_label`` / ``NodeTable.candidates``) instead of walking every node; on
random clusters, overlays, branching derives and in-place refreshes their states, statuses and
scores equal the node-by-node path (upstream ``calPreFilterState`` and ``initPreScoreState``
in ``pkg/scheduler/framework/plugins/podtopologyspread``, ``getIncomingAffinityAntiAffinityCounts``
and ``processExistingPod`` in ``pkg/scheduler/framework/plugins/interpodaffinity``).

The reference: ``NodeTable.candidates`` and ``NodeTable.rows`` patched to offer nothing, so
the plugins take their per-node path.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from extender.framework.columns import NodeTable
from extender.framework.node_info import NodeInfo
from extender.framework.snapshot import Snapshot
from extender.plugins.interpodaffinity import InterPodAffinity
from extender.plugins.interpodaffinity import filtering as ipa_filtering
from extender.plugins.interpodaffinity import scoring as ipa_scoring
from extender.plugins.podtopologyspread import PodTopologySpread
from extender.plugins.podtopologyspread import common as pts_common
from extender.plugins.podtopologyspread import filtering as pts_filtering
from extender.plugins.podtopologyspread import scoring as pts_scoring
from tests.unit.builders import make_node, make_pod
from tests.unit.plugins.test_counting_index import (
    HOST,
    KEYS,
    NAMESPACES,
    VALUES,
    ZONE,
    handle,
    labels,
    pod_affinity,
    run,
    selector,
)


def cluster(rng: random.Random) -> tuple[list[dict], list[dict]]:
    nodes = []
    for i in range(rng.randint(4, 14)):
        node_labels: dict[str, str] = {"pool": rng.choice(("p0", "p1")), HOST: f"n{i}"}
        if rng.random() < 0.8:
            node_labels[ZONE] = f"z{rng.randint(0, 2)}"
        if rng.random() < 0.5:
            node_labels["rack"] = rng.choice(("r0", "r1", ""))
        taints = []
        if rng.random() < 0.3:
            taints.append(
                {
                    "key": "t",
                    "value": "v",
                    "effect": rng.choice(("NoSchedule", "NoExecute", "PreferNoSchedule")),
                }
            )
        nodes.append(make_node(f"n{i}", labels=node_labels, taints=taints))
    pods = [existing(rng, nodes, j) for j in range(rng.randint(0, 8 * len(nodes)))]
    return nodes, pods


def existing(rng: random.Random, nodes: list[dict], j: int) -> dict:
    spec: dict[str, Any] = {}
    if rng.random() < 0.2:
        spec["affinity"] = pod_affinity(rng, 0.5)
    pod = make_pod(
        f"e{j}-{rng.random()}",
        namespace=rng.choice(NAMESPACES),
        labels=labels(rng),
        node_name=rng.choice(nodes)["metadata"]["name"],
        **spec,
    )
    if rng.random() < 0.15:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


def constraints(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(rng.randint(1, 3)):
        c: dict = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": rng.choice((ZONE, HOST, "rack", "pool")),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
        }
        sel = selector(rng)
        if sel is not None:
            c["labelSelector"] = sel
        if rng.random() < 0.2:
            c["matchLabelKeys"] = [rng.choice(KEYS)]
        if rng.random() < 0.2:
            c["minDomains"] = rng.randint(1, 4)
        c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore", None))
        c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore", None))
        out.append({k: v for k, v in c.items() if v is not None})
    return list({(c["topologyKey"], c["whenUnsatisfiable"]): c for c in out}.values())


def incoming(rng: random.Random, nodes: list[dict]) -> dict:
    spec: dict[str, Any] = {"affinity": pod_affinity(rng, 0.6)}
    if rng.random() < 0.8:
        spec["topologySpreadConstraints"] = constraints(rng)
    if rng.random() < 0.25:
        spec["nodeSelector"] = {"pool": "p0"}
    if rng.random() < 0.25:
        term: dict = {}
        if rng.random() < 0.7:
            term["matchExpressions"] = [{"key": ZONE, "operator": "In", "values": ["z0", "z1"]}]
        if rng.random() < 0.4:
            name = rng.choice(nodes)["metadata"]["name"]
            term["matchFields"] = [
                {"key": "metadata.name", "operator": rng.choice(("In", "NotIn")), "values": [name]}
            ]
        spec["affinity"]["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "t", "operator": "Exists", "effect": "NoSchedule"}]
    return make_pod("incoming", namespace=rng.choice(NAMESPACES), labels=labels(rng), **spec)


def changed(rng: random.Random, snapshot: Snapshot, nodes: list[dict]) -> list[NodeInfo]:
    """Clones of a few nodes that lost and gained pods; sometimes one lost its node object."""
    out = []
    for info in rng.sample(snapshot.node_info_list, rng.randint(1, 3)):
        copy = info.clone()
        for pod in list(copy.pods):
            if rng.random() < 0.3:
                copy.remove_pod(pod.key)
        for j in range(rng.randint(0, 4)):
            pod = existing(rng, nodes, j)
            pod["spec"]["nodeName"] = info.name
            copy.add_pod(pod)
        if rng.random() < 0.05:
            copy.node = None
        out.append(copy)
    return out


def snapshots(rng: random.Random) -> list[tuple[Snapshot, list[dict]]]:
    """A base snapshot, then overlays: a linear chain, branches off one table, and in-place
    refreshes. Pair entries are built along the way (by running the plugins)."""
    nodes, pods = cluster(rng)
    base = Snapshot.from_objects(nodes, pods)
    warm(rng, base)
    out = [(base, nodes)]
    current = base
    for _ in range(rng.randint(2, 6)):
        roll = rng.random()
        if roll < 0.4:
            current = current.overlay(changed(rng, current, nodes))
        elif roll < 0.7:
            # A branch off the base (the webhook overlays each request on one base).
            current = base.overlay(changed(rng, base, nodes))
        else:
            # In place, as the simulation assumes pods: on a NodeInfo this overlay owns (a
            # clone), then refresh.
            target = rng.choice(current.node_info_list)
            current = current.overlay([target.clone()])
            info = current.node_info_map[target.name]
            current.table.pods_with_label(rng.choice(KEYS), rng.choice(VALUES))
            pod = existing(rng, nodes, 0)
            pod["spec"]["nodeName"] = info.name
            if info.pods and rng.random() < 0.5:
                info.remove_pod(rng.choice(info.pods).key)
            else:
                info.add_pod(pod)
            current.refresh(info)
        warm(rng, current)
        out.append((current, nodes))
    return out


def warm(rng: random.Random, snapshot: Snapshot) -> None:
    """Build some pair entries of the snapshot's table, so that overlays derive the table and
    patch (or rebuild) entries of their ancestors."""
    table = snapshot.table
    for key in KEYS:
        for value in VALUES:
            if rng.random() < 0.4:
                table.pods_with_label(key, value)


@pytest.fixture
def per_node() -> Any:
    """A context in which the table's index and rows offer nothing: the per-node path."""

    class PerNode:
        def __enter__(self) -> None:
            self.patch = pytest.MonkeyPatch()
            self.patch.setattr(NodeTable, "candidates", lambda self, selector: None)
            self.patch.setattr(NodeTable, "rows", lambda self, infos: None)
            for module in (pts_filtering, pts_scoring):
                self.patch.setattr(module, "whole_table", lambda snapshot, nodes: None)

        def __exit__(self, *exc: object) -> None:
            self.patch.undo()

    return PerNode()


def fresh_entry(infos: list[NodeInfo], key: str, value: str) -> Counter:
    return Counter(
        (i, id(p)) for i, info in enumerate(infos) for p in info.pods if p.labels.get(key) == value
    )


def test_pods_with_label_follows_derives() -> None:
    derived = patched = 0
    for seed in range(150):
        rng = random.Random(seed)
        for snapshot, _ in snapshots(rng):
            table = snapshot.table
            derived += bool(table._pair_bases)
            patched += sum(
                (key, value) in pairs
                for pairs, _ in table._pair_bases
                for key in KEYS
                for value in VALUES
            )
            for _ in range(4):
                key, value = rng.choice(KEYS), rng.choice(VALUES)
                rows, pods = table.pods_with_label(key, value)
                got = Counter(zip(rows.tolist(), map(id, pods), strict=True))
                assert got == fresh_entry(snapshot.node_info_list, key, value), seed
    # Derived tables did find ancestors' entries to patch.
    assert derived > 300 and patched > 1000


@pytest.mark.parametrize("plugin_type", [PodTopologySpread, InterPodAffinity])
def test_indexed_equals_per_node(
    per_node: Any, plugin_type: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One plugin per cluster, across its overlays, branches and in-place refreshes (so
    PodTopologySpread's per-row counts carry over from table to table, ``RowCounts``); a
    fresh one for the per-node reference."""
    compared = indexed_runs = 0
    calls = Counter[str]()
    original = pts_common.RowCounts.counts

    def spy(self: pts_common.RowCounts, table: NodeTable, sel: Any, namespace: str) -> Any:
        entry = self._entries.get((sel.key, namespace))
        if entry is not None and entry[1] is not table.generations:
            calls["carried over"] += entry[0] == table.names
        calls["counts"] += 1
        return original(self, table, sel, namespace)

    monkeypatch.setattr(pts_common.RowCounts, "counts", spy)
    for seed in range(200):
        rng = random.Random(1000 + seed)
        plugin = plugin_type({}, handle())
        chain = snapshots(rng)
        # Half the pods are one workload's (the same constraints from table to table).
        workload = incoming(rng, chain[0][1])
        for snapshot, nodes in chain:
            pod = workload if rng.random() < 0.5 else incoming(rng, nodes)
            infos = snapshot.node_info_list
            feasible = [i for i in infos if rng.random() < 0.8] or infos[:1]
            new = run(plugin, pod, snapshot, feasible)
            with per_node:
                old = run(plugin_type({}, handle()), pod, snapshot, feasible)
            assert new == old, seed
            compared += 1
            indexed_runs += bool(new.get("pre_filter_state") or new.get("pre_score_state"))
    assert indexed_runs > compared // 4
    if plugin_type is PodTopologySpread:
        assert calls["counts"] > 100 and calls["carried over"] > 50, calls


def test_inter_pod_affinity_takes_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The indexed forms do run (and answer) on these scenarios."""
    answered = Counter[str]()
    for module, name in (
        (ipa_filtering, "_incoming_counts_indexed"),
        (ipa_scoring, "_incoming_scores_indexed"),
    ):
        original = getattr(module, name)

        def spy(*a: Any, _original: Any = original, _name: str = name) -> Any:
            result = _original(*a)
            answered[_name] += bool(result)
            return result

        monkeypatch.setattr(module, name, spy)
    for seed in range(60):
        rng = random.Random(5000 + seed)
        for snapshot, nodes in snapshots(rng):
            pod = incoming(rng, nodes)
            run(InterPodAffinity({}, handle()), pod, snapshot, snapshot.node_info_list)
    assert answered["_incoming_counts_indexed"] > 10
    assert answered["_incoming_scores_indexed"] > 10
