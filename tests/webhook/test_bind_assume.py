"""Issue 27: the bind verb assumes the pod it bound in the process's cache, so the next
filter/prioritize call counts it before the pod watch reports the binding (as kube-scheduler's
cache assumes a pod before binding it). The watch's add of the same UID confirms the
assumption; one it never confirms expires after the cache's ttl. Real Cache and framework;
the Binder is a fake (it stands for the apiserver's pods/binding)."""

from __future__ import annotations

import pytest

from extender.cache import Cache
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.plugins import in_tree_registry
from extender.webhook.service import ExtenderService
from tests.unit.builders import make_node, make_pod
from tests.webhook.test_contract import (
    SCHEDULER,
    FakeBinder,
    OnePodPerNode,
    PeerSocket,
    binding_client,
    post,
)

TTL = 30.0
APP = {"app": "burst"}
# A soft spread over hostnames: the node with fewer pods of the app scores higher.
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": APP},
    }
]
PEER = PeerSocket(SCHEDULER)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def spreading_framework() -> Framework:
    registry = Registry(in_tree_registry())
    registry.register("OnePodPerNode", OnePodPerNode)
    plugins = {
        "filter": [PluginSpec("OnePodPerNode")],
        "preScore": [PluginSpec("PodTopologySpread")],
        "score": [PluginSpec("PodTopologySpread", 1)],
    }
    return Framework(Profile("test", plugins), registry)


def burst_pod(name: str, uid: str) -> dict:
    return make_pod(name, namespace="ns", uid=uid, labels=APP, topologySpreadConstraints=SPREAD)


class PodsBinder(FakeBinder):
    """get_pod serves the pending pods of ``pods`` by name; bind records the call and can run
    ``during_bind`` (the watch delivering the bound pod while the POST is in flight)."""

    def __init__(self, pods: list[dict], error: Exception | None = None) -> None:
        super().__init__(error, {("ns", p["metadata"]["name"]): p for p in pods})
        self.during_bind = None

    def bind(self, pod: dict, node_name: str) -> None:
        super().bind(pod, node_name)
        if self.during_bind is not None:
            self.during_bind(node_name)


def setup(pods: list[dict], *, assume: bool = True, error: Exception | None = None):
    clock = Clock()
    cache = Cache(assumed_pod_ttl=TTL, clock=clock)
    for name in ("n1", "n2"):
        cache.add_node(make_node(name))
    binder = PodsBinder(pods, error)
    service = ExtenderService(
        spreading_framework(), cache=cache, client=binder, assume_on_bind=assume
    )
    return binding_client(service), cache, binder, clock


def bind(client, pod: dict, node: str) -> dict:
    meta = pod["metadata"]
    body = {"PodName": meta["name"], "PodNamespace": "ns", "PodUID": meta["uid"], "Node": node}
    status, reply = post(client, "bind", body, PEER)
    assert status == 200
    return reply


def filter_and_scores(client, pod: dict) -> tuple[list[str], dict[str, int]]:
    body = {"Pod": pod, "NodeNames": ["n1", "n2"]}
    _, filtered = post(client, "filter", body, PEER)
    _, scores = post(client, "prioritize", body, PEER)
    return filtered["NodeNames"], {entry["Host"]: entry["Score"] for entry in scores}


def on(pod: dict, node: str) -> dict:
    """The pod as the watch delivers it once bound."""
    return {**pod, "spec": {**pod["spec"], "nodeName": node}, "status": {"phase": "Pending"}}


def pods_on(cache: Cache, node: str) -> list[str]:
    return [p.name for p in cache.snapshot().get(node).pods]


