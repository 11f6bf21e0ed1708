"""Leader election rounds against an in-memory Lease store with resourceVersion checks."""

from __future__ import annotations

import copy

import pytest

from extender.kube import Conflict, LeaderElectionConfig, LeaderElector


class LeaseStore:
    """Optimistic concurrency as the apiserver does it: update needs the current version."""

    def __init__(self) -> None:
        self.lease: dict | None = None
        self.version = 0

    def get_lease(self, namespace, name):
        return copy.deepcopy(self.lease)

    def create_lease(self, namespace, body):
        if self.lease is not None:
            raise Conflict(reason="AlreadyExists", message="exists")
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    def update_lease(self, namespace, name, body):
        if body["metadata"].get("resourceVersion") != str(self.version):
            raise Conflict(message="stale")
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def elector(store, clock, identity):
    return LeaderElector(
        store,
        LeaderElectionConfig(identity=identity),
        clock=clock,
        wall_clock=lambda: 1_700_000_000.0 + clock.now,
    )


def test_first_candidate_creates_the_lease_and_the_second_waits_for_expiry():
    store, clock = LeaseStore(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert a.try_acquire_or_renew()
    assert store.lease["spec"]["holderIdentity"] == "a"
    assert store.lease["spec"]["leaseTransitions"] == 0
    assert not b.try_acquire_or_renew()  # b observes the record now
    clock.now += 10
    assert a.try_acquire_or_renew()  # a renews
    assert not b.try_acquire_or_renew()  # b sees a changed record: its timer restarts
    clock.now += 14
    assert not b.try_acquire_or_renew()
    clock.now += 2  # 16 s without a renewal observed by b
    assert b.try_acquire_or_renew()
    spec = store.lease["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == spec["renewTime"]


def test_renewal_keeps_acquire_time():
    store, clock = LeaseStore(), Clock()
    a = elector(store, clock, "a")
    assert a.try_acquire_or_renew()
    acquired = store.lease["spec"]["acquireTime"]
    clock.now += 2
    assert a.try_acquire_or_renew()
    assert store.lease["spec"]["acquireTime"] == acquired
    assert store.lease["spec"]["renewTime"] != acquired
    assert store.lease["spec"]["renewTime"].endswith("Z")


def test_concurrent_takeover_has_one_winner():
    store, clock = LeaseStore(), Clock()
    a = elector(store, clock, "a")
    assert a.try_acquire_or_renew()
    b, c = elector(store, clock, "b"), elector(store, clock, "c")
    b.try_acquire_or_renew()
    c.try_acquire_or_renew()
    clock.now += 20
    # both read the same expired lease; only the first update can win
    stale = store.get_lease("", "")
    store.get_lease = lambda ns, name: copy.deepcopy(stale)
    results = [b.try_acquire_or_renew(), c.try_acquire_or_renew()]
    assert results == [True, False]


def test_invalid_timings_are_rejected():
    with pytest.raises(ValueError, match="leaseDuration"):
        LeaderElectionConfig(lease_duration=5, renew_deadline=10)
    with pytest.raises(ValueError, match="retryPeriod"):
        LeaderElectionConfig(lease_duration=15, renew_deadline=2, retry_period=2)


def test_renew_until_lost_steps_down_after_deadline():
    store, clock = LeaseStore(), Clock()
    a = LeaderElector(store, LeaderElectionConfig(identity="a"), clock=clock, sleep=lambda s: None)
    assert a.acquire()
    assert a.is_leader()

    def failing_get(ns, name):
        clock.now += 1
        raise OSError("apiserver down")

    store.get_lease = failing_get
    a.renew_until_lost()
    assert not a.is_leader()
    assert clock.now >= 10


def test_holds_lease_expires_while_a_renewal_is_blocked():
    """Regression (chaos soak): a renew request blocked on a dead apiserver must not keep
    us leading past renewDeadline; another replica takes over after leaseDuration."""
    store, clock = LeaseStore(), Clock()
    config = LeaderElectionConfig(identity="a", lease_duration=4, renew_deadline=3, retry_period=1)
    a = LeaderElector(store, config, clock=clock, sleep=lambda s: None)
    assert a.acquire()
    assert a.holds_lease()
    clock.now += 2.9
    assert a.holds_lease()
    clock.now += 0.2  # no renewal returned yet: is_leader() still says yes, the lease does not
    assert a.is_leader() and not a.holds_lease()
    assert a.try_acquire_or_renew()
    assert a.holds_lease()
