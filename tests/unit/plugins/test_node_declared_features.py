"""NodeDeclaredFeatures: upstream's cases (``pkg/scheduler/framework/plugins/nodedeclaredfeatures/
nodedeclaredfeatures_test.go``) with the registry swapped for test features, then the v1.36
registry's own inference (``k8s.io/component-helpers/nodedeclaredfeatures/features``)."""

from __future__ import annotations

import pytest
from marshmallow import ValidationError

from extender import testing
from extender.config import default_profile
from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, Resource
from extender.framework.events import QueueingHint as Hint
from extender.framework.node_info import NodeInfo
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code
from extender.plugins.node_declared_features import (
    ERR_REASON,
    FEATURE_NAMES,
    PRE_FILTER_KEY,
    Feature,
    NodeDeclaredFeatures,
    _PreFilterState,
    infer_for_pod_scheduling,
    try_map,
    unmap,
)
from extender.scheduler.scheduler import node_update_action
from extender.wire_fields import NODE_FIELDS, POD_FIELDS, check_fields
from tests.unit.builders import make_node, make_pod

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def node(name: str, features: list[str] | None = None) -> dict:
    n = make_node(name)
    if features is not None:
        n["status"]["declaredFeatures"] = features
    return n


def plugin_with(features: list[Feature], version: tuple[int, int, int] = (1, 35, 0)):
    pl = NodeDeclaredFeatures({}, testing.handle())
    pl.features = sorted(features, key=lambda f: f.name)
    pl.names = tuple(f.name for f in pl.features)
    pl.version = version
    return pl


def const(value: bool):
    return lambda spec: value


def by_label(spec: dict) -> bool:
    """A test feature a pod update can toggle (upstream's mock answers per call)."""
    return bool(spec.get("nodeSelector"))


# -- PreFilter (upstream TestPreFilter) ------------------------------------------------------


@pytest.mark.parametrize(
    ("features", "version", "skip", "required"),
    [
        pytest.param(
            [Feature("TestFeature1", const(True)), Feature("TestFeature2", const(False))],
            (1, 35, 0),
            False,
            ["TestFeature1"],
            id="pod with feature requirements",
        ),
        pytest.param(
            [
                Feature("TestFeature1", const(True), (1, 38, 0)),
                Feature("TestFeature2", const(True), (1, 38, 0)),
            ],
            (1, 35, 0),
            False,
            ["TestFeature1", "TestFeature2"],
            id="pod with multiple feature requirements",
        ),
        pytest.param(
            [Feature("TestFeature1", const(False)), Feature("TestFeature2", const(False))],
            (1, 35, 0),
            True,
            [],
            id="pod with no requirements",
        ),
        pytest.param(
            [
                Feature("TestFeature1", const(True), (1, 33, 0)),
                Feature("TestFeature2", const(False)),
            ],
            (1, 34, 0),
            True,
            [],
            id="feature not required, version > MaxVersion",
        ),
    ],
)
def test_pre_filter(features, version, skip: bool, required: list[str]) -> None:
    pl = plugin_with(features, version)
    state = CycleState()
    result, status = pl.pre_filter(state, make_pod("test-pod"), [])
    assert result is None
    if skip:
        assert status is not None and status.code == Code.SKIP
        assert state.get(PRE_FILTER_KEY) is None
    else:
        assert status is None
        assert unmap(state.read(PRE_FILTER_KEY).required, pl.names) == required


# -- Filter (upstream TestFilter) --------------------------------------------------------------

ABC = [Feature(n, const(False)) for n in ("FeatureA", "FeatureB", "FeatureC")]


def run_filter(declared: list[str] | None, required: list[str] | None):
    pl = plugin_with(ABC)
    state = CycleState()
    if required is not None:
        state.write(PRE_FILTER_KEY, _PreFilterState(try_map(required, pl.names)))
    return pl.filter(state, make_pod("test-pod"), NodeInfo(node("node-1", declared)))


