"""``record_live``'s bookkeeping over a scripted client (the real watch is proven end to end
in ``tests/e2e/test_record.py``): the watch resumes from its last resourceVersion, a 410
relists and ends the pods gone meanwhile, the window's end stops it, a pod's template claim is
read once, and unserved kinds are noted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.kube import ApiError, Gone, NotFound
from extender.replay.record import RecordError, record_live

from .test_record import claim, from_rfc3339, node, pod, with_claims

START = from_rfc3339("2026-12-07T10:00:00Z")


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Stream:
    def __init__(self, events: list, clock: Clock) -> None:
        self.events = events
        self.clock = clock

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        for item in self.events:
            if isinstance(item, float):  # time passes
                self.clock.now += item
            elif isinstance(item, Exception):
                raise item
            else:
                yield item


class Client:
    """Lists ``listed``; each watch plays the next script (then time runs out)."""

    def __init__(self, listed: dict[str, list[dict]], scripts: list[list], clock: Clock) -> None:
        self.listed = listed
        self.scripts = scripts
        self.clock = clock
        self.watched_from: list[str] = []
        self.gets: list[str] = []
        self.relists = 0

    def list(self, path: str) -> tuple[list[dict], str]:
        resource = path.rsplit("/", 1)[1]
        if resource == "resourceslices":
            raise NotFound(404, "NotFound", "the server could not find the requested resource")
        if resource == "pods":
            self.relists += 1
            return [dict(p) for p in self.listed.get(f"pods-{self.relists}", [])], "10"
        return self.listed.get(resource, []), "1"

    def watch(self, path: str, resource_version: str, timeout_seconds: int) -> Stream:
        self.watched_from.append(resource_version)
        if not self.scripts:
            self.clock.now += timeout_seconds
            return Stream([], self.clock)
        return Stream(self.scripts.pop(0), self.clock)

    def get(self, path: str) -> dict | None:
        self.gets.append(path)
        return claim(path.rsplit("/", 1)[1], owner="new")


def ev(kind: str, obj: dict, rv: str) -> tuple[str, dict]:
    return kind, {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}


def test_watch_resumes_relists_and_stops_at_the_window() -> None:
    clock = Clock()
    old = pod("old", 0, node_name="n-1", scheduled=0)
    gone = pod("gone", 0, node_name="n-1", scheduled=0)
    fresh = pod("new", 3)
    fresh["metadata"]["creationTimestamp"] = "2026-12-07T10:00:03Z"
    bound = with_claims(pod("new", 3, node_name="n-1", scheduled=4))
    bound["metadata"]["creationTimestamp"] = "2026-12-07T10:00:03Z"
    late = pod("late", 40)
    late["metadata"]["creationTimestamp"] = "2026-12-07T10:00:40Z"
    client = Client(
        {"nodes": [node("n-1")], "pods-1": [old, gone], "pods-2": [old, bound]},
        [
            [3.2, ev("ADDED", fresh, "11"), 3.5, ev("MODIFIED", bound, "12"), 1.0],
            [ev("BOOKMARK", {"metadata": {}}, "15"), 2.0, Gone()],  # gone deleted unseen
            [30.0, ev("ADDED", late, "30")],  # after the window's end: not recorded
        ],
        clock,
    )
    trace = record_live(client, 20.0, clock=clock, max_pods=10)
    assert client.watched_from[:3] == ["10", "12", "10"]
    pods = {r["pod"]["metadata"]["name"]: r for r in trace["pods"]}
    assert set(pods) == {"old", "gone", "new"}
    assert pods["gone"]["node"] == "n-1" and pods["gone"]["duration"] == pytest.approx(9.7)
    assert pods["old"]["duration"] is None
    new = pods["new"]
    assert new["arrival"] == pytest.approx(3.2)  # seen within its timestamp's second
    assert new["recorded"] == {"node": "n-1", "scheduled": 4.0}  # seen late: the condition
    assert [c["metadata"]["name"] for c in new["claims"]] == ["new-gpu-x1"]
    assert len(client.gets) == 1  # the claim is read once
    assert trace["duration"] == 20.0
    assert "ResourceSlice: not served" in trace["metadata"]["notes"]


def test_too_many_pods_name_the_flag() -> None:
    clock = Clock()
    pods = [pod(f"p-{i}", 0) for i in range(3)]
    client = Client({"nodes": [node("n-1")], "pods-1": pods}, [], clock)
    with pytest.raises(RecordError, match=r"^--max-pods: more than 2 pods"):
        record_live(client, 5.0, clock=clock, max_pods=2)


def test_a_dropped_connection_resumes_and_is_noted() -> None:
    clock = Clock()
    fresh = pod("new", 3)
    fresh["metadata"]["creationTimestamp"] = "2026-12-07T10:00:03Z"
    dropped = ApiError(0, "ConnectionError", "watch stream: reset")
    client = Client(
        {"nodes": [node("n-1")], "pods-1": []},
        [[1.0, dropped], [2.2, ev("ADDED", fresh, "11")]],
        clock,
    )
    slept: list[float] = []
    trace = record_live(client, 10.0, clock=clock, sleep=slept.append)
    assert client.watched_from[:2] == ["10", "10"] and slept == [1.0]
    assert [r["arrival"] for r in trace["pods"]] == [pytest.approx(3.2)]
    assert "lost its connection 1 time(s)" in trace["metadata"]["notes"]


def test_a_refused_watch_names_the_path() -> None:
    clock = Clock()
    client = Client({"nodes": [node("n-1")]}, [[ApiError(403, "Forbidden", "no watch")]], clock)
    with pytest.raises(RecordError, match=r"^watching /api/v1/namespaces/a/pods: no watch"):
        record_live(client, 10.0, clock=clock, namespace="a")


def test_a_pod_arrives_when_its_gates_are_lifted() -> None:
    clock = Clock()
    gated = pod("gated", 0)
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    still = pod("still", 0)
    still["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    lifted = pod("gated", 0)
    client = Client(
        {"nodes": [node("n-1")], "pods-1": [gated, still]},
        [[4.5, ev("MODIFIED", lifted, "11")]],
        clock,
    )
    trace = record_live(client, 10.0, clock=clock)
    pods = {r["pod"]["metadata"]["name"]: r for r in trace["pods"]}
    assert pods["gated"]["arrival"] == pytest.approx(4.5)
    assert "schedulingGates" not in pods["gated"]["pod"]["spec"]
    assert pods["still"]["arrival"] == 0
    assert pods["still"]["pod"]["spec"]["schedulingGates"] == [{"name": "example.com/quota"}]
    assert "1 pod(s) arrive when their scheduling gates lifted" in trace["metadata"]["notes"]
