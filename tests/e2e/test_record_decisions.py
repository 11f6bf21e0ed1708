"""``kube-extender run --record-decisions``: the last diagnosis of a pod that cannot fit is
written to its annotation ``kube-extender.io/last-decision`` and to its FailedScheduling event
note; without the flag neither is written."""

from __future__ import annotations

import json

import pytest

from extender.scheduler.decisions import ANNOTATION, MAX_ANNOTATION_BYTES, MAX_NOTE_BYTES

from .harness import Standalone, events_for, standalone_config, wait_until

PROFILE = "kube-extender"


@pytest.fixture
def start(control_plane, processes):
    def start(extra: list[str]) -> Standalone:
        proc = Standalone(control_plane, standalone_config(PROFILE), extra=extra)
        processes.append(proc)
        proc.wait_ready(timeout=60)
        return proc

    return start


def _unfit_cluster(kube) -> dict[str, tuple[str, str]]:
    """Three nodes rejecting a 2-CPU pod for three different reasons; node -> (plugin, reason)."""
    ns = kube.namespace
    kube.create_node(f"{ns}-small", cpu="1")
    kube.create_node(f"{ns}-cordoned", cpu="8", unschedulable=True)
    kube.create_node(f"{ns}-tainted", cpu="8", taints=[{"key": "x", "effect": "NoSchedule"}])
    kube.create_pod("big", cpu="2")
    return {
        f"{ns}-small": ("NodeResourcesFit", "Insufficient cpu"),
        f"{ns}-cordoned": ("NodeUnschedulable", "node(s) were unschedulable"),
        f"{ns}-tainted": ("TaintToleration", "untolerated taint"),
    }


def _failed_note(kube) -> str:
    events = wait_until(lambda: events_for(kube, "big", "FailedScheduling"), 60, "the event")
    return events[-1]["note"]


def test_recorded_with_the_flag(kube, start) -> None:
    kube.scheduler_name = PROFILE
    start(["--record-decisions"])
    expected = _unfit_cluster(kube)

    def annotation() -> str | None:
        pod = kube.get(f"/api/v1/namespaces/{kube.namespace}/pods/big")
        return ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)

    value = wait_until(annotation, 60, f"the {ANNOTATION} annotation")
    assert len(value.encode()) <= MAX_ANNOTATION_BYTES
    decision = json.loads(value)
    assert decision["version"] == 1
    assert decision["fitError"].startswith(f"0/{decision['numNodes']} nodes are available")
    by_node = {
        node: (group["plugin"], group["reasons"])
        for group in decision["rejected"]
        for node in group["nodes"]
    }
    for node, (plugin, reason) in expected.items():
        assert node in by_node, (node, decision)
        assert by_node[node][0] == plugin, (node, by_node[node])
        assert any(reason in r for r in by_node[node][1]), (node, by_node[node])
    for group in decision["rejected"]:
        assert group["count"] >= len(group["nodes"])

    note = wait_until(
        lambda: (n := _failed_note(kube)) and "Per node:" in n and n, 60, "the per-node note"
    )
    assert len(note.encode()) <= MAX_NOTE_BYTES
    assert note.startswith(f"0/{decision['numNodes']} nodes are available"), note
    per_node = note.split(" Per node: ", 1)[1]
    for node, (plugin, reason) in expected.items():
        assert f"{node}: {plugin}: " in per_node and reason in per_node, (node, note)


def test_not_recorded_without_the_flag(kube, start) -> None:
    kube.scheduler_name = PROFILE
    start([])
    _unfit_cluster(kube)
    note = _failed_note(kube)
    assert note.startswith("0/") and "Insufficient cpu" in note, note
    assert "Per node:" not in note, note
    # The annotation would be written before the event is recorded.
    pod = kube.get(f"/api/v1/namespaces/{kube.namespace}/pods/big")
    assert ANNOTATION not in ((pod.get("metadata") or {}).get("annotations") or {})
