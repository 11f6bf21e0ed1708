"""``POST /prioritize`` with the default profile (a ``serve`` configuration that names no
plugins) answers, for every node sent, the standalone path's weighted total mapped to 0..10.

Regression: the verb used to score on a fresh cycle state, DynamicResources' Score found no
PreFilter state, the whole call failed and every pod got ``[]`` ("no opinion").
"""

from __future__ import annotations

import pytest

from extender.config import default_profile
from extender.framework.cycle_state import CycleState
from extender.framework.handle import Services
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.results import NodeScoreList
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm
from extender.framework.snapshot import Snapshot
from extender.plugins import in_tree_registry
from extender.webhook.app import create_app
from extender.webhook.service import ExtenderService, extender_score
from tests.unit.builders import make_node, make_pod
from tests.webhook.test_contract import FakeCache, post

NODES = [
    make_node("small", cpu="2", memory="4Gi", labels={"zone": "a"}),
    make_node("medium", cpu="4", memory="8Gi", labels={"zone": "b"}),
    make_node("large", cpu="16", memory="32Gi", labels={"zone": "b"}),
    # Rejected by the pod's node affinity: sent (as a cache a moment behind could), scores 0.
    make_node("tainted", cpu="16", memory="32Gi", taints=[{"key": "k", "effect": "NoSchedule"}]),
]
BOUND = [
    make_pod("busy-1", cpu="1", memory="1Gi", node_name="large", labels={"app": "web"}),
    make_pod("busy-2", cpu="1", memory="2Gi", node_name="medium"),
]
POD = make_pod(
    "web-2",
    cpu="500m",
    memory="512Mi",
    labels={"app": "web"},
    topologySpreadConstraints=[
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ],
)


def standalone_scores(fwk: Framework, names: list[str]) -> dict[str, int]:
    """The standalone path: filter then prioritize, as ``schedule_pod`` does."""
    snapshot = Snapshot.from_objects(NODES, BOUND)
    state = CycleState()
    algorithm = SchedulingAlgorithm()
    candidates = [snapshot.get(name) for name in names]
    feasible, _ = algorithm.find_nodes_that_fit(
        fwk, state, POD, snapshot, candidates, evaluate_all=True
    )
    scores = algorithm.prioritize_nodes(fwk, state, POD, feasible)
    assert isinstance(scores, NodeScoreList)
    scale = MAX_NODE_SCORE * sum(fwk.score_weights.values())
    mapped = {n: extender_score(t, scale) for n, t in zip(scores.names, scores.totals, strict=True)}
    return {name: mapped.get(name, 0) for name in names}


@pytest.mark.parametrize("mode", ["NodeNames", "Nodes"])
def test_default_profile_prioritize_answers_the_standalone_scores(mode: str) -> None:
    fwk = Framework(default_profile(), in_tree_registry(), Services())
    assert "DynamicResources" in fwk.score_weights
    service = ExtenderService(fwk, cache=FakeCache(NODES, BOUND))
    names = [n["metadata"]["name"] for n in NODES]
    body = (
        {"Pod": POD, "NodeNames": names, "Nodes": None}
        if mode == "NodeNames"
        else {"Pod": POD, "Nodes": {"metadata": {}, "items": NODES}}
    )
    status, reply = post(create_app(service).test_client(), "prioritize", body)
    assert status == 200
    expected = standalone_scores(fwk, names)
    assert reply == [{"Host": name, "Score": expected[name]} for name in names]
    # Not a degenerate answer: the nodes are told apart, the rejected one is lowest.
    assert expected["tainted"] == 0
    assert len({expected[n] for n in ("small", "medium", "large")}) > 1
