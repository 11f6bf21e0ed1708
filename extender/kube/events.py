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

Isomorphic events (same type, action, reason, reporting controller and instance, and the same
``regarding`` object down to its resourceVersion; the note aside) become one Event with a
``series``, as client-go's ``recordToSink``: the first is created, the second patches the
series in (count 2), later ones only count until the series is refreshed (every 30 minutes) or
finished (6 minutes without a new one: its final count is written and it is forgotten). A pod
retried back to back with the same verdict (a pending gang, popped from backoffQ at once) thus
costs the apiserver two writes, not one per attempt, and cannot crowd out other pods' events.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from .errors import NotFound

log = logging.getLogger(__name__)

# The API rejects longer notes (events.k8s.io/v1 validation).
MAX_NOTE_BYTES = 1024
REPORTING_CONTROLLER = "kube-extender"
# Upstream's event broadcaster buffers this many events before dropping.
MAX_QUEUED_EVENTS = 1000
# Threads posting events concurrently (see the module docstring): as many as binding workers
# (the default `parallelism`), so that events keep pace with bindings.
EVENT_WORKERS = 16
# client-go tools/events/event_broadcaster.go: finishTime and refreshTime.
SERIES_FINISH_SECONDS = 6 * 60.0
SERIES_REFRESH_SECONDS = 30 * 60.0
# How often the workers look for series to finish or refresh.
SERIES_SWEEP_SECONDS = 30.0
# Events remembered for folding (upstream's cache is bounded by time alone; a flood of distinct
# events must not grow it without bound, so the oldest is forgotten: it is then posted afresh).
MAX_CACHED_EVENTS = 10_000


class EventSink(Protocol):
    """Where events go: :meth:`extender.kube.KubeClient.create_event` (raises on failure)."""

    def create_event(self, event: dict) -> dict | None: ...

    def patch_event(self, namespace: str, name: str, patch: dict) -> dict | None:
        """Merge-patch an existing Event; raises ``NotFound`` when it is gone."""


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
        clock: Callable[[], float] = time.time,
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
        self._clock = clock
        # Isomorphic key -> [the Event as created (``series`` added once it repeats), when it
        # was last seen, when its series was last written, the count then written].
        self._series: dict[tuple, list] = {}
        self._series_lock = threading.Lock()
        self._swept = clock()

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
        """Record an Event about ``pod``; never raises (a full queue drops it). An event
        isomorphic to one recorded earlier only counts in that one's series (module
        docstring)."""
        event = self._fold(self.make_event(pod, event_type, reason, action, note))
        self._sweep_if_due()
        if event is not None:
            self._send(event)

    def _send(self, event: dict) -> None:
        if not self.async_events:
            self._post(event)
            return
        self._ensure_thread()
        try:
            self._events.put_nowait(event)
        except queue.Full:
            log.warning("event queue full; dropping %s event for %s", event["reason"], _ref(event))

    def _fold(self, event: dict) -> dict | None:
        """What to write for ``event``: itself when new, its series when it repeats for the
        first time (count 2), ``None`` when its series only counts (client-go
        ``recordToSink``)."""
        key = _isomorphic_key(event)
        now = self._clock()
        with self._series_lock:
            known = self._series.get(key)
            if known is None:
                if len(self._series) >= MAX_CACHED_EVENTS:
                    del self._series[next(iter(self._series))]
                self._series[key] = [event, now, now, 1]
                return dict(event)  # the cached one gains a series; the write stays as it is
            known[1] = now
            first = known[0]
            series = first.get("series")
            if series is not None:
                series["count"] += 1
                series["lastObservedTime"] = micro_time(now)
                return None
            first["series"] = {"count": 2, "lastObservedTime": micro_time(now)}
            known[2], known[3] = now, 2
            return _copy(first)

    def _sweep_if_due(self) -> None:
        """Finish series seen last long ago (their final count written, then forgotten),
        refresh long-lived ones, and forget single events past the finish time (client-go
        ``finishSeries`` and ``refreshExistingEventSeries``)."""
        now = self._clock()
        if now - self._swept < SERIES_SWEEP_SECONDS:
            return
        writes = []
        with self._series_lock:
            if now - self._swept < SERIES_SWEEP_SECONDS:
                return
            self._swept = now
            for key, known in list(self._series.items()):
                event, last_seen, written_at, written_count = known
                series = event.get("series")
                if now - last_seen > SERIES_FINISH_SECONDS:
                    del self._series[key]
                    if series is not None and series["count"] > written_count:
                        writes.append(_copy(event))
                elif series is not None and now - written_at > SERIES_REFRESH_SECONDS:
                    known[2], known[3] = now, series["count"]
                    writes.append(_copy(event))
        for event in writes:
            self._send(event)

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
            try:
                event = self._events.get(timeout=SERIES_SWEEP_SECONDS)
            except queue.Empty:
                self._sweep_if_due()
                continue
            try:
                if event is None:
                    return
                self._post(event)
            finally:
                self._events.task_done()

    def _post(self, event: dict) -> None:
        try:
            series = event.get("series")
            if series is not None:
                meta = event["metadata"]
                try:
                    self.client.patch_event(meta["namespace"], meta["name"], {"series": series})
                    return
                except NotFound:
                    pass  # gone (expired, deleted): written whole again, as upstream
            self.client.create_event(event)
        except Exception as exc:  # best effort: an event must never fail scheduling
            log.warning("recording event %s for %s: %s", event.get("reason"), _ref(event), exc)


def _isomorphic_key(event: dict) -> tuple:
    """client-go ``getKey``: what makes two events one series (the note is not part of it)."""
    return (
        event["type"],
        event["action"],
        event["reason"],
        event["reportingController"],
        event["reportingInstance"],
        tuple(sorted(event["regarding"].items())),
    )


def _copy(event: dict) -> dict:
    """What a worker writes: the event with its own series dict (counting goes on)."""
    copy = dict(event)
    if copy.get("series") is not None:
        copy["series"] = dict(copy["series"])
    return copy


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