@pytest.mark.parametrize(
    ("declared", "required", "fits"),
    [
        pytest.param(["FeatureA", "FeatureB"], ["FeatureA"], True, id="node matches"),
        pytest.param(["FeatureB"], ["FeatureA"], False, id="node does not match"),
        pytest.param(
            ["FeatureA", "FeatureB", "FeatureC"], ["FeatureA", "FeatureC"], True, id="subset"
        ),
        pytest.param(None, ["FeatureA"], False, id="node has no declared features"),
        pytest.param(["FeatureA"], ["FeatureA", "FeatureB"], False, id="some but not all"),
        pytest.param(["FeatureA", "Zzz/unknown"], ["FeatureA"], True, id="unknown ignored"),
    ],
)
def test_filter(declared: list[str] | None, required: list[str], fits: bool) -> None:
    status = run_filter(declared, required)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (UNRESOLVABLE, (ERR_REASON,))


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = run_filter(None, None)
    assert status is not None and status.code == Code.ERROR
    assert status.message == (
        'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found'
    )


def test_filter_batch_matches_filter() -> None:
    pl = NodeDeclaredFeatures({}, testing.handle())
    nodes = [
        node("none"),
        node("restart", ["RestartAllContainersOnContainerExits"]),
        node("both", ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"]),
        node("userns", ["UserNamespacesHostNetworkSupport"]),
    ]
    pod = make_pod("p", **pod_spec(restart_all=True, host_network=True, host_users=False))
    snapshot = Snapshot.from_objects(nodes, [])
    state = CycleState()
    state.snapshot = snapshot
    assert pl.pre_filter(state, pod, snapshot.node_info_list) == (None, None)
    per_node = [pl.filter(state, pod, info) is None for info in snapshot.node_info_list]
    assert list(pl.filter_batch(state, pod, snapshot.table)) == per_node
    assert per_node.count(True) == 1


# -- queueing hints (upstream TestEnqueueExtensionsNodeUpdate / PodUpdate) --------------------


def test_events_to_register() -> None:
    events = [e.event for e in NodeDeclaredFeatures({}, testing.handle()).events_to_register()]
    assert [(e.resource, e.action) for e in events] == [
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        (Resource.POD, ActionType.UPDATE),
    ]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, node("node-1", ["FeatureA"]), Hint.QUEUE, id="add with feature"),
        pytest.param(node("node-1"), node("node-1", ["FeatureA"]), Hint.QUEUE, id="added"),
        pytest.param(
            node("node-1", ["FeatureA"]), node("node-1", ["FeatureA"]), Hint.QUEUE_SKIP, id="same"
        ),
        pytest.param(node("node-1", []), node("node-1"), Hint.QUEUE_SKIP, id="empty is none"),
        pytest.param(node("node-1", ["FeatureA"]), node("node-1"), Hint.QUEUE, id="removed"),
    ],
)
def test_hint_after_node_change(old: dict | None, new: dict, hint: Hint) -> None:
    pl = plugin_with([])
    assert pl.is_schedulable_after_node_change(make_pod("test-pod"), old, new) == hint


TARGET = make_pod("test-pod", uid="123")


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(
            make_pod("test-pod", uid="123"),
            make_pod("test-pod", uid="123", nodeSelector={"foo": "bar"}),
            Hint.QUEUE,
            id="update adds requirement",
        ),
        pytest.param(
            make_pod("test-pod", uid="123", nodeSelector={"foo": "bar"}),
            make_pod("test-pod", uid="123"),
            Hint.QUEUE,
            id="update removes requirement",
        ),
        pytest.param(
            make_pod("test-pod", uid="123"),
            make_pod("test-pod", uid="123", labels={"foo": "bar"}),
            Hint.QUEUE_SKIP,
            id="no change in requirements",
        ),
        pytest.param(
            make_pod("another-test-pod", uid="456", nodeSelector={"foo": "bar"}),
            make_pod("another-test-pod", uid="456"),
            Hint.QUEUE_SKIP,
            id="not the target pod",
        ),
    ],
)
def test_hint_after_pod_update(old: dict, new: dict, hint: Hint) -> None:
    pl = plugin_with([Feature("TestFeature", by_label)])
    assert pl.is_schedulable_after_pod_update(TARGET, old, new) == hint


