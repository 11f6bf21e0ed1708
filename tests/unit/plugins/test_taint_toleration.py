"""TaintToleration (upstream ``pkg/scheduler/framework/plugins/tainttoleration``): Filter,
PreScore/Score/NormalizeScore, queueing hints."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from extender.framework.node_info import NodeInfo
from extender.framework.results import NodeScore
from extender.framework.status import Code
from extender.plugins.taint_toleration import (
    ERR_REASON_NOT_MATCH,
    PRE_SCORE_KEY,
    TaintToleration,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_toleration_change,
)
from tests.unit.builders import make_node, make_pod

from .helpers import filter_all, score_all

UNTOLERATED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint(s)",))


def taint(key: str, effect: str, value: str = "") -> dict:
    return {"key": key, "value": value, "effect": effect}


def plugin() -> TaintToleration:
    return TaintToleration({}, testing.handle())


def test_reason_is_the_1_35_wording() -> None:
    assert ERR_REASON_NOT_MATCH == "node(s) had untolerated taint(s)"


@pytest.mark.parametrize(
    ("taints", "tolerations", "fits"),
    [
        pytest.param([], [], True, id="no-taints"),
        pytest.param([taint("gpu", "NoSchedule", "true")], [], False, id="NoSchedule"),
        pytest.param([taint("gpu", "NoExecute", "true")], [], False, id="NoExecute"),
        pytest.param([taint("gpu", "PreferNoSchedule")], [], True, id="PreferNoSchedule-never"),
        pytest.param(
            [taint("gpu", "NoSchedule", "true")],
            [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            True,
            id="equal-exact",
        ),
        pytest.param(
            [taint("gpu", "NoSchedule", "true")],
            [{"key": "gpu", "value": "true"}],
            True,
            id="empty-operator-is-Equal-empty-effect-is-all",
        ),
        pytest.param(
            [taint("gpu", "NoSchedule", "true")],
            [{"key": "gpu", "value": "false"}],
            False,
            id="value-mismatch",
        ),
        pytest.param(
            [taint("gpu", "NoSchedule", "x")],
            [{"key": "gpu", "operator": "Exists"}],
            True,
            id="exists-any-value",
        ),
        pytest.param(
            [taint("a", "NoSchedule", "x"), taint("b", "NoExecute", "y")],
            [{"operator": "Exists"}],
            True,
            id="exists-without-key-tolerates-everything",
        ),
        pytest.param(
            [taint("gpu", "NoSchedule", "x")],
            [{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}],
            False,
            id="effect-mismatch",
        ),
        pytest.param(
            [taint("gpu", "NoSchedule", "x")],
            [{"key": "gpu", "operator": "Exists", "effect": "PreferNoSchedule"}],
            False,
            id="prefer-toleration-does-not-cover-NoSchedule",
        ),
        pytest.param(
            [taint("a", "NoSchedule"), taint("b", "NoExecute")],
            [{"key": "a", "operator": "Exists"}],
            False,
            id="second-taint-untolerated",
        ),
        pytest.param(
            [taint("a", "NoSchedule"), taint("b", "PreferNoSchedule")],
            [{"key": "a", "operator": "Exists"}],
            True,
            id="untolerated-prefer-is-ignored",
        ),
        pytest.param(
            [taint("gpu", "NoSchedule", "")],
            [{"operator": "Equal", "value": ""}],
            True,
            id="empty-key-Equal-matches-on-value",
        ),
        pytest.param(
            [taint("n", "NoSchedule", "5")],
            [{"key": "n", "operator": "Lt", "value": "9"}],
            False,
            id="alpha-Lt-operator-is-off",
        ),
    ],
)
def test_filter(taints: list[dict], tolerations: list[dict], fits: bool) -> None:
    pod = make_pod("p", tolerations=tolerations)
    result = filter_all(plugin(), pod, [make_node("n", taints=taints)])
    assert result["n"] == (None if fits else UNTOLERATED)


def test_filter_per_node() -> None:
    nodes = [
        make_node("clean"),
        make_node("tainted", taints=[taint("dedicated", "NoSchedule", "db")]),
        make_node("other", taints=[taint("dedicated", "NoSchedule", "web")]),
    ]
    pod = make_pod("p", tolerations=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    assert filter_all(plugin(), pod, nodes) == {
        "clean": None,
        "tainted": None,
        "other": UNTOLERATED,
    }


def test_pre_score_writes_state_and_never_skips() -> None:
    state = CycleState()
    tolerations = [
        {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "b", "operator": "Exists"},
        {"key": "c", "operator": "Exists", "effect": "PreferNoSchedule"},
        {"key": "d", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert plugin().pre_score(state, make_pod("p", tolerations=tolerations), []) is None
    assert [t["key"] for t in state.read(PRE_SCORE_KEY).tolerations] == ["b", "c"]
    # no tolerations at all: still Success (upstream never skips TaintToleration scoring)
    state = CycleState()
    assert plugin().pre_score(state, make_pod("p"), []) is None
    assert state.read(PRE_SCORE_KEY).tolerations == []


NODES = [
    make_node("clean"),
    make_node("one", taints=[taint("spot", "PreferNoSchedule")]),
    make_node("two", taints=[taint("spot", "PreferNoSchedule"), taint("old", "PreferNoSchedule")]),
    make_node(
        "three",
        taints=[
            taint("spot", "PreferNoSchedule"),
            taint("old", "PreferNoSchedule"),
            taint("slow", "PreferNoSchedule", "yes"),
        ],
    ),
    make_node("hard", taints=[taint("gpu", "NoSchedule")]),
]


def test_score_counts_and_reverse_normalizes() -> None:
    # raw counts 0, 1, 2, 3, 0; max 3 -> 100 - 100*c//3: 100, 67, 34, 0, 100
    assert score_all(plugin(), make_pod("p"), NODES) == {
        "clean": 100,
        "one": 67,
        "two": 34,
        "three": 0,
        "hard": 100,
    }


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        pytest.param(
            [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            {"clean": 100, "one": 67, "two": 34, "three": 0, "hard": 100},
            id="NoSchedule-effect-does-not-count",
        ),
        pytest.param(
            # counts 0, 0, 1, 2, 0 -> 100, 100, 50, 0, 100
            [{"key": "spot", "operator": "Exists"}],
            {"clean": 100, "one": 100, "two": 50, "three": 0, "hard": 100},
            id="empty-effect-counts",
        ),
        pytest.param(
            # counts 0, 0, 1, 2, 0
            [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}],
            {"clean": 100, "one": 100, "two": 50, "three": 0, "hard": 100},
            id="PreferNoSchedule-effect-counts",
        ),
        pytest.param(
            # counts 0, 1, 2, 2, 0: "slow" is tolerated by value
            [{"key": "slow", "value": "yes", "effect": "PreferNoSchedule"}],
            {"clean": 100, "one": 50, "two": 0, "three": 0, "hard": 100},
            id="equal-value",
        ),
        pytest.param(
            # everything tolerated: all counts 0 -> all 100
            [{"operator": "Exists"}],
            {"clean": 100, "one": 100, "two": 100, "three": 100, "hard": 100},
            id="exists-everything",
        ),
    ],
)
def test_score_with_tolerations(tolerations: list[dict], expected: dict) -> None:
    assert score_all(plugin(), make_pod("p", tolerations=tolerations), NODES) == expected


def test_score_without_pre_score_is_an_error() -> None:
    value, status = plugin().score(CycleState(), make_pod("p"), NodeInfo(make_node("n")))
    assert value == 0 and status is not None and status.code == Code.ERROR


def test_normalize_all_zero_is_max() -> None:
    scores = [NodeScore("a", 0), NodeScore("b", 0)]
    assert plugin().score_extensions().normalize_score(CycleState(), make_pod("p"), scores) is None
    assert [s.score for s in scores] == [100, 100]


def test_events_to_register() -> None:
    events = plugin().events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION),
    ]
    assert events[0].hint is is_schedulable_after_node_change
    assert events[1].hint is is_schedulable_after_pod_toleration_change


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
NO_SCHEDULE = [taint("gpu", "NoSchedule")]
PREFER = [taint("gpu", "PreferNoSchedule")]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_node("n"), QUEUE, id="added-untainted"),
        pytest.param(None, make_node("n", taints=NO_SCHEDULE), SKIP, id="added-untolerated"),
        pytest.param(None, make_node("n", taints=PREFER), QUEUE, id="added-prefer-only"),
        pytest.param(make_node("n", taints=NO_SCHEDULE), make_node("n"), QUEUE, id="taint-removed"),
        pytest.param(
            make_node("n", taints=NO_SCHEDULE),
            make_node("n", taints=[taint("other", "NoExecute")]),
            SKIP,
            id="still-untolerated",
        ),
        pytest.param(
            make_node("n"), make_node("n", labels={"x": "y"}), SKIP, id="was-already-tolerated"
        ),
        pytest.param(make_node("n"), None, SKIP, id="deleted"),
    ],
)
def test_node_change_hint(old: dict | None, new: dict | None, hint: QueueingHint) -> None:
    assert is_schedulable_after_node_change(make_pod("p"), old, new) == hint


def test_node_change_hint_uses_the_pods_tolerations() -> None:
    pod = make_pod("p", tolerations=[{"key": "gpu", "operator": "Exists"}])
    new = make_node("n", taints=NO_SCHEDULE)
    assert is_schedulable_after_node_change(pod, None, new) == QUEUE


def test_pod_toleration_hint_only_for_the_pod_itself() -> None:
    pod = make_pod("p", uid="u1")
    updated = make_pod("p", uid="u1", tolerations=[{"operator": "Exists"}])
    other = make_pod("q", uid="u2", tolerations=[{"operator": "Exists"}])
    assert is_schedulable_after_pod_toleration_change(pod, pod, updated) == QUEUE
    assert is_schedulable_after_pod_toleration_change(pod, other, other) == SKIP
