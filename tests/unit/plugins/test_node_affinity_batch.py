"""NodeAffinity's batch forms answer, row by row, exactly what ``filter`` and ``score`` answer
(upstream ``pkg/scheduler/framework/plugins/nodeaffinity``: the per-node methods are the
reference): random nodeSelectors, required and preferred terms with every operator, matchFields,
nodes without the labels, almost-numeric values for Gt/Lt, with and without the profile's
addedAffinity, with and without the PreFilter/PreScore state, on fresh and derived tables."""

from __future__ import annotations

import random

import numpy as np
import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code
from extender.plugins.node_affinity import NodeAffinity

from .batch_cases import (
    affinity_pod,
    changed_infos,
    node_selector,
    nodes,
    preferred,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _check(plugin: NodeAffinity, snapshot: Snapshot, pod: dict, rng: random.Random) -> None:
    table = snapshot.table
    infos = snapshot.node_info_list

    # Filter, without PreFilter (disabled: both compute from the pod) and after it.
    state = CycleState()
    state.snapshot = snapshot
    mask = plugin.filter_batch(state, pod, table)
    assert mask.dtype == bool
    assert mask.tolist() == [plugin.filter(state, pod, info) is None for info in infos]
    plugin.pre_filter(state, pod, infos)
    mask = plugin.filter_batch(state, pod, table)
    assert mask.tolist() == [plugin.filter(state, pod, info) is None for info in infos]

    # Score, on all rows or a subset, without PreScore and after it.
    rows = np.arange(len(infos))
    if rng.random() < 0.5:
        rows = np.array(sorted(rng.sample(range(len(infos)), len(infos) // 2)), dtype=np.int64)
    for pre_score in (False, True):
        state = CycleState()
        if pre_score:
            status = plugin.pre_score(state, pod, infos)
            if status is not None and status.code == Code.ERROR:
                return  # the pod's preferred terms do not parse: no Score
        scores = plugin.score_batch(state, pod, table, rows)
        expected = [plugin.score(state, pod, infos[r]) for r in rows]
        if scores is None:
            # Declined: only because the pod's preferred terms do not parse.
            assert all(status is not None for _, status in expected)
            continue
        assert scores.dtype == np.int64
        assert [(v, None) for v in scores.tolist()] == expected


def _added_plugin(rng: random.Random, n: int) -> NodeAffinity:
    """A plugin with random addedAffinity args (validated strictly: drawn until they parse)."""
    while True:
        added: dict = {}
        if rng.random() < 0.6:
            added[REQUIRED] = node_selector(rng, n, fields=False, clean=True)
        if rng.random() < 0.6:
            added[PREFERRED] = preferred(rng, n)
        try:
            return NodeAffinity({"addedAffinity": added}, testing.handle())
        except ValueError:
            continue


@pytest.mark.parametrize("seed", range(40))
def test_batch_forms_equal_the_per_node_methods(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(1, 60)
    snapshot = Snapshot.from_objects(nodes(rng, n))
    plugins = [NodeAffinity({}, testing.handle()), _added_plugin(rng, n)]
    for i in range(20):
        pod = affinity_pod(rng, n, f"pod-{i}")
        for plugin in plugins:
            _check(plugin, snapshot, pod, rng)
    # An overlay derives its table (and the label columns already built) from this one.
    overlaid = snapshot.overlay(changed_infos(rng, snapshot, min(3, n)))
    for i in range(20):
        pod = affinity_pod(rng, n, f"pod-overlay-{i}")
        for plugin in plugins:
            _check(plugin, overlaid, pod, rng)


def _pod(affinity: dict | None = None, node_selector: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "pause"}]}
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": affinity}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def _node(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": {}}


GT_LT_NODES = [
    _node("n0"),
    _node("n1", gen="5"),
    _node("n2", gen="10"),
    _node("n3", gen="abc"),
    _node("n4", gen=""),
    _node("n5", gen="-7"),
    _node("n6", gen="3.5"),
    _node("n7", gen="99999999999999999999"),
    _node("n8", gen="007"),
]


@pytest.mark.parametrize(
    ("op", "bound", "expected"),
    [
        ("Gt", "5", [0, 0, 1, 0, 0, 0, 0, 1, 1]),
        ("Lt", "5", [0, 0, 0, 0, 0, 1, 0, 0, 0]),
        ("Gt", "-8", [0, 1, 1, 0, 0, 1, 0, 1, 1]),
        ("Gt", "abc", [0] * 9),  # a non-numeric bound matches nothing
        ("Lt", "", [0] * 9),
    ],
)
def test_gt_lt_rows(op: str, bound: str, expected: list[int]) -> None:
    snapshot = Snapshot.from_objects(GT_LT_NODES)
    plugin = NodeAffinity({}, testing.handle())
    term = {"matchExpressions": [{"key": "gen", "operator": op, "values": [bound]}]}
    pod = _pod({REQUIRED: {"nodeSelectorTerms": [term]}})
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert plugin.filter_batch(state, pod, snapshot.table).astype(int).tolist() == expected
    _check(plugin, snapshot, pod, random.Random(0))


def test_match_fields_pin_names_and_terms_or() -> None:
    snapshot = Snapshot.from_objects(GT_LT_NODES)
    plugin = NodeAffinity({}, testing.handle())
    terms = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
        {
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}],
            "matchExpressions": [{"key": "gen", "operator": "Exists"}],
        },
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["missing"]}]},
        {},
    ]
    pod = _pod({REQUIRED: {"nodeSelectorTerms": terms}}, node_selector={})
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    mask = plugin.filter_batch(state, pod, snapshot.table)
    assert mask.astype(int).tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 1]
    _check(plugin, snapshot, pod, random.Random(0))


