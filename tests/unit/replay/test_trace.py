"""The trace format v1: a saved trace loads back equal (plain and gzip), pods come back sorted
by arrival, and every invalid field is a TraceError naming it."""

from __future__ import annotations

import copy
import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from extender.replay.trace import Trace, TraceError, TracePod, load, parse, save


def _doc() -> dict:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n-1", "labels": {"kubernetes.io/hostname": "n-1"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }

    def pod(name: str, arrival: float, **extra: Any) -> dict:
        return {
            "arrival": arrival,
            "pod": {"metadata": {"name": name, "namespace": "default"}, "spec": {}},
            "claims": [],
            "duration": 10.0,
            "abandon": None,
            "node": None,
            "recorded": {"node": None, "scheduled": arrival},
            **extra,
        }

    return {
        "apiVersion": "kube-extender.dev/v1",
        "kind": "Trace",
        "version": 1,
        "metadata": {"name": "t", "source": "test", "gpuMapping": "none"},
        "duration": 100.0,
        "nodes": [node],
        "objects": [{"kind": "Namespace", "metadata": {"name": "default"}}],
        "pods": [pod("b", 5.0), pod("a", 1.0, node="n-1"), pod("c", 5.0, abandon=50.0)],
    }


def test_parse_sorts_pods_by_arrival_stably() -> None:
    trace = parse(_doc())
    assert [p.pod["metadata"]["name"] for p in trace.pods] == ["a", "b", "c"]
    assert [p.arrival for p in trace.pods] == [1.0, 5.0, 5.0]
    assert trace.pods[0].node == "n-1" and trace.pods[0].key == "default/a"
    assert trace.pods[2].abandon == 50.0
    assert trace.name == "t" and trace.gpu_mapping == "none"


@pytest.mark.parametrize("name", ["trace.json", "trace.json.gz"])
def test_save_then_load_gives_the_same_trace(tmp_path: Path, name: str) -> None:
    trace = parse(_doc())
    path = tmp_path / name
    save(trace, path)
    raw = path.read_bytes()
    if name.endswith(".gz"):
        assert raw[:2] == b"\x1f\x8b"
        raw = gzip.decompress(raw)
    assert orjson.loads(raw)["pods"][0]["pod"]["metadata"]["name"] == "a"
    assert load(path) == trace


def test_save_is_deterministic(tmp_path: Path) -> None:
    trace = parse(_doc())
    save(trace, tmp_path / "a.json.gz")
    save(trace, tmp_path / "b.json.gz")
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()


