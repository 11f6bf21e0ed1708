"""--record-decisions: the bounded summary, the event note and the annotation patch."""

from __future__ import annotations

import json

from extender.framework.schedule import Diagnosis, FitError
from extender.framework.status import Code, Status
from extender.scheduler.decisions import ANNOTATION, Decisions, note, summarize


def fit(n: int) -> FitError:
    diagnosis = Diagnosis()
    for i in range(n):
        reason = "node(s) were unschedulable" if i % 3 else "Insufficient cpu"
        plugin = "NodeUnschedulable" if i % 3 else "NodeResourcesFit"
        diagnosis.add_rejection(f"node-{i:05}", Status(Code.UNSCHEDULABLE, reason, plugin=plugin))
    return FitError({"metadata": {"name": "p", "namespace": "ns"}}, n, diagnosis)


def test_summary_groups_by_plugin_and_reasons_and_stays_within_4_kib() -> None:
    small = summarize(fit(6))
    assert [(g["plugin"], g["count"]) for g in small["rejected"]] == [
        ("NodeUnschedulable", 4),
        ("NodeResourcesFit", 2),
    ]
    assert small["fitError"].startswith("0/6 nodes are available")
    big = summarize(fit(5000))
    assert len(json.dumps(big, separators=(",", ":")).encode()) <= 4096
    assert sum(g["count"] for g in big["rejected"]) == 5000


def test_note_is_within_the_event_limit_and_names_nodes() -> None:
    f = fit(5000)
    text = note(f, summarize(f))
    assert len(text.encode()) <= 1024
    assert "Per node: node-" in text and text.startswith(str(f))


class Writer:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def request(self, method, path, body, content_type):  # type: ignore[no-untyped-def]
        self.calls.append((method, path, body, content_type))


def test_recording_patches_the_annotation_and_keeps_the_last_decision() -> None:
    f = fit(3)
    decisions = Decisions()
    assert decisions.failed(f.pod, f, "msg") == "msg"  # not recording: the note unchanged
    assert "ns/p" in decisions.last
    decisions.writer = Writer()
    text = decisions.failed(f.pod, f, str(f))
    assert "Per node:" in text
    method, path, body, content_type = decisions.writer.calls[0]
    assert (method, path) == ("PATCH", "/api/v1/namespaces/ns/pods/p")
    assert json.loads(body["metadata"]["annotations"][ANNOTATION])["numNodes"] == 3
    decisions.forget(f.pod)
    assert "ns/p" not in decisions.last