# -- the v1.36 registry ------------------------------------------------------------------------


def pod_spec(
    *,
    restart_all: bool = False,
    init_restart_all: bool = False,
    host_network: bool | None = None,
    host_users: bool | None = None,
) -> dict:
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    plain = {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}
    spec: dict = {
        "containers": [
            {"name": "a", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [plain]},
            {
                "name": "b",
                "image": "x",
                "restartPolicy": "Never",
                "restartPolicyRules": [plain, rule] if restart_all else [plain],
            },
        ]
    }
    if init_restart_all:
        spec["initContainers"] = [
            {"name": "i", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [rule]}
        ]
    if host_network is not None:
        spec["hostNetwork"] = host_network
    if host_users is not None:
        spec["hostUsers"] = host_users
    return spec


def test_registry_is_upstreams_sorted() -> None:
    assert FEATURE_NAMES == (
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport",
    )


@pytest.mark.parametrize(
    ("spec", "required"),
    [
        (pod_spec(), []),
        (pod_spec(restart_all=True), ["RestartAllContainersOnContainerExits"]),
        (pod_spec(init_restart_all=True), ["RestartAllContainersOnContainerExits"]),
        (pod_spec(host_network=True, host_users=False), ["UserNamespacesHostNetworkSupport"]),
        (pod_spec(host_network=True), []),
        (pod_spec(host_network=True, host_users=True), []),
        (pod_spec(host_network=False, host_users=False), []),
        (
            pod_spec(restart_all=True, host_network=True, host_users=False),
            ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"],
        ),
        ({}, []),
    ],
)
def test_inference_of_the_v136_registry(spec: dict, required: list[str]) -> None:
    assert unmap(infer_for_pod_scheduling(spec)) == required


def test_try_map_walks_as_upstream() -> None:
    # Sorted: every known name maps; unknown ones are skipped.
    assert unmap(try_map(["A/b", "RestartAllContainersOnContainerExits", "Zeta"])) == [
        "RestartAllContainersOnContainerExits"
    ]
    # Unsorted (the apiserver refuses it, a webhook body may not): the merge walk loses the
    # second name, as upstream's does.
    unsorted = ["UserNamespacesHostNetworkSupport", "RestartAllContainersOnContainerExits"]
    assert unmap(try_map(unsorted)) == ["UserNamespacesHostNetworkSupport"]
    assert try_map(None) == 0
    assert try_map("RestartAllContainersOnContainerExits") == 0


def test_node_update_reports_declared_feature_changes() -> None:
    old, new = node("n", ["FeatureA"]), node("n", ["FeatureA", "FeatureB"])
    assert node_update_action(old, new) == ActionType.UPDATE_NODE_DECLARED_FEATURE
    assert node_update_action(old, node("n", ["FeatureA"])) == ActionType(0)
    assert node_update_action(node("n"), node("n", [])) == ActionType(0)


def test_in_the_default_profile_last_as_upstream() -> None:
    profile = default_profile()
    assert [s.name for s in profile.plugins["filter"]][-1] == "NodeDeclaredFeatures"
    assert [s.name for s in profile.plugins["preFilter"]][-1] == "NodeDeclaredFeatures"
    assert all(s.name != "NodeDeclaredFeatures" for s in profile.plugins.get("score", ()))


def test_webhook_boundary_checks_the_fields_read() -> None:
    with pytest.raises(ValidationError, match="declaredFeatures"):
        check_fields({"status": {"declaredFeatures": [1]}}, NODE_FIELDS, "node")
    with pytest.raises(ValidationError, match="hostUsers"):
        check_fields({"spec": {"hostUsers": "false"}}, POD_FIELDS, "pod")
    with pytest.raises(ValidationError, match="restartPolicyRules"):
        check_fields(
            {"spec": {"containers": [{"restartPolicyRules": [{"action": 1}]}]}}, POD_FIELDS, "pod"
        )
