"""The profile runner, point by point, with small fake plugins (upstream
``staging/src/k8s.io/kube-scheduler/framework/interface.go``,
``pkg/scheduler/framework/runtime/framework.go``)."""

from __future__ import annotations

import threading

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.node_info import NodeInfo
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.results import NodeScore, PreFilterResult
from extender.framework.runtime import Framework, ProfileError
from extender.framework.snapshot import Snapshot
from extender.framework.status import SKIP, Code, Status, unresolvable, unschedulable
from tests.unit.builders import make_node, make_pod


class Fake:
    """A plugin whose answers per point are given as data."""

    def __init__(self, name: str, **answers) -> None:
        self.name = name
        self.answers = answers
        self.calls: list[str] = []

    def _answer(self, point: str, *args):
        self.calls.append(point)
        answer = self.answers.get(point)
        return answer(*args) if callable(answer) else answer


class PreFilterFake(Fake):
    def pre_filter(self, state, pod, nodes):
        return self._answer("pre_filter") or (None, None)

    def pre_filter_extensions(self) -> None:
        return None


class FilterFake(Fake):
    def filter(self, state, pod, node_info):
        return self._answer("filter", node_info)


class ScoreFake(Fake):
    def pre_score(self, state, pod, nodes):
        return self._answer("pre_score")

    def score(self, state, pod, node_info):
        return self._answer("score", node_info), None

    def score_extensions(self):
        return self if "normalize" in self.answers else None

    def normalize_score(self, state, pod, scores):
        for s in scores:
            s.score = self.answers["normalize"](s.score)
        return None


class ReservePermitFake(Fake):
    def reserve(self, state, pod, node_name):
        return self._answer("reserve")

    def unreserve(self, state, pod, node_name) -> None:
        self._answer("unreserve")

    def permit(self, state, pod, node_name):
        return self._answer("permit") or (None, 0)


class BindFake(Fake):
    def bind(self, state, pod, node_name):
        return self._answer("bind")


def _factory(plugin: Fake):
    return lambda args, handle: plugin


def framework(points: dict[str, list], weights: dict[str, int] | None = None) -> Framework:
    plugins = {p.name: p for ps in points.values() for p in ps}
    registry = Registry({name: _factory(p) for name, p in plugins.items()})
    profile = Profile(
        "test",
        {
            point: [PluginSpec(p.name, (weights or {}).get(p.name, 0)) for p in ps]
            for point, ps in points.items()
        },
    )
    return Framework(profile, registry)


NODES = [NodeInfo(make_node(n)) for n in ("n1", "n2", "n3")]


def test_prefilter_skip_skips_that_plugins_filter() -> None:
    skipper = PreFilterFake("A", pre_filter=(None, SKIP))
    fwk = framework({"preFilter": [skipper]})
    state = CycleState()
    result, status, rejected = fwk.run_pre_filter_plugins(state, make_pod("p"), NODES)
    assert (result, status, rejected) == (None, None, set())
    assert state.skip_filter_plugins == {"A"}


def test_prefilter_results_intersect_and_empty_is_unresolvable() -> None:
    a = PreFilterFake("A", pre_filter=(PreFilterResult({"n1", "n2"}), None))
    b = PreFilterFake("B", pre_filter=(PreFilterResult({"n2", "n3"}), None))
    result, status, _ = framework({"preFilter": [a, b]}).run_pre_filter_plugins(
        CycleState(), make_pod("p"), NODES
    )
    assert result.node_names == {"n2"} and result.plugins == ["A", "B"] and status is None
    c = PreFilterFake("C", pre_filter=(PreFilterResult({"n1"}), None))
    _, status, rejected = framework({"preFilter": [b, c]}).run_pre_filter_plugins(
        CycleState(), make_pod("p"), NODES
    )
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) didn't satisfy plugin(s) [B C] simultaneously",)
    assert rejected == {"B", "C"}


