"""The pod budget (``extender.framework.budget``): one attempt of one pod ends in time whatever
its plugins do: a slow loop (the runtime's own checks), one long call (the watchdog), a plugin
that swallows the exception (the interrupt only the shell catches)."""

from __future__ import annotations

import time

import pytest

from extender.framework import budget
from extender.framework.cycle_state import CycleState
from extender.framework.handle import Services
from extender.framework.node_info import NodeInfo
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm, SchedulingError
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code
from tests.unit.builders import make_node, make_pod

# Far longer than any budget below: a test that reaches it has failed (the loop was not ended).
_NEVER = 60.0


class Spinner:
    """A Filter (and Score) plugin whose every call computes in pure Python for ``seconds``;
    with ``swallow`` it catches every Exception and goes on."""

    name = "Spinner"

    def __init__(self, seconds: float = _NEVER, swallow: bool = False, sleep: float = 0.0):
        self.seconds, self.swallow, self.sleep = seconds, swallow, sleep
        self.calls = 0

    def _spin(self) -> None:
        self.calls += 1
        if self.sleep:
            time.sleep(self.sleep)  # in C: only the runtime's check between calls ends it
            return
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            if self.swallow:
                try:
                    while time.monotonic() < end:
                        pass
                except Exception:
                    continue
            else:
                pass

    def filter(self, state, pod, node_info):
        self._spin()
        return None

    def score(self, state, pod, node_info):
        self._spin()
        return 0, None

    def score_extensions(self) -> None:
        return None


def framework(plugin: Spinner, points=("filter",)) -> Framework:
    profile = Profile("test", {p: [PluginSpec(plugin.name, 1)] for p in points})
    return Framework(profile, Registry({plugin.name: lambda args, handle: plugin}), Services())


NODES = [NodeInfo(make_node(f"n{i}")) for i in range(20)]


def attempt(fwk: Framework, seconds: float) -> tuple[float, Exception | BaseException]:
    """One filter pass over NODES under a budget: (elapsed, what ended it)."""
    state = CycleState()
    start = time.monotonic()
    with pytest.raises((SchedulingError, *budget.OVER)) as ended:
        with budget.enforced(state, seconds):
            SchedulingAlgorithm().find_nodes_that_fit(
                fwk, state, make_pod("p"), Snapshot(NODES), evaluate_all=True
            )
    return time.monotonic() - start, ended.value


def test_one_long_call_is_ended_by_the_watchdog_and_named_as_the_plugin_error() -> None:
    raised = budget.WATCHDOG.raised
    plugin = Spinner()
    elapsed, exc = attempt(framework(plugin), 0.2)
    assert isinstance(exc, SchedulingError)
    assert exc.status.code == Code.ERROR
    assert exc.status.message.startswith('running "Spinner" filter plugin: ')
    assert "scheduling budget of 0.2s ran out" in exc.status.message
    assert isinstance(exc.status.err, budget.BudgetExceeded)
    assert plugin.calls == 1  # the first node's call, ended
    assert budget.WATCHDOG.raised > raised
    assert elapsed < _NEVER / 2


def test_a_plugin_that_swallows_the_exception_gets_the_interrupt() -> None:
    plugin = Spinner(swallow=True)
    elapsed, exc = attempt(framework(plugin), 0.2)
    assert isinstance(exc, budget.BudgetInterrupt)
    assert not isinstance(exc, Exception)
    assert str(exc) == "the pod's scheduling budget of 0.2s ran out"
    assert elapsed < _NEVER / 2


def test_calls_blocked_in_c_are_ended_between_nodes_by_the_runtime(monkeypatch) -> None:
    """time.sleep cannot be interrupted: the runtime's check before each node ends the pass
    (the watchdog held back, so that a loaded machine cannot make it the first to act)."""
    monkeypatch.setattr(budget, "GRACE", 30.0)
    plugin = Spinner(sleep=0.1)
    _, exc = attempt(framework(plugin), 0.35)
    assert isinstance(exc, SchedulingError)
    assert exc.status.message.startswith("the pod's scheduling budget of 0.35s ran out before node")
    assert 1 <= plugin.calls < len(NODES)


def test_score_plugins_are_checked_too() -> None:
    plugin = Spinner(sleep=0.05)
    fwk = framework(plugin, points=("score",))
    state = CycleState()
    state.deadline, state.budget = time.monotonic() - 1, 1.0
    _, status = fwk.run_score_plugins(state, make_pod("p"), NODES[:2])
    assert status is not None and status.code == Code.ERROR
    assert "before Score plugin 'Spinner' ran" in status.message
    assert plugin.calls == 0


def test_an_attempt_within_its_budget_leaves_nothing_pending() -> None:
    """Nothing raised after the block: not the watchdog, not one it withdrew."""
    fwk = framework(Spinner(seconds=0.0))
    for _ in range(2):
        state = CycleState()
        with budget.enforced(state, 1.0):
            SchedulingAlgorithm().find_nodes_that_fit(
                fwk, state, make_pod("p"), Snapshot(NODES), evaluate_all=True
            )
            end = state.deadline + budget.GRACE / 2
            while time.monotonic() < end:
                pass  # past the deadline inside the block (GRACE not yet reached)
        end = time.monotonic() + budget.GRACE + 2 * budget.REPEAT
        while time.monotonic() < end:
            pass  # a pending raise would land here
    assert not budget.WATCHDOG._armed


def test_no_budget_means_no_deadline() -> None:
    state = CycleState()
    with budget.enforced(state, None):
        assert state.deadline is None
    with budget.enforced(state, 0):
        assert state.deadline is None
    budget.check(state)  # nothing to check


def test_the_deadline_is_kept_by_clones() -> None:
    state = CycleState()
    with budget.enforced(state, 5):
        assert state.clone().deadline == state.deadline
        assert state.clone().budget == 5


def test_a_suspended_block_is_not_interrupted_and_the_budget_is_enforced_after_it() -> None:
    state = CycleState()
    finished_suspended = False
    with pytest.raises(budget.BudgetExceeded):
        with budget.enforced(state, 0.05):
            with budget.suspended():
                end = time.monotonic() + budget.GRACE + 0.3
                while time.monotonic() < end:
                    pass  # an API write, say: past the budget, not cut
                finished_suspended = True
            end = time.monotonic() + _NEVER
            while time.monotonic() < end:
                pass  # interrupted here
    assert finished_suspended


def test_a_forked_child_starts_its_own_watchdog() -> None:
    """gunicorn forks its workers: a watchdog thread of the parent does not exist there."""
    import os

    with budget.enforced(CycleState(), 5):
        pass  # the parent's watchdog thread runs from here on
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a spinning attempt must still be ended
        code = 1
        try:
            with budget.enforced(CycleState(), 0.05):
                end = time.monotonic() + 10
                while time.monotonic() < end:
                    pass
        except budget.BudgetExceeded:
            code = 0
        os.write(write, bytes([code]))
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"\x00"
