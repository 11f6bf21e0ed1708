"""DefaultBinder (upstream ``pkg/scheduler/framework/plugins/defaultbinder``): Bind through
``handle.client.bind``; any exception is an Error."""

from __future__ import annotations

from extender.framework.cycle_state import CycleState
from extender.framework.status import Code
from extender.plugins.default_binder import NAME, DefaultBinder
from tests.unit.builders import make_pod


class ApiConflict(Exception):
    pass


class Client:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[dict, str]] = []

    def bind(self, pod: dict, node_name: str) -> None:
        self.calls.append((pod, node_name))
        if self.error is not None:
            raise self.error


class Handle:
    def __init__(self, client: Client | None) -> None:
        self.client = client


def test_bind_success_calls_the_client_once() -> None:
    client = Client()
    pod = make_pod("p", uid="u-1")
    assert DefaultBinder({}, Handle(client)).bind(CycleState(), pod, "node-1") is None
    assert client.calls == [(pod, "node-1")]
    assert client.calls[0][0] is pod  # the pod is passed as is, not copied or rebuilt


def test_bind_failure_is_an_error_status_carrying_the_exception() -> None:
    exc = ApiConflict(
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned'
    )
    status = DefaultBinder({}, Handle(Client(exc))).bind(CycleState(), make_pod("p"), "n")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == (str(exc),)
    assert status.err is exc
    assert status.plugin == NAME


def test_any_exception_type_is_caught() -> None:
    for exc in (RuntimeError("boom"), TimeoutError("timed out"), KeyError("x")):
        status = DefaultBinder({}, Handle(Client(exc))).bind(CycleState(), make_pod("p"), "n")
        assert status is not None and status.code == Code.ERROR and status.err is exc


def test_no_client_is_an_error() -> None:
    for handle in (Handle(None),):
        status = DefaultBinder({}, handle).bind(CycleState(), make_pod("p"), "n")
        assert status is not None and status.code == Code.ERROR
