"""kube-extender explain: the engine and its renderings on snapshots (no cluster)."""

from __future__ import annotations

import json

import pytest
import yaml

from extender.explain import render
from extender.explain.cluster import (
    InputError,
    dry_run_framework,
    load_dump,
    load_objects,
    pick_profile,
    without,
)
from extender.explain.engine import DryRunClient, Explainer, dry_run_twin, unbind
from extender.framework import Framework
from extender.framework.handle import Services
from extender.testing import Cluster, node, pod, run_profile, taint


def explainer(cluster: Cluster, name: str = "default-scheduler") -> Explainer:
    config, profile = pick_profile(None, name)
    return Explainer(dry_run_framework(config, profile, cluster))


def test_verdicts_scores_and_choice_match_the_testing_kit() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="4"), node("c", taints=[taint("x")])],
        pods=[pod("busy", cpu="1", node_name="a")],
    )
    p = pod("p", cpu="1")
    ex = explainer(cluster).explain(p, cluster.snapshot())
    kit = run_profile(p, cluster)
    assert ex.feasible and sorted(ex.feasible) == kit.feasible
    assert ex.chosen == kit.chosen
    for name in kit.feasible:
        verdict = ex.node(name)
        assert verdict.total == kit.totals[name]
        assert {k: s.weighted for k, s in verdict.scores.items()} == kit.weighted[name]
        assert {k: s.normalized for k, s in verdict.scores.items()} == kit.scores[name]
    # raw scores are before NormalizeScore: TaintToleration counts intolerable taints (0)
    assert ex.node("b").scores["TaintToleration"].raw == 0
    assert ex.node("c").status is not None
    assert ex.node("c").status.plugin == "TaintToleration"
    assert ex.verdict == "Schedulable"


def test_nothing_fits_gives_kube_schedulers_fit_error_and_a_dry_run_preemption() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="4"), node("c", unschedulable=True)],
        pods=[
            pod("low", cpu="3", node_name="b", priority=0),
            pod("other", cpu="1", node_name="a"),
        ],
    )
    client_calls: list[str] = []
    ex = explainer(cluster).explain(pod("big", cpu="3", priority=100), cluster.snapshot())
    assert ex.verdict == "Unschedulable"
    assert ex.fit_error == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    )
    assert ex.reason_counts() == {"node(s) were unschedulable": 1, "Insufficient cpu": 2}
    assert ex.preemption is not None and ex.preemption.node == "b"
    assert [(v.name, v.priority) for v in ex.preemption.victims] == [("low", 0)]
    # the cluster is untouched
    assert [p["metadata"]["name"] for p in cluster.pods] == ["low", "other"]
    assert not client_calls


def test_preemption_that_cannot_help_says_why_in_the_fit_error() -> None:
    cluster = Cluster(nodes=[node("a", cpu="2")])
    ex = explainer(cluster).explain(pod("huge", cpu="30", priority=5), cluster.snapshot())
    assert ex.preemption is not None and not ex.preemption.node
    assert ex.fit_error is not None
    # DynamicResources' PostFilter runs first (upstream test/integration/dra/extendedresource.go
    # expects the same shape).
    assert ex.fit_error.startswith(
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
    )
    assert ex.preemption.message in ex.fit_error


def test_a_twin_of_a_writing_framework_never_writes() -> None:
    class Writing:
        def __getattr__(self, name: str):
            raise AssertionError(f"wrote through {name}")

    cluster = Cluster(
        nodes=[node("a", cpu="2")], pods=[pod("low", cpu="2", node_name="a", priority=0)]
    )
    config, profile = pick_profile(None, "default-scheduler")
    fwk = Framework(
        profile,
        config.registry,
        Services(client=Writing(), listers=cluster.lister),  # type: ignore[arg-type]
    )
    ex = Explainer(fwk).explain(pod("p", cpu="1", priority=9), cluster.snapshot())
    assert ex.preemption is not None and ex.preemption.node == "a"
    assert isinstance(dry_run_twin(fwk).client, DryRunClient)


def test_a_bound_pod_is_explained_without_itself() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[pod("me", cpu="2", node_name="a")],
    )
    me = cluster.pods[0]
    rest = without(cluster, me)
    ex = explainer(rest).explain(unbind(me), rest.snapshot(), bound_to="a")
    assert sorted(ex.feasible) == ["a", "b"]
    assert render.to_dict(ex)["pod"]["boundTo"] == "a"


def test_ties_are_all_reported() -> None:
    cluster = Cluster(nodes=[node(f"n{i}") for i in range(4)])
    ex = explainer(cluster).explain(pod("p", cpu="1"), cluster.snapshot())
    assert ex.chosen == ["n0", "n1", "n2", "n3"]


def test_the_documented_shape() -> None:
    cluster = Cluster(nodes=[node("a"), node("b", unschedulable=True)])
    data = render.to_dict(explainer(cluster).explain(pod("p"), cluster.snapshot()))
    assert data["version"] == 1 and data["kind"] == "SchedulingExplanation"
    assert set(data) >= {
        "pod", "profile", "verdict", "numNodes", "numFeasible", "chosen", "fitError",
        "error", "reasonCounts", "preemption", "scoreWeights", "nodes",
    }  # fmt: skip
    first, second = data["nodes"]
    assert first["name"] == "a" and first["fits"] and first["chosen"]
    assert set(first["scores"]["NodeResourcesFit"]) == {"raw", "normalized", "weighted"}
    assert second == {
        "name": "b",
        "fits": False,
        "plugin": "NodeUnschedulable",
        "code": "UnschedulableAndUnresolvable",
        "reasons": ["node(s) were unschedulable"],
        "detail": [],
        "devices": [],
        "scores": None,
        "total": None,
        "chosen": False,
    }
    assert json.loads(render.dumps(data, "json")) == data
    assert yaml.safe_load(render.dumps(data, "yaml")) == data


def test_the_table_fits_80_columns() -> None:
    nodes = [node(f"node-with-a-rather-long-name-{i:03}", cpu=str(i % 7 + 1)) for i in range(40)]
    nodes += [node(f"cordoned-{i}", unschedulable=True) for i in range(9)]
    cluster = Cluster(nodes=nodes)
    ex = explainer(cluster).explain(pod("p", cpu="2"), cluster.snapshot())
    for options in ({}, {"all_nodes": True}, {"node": nodes[5]["metadata"]["name"]}):
        text = render.table(ex, top=5, **options)
        assert max(len(line) for line in text.splitlines()) <= 80, text
    text = render.table(ex, top=5)
    assert "FEASIBLE" in text and "REJECTED 15/49" in text and "node(s) were unschedulable" in text


def test_unknown_profile_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown profile"):
        pick_profile(pick_profile(None, "default-scheduler")[0], "nope")


def test_dumps_lists_multi_documents_and_directories(tmp_path) -> None:
    objects = [node("a"), pod("p", node_name="a")]
    (tmp_path / "list.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                        "items": objects}))  # fmt: skip
    (tmp_path / "multi.yaml").write_text(yaml.safe_dump_all(objects))
    assert len(load_objects(tmp_path / "list.yaml")) == 2
    assert len(load_objects(tmp_path / "multi.yaml")) == 2
    cluster = load_dump(tmp_path)
    assert len(cluster.nodes) == 2 and len(cluster.pods) == 2
    (tmp_path / "bad.yaml").write_text("a: [b\n")
    with pytest.raises(InputError, match="not YAML"):
        load_objects(tmp_path / "bad.yaml")
    with pytest.raises(InputError, match="no such file"):
        load_objects(tmp_path / "missing.yaml")
