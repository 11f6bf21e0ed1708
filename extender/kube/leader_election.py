"""Leader election through a ``coordination.k8s.io/v1`` Lease, as client-go's
``tools/leaderelection/leaderelection.go`` with ``tools/leaderelection/resourcelock/leaselock.go``.

Only the holder runs the scheduling loop. Upstream semantics: expiry is judged with the
*local* clock from when a change of the record was observed (never from ``renewTime``, so
clock skew between replicas does not matter); acquiring keeps ``acquireTime`` while renewing
and bumps ``leaseTransitions`` on a change of holder; updates carry the resourceVersion, so
two candidates can never both win the same round.

The ``kubernetes`` client ships ``kubernetes.leaderelection``; it is not used because it
reads the process-global client, exits the process on bad timings, never increments
``leaseTransitions`` and cannot be stopped, which a scheduler that must step down cleanly needs.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .events import micro_time

log = logging.getLogger(__name__)

# The defaults of a scheduler's ``leaderElection`` (component-base
# ``config/v1alpha1/defaults.go`` ``RecommendedDefaultLeaderElectionConfiguration``, applied by
# kube-scheduler's ``pkg/scheduler/apis/config/v1/defaults.go``). The config loader
# (``extender.config.defaults``) takes them from here.
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
DEFAULT_RESOURCE_LOCK = "leases"
DEFAULT_LEASE_NAMESPACE = "kube-system"
# Upstream's lock is named "kube-scheduler"; ours must not wait for (or take) that lease.
DEFAULT_LEASE_NAME = "kube-extender"
# client-go's ``JitterFactor``: renewDeadline must exceed it times retryPeriod.
JITTER_FACTOR = 1.2


class LeaseClient(Protocol):
    """The Lease verbs of :class:`extender.kube.KubeClient`. ``create_lease`` and
    ``update_lease`` raise :class:`extender.kube.errors.Conflict` when another candidate got
    there first."""

    def get_lease(self, namespace: str, name: str) -> dict | None: ...

    def create_lease(self, namespace: str, body: dict) -> dict: ...

    def update_lease(self, namespace: str, name: str, body: dict) -> dict: ...


@dataclass
class LeaderElectionConfig:
    namespace: str = DEFAULT_LEASE_NAMESPACE
    name: str = DEFAULT_LEASE_NAME
    identity: str = ""
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD

    def __post_init__(self) -> None:
        if not self.identity:
            self.identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaderElection.leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("leaderElection.renewDeadline must be greater than 1.2 x retryPeriod")


class LeaderElector:
    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock
        self.wall_clock = wall_clock
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._observed: dict | None = None
        self._observed_rv = ""
        self._observed_time = 0.0
        self._is_leader = threading.Event()
        self._renewed_at = 0.0

    @property
    def identity(self) -> str:
        return self.config.identity

    def is_leader(self) -> bool:
        return self._is_leader.is_set()

    def stop(self) -> None:
        self._stop.set()

    def holds_lease(self) -> bool:
        """Leader, and the last successful renewal is less than renewDeadline old.

        Unlike ``is_leader`` this does not wait for a renew request to return: a request
        blocked on a dead apiserver can outlast the lease, and another replica takes over
        ``leaseDuration`` after our last renewal (upstream bounds each renewal by the
        deadline with a context). ``kube-extender run`` polls it and exits when it turns
        false, so no binding cycle outlives the lease.
        """
        return (
            self._is_leader.is_set()
            and self.clock() - self._renewed_at < self.config.renew_deadline
        )

    def try_acquire_or_renew(self) -> bool:
        """One round: create, take over an expired Lease, or renew ours."""
        cfg = self.config
        now_wall = micro_time(self.wall_clock())
        try:
            lease = self.client.get_lease(cfg.namespace, cfg.name)
        except Exception:
            log.warning("reading lease %s/%s failed", cfg.namespace, cfg.name, exc_info=True)
            return False
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": {
                    "holderIdentity": cfg.identity,
                    "leaseDurationSeconds": int(cfg.lease_duration),
                    "acquireTime": now_wall,
                    "renewTime": now_wall,
                    "leaseTransitions": 0,
                },
            }
            try:
                created = self.client.create_lease(cfg.namespace, body)
            except Exception:
                log.info("creating lease failed", exc_info=True)
                return False
            self._observe(created)
            return True

        spec = lease.get("spec") or {}
        record = {k: spec.get(k) for k in ("holderIdentity", "leaseDurationSeconds", "renewTime")}
        if record != self._observed:
            self._observed = record
            self._observed_time = self.clock()
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or cfg.lease_duration
        if holder and holder != cfg.identity and self._observed_time + duration > self.clock():
            return False  # someone else holds a live lease

        new_spec = dict(spec)
        if holder == cfg.identity:
            new_spec.setdefault("acquireTime", now_wall)
        else:
            new_spec["acquireTime"] = now_wall
            new_spec["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
        new_spec["holderIdentity"] = cfg.identity
        new_spec["leaseDurationSeconds"] = int(cfg.lease_duration)
        new_spec["renewTime"] = now_wall
        body = {**lease, "spec": new_spec}
        try:
            updated = self.client.update_lease(cfg.namespace, cfg.name, body)
        except Exception:
            log.info("updating lease failed", exc_info=True)
            return False
        self._observe(updated)
        return True

    def _observe(self, lease: dict) -> None:
        spec = lease.get("spec") or {}
        self._observed = {
            k: spec.get(k) for k in ("holderIdentity", "leaseDurationSeconds", "renewTime")
        }
        self._observed_time = self.clock()
        if self._observed.get("holderIdentity") == self.config.identity:
            self._renewed_at = self._observed_time

    def _jittered(self, period: float) -> float:
        return period * (1 + random.random() * (JITTER_FACTOR - 1))

    def acquire(self) -> bool:
        """Block until we hold the lease (``True``) or ``stop()`` was called (``False``)."""
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                self._is_leader.set()
                log.info(
                    "%s acquired lease %s/%s",
                    self.identity,
                    self.config.namespace,
                    self.config.name,
                )
                return True
            self._sleep(self._jittered(self.config.retry_period))
        return False

    def renew_until_lost(self) -> None:
        """Renew every retryPeriod; return when no renewal succeeded within renewDeadline."""
        cfg = self.config
        last_renew = self.clock()
        while not self._stop.is_set():
            self._sleep(cfg.retry_period)
            if self._stop.is_set():
                break
            if self.try_acquire_or_renew():
                last_renew = self.clock()
            elif self.clock() - last_renew >= cfg.renew_deadline:
                log.error(
                    "%s lost the lease (no renewal within %ss)", self.identity, cfg.renew_deadline
                )
                break
        self._is_leader.clear()

    def run(
        self, on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None]
    ) -> None:
        """Acquire, start leading in a thread, renew; call ``on_stopped_leading`` when lost."""
        if not self.acquire():
            return
        worker = threading.Thread(target=on_started_leading, daemon=True, name="leader")
        worker.start()
        try:
            self.renew_until_lost()
        finally:
            on_stopped_leading()
