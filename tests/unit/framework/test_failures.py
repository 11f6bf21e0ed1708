"""The failure contract: a plugin that raises, overruns its timeout or answers Error at any
extension point becomes an Error status naming the plugin and the point, a log line and one
count in the per-plugin error metric; nothing it raises escapes the runtime."""

from __future__ import annotations

import threading
import time

import pytest

from extender.framework.cycle_state import CycleState
from extender.framework.handle import Services
from extender.framework.interfaces import POINT_METHODS
from extender.framework.node_info import NodeInfo
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework, ProfileError
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from tests.unit.builders import make_node, make_pod


class Boom(RuntimeError):
    pass


class EveryPoint:
    """Implements every point; ``fail`` names the points that raise, ``error`` those that
    return an Error status, ``slow`` those that sleep for 1 s."""

    name = "Broken"

    def __init__(self, fail=(), error=(), slow=()) -> None:
        self.fail, self.error, self.slow = set(fail), set(error), set(slow)

    def _run(self, point: str, ok):
        if point in self.slow:
            time.sleep(1)
        if point in self.fail:
            raise Boom(f"{point} exploded")
        if point in self.error:
            return Status.error(f"{point} said no")
        return ok

    def pre_enqueue(self, pod):
        return self._run("preEnqueue", None)

    def pre_filter(self, state, pod, nodes):
        return None, self._run("preFilter", None)

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state, pod, node_info):
        return self._run("filter", None)

    def post_filter(self, state, pod, statuses):
        return None, self._run("postFilter", Status(Code.UNSCHEDULABLE, "no"))

    def pre_score(self, state, pod, nodes):
        return self._run("preScore", None)

    def score(self, state, pod, node_info):
        status = self._run("score", None)
        return 1, status

    def score_extensions(self) -> None:
        return None

    def reserve(self, state, pod, node_name):
        return self._run("reserve", None)

    def unreserve(self, state, pod, node_name) -> None:
        self._run("unreserve", None)

    def permit(self, state, pod, node_name):
        return self._run("permit", None), 0

    def pre_bind(self, state, pod, node_name):
        return self._run("preBind", None)

    def bind(self, state, pod, node_name):
        return self._run("bind", None)

    def post_bind(self, state, pod, node_name) -> None:
        self._run("postBind", None)


class Metrics:
    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def preemption(self, victims: int) -> None:
        pass

    def plugin_error(self, plugin: str, point: str) -> None:
        self.errors.append((plugin, point))


POINTS = (
    "preEnqueue",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)


def framework(plugin: EveryPoint, timeouts: dict | None = None) -> tuple[Framework, Metrics]:
    metrics = Metrics()
    profile = Profile(
        "test",
        {point: [PluginSpec(plugin.name)] for point in POINTS},
        plugin_timeouts={plugin.name: timeouts or {}},
    )
    registry = Registry({plugin.name: lambda args, handle: plugin})
    return Framework(profile, registry, Services(metrics=metrics)), metrics


POD = make_pod("p")
NODE = NodeInfo(make_node("n1"))


def run(fwk: Framework, point: str) -> Status | None:
    """Run ``point`` the way the shells do; the status it ends with."""
    state = CycleState()
    state.snapshot = Snapshot([NODE])
    if point == "preEnqueue":
        return fwk.run_pre_enqueue_plugins(POD)
    if point == "preFilter":
        return fwk.run_pre_filter_plugins(state, POD, [NODE])[1]
    if point == "filter":
        return fwk.run_filter_plugins(state, POD, NODE)
    if point == "postFilter":
        return fwk.run_post_filter_plugins(state, POD, {"n1": Status(Code.UNSCHEDULABLE)})[1]
    if point == "preScore":
        return fwk.run_pre_score_plugins(state, POD, [NODE])
    if point == "score":
        return fwk.run_score_plugins(state, POD, [NODE])[1]
    if point == "reserve":
        return fwk.run_reserve_plugins_reserve(state, POD, "n1")
    if point == "permit":
        return fwk.run_permit_plugins(state, POD, "n1")
    if point == "preBind":
        return fwk.run_pre_bind_plugins(state, POD, "n1")
    if point == "bind":
        return fwk.run_bind_plugins(state, POD, "n1")
    fwk.run_post_bind_plugins(state, POD, "n1")
    return None


