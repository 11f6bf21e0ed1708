"""The plugin testing kit (``extender.testing``) on in-tree plugins and small user plugins."""

from __future__ import annotations

from pathlib import Path

import pytest
from marshmallow import Schema, fields

from extender.config import ConfigError
from extender.framework import (
    CONFIG_MAPS,
    Code,
    CycleState,
    Handle,
    Kind,
    NodeInfo,
    PreFilterResult,
    Status,
    unresolvable,
)
from extender.testing import (
    Cluster,
    Runner,
    node,
    pod,
    run_plugin,
    run_profile,
    taint,
    toleration,
)

WIDGETS = Kind("example.com", "v1", "widgets")


class ZoneFromConfigMap:
    """Reads the ConfigMap ``kube-system/zones`` and its ``allowed`` key (a comma list)."""

    name = "ZoneFromConfigMap"
    reads = (CONFIG_MAPS,)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        cm = self.handle.lister(CONFIG_MAPS).get("kube-system", "zones")
        allowed = ((cm or {}).get("data") or {}).get("allowed", "").split(",")
        zone = node_info.node["metadata"]["labels"].get("zone", "")
        return None if zone in allowed else unresolvable(f"zone {zone or '-'} not allowed")


class WidgetScore:
    """Score = the ``score`` of the Widget named after the node (custom resource lister)."""

    name = "WidgetScore"
    reads = (WIDGETS,)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, None]:
        widget = self.handle.lister(WIDGETS).get("", node_info.name) or {}
        return int((widget.get("spec") or {}).get("score", 0)), None

    def score_extensions(self) -> None:
        return None


class Boom:
    name = "Boom"

    def __init__(self, args: dict, handle: Handle) -> None:
        pass

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        raise RuntimeError("kaput")


class OnlyNodesArgs(Schema):
    nodes = fields.List(fields.String(), load_default=list)


class OnlyNodes:
    """PreFilter restricting the cycle to ``args["nodes"]``."""

    name = "OnlyNodes"
    args_schema = OnlyNodesArgs

    def __init__(self, args: dict, handle: Handle) -> None:
        self.nodes = set(args["nodes"])

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return PreFilterResult(self.nodes), None

    def pre_filter_extensions(self) -> None:
        return None


# -- builders ----------------------------------------------------------------------------------