def test_preferred_weights_sum_per_row() -> None:
    snapshot = Snapshot.from_objects(GT_LT_NODES)
    plugin = NodeAffinity(
        {
            "addedAffinity": {
                PREFERRED: [
                    {
                        "weight": 3,
                        "preference": {
                            "matchExpressions": [{"key": "gen", "operator": "DoesNotExist"}]
                        },
                    }
                ]
            }
        },
        None,
    )
    pod = _pod(
        {
            PREFERRED: [
                {
                    "weight": 10,
                    "preference": {"matchExpressions": [{"key": "gen", "operator": "Exists"}]},
                },
                {
                    "weight": 5,
                    "preference": {
                        "matchExpressions": [
                            {"key": "gen", "operator": "In", "values": ["5", "10"]}
                        ]
                    },
                },
                {
                    "weight": 0,
                    "preference": {"matchExpressions": [{"key": "gen", "operator": "Exists"}]},
                },
            ]
        }
    )
    state = CycleState()
    assert plugin.pre_score(state, pod, snapshot.node_info_list) is None
    scores = plugin.score_batch(state, pod, snapshot.table, np.arange(9))
    assert scores is not None and scores.tolist() == [3, 15, 15, 10, 10, 10, 10, 10, 10]
    _check(plugin, snapshot, pod, random.Random(0))


def test_unparsable_preferred_terms_decline() -> None:
    snapshot = Snapshot.from_objects(GT_LT_NODES)
    plugin = NodeAffinity({}, testing.handle())
    bad = {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["x"]}]}
    pod = _pod({PREFERRED: [{"weight": 1, "preference": bad}]})
    assert plugin.score_batch(CycleState(), pod, snapshot.table, np.arange(9)) is None


def test_selectors_without_label_keys_in_the_cluster() -> None:
    """A selector on a key no node has: one column of absent values."""
    rng = random.Random(5)
    snapshot = Snapshot.from_objects([_node(f"n{i}") for i in range(7)])
    plugin = NodeAffinity({}, testing.handle())
    for _ in range(50):
        pod = _pod(
            {REQUIRED: node_selector(rng, 7), PREFERRED: preferred(rng, 7)},
            node_selector={"gen": "5"} if rng.random() < 0.3 else None,
        )
        _check(plugin, snapshot, pod, rng)
