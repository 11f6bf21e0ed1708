"""InterPodAffinity's PreScore reads the existing pods' terms grouped by content, kept per
node table and carried across overlays (``NodeTable.derived``): after any chain of overlays
(pods with and without affinity added and removed, nodes relabelled) its topology scores equal
upstream's per-pod walk (``processExistingPod`` in
``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.pod_info import PodInfo
from extender.framework.snapshot import Snapshot
from extender.plugins.interpodaffinity import PRE_SCORE_STATE_KEY, InterPodAffinity, NamespaceLabels
from tests.unit.builders import make_pod
from tests.unit.plugins.test_counting_index import (
    NAMESPACES,
    cluster,
    handle,
    incoming,
    labels,
    pod_affinity,
    walk_topology_score,
)


def _score(plugin: InterPodAffinity, pod: dict, snapshot: Snapshot) -> dict:
    state = CycleState()
    state.snapshot = snapshot
    status = plugin.pre_score(state, pod, snapshot.node_info_list)
    if status is not None:
        return {}
    return state.read(PRE_SCORE_STATE_KEY).topology_score


def _step(rng: random.Random, snapshot: Snapshot, step: int) -> Snapshot:
    """An overlay as the cache makes one: a few nodes replaced by clones that changed."""
    replaced = []
    for info in rng.sample(snapshot.node_info_list, rng.randint(1, 3)):
        copy = info.clone()
        for existing in list(copy.pods):
            if rng.random() < 0.4:
                copy.remove_pod(existing.key)
        for k in range(rng.randint(0, 3)):
            spec: dict[str, Any] = {}
            if rng.random() < 0.6:
                spec["affinity"] = pod_affinity(rng, 0.7)
            copy.add_pod(
                make_pod(
                    f"{info.name}-s{step}-{k}",
                    namespace=rng.choice(NAMESPACES),
                    labels=labels(rng),
                    node_name=info.name,
                    **spec,
                )
            )
        if rng.random() < 0.2:
            copy.labels = {**copy.labels, "topology.kubernetes.io/zone": f"z{rng.randint(0, 3)}"}
        replaced.append(copy)
    return snapshot.overlay(replaced)


@pytest.mark.parametrize("args", [{}, {"hardPodAffinityWeight": 0}, {"hardPodAffinityWeight": 7}])
def test_grouped_terms_equal_the_walk_across_overlays(args: dict, monkeypatch: Any) -> None:
    builds = 0
    summarize = InterPodAffinity._summarize_existing_terms

    def counting(self: InterPodAffinity, table: Any) -> dict:
        nonlocal builds
        builds += 1
        return summarize(self, table)

    monkeypatch.setattr(InterPodAffinity, "_summarize_existing_terms", counting)
    compared = nonempty = 0
    for seed in range(60):
        rng = random.Random(seed)
        nodes, pods = cluster(rng)
        snapshot = Snapshot.from_objects(nodes, pods)
        plugin = InterPodAffinity(args, handle())
        ns = NamespaceLabels(plugin.handle)
        builds_before = builds
        for step in range(8):
            pod = incoming(rng)
            ours = _score(plugin, pod, snapshot)
            walked = walk_topology_score(plugin, PodInfo(pod), snapshot.node_info_list, ns)
            assert ours == walked, (seed, step)
            compared += 1
            nonempty += bool(ours)
            previous, snapshot = snapshot, _step(rng, snapshot, step)
            _score(plugin, pod, snapshot)  # updates from the previous table's groups
            # ... without touching them: the previous snapshot still scores as the walk.
            again = _score(plugin, pod, previous)
            assert again == walk_topology_score(
                plugin, PodInfo(pod), previous.node_info_list, ns
            ), (seed, step, "parent")
        # One build per chain: every overlay after the first was updated, not rebuilt.
        assert builds - builds_before == 1, seed
    assert compared == 480 and nonempty > 100
