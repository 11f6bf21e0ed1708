"""PreBindPreFlight in the runtime (upstream ``RunPreBindPreFlights`` in
``pkg/scheduler/framework/runtime/framework.go``): Success when one preBind plugin has work,
Skip when all skip, an Error at the first failure; skipped plugins' PreBind is not run."""

from __future__ import annotations

import pytest

from extender.config.plugins import signature_problems
from extender.framework import PreBindPreFlightPlugin
from extender.framework.cycle_state import CycleState
from extender.framework.handle import Services
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.status import SKIP, Code, Status, unschedulable
from extender.plugins.dynamicresources.dynamic_resources import DynamicResources
from extender.plugins.volumebinding import VolumeBinding
from tests.unit.builders import make_pod


class PreBind:
    """A PreBind plugin without PreBindPreFlight."""

    def __init__(self, name: str, calls: list[str]) -> None:
        self.name = name
        self.calls = calls

    def pre_bind(self, state, pod, node_name):
        self.calls.append(f"{self.name}.pre_bind")
        return None


class Flight(PreBind):
    """A PreBind plugin whose PreBindPreFlight answers ``answer`` (or raises it)."""

    def __init__(self, name: str, calls: list[str], answer: object) -> None:
        super().__init__(name, calls)
        self.answer = answer

    def pre_bind_pre_flight(self, state, pod, node_name):
        self.calls.append(f"{self.name}.pre_flight")
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


class Errors:
    def __init__(self) -> None:
        self.counted: list[tuple[str, str]] = []

    def plugin_error(self, plugin: str, point: str) -> None:
        self.counted.append((plugin, point))


def _factory(plugin: PreBind):
    return lambda args, handle: plugin


def framework(plugins: list[PreBind], metrics: Errors | None = None) -> Framework:
    registry = Registry({p.name: _factory(p) for p in plugins})
    profile = Profile("test", {"preBind": [PluginSpec(p.name) for p in plugins]})
    services = Services(metrics=metrics) if metrics is not None else None
    return Framework(profile, registry, services)


def test_the_protocol_is_runtime_checkable() -> None:
    assert isinstance(Flight("A", [], None), PreBindPreFlightPlugin)
    assert not isinstance(PreBind("A", []), PreBindPreFlightPlugin)


def test_all_skip_is_skip_and_their_pre_bind_is_not_run() -> None:
    calls: list[str] = []
    fwk = framework([Flight("A", calls, SKIP), Flight("B", calls, Status(Code.SKIP))])
    state, pod = CycleState(), make_pod("p")

    status = fwk.run_pre_bind_pre_flights(state, pod, "n1")
    assert status is not None and status.code == Code.SKIP
    assert fwk.run_pre_bind_plugins(state, pod, "n1") is None
    assert calls == ["A.pre_flight", "B.pre_flight"]


def test_one_success_is_success_and_only_the_skipped_pre_bind_is_passed_by() -> None:
    calls: list[str] = []
    fwk = framework([Flight("A", calls, SKIP), Flight("B", calls, None), Flight("C", calls, SKIP)])
    state, pod = CycleState(), make_pod("p")

    assert fwk.run_pre_bind_pre_flights(state, pod, "n1") is None
    assert fwk.run_pre_bind_plugins(state, pod, "n1") is None
    assert calls == ["A.pre_flight", "B.pre_flight", "C.pre_flight", "B.pre_bind"]


def test_no_pre_bind_plugins_is_skip() -> None:
    status = framework([]).run_pre_bind_pre_flights(CycleState(), make_pod("p"), "n1")
    assert status is not None and status.code == Code.SKIP


def test_a_pre_bind_plugin_without_pre_flight_counts_as_having_work() -> None:
    calls: list[str] = []
    fwk = framework([Flight("A", calls, SKIP), PreBind("B", calls)])
    state, pod = CycleState(), make_pod("p")

    assert fwk.run_pre_bind_pre_flights(state, pod, "n1") is None
    fwk.run_pre_bind_plugins(state, pod, "n1")
    assert calls == ["A.pre_flight", "B.pre_bind"]


def test_without_pre_flights_run_every_pre_bind_is_run() -> None:
    # The webhook path and older callers never run PreBindPreFlight: nothing is skipped.
    calls: list[str] = []
    fwk = framework([Flight("A", calls, SKIP)])
    assert fwk.run_pre_bind_plugins(CycleState(), make_pod("p"), "n1") is None
    assert calls == ["A.pre_bind"]


def test_an_error_status_stops_at_that_plugin_in_upstream_words() -> None:
    calls: list[str] = []
    errors = Errors()
    fwk = framework(
        [Flight("A", calls, Status.error("no state")), Flight("B", calls, None)], errors
    )
    status = fwk.run_pre_bind_pre_flights(CycleState(), make_pod("p"), "n1")

    assert status is not None and status.code == Code.ERROR
    assert status.message == 'running PreBindPreFlight "A": no state'
    assert calls == ["A.pre_flight"]
    assert errors.counted == [("A", "preBindPreFlight")]


def test_an_exception_is_an_error_naming_the_plugin() -> None:
    errors = Errors()
    fwk = framework([Flight("A", [], KeyError("zone"))], errors)
    status = fwk.run_pre_bind_pre_flights(CycleState(), make_pod("p"), "n1")

    assert status is not None and status.code == Code.ERROR
    assert status.message == "running PreBindPreFlight \"A\": KeyError: 'zone'"
    assert errors.counted == [("A", "preBindPreFlight")]


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (unschedulable("no"), "Unschedulable"),
        (Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no"), "UnschedulableAndUnresolvable"),
        (Status(Code.WAIT), "Wait"),
        (Status(Code.PENDING), "Pending"),
    ],
)
def test_another_code_is_an_unsupported_error(answer: Status, code: str) -> None:
    fwk = framework([Flight("A", [], answer)])
    status = fwk.run_pre_bind_pre_flights(CycleState(), make_pod("p"), "n1")

    assert status is not None and status.code == Code.ERROR and not status.is_rejected()
    assert status.message == (
        f'PreBindPreFlight A returned "{code}", which is unsupported. '
        "It is supposed to return Success, Skip, or Error status"
    )


def test_a_wrong_answer_is_an_error() -> None:
    fwk = framework([Flight("A", [], True)])
    status = fwk.run_pre_bind_pre_flights(CycleState(), make_pod("p"), "n1")

    assert status is not None and status.code == Code.ERROR
    assert status.message == (
        'running PreBindPreFlight "A": returned bool True, expected None or a Status'
    )


@pytest.mark.parametrize("cls", [VolumeBinding, DynamicResources], ids=lambda c: c.__name__)
def test_the_in_tree_pre_bind_plugins_implement_it(cls: type) -> None:
    # Upstream v1.36.3's PreBind plugins; the loader's signature check accepts them.
    assert callable(getattr(cls, "pre_bind_pre_flight", None))
    assert signature_problems(cls) == []