def test_prefilter_unresolvable_stops_at_once() -> None:
    a = PreFilterFake("A", pre_filter=(None, unresolvable("no")))
    b = PreFilterFake("B")
    _, status, rejected = framework({"preFilter": [a, b]}).run_pre_filter_plugins(
        CycleState(), make_pod("p"), NODES
    )
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.plugin == "A"
    assert rejected == {"A"} and b.calls == []


def test_filter_stops_at_first_rejection_and_wraps_errors() -> None:
    a = FilterFake("A", filter=lambda n: unschedulable("full") if n.name == "n1" else None)
    b = FilterFake("B", filter=lambda n: Status(Code.ERROR, "boom") if n.name == "n2" else None)
    fwk = framework({"filter": [a, b]})
    state = CycleState()
    s1 = fwk.run_filter_plugins(state, make_pod("p"), NODES[0])
    assert (s1.code, s1.reasons, s1.plugin) == (Code.UNSCHEDULABLE, ("full",), "A")
    assert b.calls == []
    s2 = fwk.run_filter_plugins(state, make_pod("p"), NODES[1])
    assert s2.code == Code.ERROR and s2.reasons == ('running "B" filter plugin: boom',)
    assert fwk.run_filter_plugins(state, make_pod("p"), NODES[2]) is None


def test_scores_normalized_weighted_and_summed() -> None:
    a = ScoreFake(
        "A", score=lambda n: {"n1": 1, "n2": 2, "n3": 4}[n.name], normalize=lambda s: s * 25
    )
    b = ScoreFake("B", score=lambda n: 10)
    fwk = framework({"preScore": [a, b], "score": [a, b]}, weights={"A": 3})
    scores, status = fwk.run_score_plugins(CycleState(), make_pod("p"), NODES)
    assert status is None
    assert [(s.name, s.total_score) for s in scores] == [("n1", 85), ("n2", 160), ("n3", 310)]
    assert scores[0].scores == {"A": 75, "B": 10}


def test_score_out_of_range_is_an_error() -> None:
    a = ScoreFake("A", score=lambda n: 101)
    _, status = framework({"score": [a]}).run_score_plugins(CycleState(), make_pod("p"), NODES)
    assert status.code == Code.ERROR and "invalid score 101" in status.message


def test_prescore_skip_skips_score() -> None:
    a = ScoreFake("A", pre_score=SKIP, score=lambda n: 50)
    fwk = framework({"preScore": [a], "score": [a]})
    state = CycleState()
    assert fwk.run_pre_score_plugins(state, make_pod("p"), NODES) is None
    scores, _ = fwk.run_score_plugins(state, make_pod("p"), NODES)
    assert all(s.total_score == 0 for s in scores) and "score" not in a.calls


def test_negative_weight_and_unknown_plugin_are_profile_errors() -> None:
    with pytest.raises(ProfileError, match="negative weight"):
        framework({"score": [ScoreFake("A")]}, weights={"A": -1})
    with pytest.raises(ProfileError, match="unknown plugin"):
        Framework(Profile("t", {"filter": [PluginSpec("Nope")]}), Registry())
    with pytest.raises(ProfileError, match="does not extend filter"):
        framework({"filter": [BindFake("A")]})


def test_reserve_failure_then_unreserve_in_reverse_order() -> None:
    order: list[str] = []
    a = ReservePermitFake("A", unreserve=lambda: order.append("A"))
    b = ReservePermitFake("B", reserve=unschedulable("no"), unreserve=lambda: order.append("B"))
    fwk = framework({"reserve": [a, b]})
    status = fwk.run_reserve_plugins_reserve(CycleState(), make_pod("p"), "n1")
    assert status.code == Code.UNSCHEDULABLE and status.plugin == "B"
    fwk.run_reserve_plugins_unreserve(CycleState(), make_pod("p"), "n1")
    assert order == ["B", "A"]


