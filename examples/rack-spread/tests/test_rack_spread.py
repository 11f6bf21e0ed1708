"""RackSpread on clusters of plain dicts, with kube-extender's testing kit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rack_spread import ERR_REASON_MAINTENANCE, MAINTENANCE_ANNOTATION, RackSpread

from extender.framework import Code
from extender.testing import Cluster, ConfigError, node, pod, run_plugin, run_profile

HERE = Path(__file__).resolve().parent.parent
RACK = "example.com/rack"


def rack_node(name: str, rack: str | None, maintenance: str | None = None) -> dict:
    return node(
        name,
        labels={RACK: rack} if rack else None,
        annotations={MAINTENANCE_ANNOTATION: maintenance} if maintenance is not None else None,
    )


def web(name: str, on: str | None = None, app: str = "web", namespace: str = "default") -> dict:
    return pod(name, labels={"app": app}, node_name=on, namespace=namespace)


NODES = [
    rack_node("a1", "a"),
    rack_node("a2", "a"),
    rack_node("b1", "b"),
    rack_node("c1", "c"),
    rack_node("loose", None),
]


# -- Filter ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["true", "yes", "2026-05-01", "TRUE"])
def test_maintenance_nodes_are_refused(value: str) -> None:
    cluster = Cluster(nodes=[rack_node("ok", "a"), rack_node("down", "a", value)])
    result = run_plugin(RackSpread, web("p"), cluster)
    assert result.feasible == ["ok"]
    assert result.code("down") == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.reasons("down") == (ERR_REASON_MAINTENANCE,)
    assert result.rejected_by("down") == "RackSpread"


@pytest.mark.parametrize("value", ["", "false", "False"])
def test_maintenance_annotation_empty_or_false_is_ignored(value: str) -> None:
    cluster = Cluster(nodes=[rack_node("ok", "a", value)])
    assert run_plugin(RackSpread, web("p"), cluster).feasible == ["ok"]


def test_every_node_under_maintenance() -> None:
    cluster = Cluster(nodes=[rack_node("x", "a", "true"), rack_node("y", None, "1")])
    result = run_plugin(RackSpread, web("p"), cluster)
    assert result.fit_error == "0/2 nodes are available: 2 node(s) were under maintenance."


# -- Score ----------------------------------------------------------------------------------


def test_empty_racks_tie_and_unracked_nodes_score_zero() -> None:
    result = run_plugin(RackSpread, web("p"), Cluster(nodes=NODES))
    scores = {n: s["RackSpread"] for n, s in result.scores.items()}
    assert scores == {"a1": 100, "a2": 100, "b1": 100, "c1": 100, "loose": 0}
    assert result.chosen == ["a1", "a2", "b1", "c1"]


def test_fewer_pods_in_the_rack_scores_higher() -> None:
    # rack a: 2 web pods (on two nodes), rack b: 1, rack c: 0.
    pods = [web("w1", "a1"), web("w2", "a2"), web("w3", "b1")]
    result = run_plugin(RackSpread, web("p"), Cluster(nodes=NODES, pods=pods))
    scores = {n: s["RackSpread"] for n, s in result.scores.items()}
    # 100 * (max - count + 1) // (max - min + 1) with max 2, min 0.
    assert scores == {"a1": 33, "a2": 33, "b1": 66, "c1": 100, "loose": 0}
    assert result.chosen == ["c1"]


def test_only_the_same_app_in_the_same_namespace_counts() -> None:
    pods = [
        web("other-app", "c1", app="db"),
        web("other-ns", "c1", namespace="elsewhere"),
        pod("unlabelled", node_name="c1"),
        web("w", "a1"),
    ]
    result = run_plugin(RackSpread, web("p"), Cluster(nodes=NODES, pods=pods))
    assert result.chosen == ["b1", "c1"]
    assert result.score("a1", "RackSpread") == 50


def test_pods_on_a_node_under_maintenance_still_load_its_rack() -> None:
    nodes = [rack_node("a-down", "a", "true"), rack_node("a-up", "a"), rack_node("b1", "b")]
    pods = [web("w1", "a-down")]
    result = run_plugin(RackSpread, web("p"), Cluster(nodes=nodes, pods=pods))
    assert result.feasible == ["a-up", "b1"]
    assert result.chosen == ["b1"]
    assert result.score("a-up", "RackSpread") == 50


def test_equal_racks_tie() -> None:
    pods = [web("w1", "a1"), web("w2", "b1"), web("w3", "c1")]
    result = run_plugin(RackSpread, web("p"), Cluster(nodes=NODES, pods=pods))
    assert result.chosen == ["a1", "a2", "b1", "c1"]
    assert {s["RackSpread"] for n, s in result.scores.items() if n != "loose"} == {100}


def test_pod_without_the_app_label_is_not_scored() -> None:
    result = run_plugin(RackSpread, pod("p"), Cluster(nodes=NODES, pods=[web("w", "a1")]))
    assert result.feasible == ["a1", "a2", "b1", "c1", "loose"]
    assert all("RackSpread" not in s for s in result.scores.values())


def test_no_node_has_a_rack() -> None:
    cluster = Cluster(nodes=[rack_node("x", None), rack_node("y", None)])
    result = run_plugin(RackSpread, web("p"), cluster)
    assert result.scores == {"x": {"RackSpread": 0}, "y": {"RackSpread": 0}}


def test_args_change_the_labels() -> None:
    nodes = [node("z1", labels={"zone": "1"}), node("z2", labels={"zone": "2"})]
    pods = [pod("t", labels={"tier": "api"}, node_name="z1")]
    result = run_plugin(
        RackSpread,
        pod("p", labels={"tier": "api"}),
        Cluster(nodes=nodes, pods=pods),
        args={"appLabel": "tier", "rackLabel": "zone"},
    )
    assert result.chosen == ["z2"]
    assert result.score("z1", "RackSpread") == 50


# -- args -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"rackLabels": "typo"}, "pluginConfig[0].args: rackLabels: unknown field"),
        ({"appLabel": 3}, "pluginConfig[0].args: appLabel: must be a string"),
        ({"rackLabel": ""}, "pluginConfig[0].args: rackLabel: Shorter than minimum length 1"),
    ],
)
def test_bad_args_are_config_errors(args: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        run_plugin(RackSpread, web("p"), Cluster(nodes=NODES), args=args)


# -- the shipped configs --------------------------------------------------------------------


def test_standalone_config_adds_rack_spread_to_the_default_profile() -> None:
    pods = [web("w1", "a1"), web("w2", "b1")]
    nodes = [*NODES, rack_node("c-down", "c", "true")]
    result = run_profile(
        web("p"), Cluster(nodes=nodes, pods=pods), HERE / "config.yaml", plugins=[RackSpread]
    )
    assert result.rejected_by("c-down") == "RackSpread"
    assert result.chosen == ["c1"]
    assert result.weighted["c1"]["RackSpread"] == 500  # weight 5


def test_extender_config_runs_only_rack_spread() -> None:
    result = run_profile(
        web("p"), Cluster(nodes=NODES), HERE / "extender.yaml", plugins=[RackSpread]
    )
    assert set(result.scores["a1"]) == {"RackSpread"}
    assert result.chosen == ["a1", "a2", "b1", "c1"]
