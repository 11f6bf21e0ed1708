"""Regression (chaos soak): ``kube-extender run`` exits as soon as the leader's lease is no
longer held, before another replica can take over, instead of letting binding cycles in flight
bind after the loss."""

from __future__ import annotations

import threading

from extender.cli.run import watch_lease


class FakeElector:
    def __init__(self) -> None:
        self.leader = False
        self.held = False

    def is_leader(self) -> bool:
        return self.leader

    def holds_lease(self) -> bool:
        return self.held


def test_exits_when_the_lease_is_no_longer_held() -> None:
    elector, stop, exited = FakeElector(), threading.Event(), threading.Event()
    codes: list[int] = []
    guard = threading.Thread(
        target=watch_lease,
        args=(elector, stop),
        kwargs={"exit": lambda code: (codes.append(code), exited.set()), "interval": 0.01},
    )
    guard.start()
    assert not exited.wait(0.1)  # a follower: nothing to hold
    elector.leader = elector.held = True
    assert not exited.wait(0.1)
    elector.held = False  # e.g. a renewal blocked on a dead apiserver past renewDeadline
    assert exited.wait(2)
    guard.join(2)
    assert codes == [1]


def test_a_graceful_stop_does_not_exit() -> None:
    elector, stop = FakeElector(), threading.Event()
    elector.leader = elector.held = True
    codes: list[int] = []
    guard = threading.Thread(
        target=watch_lease, args=(elector, stop), kwargs={"exit": codes.append, "interval": 0.01}
    )
    guard.start()
    stop.set()
    guard.join(2)
    assert not guard.is_alive() and codes == []