def test_permit_wait_then_allow() -> None:
    a = ReservePermitFake("A", permit=(Status(Code.WAIT), 10))
    fwk = framework({"permit": [a]})
    pod = make_pod("p", uid="u1")
    status = fwk.run_permit_plugins(CycleState(), pod, "n1")
    assert status.code == Code.WAIT
    waiting = fwk.get_waiting_pod("u1")
    threading.Timer(0.05, waiting.allow, args=("A",)).start()
    assert fwk.wait_on_permit(pod) is None
    assert fwk.get_waiting_pod("u1") is None


def test_permit_wait_times_out() -> None:
    a = ReservePermitFake("A", permit=(Status(Code.WAIT), 0.05))
    fwk = framework({"permit": [a]})
    pod = make_pod("p", uid="u2")
    fwk.run_permit_plugins(CycleState(), pod, "n1")
    status = fwk.wait_on_permit(pod)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("rejected due to timeout after waiting 50ms at plugin A",)


def test_permit_reject_by_another_actor() -> None:
    a = ReservePermitFake("A", permit=(Status(Code.WAIT), 10))
    fwk = framework({"permit": [a]})
    pod = make_pod("p", uid="u3")
    fwk.run_permit_plugins(CycleState(), pod, "n1")
    assert fwk.reject_waiting_pod("u3")
    assert fwk.wait_on_permit(pod).code == Code.UNSCHEDULABLE


def test_bind_skip_goes_to_the_next_binder() -> None:
    a = BindFake("A", bind=SKIP)
    b = BindFake("B", bind=None)
    assert framework({"bind": [a, b]}).run_bind_plugins(CycleState(), make_pod("p"), "n") is None
    assert a.calls == ["bind"] and b.calls == ["bind"]
    c = BindFake("C", bind=Status.error("gone"))
    status = framework({"bind": [c, b]}).run_bind_plugins(CycleState(), make_pod("p"), "n")
    assert status.code == Code.ERROR


def test_snapshot_normalize_example_with_default_normalize() -> None:
    from extender.plugins.helper import default_normalize_score

    scores = [NodeScore("a", 0), NodeScore("b", 1), NodeScore("c", 2)]
    default_normalize_score(100, True, scores)
    assert [s.score for s in scores] == [100, 50, 0]
    assert len(Snapshot([NodeInfo(make_node("x"))])) == 1


def test_memoized_filter_and_score_follow_node_changes() -> None:
    from extender.plugins import in_tree_registry

    profile = Profile(
        "memo",
        {
            "preFilter": [PluginSpec("NodeResourcesFit")],
            "filter": [PluginSpec("NodeResourcesFit")],
            "preScore": [PluginSpec("NodeResourcesFit")],
            "score": [PluginSpec("NodeResourcesFit", 1)],
        },
    )
    fwk = Framework(profile, in_tree_registry())
    node = NodeInfo(make_node("n", cpu="2", memory="4Gi"))

    def attempt(name: str) -> tuple[Status | None, int]:
        pod = make_pod(name, cpu="1")
        state = CycleState()
        fwk.run_pre_filter_plugins(state, pod, [node])
        status = fwk.run_filter_plugins(state, pod, node)
        fwk.run_pre_score_plugins(state, pod, [node])
        scores, _ = fwk.run_score_plugins(state, pod, [node])
        return status, scores[0].total_score

    # cpu (2000 - 1000) x 100 // 2000 = 50; memory (4096 - 200) Mi x 100 // 4096 Mi = 95
    assert attempt("a") == (None, 72)
    assert attempt("b") == (None, 72)  # same spec, same NodeInfo: from the memo
    node.add_pod(make_pod("x", cpu="1", node_name="n"))
    status, score = attempt("c")
    assert status is None and score == 45  # cpu 0, memory 90
    node.add_pod(make_pod("y", cpu="1", node_name="n"))
    status, _ = attempt("d")
    assert status is not None and status.reasons == ("Insufficient cpu",)
    pod = make_pod("e", cpu="100m")  # another spec on the same NodeInfo: computed afresh
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, [node])
    assert fwk.run_filter_plugins(state, pod, node).reasons == ("Insufficient cpu",)
