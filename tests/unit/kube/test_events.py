"""EventRecorder posting from several threads (``extender/kube/events.py``)."""

from __future__ import annotations

import threading

from extender.kube.events import EventRecorder

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
        recorder.record_event(POD, "Normal", "Scheduled", "Binding", f"note {i}")
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