def test_builders_make_api_shaped_objects() -> None:
    n = node("n1", cpu="2", labels={"zone": "a"}, taints=[taint("k", "v")], annotations={"x": "y"})
    assert n["metadata"]["labels"] == {"kubernetes.io/hostname": "n1", "zone": "a"}
    assert n["status"]["allocatable"] == {"cpu": "2", "memory": "8Gi", "pods": "110"}
    assert n["spec"]["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    p = pod("p", cpu="100m", tolerations=[toleration("k", "v")], node_name="n1")
    assert p["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}
    assert p["spec"]["tolerations"] == [{"key": "k", "operator": "Equal", "value": "v"}]
    assert p["spec"]["nodeName"] == "n1"
    assert toleration("k") == {"key": "k", "operator": "Exists"}


# -- one plugin ---------------------------------------------------------------------------------


def test_run_plugin_taint_toleration_filters_and_scores_as_the_runtime() -> None:
    cluster = Cluster(
        nodes=[
            node("clean"),
            node("soft", taints=[taint("gpu", "yes", "PreferNoSchedule")]),
            node("hard", taints=[taint("gpu", "yes")]),
        ]
    )
    result = run_plugin("TaintToleration", pod("p"), cluster)
    assert result.feasible == ["clean", "soft"]
    assert result.code("hard") == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.rejected_by("hard") == "TaintToleration"
    assert result.reasons("hard") == ("node(s) had untolerated taint(s)",)
    assert result.status("clean") is None
    # NormalizeScore (reversed): fewest intolerable PreferNoSchedule taints -> 100.
    assert result.scores == {"clean": {"TaintToleration": 100}, "soft": {"TaintToleration": 0}}
    assert result.chosen == ["clean"]

    tolerated = run_plugin("TaintToleration", pod("p", tolerations=[toleration("gpu")]), cluster)
    assert tolerated.feasible == ["clean", "hard", "soft"]
    assert tolerated.chosen == ["clean", "hard", "soft"]  # a three-way tie


def test_run_plugin_involves_no_other_plugin() -> None:
    cluster = Cluster(nodes=[node("tainted", taints=[taint("k")]), node("small", cpu="1")])
    result = run_plugin("NodeResourcesFit", pod("p", cpu="2"), cluster)
    assert result.feasible == ["tainted"]  # TaintToleration is not in the profile
    assert result.reasons("small") == ("Insufficient cpu",)
    assert list(result.scores["tainted"]) == ["NodeResourcesFit"]


def test_run_plugin_args_are_defaulted_and_validated_like_the_shells() -> None:
    nodes = [node("big", cpu="8"), node("small", cpu="2")]
    busy = [pod("old", cpu="1", node_name="small")]
    cluster = Cluster(nodes=nodes, pods=busy)
    least = run_plugin("NodeResourcesFit", pod("p", cpu="1"), cluster)
    assert least.chosen == ["big"]
    most = run_plugin(
        "NodeResourcesFit",
        pod("p", cpu="1"),
        cluster,
        args={"scoringStrategy": {"type": "MostAllocated"}},
    )
    assert most.chosen == ["small"]
    with pytest.raises(ConfigError, match="scoringStrategy"):
        run_plugin("NodeResourcesFit", pod("p"), cluster, args={"scoringStrategy": {"type": "X"}})


def test_weight_multiplies_the_normalized_score() -> None:
    cluster = Cluster(nodes=[node("a"), node("b", taints=[taint("k", "", "PreferNoSchedule")])])
    result = run_plugin("TaintToleration", pod("p"), cluster, weight=3)
    assert result.scores["a"] == {"TaintToleration": 100}
    assert result.weighted["a"] == {"TaintToleration": 300}
    assert result.totals == {"a": 300, "b": 0}


def test_prefilter_subset_marks_the_other_nodes_and_args_schema_defaults_apply() -> None:
    cluster = Cluster(nodes=[node("a"), node("b"), node("c")])
    result = run_plugin(OnlyNodes, pod("p"), cluster, args={"nodes": ["b"]})
    assert result.feasible == ["b"]
    assert result.code("a") == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.reasons("a") == ("node(s) didn't satisfy plugin(s) [OnlyNodes]",)
    nothing = run_plugin(OnlyNodes, pod("p"), cluster)  # schema default: no nodes
    assert nothing.feasible == []
    assert nothing.fit_error == "0/3 nodes are available: node(s) didn't satisfy plugin OnlyNodes."


def test_a_plugin_exception_is_an_error_status_naming_plugin_and_point() -> None:
    result = run_plugin(Boom, pod("p"), Cluster(nodes=[node("a")]))
    assert result.error is not None
    assert result.error.code == Code.ERROR
    assert result.error.plugin == "Boom"
    assert result.error.message == 'running "Boom" filter plugin: kaput'
    assert result.chosen == []


def test_unknown_plugin_name() -> None:
    with pytest.raises(ValueError, match="unknown plugin 'Nope'"):
        run_plugin("Nope", pod("p"), Cluster(nodes=[node("a")]))


# -- listers ------------------------------------------------------------------------------------


CLUSTER_YAML = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: zones, namespace: kube-system}
data: {allowed: "b,c"}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: n2}
spec: {score: 40}
"""


def test_cluster_from_yaml_manifests_backs_the_listers(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER_YAML)
    cluster = Cluster.from_yaml(path)
    assert [n["metadata"]["name"] for n in cluster.nodes] == ["n1", "n2"]
    assert cluster.lister(CONFIG_MAPS).list("kube-system")[0]["data"] == {"allowed": "b,c"}
    assert cluster.lister(CONFIG_MAPS).list("default") == []
    assert cluster.lister(WIDGETS).get("", "n2")["spec"] == {"score": 40}
    result = run_plugin(ZoneFromConfigMap, pod("p"), cluster)
    assert result.feasible == ["n2"]
    assert result.reasons("n1") == ("zone a not allowed",)


def test_cluster_from_dict_with_kind_names() -> None:
    cluster = Cluster.from_dict(
        {
            "nodes": [node("n1"), node("n2")],
            "widgets.example.com": [{"metadata": {"name": "n1"}, "spec": {"score": 10}}],
        }
    )
    result = run_plugin(WidgetScore, pod("p"), cluster, weight=2)
    assert result.scores == {"n1": {"WidgetScore": 10}, "n2": {"WidgetScore": 0}}
    assert result.totals == {"n1": 20, "n2": 0}
    assert result.chosen == ["n1"]


# -- whole profile ------------------------------------------------------------------------------


def test_default_profile_fit_error_message() -> None:
    cluster = Cluster(
        nodes=[
            node("a", cpu="1"),
            node("b", taints=[taint("dedicated", "x")]),
            node("c", unschedulable=True),
        ]
    )
    result = run_profile(pod("p", cpu="2"), cluster)
    assert result.feasible == []
    assert result.fit_error == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable."
    )
    assert result.rejected_by("c") == "NodeUnschedulable"


def test_default_profile_scores_every_default_plugin_plus_registered_ones() -> None:
    cluster = Cluster(
        nodes=[node("a"), node("b")],
        objects={"widgets.example.com": [{"metadata": {"name": "a"}, "spec": {"score": 100}}]},
    )
    plain = run_profile(pod("p", cpu="1"), cluster)
    assert plain.totals["a"] == plain.totals["b"]
    assert plain.chosen == ["a", "b"]
    assert {"TaintToleration", "NodeResourcesFit"} <= set(plain.scores["a"])
    with_widgets = run_profile(pod("p", cpu="1"), cluster, plugins=[WidgetScore])
    assert with_widgets.scores["a"]["WidgetScore"] == 100
    assert with_widgets.chosen == ["a"]


def test_profile_from_config_text_with_weights_and_a_named_profile() -> None:
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: first
  - schedulerName: widgets
    plugins:
      multiPoint: {disabled: [{name: "*"}]}
      queueSort: {enabled: [{name: PrioritySort}]}
      filter: {enabled: [{name: ZoneFromConfigMap}]}
      score: {enabled: [{name: WidgetScore, weight: 5}]}
"""
    cluster = Cluster.from_yaml(CLUSTER_YAML).add(node("n3", labels={"zone": "c"}))
    result = run_profile(
        pod("p"), cluster, config, plugins=[ZoneFromConfigMap, WidgetScore], profile="widgets"
    )
    assert result.feasible == ["n2", "n3"]
    assert result.weighted == {"n2": {"WidgetScore": 200}, "n3": {"WidgetScore": 0}}
    assert result.chosen == ["n2"]
    with pytest.raises(ConfigError, match='unknown plugin "WidgetScore"'):
        run_profile(pod("p"), cluster, config, plugins=[ZoneFromConfigMap])


def test_runner_reuses_one_framework_across_pods() -> None:
    from extender.config import default_config

    cluster = Cluster(nodes=[node("a", cpu="2"), node("b", cpu="4")])
    runner = Runner(default_config(), cluster)
    assert runner.run(pod("small", cpu="1")).feasible == ["a", "b"]
    assert runner.run(pod("big", cpu="3")).feasible == ["b"]
    assert runner.run(pod("huge", cpu="5")).fit_error == (
        "0/2 nodes are available: 2 Insufficient cpu."
    )


def test_no_nodes() -> None:
    result = run_profile(pod("p"), Cluster())
    assert result.fit_error == "no nodes available to schedule pods"
    assert result.chosen == []
