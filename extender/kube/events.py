"""Recording ``events.k8s.io/v1`` Events about pods, best effort and off the hot path.

As client-go's ``tools/events/event_recorder.go`` and ``event_broadcaster.go``: the recorder
builds the Event (``reportingController``, ``reportingInstance``, a MicroTime ``eventTime``)
and background threads post it, so a slow apiserver never delays a scheduling cycle; a full
queue drops the event and a failed post is logged, never raised.

client-go posts from one goroutine; one Python thread cannot keep up with a scheduler binding
hundreds of pods a second (each post waits for the apiserver and then for the GIL, which the
scheduling thread holds), so the queue filled and Scheduled events were dropped. A few
threads post concurrently instead (``workers``); the order of events is not kept, as it is not
by the apiserver either (events of one pod carry their own ``eventTime``).
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from datetime import UTC, datetime
from typing import Protocol

log = logging.getLogger(__name__)

# The API rejects longer notes (events.k8s.io/v1 validation).
MAX_NOTE_BYTES = 1024
REPORTING_CONTROLLER = "kube-extender"
# Upstream's event broadcaster buffers this many events before dropping.
MAX_QUEUED_EVENTS = 1000
# Threads posting events concurrently (see the module docstring): as many as binding workers
# (the default `parallelism`), so that events keep pace with bindings.
EVENT_WORKERS = 16


class EventSink(Protocol):
    """Where events go: :meth:`extender.kube.KubeClient.create_event` (raises on failure)."""

    def create_event(self, event: dict) -> dict | None: ...


def micro_time(ts: float | None = None) -> str:
    """RFC 3339 with microseconds, as the API's MicroTime."""
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )


def truncate(note: str, limit: int = MAX_NOTE_BYTES) -> str:
    """Cut ``note`` to at most ``limit`` UTF-8 bytes (the API rejects longer event notes)."""
    data = note.encode()
    if len(data) <= limit:
        return note
    return data[: limit - 4].decode(errors="ignore") + " ..."


class EventRecorder:
    """Records Events about pods through ``client`` (anything with ``create_event``).

    With ``async_events`` (the default) events are queued and posted by ``workers`` background
    threads started on first use; without, :meth:`record_event` posts synchronously (still
    never raising).
    """

    def __init__(
        self,
        client: EventSink,
        instance: str | None = None,
        *,
        controller: str = REPORTING_CONTROLLER,
        async_events: bool = True,
        workers: int = EVENT_WORKERS,
    ) -> None:
        self.client = client
        self.controller = controller
        # Upstream's recorder names the instance "<controller>-<hostname>" (max 128 chars).
        self.instance = (instance or f"{controller}-{socket.gethostname()}")[:128]
        self.async_events = async_events
        self.workers = max(1, workers)
        self._events: queue.Queue[dict | None] = queue.Queue(MAX_QUEUED_EVENTS)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def make_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> dict:
        """The Event upstream's recorder writes about ``pod`` (client-go
        ``tools/events/event_recorder.go`` ``makeEvent``)."""
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = time.time()
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name', 'pod')}.{time.time_ns():x}",
                "namespace": namespace,
            },
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": truncate(note),
            "regarding": {
                "apiVersion": pod.get("apiVersion") or "v1",
                "kind": pod.get("kind") or "Pod",
                "name": meta.get("name", ""),
                "namespace": namespace,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        }

    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        """Record an Event about ``pod``; never raises (a full queue drops it)."""
        event = self.make_event(pod, event_type, reason, action, note)
        if not self.async_events:
            self._post(event)
            return
        self._ensure_thread()
        try:
            self._events.put_nowait(event)
        except queue.Full:
            log.warning("event queue full; dropping %s event for %s", reason, _ref(event))

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until queued events were posted; ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        while self._events.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        """Post what is queued (briefly) and stop the threads."""
        if self._threads:
            self.flush(2.0)
            for _ in self._threads:
                try:
                    self._events.put_nowait(None)
                except queue.Full:
                    break

    def _ensure_thread(self) -> None:
        if self._threads:
            return
        with self._lock:
            if not self._threads:
                threads = [
                    threading.Thread(target=self._loop, daemon=True, name=f"events_{i}")
                    for i in range(self.workers)
                ]
                for thread in threads:
                    thread.start()
                self._threads = threads

    def _loop(self) -> None:
        while True:
            event = self._events.get()
            try:
                if event is None:
                    return
                self._post(event)
            finally:
                self._events.task_done()

    def _post(self, event: dict) -> None:
        try:
            self.client.create_event(event)
        except Exception as exc:  # best effort: an event must never fail scheduling
            log.warning("recording event %s for %s: %s", event.get("reason"), _ref(event), exc)


def _ref(event: dict) -> str:
    regarding = event.get("regarding") or {}
    return f"{regarding.get('namespace')}/{regarding.get('name')}"


__all__ = [
    "MAX_NOTE_BYTES",
    "REPORTING_CONTROLLER",
    "EventRecorder",
    "EventSink",
    "micro_time",
    "truncate",
]
