"""TaintToleration's batch forms answer, row by row, exactly what ``filter`` and ``score`` answer
(upstream ``pkg/scheduler/framework/plugins/tainttoleration``: the per-node methods are the
reference): random taints and tolerations, on a fresh table and on an overlay's derived one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.snapshot import Snapshot
from extender.plugins.taint_toleration import TaintToleration

from .batch_cases import changed_infos, nodes, tolerations


def _pod(tols: list[dict]) -> dict:
    spec = {"containers": [{"name": "c", "image": "pause"}], "tolerations": tols}
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def _check(plugin: TaintToleration, snapshot: Snapshot, pod: dict, rng: random.Random) -> None:
    state = CycleState()
    state.snapshot = snapshot
    table = snapshot.table
    infos = snapshot.node_info_list
    mask = plugin.filter_batch(state, pod, table)
    assert mask.dtype == bool
    assert mask.tolist() == [plugin.filter(state, pod, info) is None for info in infos]

    rows = np.arange(len(infos))
    assert plugin.score_batch(state, pod, table, rows) is None  # no PreScore state: declines
    assert plugin.pre_score(state, pod, infos) is None
    if rng.random() < 0.5:
        rows = np.array(sorted(rng.sample(range(len(infos)), len(infos) // 2)), dtype=np.int64)
    scores = plugin.score_batch(state, pod, table, rows)
    assert scores is not None and scores.dtype == np.int64
    expected = []
    for r in rows:
        value, status = plugin.score(state, pod, infos[r])
        assert status is None
        expected.append(value)
    assert scores.tolist() == expected


@pytest.mark.parametrize("seed", range(30))
def test_batch_forms_equal_the_per_node_methods(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = Snapshot.from_objects(nodes(rng, rng.randrange(1, 60)))
    plugin = TaintToleration({}, testing.handle())
    for _ in range(15):
        _check(plugin, snapshot, _pod(tolerations(rng)), rng)
    # An overlay derives its table from this one: the changed rows regroup their taints.
    snapshot.table.taint_groups()
    overlaid = snapshot.overlay(changed_infos(rng, snapshot, min(3, len(snapshot))))
    for _ in range(15):
        _check(plugin, overlaid, _pod(tolerations(rng)), rng)


def test_prefer_no_schedule_counts_per_row() -> None:
    """Counts above one, repeated taints, and a toleration with an empty effect."""
    spot = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    other = {"key": "other", "value": "", "effect": "PreferNoSchedule"}
    hard = {"key": "gpu", "value": "", "effect": "NoSchedule"}
    node_list = [
        {"metadata": {"name": f"n{i}"}, "spec": {"taints": taints}, "status": {}}
        for i, taints in enumerate([[], [spot], [spot, other], [spot, spot, other, hard], [hard]])
    ]
    snapshot = Snapshot.from_objects(node_list)
    plugin = TaintToleration({}, testing.handle())
    state = CycleState()
    pod = _pod([{"key": "spot", "operator": "Exists"}])
    plugin.pre_score(state, pod, snapshot.node_info_list)
    scores = plugin.score_batch(state, pod, snapshot.table, np.arange(5))
    assert scores is not None and scores.tolist() == [0, 0, 1, 1, 0]
    assert plugin.filter_batch(state, pod, snapshot.table).tolist() == [1, 1, 1, 0, 0]
    pod = _pod([])
    plugin.pre_score(state, pod, snapshot.node_info_list)
    scores = plugin.score_batch(state, pod, snapshot.table, np.array([4, 3, 2]))
    assert scores is not None and scores.tolist() == [0, 3, 2]
