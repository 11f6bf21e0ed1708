"""NodeAffinity (upstream ``pkg/scheduler/framework/plugins/nodeaffinity``): PreFilter, Filter,
PreScore/Score, args, queueing hints."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from extender.framework.node_info import NodeInfo
from extender.framework.status import Code
from extender.plugins.node_affinity import PRE_FILTER_KEY, PRE_SCORE_KEY, NodeAffinity
from tests.unit.builders import make_node, make_pod

from .helpers import cycle, filter_all, score_all

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
MISMATCH = (UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))
ENFORCED = (UNRESOLVABLE, ("node(s) didn't match scheduler-enforced node affinity",))
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def expr(key: str, op: str, *values: str) -> dict:
    req: dict = {"key": key, "operator": op}
    if values:
        req["values"] = list(values)
    return req


def name_in(*names: str) -> dict:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def required(*terms: dict) -> dict:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(terms)}}}


def preferred(*terms: tuple[int, dict]) -> dict:
    return {"nodeAffinity": {PREFERRED: [{"weight": w, "preference": t} for w, t in terms]}}


NODES = [
    make_node("a", labels={"zone": "z1", "gen": "3"}),
    make_node("b", labels={"zone": "z2", "gen": "5"}),
    make_node("c", labels={"zone": "z3"}),
]


def fitting(result: dict) -> set[str]:
    assert all(status in (None, MISMATCH) for status in result.values()), result
    return {name for name, status in result.items() if status is None}


@pytest.mark.parametrize(
    ("spec", "fit"),
    [
        pytest.param({}, {"a", "b", "c"}, id="nothing"),
        pytest.param({"nodeSelector": {}}, {"a", "b", "c"}, id="empty-nodeSelector"),
        pytest.param({"nodeSelector": {"zone": "z1"}}, {"a"}, id="nodeSelector"),
        pytest.param({"nodeSelector": {"zone": "z1", "gen": "5"}}, set(), id="selector-ANDed"),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("zone", "In", "z1", "z2")]})},
            {"a", "b"},
            id="In",
        ),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("gen", "NotIn", "3")]})},
            {"b", "c"},
            id="NotIn-absent-label-matches",
        ),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("gen", "Exists")]})},
            {"a", "b"},
            id="Exists",
        ),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("gen", "DoesNotExist")]})},
            {"c"},
            id="DoesNotExist",
        ),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("gen", "Gt", "4")]})},
            {"b"},
            id="Gt",
        ),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("gen", "Lt", "4")]})},
            {"a"},
            id="Lt",
        ),
        pytest.param(
            {"affinity": required({"matchExpressions": [expr("zone", "Gt", "1")]})},
            set(),
            id="Gt-non-integer-label",
        ),
        pytest.param(
            {
                "affinity": required(
                    {"matchExpressions": [expr("zone", "In", "z1")]},
                    {"matchExpressions": [expr("zone", "In", "z3")]},
                )
            },
            {"a", "c"},
            id="terms-ORed",
        ),
        pytest.param(
            {
                "affinity": required(
                    {"matchExpressions": [expr("zone", "In", "z1"), expr("gen", "In", "5")]}
                )
            },
            set(),
            id="expressions-ANDed",
        ),
        pytest.param({"affinity": required({})}, set(), id="empty-term-matches-nothing"),
        pytest.param({"affinity": required()}, set(), id="no-terms-matches-nothing"),
        pytest.param(
            {"affinity": required({"matchFields": [name_in("b")]})}, {"b"}, id="matchFields-In"
        ),
        pytest.param(
            {
                "affinity": required(
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "NotIn", "values": ["b"]}
                        ]
                    }
                )
            },
            {"a", "c"},
            id="matchFields-NotIn",
        ),
        pytest.param(
            {
                "affinity": required(
                    {"matchFields": [name_in("b")], "matchExpressions": [expr("gen", "Gt", "4")]},
                    {"matchFields": [name_in("a")], "matchExpressions": [expr("gen", "Gt", "4")]},
                )
            },
            {"b"},
            id="fields-AND-expressions",
        ),
        pytest.param(
            # a field requirement needs exactly one value; otherwise the term never matches
            {"affinity": required({"matchFields": [name_in("a", "b")]})},
            set(),
            id="matchFields-two-values-matches-nothing",
        ),
        pytest.param(
            {
                "nodeSelector": {"zone": "z2"},
                "affinity": required({"matchExpressions": [expr("gen", "Exists")]}),
            },
            {"b"},
            id="nodeSelector-AND-affinity",
        ),
        pytest.param(
            {
                "nodeSelector": {"zone": "z3"},
                "affinity": required({"matchExpressions": [expr("gen", "Exists")]}),
            },
            set(),
            id="nodeSelector-AND-affinity-disjoint",
        ),
    ],
)
def test_filter(spec: dict, fit: set[str]) -> None:
    result = filter_all(NodeAffinity({}, testing.handle()), make_pod("p", **spec), NODES)
    assert fitting(result) == fit


def pre_filter(pod: dict, args: dict | None = None) -> tuple:
    state = CycleState()
    result, status = NodeAffinity(args or {}, testing.handle()).pre_filter(state, pod, [])
    return state, result, status


def test_pre_filter_skips_when_nothing_is_required() -> None:
    state, result, status = pre_filter(make_pod("p"))
    assert result is None and status is not None and status.code == Code.SKIP
    assert state.get(PRE_FILTER_KEY) is None
    # preferred-only affinity has nothing for Filter either
    pod = make_pod("p", affinity=preferred((5, {"matchExpressions": [expr("zone", "Exists")]})))
    assert pre_filter(pod)[2].code == Code.SKIP


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"nodeSelector": {"zone": "z1"}}, id="nodeSelector"),
        pytest.param({"nodeSelector": {}}, id="empty-nodeSelector-is-not-nil"),
        pytest.param({"affinity": required({"matchExpressions": [expr("gen", "Exists")]})}),
        pytest.param({"affinity": required()}, id="required-without-terms"),
    ],
)
def test_pre_filter_does_not_skip(spec: dict) -> None:
    state, result, status = pre_filter(make_pod("p", **spec))
    assert (result, status) == (None, None)
    assert state.get(PRE_FILTER_KEY) is not None


def test_pre_filter_does_not_skip_with_added_affinity() -> None:
    args = {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": []}]}}}
    _, result, status = pre_filter(make_pod("p"), args)
    assert (result, status) == (None, None)


@pytest.mark.parametrize(
    ("terms", "names"),
    [
        pytest.param([{"matchFields": [name_in("a", "b")]}], {"a", "b"}, id="one-term"),
        pytest.param(
            [{"matchFields": [name_in("a", "b")]}, {"matchFields": [name_in("c")]}],
            {"a", "b", "c"},
            id="union-over-terms",
        ),
        pytest.param(
            [{"matchFields": [name_in("a", "b"), name_in("b", "c")]}],
            {"b"},
            id="intersection-within-term",
        ),
        pytest.param(
            [{"matchFields": [name_in("a")], "matchExpressions": [expr("zone", "Exists")]}],
            {"a"},
            id="expressions-do-not-widen",
        ),
        pytest.param(
            [{"matchFields": [name_in("a")]}, {"matchExpressions": [expr("zone", "Exists")]}],
            None,
            id="a-term-without-name-allows-all",
        ),
        pytest.param(
            [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a"]}]}],
            None,
            id="NotIn-does-not-pin",
        ),
    ],
)
def test_pre_filter_result_pins_node_names(terms: list[dict], names: set[str] | None) -> None:
    _, result, status = pre_filter(make_pod("p", affinity=required(*terms)))
    assert status is None
    if names is None:
        assert result is None
    else:
        assert result is not None and result.node_names == names


def test_pre_filter_conflicting_names() -> None:
    pod = make_pod("p", affinity=required({"matchFields": [name_in("a"), name_in("b")]}))
    _, result, status = pre_filter(pod)
    assert result is None
    assert status is not None and status.code == UNRESOLVABLE
    assert status.reasons == ("pod affinity terms conflict",)


def test_filter_without_pre_filter_computes_the_requirement() -> None:
    pod = make_pod("p", nodeSelector={"zone": "z2"})
    plugin = NodeAffinity({}, testing.handle())
    assert plugin.filter(CycleState(), pod, NodeInfo(NODES[1])) is None
    status = plugin.filter(CycleState(), pod, NodeInfo(NODES[0]))
    assert status is not None and (status.code, status.reasons) == MISMATCH


# -- addedAffinity ----------------------------------------------------------------------------


def added(required_terms: list[dict] | None = None, preferred_terms: list | None = None) -> dict:
    affinity: dict = {}
    if required_terms is not None:
        affinity[REQUIRED] = {"nodeSelectorTerms": required_terms}
    if preferred_terms is not None:
        affinity[PREFERRED] = [{"weight": w, "preference": t} for w, t in preferred_terms]
    return {"addedAffinity": affinity}


def test_added_affinity_is_checked_first() -> None:
    args = added([{"matchExpressions": [expr("zone", "In", "z2", "z3")]}])
    result = filter_all(
        NodeAffinity(args, testing.handle()), make_pod("p", nodeSelector={"zone": "z3"}), NODES
    )
    assert result == {"a": ENFORCED, "b": MISMATCH, "c": None}
    # a pod with nothing required is still held to the added affinity
    result = filter_all(NodeAffinity(args, testing.handle()), make_pod("p"), NODES)
    assert result == {"a": ENFORCED, "b": None, "c": None}


def test_added_affinity_without_terms_is_valid_and_matches_nothing() -> None:
    # upstream ValidateNodeAffinityArgs only parses the selector; zero terms parse fine
    plugin = NodeAffinity({"addedAffinity": {REQUIRED: {}}}, testing.handle())
    assert filter_all(plugin, make_pod("p"), NODES) == dict.fromkeys("abc", ENFORCED)


def test_empty_args() -> None:
    for args in ({}, {"addedAffinity": None}, {"addedAffinity": {}}):
        plugin = NodeAffinity(args, testing.handle())
        assert plugin.added_node_selector is None and plugin.added_preferred is None


@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param(
            added([{"matchExpressions": [expr("zone", "Near", "z1")]}]),
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator",
            id="bad-operator",
        ),
        pytest.param(
            added([{}, {"matchExpressions": [expr("zone", "In")]}]),
            "nodeSelectorTerms[1].matchExpressions[0].values",
            id="In-without-values",
        ),
        pytest.param(
            added([{"matchExpressions": [expr("gen", "Gt", "four")]}]),
            "matchExpressions[0].values[0]",
            id="Gt-not-integer",
        ),
        pytest.param(
            added([{"matchExpressions": [expr("gen", "Exists", "x")]}]),
            "matchExpressions[0].values",
            id="Exists-with-values",
        ),
        pytest.param(
            added([{"matchExpressions": [expr("bad key!", "Exists")]}]),
            "matchExpressions[0].key",
            id="bad-key",
        ),
        pytest.param(
            added([{"matchFields": [name_in("a", "b")]}]),
            "matchFields[0].values",
            id="matchFields-two-values",
        ),
        pytest.param(
            added(preferred_terms=[(10, {"matchExpressions": [expr("zone", "Lt", "1", "2")]})]),
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".preference.matchExpressions[0].values",
            id="preferred-Lt-two-values",
        ),
        pytest.param({"addedAffinity": ["not", "a", "dict"]}, "addedAffinity", id="not-a-dict"),
    ],
)
def test_added_affinity_validation(args: dict, field: str) -> None:
    with pytest.raises(ValueError) as err:
        NodeAffinity(args, testing.handle())
    assert field in str(err.value)


def test_added_preferred_weight_zero_and_empty_terms_are_ignored_not_rejected() -> None:
    args = added(preferred_terms=[(0, {"matchExpressions": [expr("x", "Bogus")]}), (5, {})])
    plugin = NodeAffinity(args, testing.handle())
    assert plugin.added_preferred is not None and plugin.added_preferred.terms == ()


# -- scoring ----------------------------------------------------------------------------------


def test_score_sums_matching_weights() -> None:
    pod = make_pod(
        "p",
        affinity=preferred(
            (10, {"matchExpressions": [expr("zone", "In", "z1")]}),
            (30, {"matchExpressions": [expr("gen", "Exists")]}),
            (7, {"matchFields": [name_in("c")]}),
        ),
    )
    # raw 40, 30, 7 -> 100*s//40: 100, 75, 17
    assert score_all(NodeAffinity({}, testing.handle()), pod, NODES) == {"a": 100, "b": 75, "c": 17}


def test_score_adds_added_affinity_preferred_terms() -> None:
    args = added(preferred_terms=[(20, {"matchExpressions": [expr("zone", "In", "z3")]})])
    pod = make_pod("p", affinity=preferred((30, {"matchExpressions": [expr("gen", "Exists")]})))
    # raw 30, 30, 20 -> 100, 100, 66
    assert score_all(NodeAffinity(args, testing.handle()), pod, NODES) == {
        "a": 100,
        "b": 100,
        "c": 66,
    }
    # addedAffinity alone scores a pod without preferences: raw 0, 0, 20
    assert score_all(NodeAffinity(args, testing.handle()), make_pod("p"), NODES) == {
        "a": 0,
        "b": 0,
        "c": 100,
    }


def test_score_ignores_weight_zero_and_empty_preferences() -> None:
    pod = make_pod(
        "p",
        affinity=preferred(
            (0, {"matchExpressions": [expr("zone", "Exists")]}),
            (50, {}),
            (5, {"matchExpressions": [expr("zone", "In", "z2")]}),
        ),
    )
    assert score_all(NodeAffinity({}, testing.handle()), pod, NODES) == {"a": 0, "b": 100, "c": 0}


def test_pre_score_skip() -> None:
    plugin = NodeAffinity({}, testing.handle())
    assert plugin.pre_score(CycleState(), make_pod("p"), []).code == Code.SKIP
    # required-only affinity: nothing to score
    pod = make_pod("p", affinity=required({"matchExpressions": [expr("zone", "Exists")]}))
    assert plugin.pre_score(CycleState(), pod, []).code == Code.SKIP


def test_pre_score_empty_preferred_list_does_not_skip() -> None:
    # upstream checks the field for nil: an empty list scores (all 0, normalized stays 0)
    pod = make_pod("p", affinity={"nodeAffinity": {PREFERRED: []}})
    state = CycleState()
    assert NodeAffinity({}, testing.handle()).pre_score(state, pod, []) is None
    assert state.get(PRE_SCORE_KEY) is not None
    assert score_all(NodeAffinity({}, testing.handle()), pod, NODES) == {"a": 0, "b": 0, "c": 0}


def test_pre_score_invalid_pod_preference_is_an_error() -> None:
    pod = make_pod("p", affinity=preferred((5, {"matchExpressions": [expr("zone", "Near")]})))
    status = NodeAffinity({}, testing.handle()).pre_score(CycleState(), pod, [])
    assert status is not None and status.code == Code.ERROR
    assert "matchExpressions[0].operator" in status.message


def test_score_without_pre_score_falls_back_to_the_pod() -> None:
    pod = make_pod("p", affinity=preferred((9, {"matchExpressions": [expr("zone", "In", "z1")]})))
    state, snapshot = cycle(NODES)
    plugin = NodeAffinity({}, testing.handle())
    assert plugin.score(state, pod, snapshot.get("a")) == (9, None)
    assert plugin.score(state, pod, snapshot.get("b")) == (0, None)


# -- queueing ---------------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = NodeAffinity({}, testing.handle()).events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
    ]
    assert events[0].hint is not None


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
SSD_POD = make_pod("p", nodeSelector={"disk": "ssd"})


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_node("n", labels={"disk": "ssd"}), QUEUE, id="added-matching"),
        pytest.param(None, make_node("n", labels={"disk": "hdd"}), SKIP, id="added-not-matching"),
        pytest.param(
            make_node("n", labels={"disk": "hdd"}),
            make_node("n", labels={"disk": "ssd"}),
            QUEUE,
            id="now-matches",
        ),
        pytest.param(
            make_node("n", labels={"disk": "ssd"}),
            make_node("n", labels={"disk": "ssd", "x": "y"}),
            SKIP,
            id="matched-before",
        ),
        pytest.param(
            make_node("n", labels={"disk": "ssd"}),
            make_node("n", labels={"disk": "hdd"}),
            SKIP,
            id="stopped-matching",
        ),
        pytest.param(make_node("n", labels={"disk": "ssd"}), None, SKIP, id="deleted"),
    ],
)
def test_node_change_hint(old: dict | None, new: dict | None, hint: QueueingHint) -> None:
    plugin = NodeAffinity({}, testing.handle())
    assert plugin.events_to_register()[0].hint(SSD_POD, old, new) == hint


def test_node_change_hint_respects_added_affinity() -> None:
    args = added([{"matchExpressions": [expr("pool", "In", "batch")]}])
    hint = NodeAffinity(args, testing.handle()).events_to_register()[0].hint
    assert hint(SSD_POD, None, make_node("n", labels={"disk": "ssd"})) == SKIP
    assert hint(SSD_POD, None, make_node("n", labels={"disk": "ssd", "pool": "batch"})) == QUEUE
