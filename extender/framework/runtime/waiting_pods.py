"""Pods held at Permit (upstream ``pkg/scheduler/framework/runtime/waiting_pods_map.go``): allowed,
rejected or timed out, one timer per plugin."""

from __future__ import annotations

import threading

from extender.kube.duration import format_duration

from ..status import Code, Status

MAX_PERMIT_TIMEOUT = 15 * 60.0


class WaitingPod:
    __slots__ = ("pod", "uid", "node_name", "_pending", "_timers", "_lock", "_done", "_status")

    def __init__(self, pod: dict, node_name: str, plugin_timeouts: dict[str, float]) -> None:
        self.pod = pod
        self.uid: str = (pod.get("metadata") or {}).get("uid", "")
        self.node_name = node_name
        self._pending = set(plugin_timeouts)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._status: Status | None = None
        self._timers = []
        for plugin, timeout in plugin_timeouts.items():
            timer = threading.Timer(
                timeout,
                self.reject,
                args=(
                    plugin,
                    f"rejected due to timeout after waiting {format_duration(timeout)} "
                    f"at plugin {plugin}",
                ),
            )
            timer.daemon = True
            self._timers.append(timer)

    def start(self) -> None:
        for timer in self._timers:
            timer.start()

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
            timer.cancel()
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
