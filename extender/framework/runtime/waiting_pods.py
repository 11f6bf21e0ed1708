"""Pods held at Permit (upstream ``pkg/scheduler/framework/runtime/waiting_pods_map.go``): allowed,
rejected or timed out, one deadline per plugin. The deadlines of every waiting pod share one
timer thread (a gang of hundreds waits at once: a thread each cost more than its cycle)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

from extender.kube.duration import format_duration

from ..status import Code, Status

MAX_PERMIT_TIMEOUT = 15 * 60.0


class _Deadline:
    __slots__ = ("when", "seq", "fire", "cancelled")

    def __init__(self, when: float, seq: int, fire: Callable[[], None]) -> None:
        self.when, self.seq, self.fire, self.cancelled = when, seq, fire, False

    def __lt__(self, other: _Deadline) -> bool:
        return (self.when, self.seq) < (other.when, other.seq)


class _Timer:
    """One daemon thread that calls each scheduled function at its time, unless cancelled."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[_Deadline] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, fire: Callable[[], None]) -> _Deadline:
        deadline = _Deadline(time.monotonic() + delay, next(self._seq), fire)
        with self._cond:
            heapq.heappush(self._heap, deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="permit")
                self._thread.start()
            self._cond.notify()
        return deadline

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0].when > time.monotonic():
                    wait = self._heap[0].when - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                deadline = heapq.heappop(self._heap)
            if not deadline.cancelled:
                deadline.fire()


_TIMER = _Timer()


class WaitingPod:
    __slots__ = (
        "pod",
        "uid",
        "node_name",
        "_pending",
        "_timeouts",
        "_timers",
        "_lock",
        "_done",
        "_status",
    )

    def __init__(self, pod: dict, node_name: str, plugin_timeouts: dict[str, float]) -> None:
        self.pod = pod
        self.uid: str = (pod.get("metadata") or {}).get("uid", "")
        self.node_name = node_name
        self._pending = set(plugin_timeouts)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._status: Status | None = None
        self._timeouts = plugin_timeouts
        self._timers: list[_Deadline] = []

    def start(self) -> None:
        for plugin, timeout in self._timeouts.items():
            self._timers.append(_TIMER.schedule(timeout, self._time_out(plugin, timeout)))

    def _time_out(self, plugin: str, timeout: float) -> Callable[[], None]:
        message = (
            f"rejected due to timeout after waiting {format_duration(timeout)} at plugin {plugin}"
        )
        return lambda: self.reject(plugin, message)

    @property
    def pending_plugins(self) -> set[str]:
        with self._lock:
            return set(self._pending)

    def allow(self, plugin: str) -> None:
        with self._lock:
            self._pending.discard(plugin)
            if self._pending or self._done.is_set():
                return
            self._status = None
        self._finish()

    def reject(self, plugin: str, message: str) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._status = Status(Code.UNSCHEDULABLE, message, plugin=plugin)
        self._finish()

    def _finish(self) -> None:
        for timer in self._timers:
            timer.cancelled = True
        self._done.set()

    def wait(self, timeout: float | None = None) -> Status | None:
        """Block until allowed (``None``) or rejected (an Unschedulable status)."""
        if not self._done.wait(timeout):
            return Status(Code.ERROR, f"waiting pod {self.uid} was not released in time")
        return self._status


class WaitingPods:
    """The waiting-pods map of a framework (uid -> WaitingPod)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()

    def add(self, waiting: WaitingPod) -> None:
        with self._lock:
            self._pods[waiting.uid] = waiting

    def remove(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def all(self) -> list[WaitingPod]:
        with self._lock:
            return list(self._pods.values())