def test_the_next_call_after_bind_sees_the_pod_on_its_node() -> None:
    first, second = burst_pod("web-1", "u1"), burst_pod("web-2", "u2")
    client, cache, binder, _ = setup([first, second])
    assert filter_and_scores(client, second) == (["n1", "n2"], {"n1": 10, "n2": 10})

    assert bind(client, first, "n1") == {"Error": ""}
    assert binder.calls[0][1] == "n1"
    # No watch event yet: the assumption alone makes the next calls count web-1 on n1.
    assert pods_on(cache, "n1") == ["web-1"] and cache.is_assumed("u1")
    feasible, scores = filter_and_scores(client, second)
    assert feasible == ["n2"]  # OnePodPerNode sees web-1 on n1
    assert scores["n2"] > scores["n1"]  # the spread prefers the empty node


def test_the_watch_confirmation_does_not_double_count() -> None:
    first, second = burst_pod("web-1", "u1"), burst_pod("web-2", "u2")
    client, cache, _, clock = setup([first, second])
    bind(client, first, "n1")
    cache.add_pod(on(first, "n1"))  # the watch reports the binding
    assert not cache.is_assumed("u1")
    assert pods_on(cache, "n1") == ["web-1"] and cache.pod_count() == 1
    _, scores = filter_and_scores(client, second)
    assert scores["n2"] > scores["n1"]
    # Confirmed pods never expire.
    clock.now += 10 * TTL
    assert pods_on(cache, "n1") == ["web-1"]


def test_a_watch_faster_than_the_assumption_is_not_an_error() -> None:
    first = burst_pod("web-1", "u1")
    client, cache, binder, _ = setup([first])
    binder.during_bind = lambda node: cache.add_pod(on(first, node))
    assert bind(client, first, "n1") == {"Error": ""}
    assert pods_on(cache, "n1") == ["web-1"] and cache.pod_count() == 1
    assert not cache.is_assumed("u1")


def test_an_unconfirmed_assumption_expires_after_the_ttl() -> None:
    first, second = burst_pod("web-1", "u1"), burst_pod("web-2", "u2")
    client, cache, _, clock = setup([first, second])
    bind(client, first, "n1")
    clock.now += TTL - 1
    assert filter_and_scores(client, second)[0] == ["n2"]
    clock.now += 2  # past finish_binding + ttl, never confirmed (say, deleted meanwhile)
    assert filter_and_scores(client, second) == (["n1", "n2"], {"n1": 10, "n2": 10})
    assert cache.pod_count() == 0 and cache.assumed_pods() == []
    # The watch may still report it late: it is added then, once.
    cache.add_pod(on(first, "n1"))
    assert pods_on(cache, "n1") == ["web-1"] and cache.pod_count() == 1


@pytest.mark.parametrize(
    ("assume", "error", "pods"),
    [
        (True, RuntimeError('pods "web-1" is forbidden'), None),  # the POST failed
        (True, None, []),  # refused before binding: the pod does not exist
        (False, None, None),  # bind.assume: false
    ],
    ids=["failed-bind", "refused-bind", "assume-off"],
)
def test_nothing_is_assumed_unless_bound_with_assume_on(assume, error, pods) -> None:
    first = burst_pod("web-1", "u1")
    client, cache, _, _ = setup([first] if pods is None else pods, assume=assume, error=error)
    reply = bind(client, first, "n1")
    assert (reply["Error"] == "") == (error is None and pods is None)
    assert cache.pod_count() == 0 and pods_on(cache, "n1") == []


def test_a_failing_assumption_does_not_fail_the_binding(monkeypatch) -> None:
    first = burst_pod("web-1", "u1")
    client, cache, binder, _ = setup([first])

    def broken(pod: dict) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(cache, "assume_pod", broken)
    assert bind(client, first, "n1") == {"Error": ""}  # the pod is bound: say so
    assert binder.calls[0][1] == "n1" and cache.pod_count() == 0


def test_assume_on_bind_needs_a_cache_that_can_assume() -> None:
    with pytest.raises(ValueError, match="assume"):
        ExtenderService(spreading_framework(), cache=None, assume_on_bind=True)