MESSAGES = {
    "preEnqueue": 'running PreEnqueue plugin "Broken": ',
    "preFilter": 'running PreFilter plugin "Broken": ',
    "filter": 'running "Broken" filter plugin: ',
    "postFilter": 'running PostFilter plugin "Broken": ',
    "preScore": 'running PreScore plugin "Broken": ',
    "score": 'running Score plugin "Broken": ',
    "reserve": 'running Reserve plugin "Broken": ',
    "permit": 'running Permit plugin "Broken": ',
    "preBind": 'running PreBind plugin "Broken": ',
    "bind": 'running Bind plugin "Broken": ',
}


@pytest.mark.parametrize("point", list(MESSAGES))
def test_a_raising_plugin_is_an_error_status_naming_plugin_and_point(point: str) -> None:
    fwk, metrics = framework(EveryPoint(fail={point}))
    status = run(fwk, point)
    assert status is not None and status.code == Code.ERROR
    assert status.message == MESSAGES[point] + f"{point} exploded"
    assert status.plugin == "Broken"
    assert isinstance(status.err, Boom)
    assert metrics.errors == [("Broken", point)]


@pytest.mark.parametrize("point", list(MESSAGES))
def test_an_error_status_is_wrapped_and_counted_the_same_way(point: str) -> None:
    fwk, metrics = framework(EveryPoint(error={point}))
    status = run(fwk, point)
    assert status is not None and status.code == Code.ERROR
    assert status.message == MESSAGES[point] + f"{point} said no"
    assert metrics.errors == [("Broken", point)]


def test_raising_post_bind_and_unreserve_are_logged_and_counted(caplog) -> None:
    fwk, metrics = framework(EveryPoint(fail={"postBind", "unreserve"}))
    fwk.run_post_bind_plugins(CycleState(), POD, "n1")
    fwk.run_reserve_plugins_unreserve(CycleState(), POD, "n1")
    assert metrics.errors == [("Broken", "postBind"), ("Broken", "unreserve")]
    assert "plugin Broken failed at postBind: Boom: postBind exploded" in caplog.text


def test_a_plugin_past_its_timeout_is_an_error_and_the_cycle_goes_on() -> None:
    fwk, metrics = framework(EveryPoint(slow={"filter"}), timeouts={"filter": 0.05})
    started = time.monotonic()
    status = run(fwk, "filter")
    assert time.monotonic() - started < 0.9
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'running "Broken" filter plugin: timed out after 0.05s'
    assert metrics.errors == [("Broken", "filter")]


def test_a_timeout_on_one_point_leaves_the_others_untimed() -> None:
    fwk, _ = framework(EveryPoint(), timeouts={"score": 0.5})
    calls: list[str] = []
    original = threading.Thread.start

    def spy(thread: threading.Thread) -> None:
        calls.append(thread.name)
        original(thread)

    threading.Thread.start = spy  # type: ignore[method-assign]
    try:
        assert run(fwk, "filter") is None
        assert run(fwk, "score") is None
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]
    assert calls == ["plugin-call"]


def test_a_timed_call_passes_answers_and_exceptions_through() -> None:
    fwk, metrics = framework(EveryPoint(fail={"reserve"}), timeouts={"reserve": 1, "filter": 1})
    assert run(fwk, "filter") is None
    status = run(fwk, "reserve")
    assert status is not None
    assert status.message == 'running Reserve plugin "Broken": reserve exploded'
    assert metrics.errors == [("Broken", "reserve")]


def test_a_factory_that_raises_is_a_profile_error_naming_the_plugin() -> None:
    def factory(args: dict, handle: object) -> object:
        raise KeyError("licence server")

    profile = Profile("p", {"filter": [PluginSpec("Licence")]})
    with pytest.raises(ProfileError, match="plugin 'Licence' failed to start: KeyError"):
        Framework(profile, Registry({"Licence": factory}))


def test_an_out_of_range_score_is_an_error_counted_for_the_plugin() -> None:
    plugin = EveryPoint()
    plugin.score = lambda state, pod, node_info: (101, None)  # type: ignore[method-assign]
    fwk, metrics = framework(plugin)
    status = run(fwk, "score")
    assert status is not None and status.code == Code.ERROR
    assert 'plugin "Broken" returns an invalid score 101' in status.message
    assert metrics.errors == [("Broken", "score")]