def test_save_refuses_an_invalid_trace(tmp_path: Path) -> None:
    trace = Trace(metadata={"name": "t"}, duration=10.0)
    trace.pods.append(TracePod(arrival=-1.0, pod={"metadata": {"name": "p"}}))
    with pytest.raises(TraceError, match=r"^pods\[0\]\.arrival: must be a number >= 0$"):
        save(trace, tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def _set(path: str, value: Any) -> Any:
    """A change to the sample document: ``path`` is dotted, list indices as numbers."""

    def change(doc: dict) -> None:
        *parents, last = path.split(".")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[int(last) if last.isdigit() else last] = value

    return change


_DELETE = object()

INVALID = [
    ("apiVersion", "v1", "apiVersion: must be 'kube-extender.dev/v1'"),
    ("kind", "Pod", "kind: must be 'Trace'"),
    ("version", 2, "version: 2 is not supported"),
    ("metadata", [], "metadata: must be an object"),
    ("metadata.name", "", "metadata.name: must be a non-empty string"),
    ("metadata.gpuMapping", "mig", "metadata.gpuMapping: must be one of dra, extended, none"),
    ("duration", "long", "duration: must be a number >= 0"),
    ("duration", True, "duration: must be a number >= 0"),
    ("nodes", {}, "nodes: must be a list"),
    ("nodes.0.metadata", _DELETE, "nodes[0].metadata: must be an object"),
    ("nodes.0.status.allocatable", [], "nodes[0].status.allocatable: must be an object"),
    ("objects.0.kind", None, "objects[0].kind: must be a non-empty string"),
    ("pods", None, "pods: must be a list"),
    ("pods.2.arrival", -1, "pods[2].arrival: must be a number >= 0"),
    ("pods.2.arrival", "12", "pods[2].arrival: must be a number >= 0"),
    ("pods.2.arrival", 101, "pods[2].arrival: 101.0 is after the trace's duration 100.0"),
    ("pods.0.pod.metadata.name", 3, "pods[0].pod.metadata.name: must be a non-empty string"),
    ("pods.0.pod.spec", {"nodeName": "n-1"}, "pods[0].pod.spec.nodeName: must be unset"),
    ("pods.0.duration", -5, "pods[0].duration: must be a number >= 0 or null"),
    ("pods.0.abandon", 1.0, "pods[0].abandon: 1.0 is before the pod's arrival 5.0"),
    ("pods.0.node", "n-9", "pods[0].node: 'n-9' is not a node of the trace"),
    ("pods.0.claims", [{"metadata": {}}], "pods[0].claims[0].metadata.name: must be a non-empty"),
    ("pods.0.recorded.scheduled", "x", "pods[0].recorded.scheduled: must be a number >= 0"),
    ("pods.0.recorded.node", 7, "pods[0].recorded.node: must be a node name or null"),
    ("pods.0.pod.metadata.name", "a", "pods[1].pod.metadata: 'default/a' appears twice"),
]


@pytest.mark.parametrize(("path", "value", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_an_invalid_field_is_named(path: str, value: Any, message: str) -> None:
    doc = copy.deepcopy(_doc())
    _set(path, value)(doc)
    with pytest.raises(TraceError) as caught:
        parse(doc)
    assert str(caught.value).startswith(message), str(caught.value)


def test_load_names_the_file_and_the_field(tmp_path: Path) -> None:
    doc = _doc()
    doc["pods"][1]["arrival"] = "soon"
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps(doc))
    with pytest.raises(TraceError, match=r"t\.json: pods\[1\]\.arrival: must be a number >= 0"):
        load(path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.json", None, "no such file"),
        ("bad.json", b"{not json", "not JSON"),
        ("bad.json.gz", b"plain text", "cannot read"),
        ("list.json", b"[]", "must be a JSON object"),
    ],
)
def test_load_of_an_unreadable_file_is_one_error(
    tmp_path: Path, name: str, content: bytes | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(TraceError, match=message):
        load(path)


def test_compressed_arrivals_keep_durations_and_the_prefix() -> None:
    from extender.replay.trace import compress_arrivals

    trace = Trace(
        metadata={"name": "t"},
        duration=1000.0,
        pods=[
            TracePod(arrival=50.0, pod={"metadata": {"name": "a"}}, duration=30.0),
            TracePod(arrival=300.0, pod={"metadata": {"name": "b"}}, abandon=500.0),
        ],
    )
    fast = compress_arrivals(trace, 4.0, after=100.0)
    assert [(p.arrival, p.duration, p.abandon) for p in fast.pods] == [
        (50.0, 30.0, None),
        (150.0, None, 200.0),
    ]
    assert fast.duration == 325.0
    assert fast.metadata["arrivalsCompressed"] == {"factor": 4.0, "after": 100.0}
    assert trace.pods[1].arrival == 300.0  # the original is left as it was
    with pytest.raises(TraceError, match="factor: must be a number > 0"):
        compress_arrivals(trace, 0.0)


def test_without_departures_every_pod_stays() -> None:
    from extender.replay.trace import without_departures

    trace = Trace(
        metadata={"name": "t"},
        duration=100.0,
        pods=[TracePod(arrival=1.0, pod={"metadata": {"name": "a"}}, duration=5.0, abandon=9.0)],
    )
    full = without_departures(trace)
    assert (full.pods[0].duration, full.pods[0].abandon) == (None, None)
    assert full.metadata["departures"] is False and trace.pods[0].duration == 5.0
