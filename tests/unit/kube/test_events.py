"""EventRecorder posting from several threads (``extender/kube/events.py``)."""

from __future__ import annotations

import threading

from extender.kube.errors import NotFound
from extender.kube.events import (
    MAX_CACHED_EVENTS,
    SERIES_FINISH_SECONDS,
    SERIES_REFRESH_SECONDS,
    EventRecorder,
)

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}


class _BarrierSink:
    """Each post waits until ``parties`` posts are in flight at once: with fewer threads
    posting than that, the barrier breaks and the posts fail."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)
        self.posted: list[dict] = []
        self._lock = threading.Lock()

    def create_event(self, event: dict) -> dict:
        self.barrier.wait()
        with self._lock:
            self.posted.append(event)
        return event


def test_events_are_posted_concurrently_by_the_workers() -> None:
    sink = _BarrierSink(3)
    recorder = EventRecorder(sink, instance="t", workers=3)
    for i in range(3):
        pod = {"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"}}
        recorder.record_event(pod, "Normal", "Scheduled", "Binding", f"note {i}")
    assert recorder.flush(30)
    assert sorted(e["note"] for e in sink.posted) == ["note 0", "note 1", "note 2"]
    recorder.close()


def test_close_stops_every_worker() -> None:
    sink = _BarrierSink(1)
    recorder = EventRecorder(sink, instance="t", workers=2)
    recorder.record_event(POD, "Normal", "Scheduled", "Binding", "n")
    assert recorder.flush(10)
    threads = list(recorder._threads)
    assert len(threads) == 2
    recorder.close()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()


class _Sink:
    """Records what the recorder writes: ("create", event) or ("patch", name, patch)."""

    def __init__(self) -> None:
        self.writes: list[tuple] = []
        self.gone: set[str] = set()

    def create_event(self, event: dict) -> dict:
        self.writes.append(("create", event))
        return event

    def patch_event(self, namespace: str, name: str, patch: dict) -> dict:
        if name in self.gone:
            raise NotFound(message="gone")
        self.writes.append(("patch", name, patch))
        return patch


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _recorder(sink: _Sink, clock: _Clock) -> EventRecorder:
    return EventRecorder(sink, instance="t", async_events=False, clock=clock)


def _failed(recorder: EventRecorder, pod: dict = POD, note: str = "0/3 nodes") -> None:
    recorder.record_event(pod, "Warning", "FailedScheduling", "Scheduling", note)


def test_isomorphic_events_become_one_series_written_twice() -> None:
    """client-go recordToSink: created once, the series patched in at count 2, then counted."""
    sink, clock = _Sink(), _Clock()
    recorder = _recorder(sink, clock)
    for i in range(50):
        clock.now += 0.01
        _failed(recorder, note=f"attempt {i}")  # the note is not part of the key
    assert [w[0] for w in sink.writes] == ["create", "patch"]
    created, patch = sink.writes[0][1], sink.writes[1]
    assert created["note"] == "attempt 0" and "series" not in created
    assert patch[1] == created["metadata"]["name"]
    assert patch[2]["series"]["count"] == 2


def test_a_new_resource_version_or_reason_is_a_new_event() -> None:
    sink, clock = _Sink(), _Clock()
    recorder = _recorder(sink, clock)
    _failed(recorder)
    _failed(recorder, {"metadata": {**POD["metadata"], "resourceVersion": "7"}})
    recorder.record_event(POD, "Normal", "Scheduled", "Binding", "bound")
    assert [w[0] for w in sink.writes] == ["create", "create", "create"]


def test_a_finished_series_writes_its_final_count_and_is_forgotten() -> None:
    sink, clock = _Sink(), _Clock()
    recorder = _recorder(sink, clock)
    for _ in range(5):
        _failed(recorder)
    clock.now += SERIES_FINISH_SECONDS + 1
    _failed(recorder, {"metadata": {"name": "other", "namespace": "ns", "uid": "u2"}})
    final = [w for w in sink.writes if w[0] == "patch"][-1]
    assert final[2]["series"]["count"] == 5
    _failed(recorder)  # forgotten: a fresh event
    assert sink.writes[-1][0] == "create" and sink.writes[-1][1]["regarding"]["name"] == "p"


def test_a_long_series_is_refreshed_and_a_vanished_event_is_created_again() -> None:
    sink, clock = _Sink(), _Clock()
    recorder = _recorder(sink, clock)
    _failed(recorder)
    name = sink.writes[0][1]["metadata"]["name"]
    steps = int(SERIES_REFRESH_SECONDS // 60) + 2
    for _ in range(steps):  # seen every minute: never finished, refreshed after 30 minutes
        clock.now += 60
        _failed(recorder)
    patches = [w for w in sink.writes if w[0] == "patch"]
    assert len(patches) == 2 and patches[-1][2]["series"]["count"] > 2
    sink.gone.add(name)
    clock.now += SERIES_REFRESH_SECONDS + 1
    _failed(recorder)
    assert sink.writes[-1][0] == "create" and sink.writes[-1][1]["series"]["count"] > 30


def test_the_fold_cache_is_bounded() -> None:
    sink, clock = _Sink(), _Clock()
    recorder = _recorder(sink, clock)
    for i in range(MAX_CACHED_EVENTS + 5):
        _failed(recorder, {"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"}})
    assert len(recorder._series) == MAX_CACHED_EVENTS
    _failed(recorder, {"metadata": {"name": "p0", "namespace": "ns", "uid": "u0"}})
    assert sink.writes[-1][0] == "create"  # the oldest was forgotten: written afresh