# What each point's Error says of an answer of the wrong type (True here).
EXPECTED = {
    "preEnqueue": "None or a Status",
    "preFilter": "a tuple (PreFilterResult | None, Status | None)",
    "filter": "None or a Status",
    "postFilter": "a tuple (PostFilterResult | None, Status | None)",
    "preScore": "None or a Status",
    "score": "a tuple (int score, Status | None)",
    "reserve": "None or a Status",
    "permit": "a tuple (Status | None, timeout seconds)",
    "preBind": "None or a Status",
    "bind": "None or a Status",
}


@pytest.mark.parametrize("point", list(EXPECTED))
def test_a_wrong_answer_is_an_error_naming_plugin_point_and_type(point: str, caplog) -> None:
    plugin = EveryPoint()
    setattr(plugin, POINT_METHODS[point], lambda *args: True)
    fwk, metrics = framework(plugin)
    status = run(fwk, point)
    assert status is not None and status.code == Code.ERROR
    detail = f"returned bool True, expected {EXPECTED[point]}"
    assert status.message == MESSAGES[point] + detail
    assert status.plugin == "Broken"
    assert metrics.errors == [("Broken", point)]
    # Logged as a plugin bug, under the runner's logger.
    assert [(r.name, r.levelname) for r in caplog.records] == [
        ("extender.framework.runtime", "ERROR")
    ]


class Extending(EveryPoint):
    """A PreFilter plugin with AddPod/RemovePod: ``answer`` is what both return, ``fail``
    with "extensions" makes ``pre_filter_extensions`` itself raise."""

    def __init__(self, answer: object = None, fail=()) -> None:
        super().__init__(fail=fail)
        self.answer = answer

    def pre_filter_extensions(self):  # type: ignore[override]
        self._run("extensions", None)
        return self

    def add_pod(self, state, pod, pod_to_add, node_info):
        self._run("preFilterAddPod", None)
        return self.answer

    def remove_pod(self, state, pod, pod_to_remove, node_info):
        self._run("preFilterRemovePod", None)
        return self.answer


def run_extension(fwk: Framework, point: str) -> Status | None:
    other = NodeInfo(make_node("n2")).add_pod(make_pod("other"))
    if point == "preFilterAddPod":
        return fwk.run_pre_filter_extension_add_pod(CycleState(), POD, other, NODE)
    return fwk.run_pre_filter_extension_remove_pod(CycleState(), POD, other, NODE)


EXTENSION_MESSAGES = {
    "preFilterAddPod": 'running AddPod on PreFilter plugin "Broken": ',
    "preFilterRemovePod": 'running RemovePod on PreFilter plugin "Broken": ',
}


@pytest.mark.parametrize("point", list(EXTENSION_MESSAGES))
@pytest.mark.parametrize(
    ("plugin", "detail"),
    [
        (Extending(fail={"preFilterAddPod", "preFilterRemovePod"}), "{point} exploded"),
        (Extending(fail={"extensions"}), "extensions exploded"),
        (Extending(answer=True), "returned bool True, expected None or a Status"),
        # AddPod and RemovePod only update the cycle's state: any non-success is an Error.
        (Extending(answer=Status(Code.UNSCHEDULABLE, "full")), "full"),
        (Extending(answer=Status.error("broken")), "broken"),
    ],
)
def test_add_pod_and_remove_pod_failures_are_errors_naming_plugin_and_point(
    point: str, plugin: Extending, detail: str
) -> None:
    fwk, metrics = framework(plugin)
    status = run_extension(fwk, point)
    assert status is not None and status.code == Code.ERROR
    assert status.message == EXTENSION_MESSAGES[point] + detail.format(point=point)
    assert status.plugin == "Broken"
    assert metrics.errors == [("Broken", point)]


def test_add_pod_and_remove_pod_pass_success_and_plugins_without_extensions() -> None:
    for plugin in (Extending(), Extending(answer=Status(Code.SUCCESS)), EveryPoint()):
        fwk, metrics = framework(plugin)
        assert run_extension(fwk, "preFilterAddPod") is None
        assert run_extension(fwk, "preFilterRemovePod") is None
        assert metrics.errors == []
