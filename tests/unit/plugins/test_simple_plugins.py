"""TaintToleration, NodeAffinity, NodePorts, ImageLocality, DefaultBinder (upstream
``pkg/scheduler/framework/plugins/nodeports``,
``pkg/scheduler/framework/plugins/defaultbinder``)."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.status import Code
from extender.plugins.default_binder import DefaultBinder
from extender.plugins.image_locality import ImageLocality, normalized_image_name
from extender.plugins.node_affinity import NodeAffinity
from extender.plugins.node_ports import NodePorts
from extender.plugins.taint_toleration import TaintToleration
from tests.unit.builders import make_node, make_pod

from .helpers import filter_all, score_all

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def taint(key: str, effect: str, value: str = "") -> dict:
    return {"key": key, "value": value, "effect": effect}


# -- TaintToleration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("taints", "tolerations", "fits"),
    [
        ([], [], True),
        ([taint("gpu", "NoSchedule", "true")], [], False),
        ([taint("gpu", "NoExecute", "true")], [], False),
        ([taint("gpu", "PreferNoSchedule", "true")], [], True),
        ([taint("gpu", "NoSchedule", "true")], [{"key": "gpu", "value": "true"}], True),
        ([taint("gpu", "NoSchedule", "true")], [{"key": "gpu", "value": "false"}], False),
        ([taint("gpu", "NoSchedule", "x")], [{"key": "gpu", "operator": "Exists"}], True),
        ([taint("gpu", "NoSchedule", "x")], [{"operator": "Exists"}], True),
        (
            [taint("gpu", "NoSchedule", "x")],
            [{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}],
            False,
        ),
        (
            [taint("a", "NoSchedule"), taint("b", "NoExecute")],
            [{"key": "a", "operator": "Exists"}],
            False,
        ),
    ],
)
def test_taint_toleration_filter(taints, tolerations, fits) -> None:
    pod = make_pod("p", tolerations=tolerations)
    result = filter_all(TaintToleration({}, testing.handle()), pod, [make_node("n", taints=taints)])
    expected = None if fits else (UNRESOLVABLE, ("node(s) had untolerated taint(s)",))
    assert result["n"] == expected


def test_taint_toleration_score_counts_intolerable_prefer_no_schedule() -> None:
    nodes = [
        make_node("clean"),
        make_node("one", taints=[taint("spot", "PreferNoSchedule")]),
        make_node(
            "two", taints=[taint("spot", "PreferNoSchedule"), taint("old", "PreferNoSchedule")]
        ),
        make_node("hard", taints=[taint("gpu", "NoSchedule")]),
    ]
    # counts 0, 1, 2, 0 -> reversed normalization: 100, 50, 0, 100
    assert score_all(TaintToleration({}, testing.handle()), make_pod("p"), nodes) == {
        "clean": 100,
        "one": 50,
        "two": 0,
        "hard": 100,
    }
    # A toleration with effect NoSchedule does not count for scoring; an empty effect does.
    pod = make_pod("p", tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}])
    assert score_all(TaintToleration({}, testing.handle()), pod, nodes)["one"] == 50
    pod = make_pod("p", tolerations=[{"key": "spot", "operator": "Exists"}])
    assert score_all(TaintToleration({}, testing.handle()), pod, nodes) == {
        "clean": 100,
        "one": 100,
        "two": 0,
        "hard": 100,
    }


# -- NodeAffinity ---------------------------------------------------------------------------


def affinity(required: list[dict] | None = None, preferred: list[dict] | None = None) -> dict:
    node_affinity: dict = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": required
        }
    if preferred is not None:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"nodeAffinity": node_affinity}


NODES = [
    make_node("a", labels={"zone": "z1", "gen": "3"}),
    make_node("b", labels={"zone": "z2", "gen": "5"}),
    make_node("c", labels={"zone": "z3"}),
]
MISMATCH = (UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))


@pytest.mark.parametrize(
    ("spec", "fit"),
    [
        ({}, {"a", "b", "c"}),
        ({"nodeSelector": {"zone": "z1"}}, {"a"}),
        (
            {
                "affinity": affinity(
                    [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["z1", "z2"]}
                            ]
                        }
                    ]
                )
            },
            {"a", "b"},
        ),
        (
            {
                "affinity": affinity(
                    [{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}]
                )
            },
            {"b", "c"},
        ),
        (
            {"affinity": affinity([{"matchExpressions": [{"key": "gen", "operator": "Exists"}]}])},
            {"a", "b"},
        ),
        (
            {
                "affinity": affinity(
                    [{"matchExpressions": [{"key": "gen", "operator": "DoesNotExist"}]}]
                )
            },
            {"c"},
        ),
        (
            {
                "affinity": affinity(
                    [{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]
                )
            },
            {"b"},
        ),
        (
            {
                "affinity": affinity(
                    [{"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}]}]
                )
            },
            {"a"},
        ),
        # terms are ORed, expressions within a term ANDed
        (
            {
                "affinity": affinity(
                    [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z3"]}]},
                    ]
                )
            },
            {"a", "c"},
        ),
        (
            {
                "affinity": affinity(
                    [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["z1"]},
                                {"key": "gen", "operator": "In", "values": ["5"]},
                            ]
                        }
                    ]
                )
            },
            set(),
        ),
        # an empty term matches nothing
        ({"affinity": affinity([{}])}, set()),
        # nodeSelector AND affinity
        (
            {
                "nodeSelector": {"zone": "z2"},
                "affinity": affinity(
                    [{"matchExpressions": [{"key": "gen", "operator": "Exists"}]}]
                ),
            },
            {"b"},
        ),
    ],
)
def test_node_affinity_filter(spec, fit) -> None:
    result = filter_all(NodeAffinity({}, testing.handle()), make_pod("p", **spec), NODES)
    assert {n for n, status in result.items() if status is None} == fit
    assert all(status == MISMATCH for n, status in result.items() if n not in fit)


def test_node_affinity_prefilter_pins_node_names() -> None:
    plugin = NodeAffinity({}, testing.handle())
    pod = make_pod(
        "p",
        affinity=affinity(
            [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]},
            ]
        ),
    )
    result, status = plugin.pre_filter(CycleState(), pod, [])
    assert status is None and result.node_names == {"a", "b", "c"}
    pod = make_pod(
        "p",
        affinity=affinity(
            [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["a"]},
                        {"key": "metadata.name", "operator": "In", "values": ["b"]},
                    ]
                }
            ]
        ),
    )
    result, status = plugin.pre_filter(CycleState(), pod, [])
    assert status.code == UNRESOLVABLE and status.reasons == ("pod affinity terms conflict",)
    _, status = plugin.pre_filter(CycleState(), make_pod("p"), [])
    assert status.code == Code.SKIP


def test_node_affinity_added_affinity() -> None:
    args = {
        "addedAffinity": affinity(
            [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2", "z3"]}]}]
        )["nodeAffinity"]
    }
    result = filter_all(
        NodeAffinity(args, testing.handle()), make_pod("p", nodeSelector={"zone": "z3"}), NODES
    )
    assert result == {
        "a": (UNRESOLVABLE, ("node(s) didn't match scheduler-enforced node affinity",)),
        "b": MISMATCH,
        "c": None,
    }


def test_node_affinity_score() -> None:
    pod = make_pod(
        "p",
        affinity=affinity(
            preferred=[
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]
                    },
                },
                {
                    "weight": 30,
                    "preference": {"matchExpressions": [{"key": "gen", "operator": "Exists"}]},
                },
            ]
        ),
    )
    # raw 40, 30, 0 -> normalized by the max: 100, 75, 0
    assert score_all(NodeAffinity({}, testing.handle()), pod, NODES) == {"a": 100, "b": 75, "c": 0}
    assert score_all(NodeAffinity({}, testing.handle()), make_pod("p"), NODES) == dict.fromkeys(
        "abc"
    )


# -- NodePorts ------------------------------------------------------------------------------


def with_ports(name: str, *ports: dict, node: str | None = None) -> dict:
    return make_pod(name, node_name=node, containers=[{"name": "c", "ports": list(ports)}])


@pytest.mark.parametrize(
    ("existing", "wanted", "fits"),
    [
        ({"hostPort": 80}, {"hostPort": 81}, True),
        ({"hostPort": 80}, {"hostPort": 80}, False),
        ({"hostPort": 80, "protocol": "UDP"}, {"hostPort": 80}, True),
        ({"hostPort": 80, "hostIP": "10.0.0.1"}, {"hostPort": 80, "hostIP": "10.0.0.2"}, True),
        ({"hostPort": 80, "hostIP": "10.0.0.1"}, {"hostPort": 80}, False),
        ({"hostPort": 80}, {"hostPort": 80, "hostIP": "10.0.0.2"}, False),
        ({"containerPort": 80}, {"containerPort": 80}, True),
    ],
)
def test_node_ports(existing, wanted, fits) -> None:
    result = filter_all(
        NodePorts({}, testing.handle()),
        with_ports("new", wanted),
        [make_node("n")],
        [with_ports("old", existing, node="n")],
    )
    expected = (
        None
        if fits
        else (Code.UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",))
    )
    assert result["n"] == expected


def test_node_ports_count_sidecar_init_containers() -> None:
    sidecar = make_pod(
        "old",
        node_name="n",
        containers=[{"name": "c"}],
        initContainers=[{"name": "s", "restartPolicy": "Always", "ports": [{"hostPort": 9000}]}],
    )
    result = filter_all(
        NodePorts({}, testing.handle()),
        with_ports("new", {"hostPort": 9000}),
        [make_node("n")],
        [sidecar],
    )
    assert result["n"] is not None


# -- ImageLocality --------------------------------------------------------------------------


def test_image_name_normalization() -> None:
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("registry:5000/team/app") == "registry:5000/team/app:latest"
    assert normalized_image_name("nginx:1.27") == "nginx:1.27"


def test_image_locality_score() -> None:
    mb = 1024 * 1024
    nodes = [
        make_node("has", images=[(["app:v1"], 500 * mb)]),
        make_node("also", images=[(["app:v1"], 500 * mb)]),
        make_node("none"),
        make_node("small", images=[(["tiny:latest"], 10 * mb)]),
    ]
    pod = make_pod("p", containers=[{"name": "c", "image": "app:v1"}])
    # 500 MB x 2/4 nodes = 250 MB; (250 - 23) x 100 // (1000 - 23) = 23
    scores = score_all(ImageLocality({}, testing.handle()), pod, nodes)
    assert scores == {"has": 23, "also": 23, "none": 0, "small": 0}


# -- DefaultBinder --------------------------------------------------------------------------


class Handle:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.bound: list[tuple[str, str]] = []
        self.client = self

    def bind(self, pod: dict, node: str) -> None:
        if self.error:
            raise self.error
        self.bound.append((pod["metadata"]["name"], node))


def test_default_binder() -> None:
    handle = Handle()
    assert DefaultBinder({}, handle).bind(CycleState(), make_pod("p"), "n1") is None
    assert handle.bound == [("p", "n1")]
    status = DefaultBinder({}, Handle(RuntimeError("conflict"))).bind(
        CycleState(), make_pod("p"), "n"
    )
    assert status.code == Code.ERROR and status.reasons == ("conflict",)
