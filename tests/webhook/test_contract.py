"""Contract tests of the wire shapes, with Flask's test client over a small core.

The request bodies in /work/shared/samples-like fixtures are what a real kube-scheduler v1.36
sends; the replies must be exactly what it reads (upstream ``pkg/scheduler/extender.go``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import orjson
import pytest

from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.snapshot import Snapshot
from extender.framework.status import unschedulable
from extender.plugins import in_tree_registry
from extender.webhook.app import create_app
from extender.webhook.service import ERR_NODE_NOT_IN_CACHE, ExtenderService
from tests.unit.builders import make_node, make_pod

SAMPLES = Path(__file__).resolve().parents[2] / "examples" / "requests"


class OnePodPerNode:
    """Test filter that depends on the pods on a node (like resource fit does)."""

    name = "OnePodPerNode"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, state, pod, node_info):
        return unschedulable("node(s) already run a pod") if node_info.pods else None


class FakeCache:
    def __init__(self, nodes: list[dict], pods: list[dict] = ()) -> None:  # type: ignore[assignment]
        self.nodes = nodes
        self.pods = list(pods)

    def snapshot(self) -> Snapshot:
        return Snapshot.from_objects(self.nodes, self.pods)


class FakeBinder:
    """The extender's client: ``get_pod`` serves ``pods`` (default: any name, pending, with
    the UID ``u1``, or the one bind is called with), ``bind`` records the call."""

    def __init__(self, error: Exception | None = None, pods: dict | None = None) -> None:
        self.error = error
        self.pods = pods
        self.calls: list[tuple[dict, str]] = []

    def get_pod(self, namespace: str, name: str) -> dict | None:
        if self.pods is not None:
            return self.pods.get((namespace, name))
        return make_pod(name, namespace=namespace, uid="u1")

    def bind(self, pod: dict, node_name: str) -> None:
        self.calls.append((pod, node_name))
        if self.error is not None:
            raise self.error


def framework(filters: list[str], scores: list[tuple[str, int]] = ()) -> Framework:  # type: ignore[assignment]
    registry = Registry(in_tree_registry())
    registry.register("OnePodPerNode", OnePodPerNode)
    plugins = {
        "filter": [PluginSpec(n) for n in filters],
        "preScore": [PluginSpec(n) for n, _ in scores if n == "NodeNumber"],
        "score": [PluginSpec(n, w) for n, w in scores],
    }
    return Framework(Profile("test", plugins), registry)


class PeerSocket:
    """What gunicorn puts in the environ as ``gunicorn.socket`` on a TLS connection."""

    def __init__(self, cn: str | None, *sans: tuple[str, str]) -> None:
        self.cert: dict = {}
        if cn is not None:
            self.cert["subject"] = ((("commonName", cn),),)
        if sans:
            self.cert["subjectAltName"] = sans

    def getpeercert(self) -> dict:
        return self.cert


SCHEDULER = "kube-extender-scheduler"


def client_for(service: ExtenderService, **kwargs):
    return create_app(service, **kwargs).test_client()


def binding_client(service: ExtenderService, **kwargs):
    """bind enabled, for the client certificate named SCHEDULER (post with ``peer=``)."""
    return client_for(service, bind_enabled=True, allowed_clients=[SCHEDULER], **kwargs)


def post(client, verb: str, body: object, peer: PeerSocket | None = None):
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    environ = {"gunicorn.socket": peer} if peer is not None else {}
    response = client.post(
        f"/{verb}", data=data, content_type="application/json", environ_base=environ
    )
    return response.status_code, orjson.loads(response.data)


NODES = [
    make_node("node1"),
    make_node("node2", unschedulable=True),
    make_node("node3"),
]


def test_filter_full_nodes_echoes_the_passing_nodes_unchanged() -> None:
    nodes = copy.deepcopy(NODES)
    nodes[0]["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    client = client_for(ExtenderService(framework(["NodeUnschedulable"])))
    status, reply = post(
        client,
        "filter",
        {"Pod": make_pod("p1"), "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None},
    )
    assert status == 200
    assert set(reply) == {
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    }
    assert reply["NodeNames"] is None
    assert reply["Nodes"] == {"metadata": {}, "items": [nodes[0], nodes[2]]}
    assert reply["FailedNodes"] == {}
    assert reply["FailedAndUnresolvableNodes"] == {"node2": "node(s) were unschedulable"}
    assert reply["Error"] == ""


def test_filter_node_names_from_the_cache() -> None:
    cache = FakeCache(NODES, [make_pod("old", node_name="node3", uid="u-old")])
    service = ExtenderService(framework(["NodeUnschedulable", "OnePodPerNode"]), cache=cache)
    status, reply = post(
        client_for(service),
        "filter",
        {"Pod": make_pod("p1"), "Nodes": None, "NodeNames": ["node3", "node2", "node1"]},
    )
    assert status == 200
    assert reply["Nodes"] is None
    assert reply["NodeNames"] == ["node1"]
    # Unschedulable goes to FailedNodes (preemption may help), unresolvable to the other map.
    assert reply["FailedNodes"] == {"node3": "node(s) already run a pod"}
    assert reply["FailedAndUnresolvableNodes"] == {"node2": "node(s) were unschedulable"}


def test_filter_with_every_node_rejected_still_sends_an_empty_list() -> None:
    service = ExtenderService(framework(["NodeUnschedulable"]), cache=FakeCache(NODES))
    _, reply = post(
        client_for(service), "filter", {"Pod": make_pod("p"), "Nodes": None, "NodeNames": ["node2"]}
    )
    assert reply["NodeNames"] == [], "a null NodeNames would read as 'no node fits' by accident"
    _, reply = post(
        client_for(service),
        "filter",
        {"Pod": make_pod("p"), "Nodes": {"metadata": {}, "items": [NODES[1]]}, "NodeNames": None},
    )
    assert reply["Nodes"] == {"metadata": {}, "items": []}


def test_filter_unknown_node_name_fails_that_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("extender.webhook.service.MISSING_NODE_GRACE_SECONDS", 0.0)
    service = ExtenderService(framework([]), cache=FakeCache(NODES))
    _, reply = post(
        client_for(service),
        "filter",
        {"Pod": make_pod("p"), "Nodes": None, "NodeNames": ["node1", "ghost"]},
    )
    assert reply["NodeNames"] == ["node1"]
    assert reply["FailedNodes"] == {"ghost": ERR_NODE_NOT_IN_CACHE}


def test_filter_node_names_without_a_cache_is_an_in_band_error() -> None:
    _, reply = post(
        client_for(ExtenderService(framework([]))),
        "filter",
        {"Pod": make_pod("p"), "Nodes": None, "NodeNames": ["node1"]},
    )
    assert reply["Error"].startswith("this extender has no node cache")
    assert reply["NodeNames"] == []


def test_prioritize_answers_a_bare_list_of_integer_scores() -> None:
    fwk = framework([], [("NodeNumber", 1)])
    service = ExtenderService(
        fwk, cache=FakeCache([make_node("n1"), make_node("n2"), make_node("n3")])
    )
    status, reply = post(
        client_for(service),
        "prioritize",
        {"Pod": make_pod("pod-2"), "Nodes": None, "NodeNames": ["n1", "n2", "n3"]},
    )
    assert status == 200
    assert reply == [
        {"Host": "n1", "Score": 0},
        {"Host": "n2", "Score": 10},
        {"Host": "n3", "Score": 0},
    ]
    assert all(type(entry["Score"]) is int for entry in reply)


def test_prioritize_without_score_plugins_gives_zeros() -> None:
    service = ExtenderService(framework([]), cache=FakeCache(NODES))
    _, reply = post(
        client_for(service),
        "prioritize",
        {"Pod": make_pod("p"), "Nodes": None, "NodeNames": ["node1"]},
    )
    assert reply == [{"Host": "node1", "Score": 0}]


def _preempt_cache() -> FakeCache:
    nodes = [make_node("a"), make_node("b")]
    pods = [
        make_pod("a-1", node_name="a", uid="ua1", priority=1),
        make_pod("b-1", node_name="b", uid="ub1", priority=1),
        make_pod("b-2", node_name="b", uid="ub2", priority=1),
    ]
    return FakeCache(nodes, pods)


def test_preempt_keeps_only_nodes_where_the_pod_passes_without_its_victims() -> None:
    service = ExtenderService(framework(["OnePodPerNode"]), cache=_preempt_cache())
    status, reply = post(
        client_for(service),
        "preempt",
        {
            "Pod": make_pod("high", priority=100),
            "NodeNameToVictims": None,
            "NodeNameToMetaVictims": {
                "a": {"Pods": [{"UID": "ua1"}], "NumPDBViolations": 0},
                "b": {"Pods": [{"UID": "ub1"}], "NumPDBViolations": 1},  # b-2 would remain
            },
        },
    )
    assert status == 200
    assert reply == {
        "NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "ua1"}], "NumPDBViolations": 0}}
    }


def test_preempt_with_full_victims_answers_meta_victims() -> None:
    cache = _preempt_cache()
    service = ExtenderService(framework(["OnePodPerNode"]), cache=cache)
    victims = [p for p in cache.pods if p["spec"]["nodeName"] == "b"]
    status, reply = post(
        client_for(service),
        "preempt",
        {
            "Pod": make_pod("high", priority=100),
            "NodeNameToVictims": {"b": {"Pods": victims, "NumPDBViolations": 2}},
            "NodeNameToMetaVictims": None,
        },
    )
    assert status == 200
    assert reply == {
        "NodeNameToMetaVictims": {
            "b": {"Pods": [{"UID": "ub1"}, {"UID": "ub2"}], "NumPDBViolations": 2}
        }
    }


def test_bind_success_and_failure() -> None:
    binder = FakeBinder()
    cache = FakeCache([make_node("n1")])
    client = binding_client(ExtenderService(framework([]), client=binder, cache=cache))
    body = {"PodName": "p", "PodNamespace": "ns", "PodUID": "u1", "Node": "n1"}
    peer = PeerSocket(SCHEDULER)
    assert post(client, "bind", body, peer) == (200, {"Error": ""})
    assert binder.calls == [({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}, "n1")]

    failing = FakeBinder(RuntimeError('pods "p" not found'))
    client = binding_client(ExtenderService(framework([]), client=failing, cache=cache))
    status, reply = post(client, "bind", body, peer)
    assert status == 200
    assert reply["Error"] == 'binding pod ns/p to node n1: pods "p" not found'


def test_keys_are_read_case_insensitively() -> None:
    service = ExtenderService(framework([]), cache=FakeCache(NODES))
    _, reply = post(
        client_for(service), "filter", {"pod": make_pod("p"), "nodes": None, "nodenames": ["node1"]}
    )
    assert reply["NodeNames"] == ["node1"]


@pytest.mark.parametrize(
    ("verb", "body", "needle"),
    [
        ("filter", b"{not json", "not valid JSON"),
        ("filter", b"[]", "JSON object"),
        ("filter", {"Nodes": None, "NodeNames": ["a"]}, "Pod"),
        ("filter", {"Pod": make_pod("p"), "Nodes": None, "NodeNames": None}, "NodeNames"),
        ("filter", {"Pod": make_pod("p"), "NodeNames": "node1"}, "NodeNames"),
        ("filter", {"Pod": {"spec": {}}, "NodeNames": ["a"]}, "metadata.name"),
        ("filter", {"Pod": make_pod("p"), "Nodes": {"items": [{"metadata": {}}]}}, "Nodes"),
        ("prioritize", {"Pod": 3, "NodeNames": ["a"]}, "Pod"),
        ("preempt", {"Pod": make_pod("p")}, "NodeNameToMetaVictims"),
        ("preempt", {"Pod": make_pod("p"), "NodeNameToMetaVictims": {"a": {"Pods": [{}]}}}, "UID"),
        (
            "preempt",
            {
                "Pod": make_pod("p"),
                "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": "1"}},
            },
            "NumPDBViolations",
        ),
        ("bind", {"PodName": "p", "PodNamespace": "ns", "PodUID": "u"}, "Node"),
        ("bind", {"PodName": "", "PodNamespace": "ns", "PodUID": "u", "Node": "n"}, "PodName"),
    ],
)
def test_bad_requests_get_a_4xx_json_body_naming_the_problem(verb, body, needle) -> None:
    client = binding_client(ExtenderService(framework([]), cache=FakeCache(NODES)))
    status, reply = post(client, verb, body, PeerSocket(SCHEDULER))
    assert status == 400
    assert needle in json.dumps(reply), reply
    assert "Traceback" not in json.dumps(reply)


def test_body_over_the_limit_is_413_with_json() -> None:
    client = client_for(ExtenderService(framework([])), max_request_bytes=1000)
    status, reply = post(client, "filter", {"Pod": make_pod("p"), "NodeNames": ["x" * 2000]})
    assert status == 413
    assert "1000 bytes" in reply["error"]


def test_default_limit_fits_a_512mi_container() -> None:
    from extender.config.defaults import DEFAULT_MAX_REQUEST_BYTES as CONFIG_DEFAULT
    from extender.webhook.app import DEFAULT_MAX_REQUEST_BYTES

    # docs/extender.md#memory: up to ~8 MiB of RSS per MiB of full-Node body, plus ~50 MiB.
    assert DEFAULT_MAX_REQUEST_BYTES == CONFIG_DEFAULT
    assert 50 + 8 * (DEFAULT_MAX_REQUEST_BYTES >> 20) < 0.7 * 512


def test_wrong_method_and_unknown_route_are_json() -> None:
    client = client_for(ExtenderService(framework([])))
    response = client.get("/filter")
    assert response.status_code == 405 and response.is_json
    response = client.post("/nope", data=b"{}")
    assert response.status_code == 404 and response.is_json


def test_url_prefix_health_readiness_version_and_metrics() -> None:
    synced = {"ok": False}
    service = ExtenderService(framework([]), cache=FakeCache(NODES), ready=lambda: synced["ok"])
    client = client_for(service, url_prefix="/scheduler/")
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 503
    synced["ok"] = True
    assert client.get("/readyz").status_code == 200
    assert client.get("/version").json["name"] == "kube-extender"
    response = client.post(
        "/scheduler/filter",
        data=orjson.dumps({"Pod": make_pod("p"), "Nodes": None, "NodeNames": ["node1"]}),
        content_type="application/json",
    )
    assert response.status_code == 200
    client.post("/scheduler/filter", data=b"nope", content_type="application/json")
    metrics = client.get("/metrics").data.decode()
    assert 'extender_requests_total{outcome="ok",verb="filter"} 1.0' in metrics
    assert 'extender_requests_total{outcome="bad_request",verb="filter"} 1.0' in metrics
    assert "extender_request_nodes_bucket" in metrics


def test_filter_unresolvable_false_reports_every_rejection_in_failed_nodes() -> None:
    service = ExtenderService(
        framework(["NodeUnschedulable"]), cache=FakeCache(NODES), filter_unresolvable=False
    )
    _, reply = post(
        client_for(service), "filter", {"Pod": make_pod("p"), "Nodes": None, "NodeNames": ["node2"]}
    )
    assert reply["FailedNodes"] == {"node2": "node(s) were unschedulable"}
    assert reply["FailedAndUnresolvableNodes"] == {}


def test_unknown_verb_path_is_counted_warned_once_and_lists_the_verbs(caplog) -> None:
    # A scheduler-side typo (prioritizeVerb: prioritise) used to be a silent 404 (issue 27).
    client = client_for(ExtenderService(framework([])), url_prefix="/scheduler")
    verbs = [f"/scheduler/{v}" for v in ("filter", "prioritize", "preempt", "bind", "explain")]
    with caplog.at_level("DEBUG", logger="extender.webhook.app"):
        for _ in range(3):
            response = client.post("/scheduler/prioritise", data=b"{}")
            assert response.status_code == 404 and response.is_json
            assert response.json["verbs"] == verbs
            assert "/scheduler/prioritise" in response.json["error"]
        client.get("/favicon.ico")
        client.open("/scheduler/x", method="BREW")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 3, warnings  # one for each distinct path; the repeats at debug
    assert "'/scheduler/prioritise'" in warnings[0] and "/scheduler/prioritize" in warnings[0]
    repeats = [
        r for r in caplog.records if r.levelname == "DEBUG" and "prioritise" in r.getMessage()
    ]
    assert len(repeats) == 2
    metrics = client.get("/metrics").data.decode()
    assert 'extender_unknown_path_requests_total{method="POST"} 3.0' in metrics
    assert 'extender_unknown_path_requests_total{method="GET"} 1.0' in metrics
    assert 'extender_unknown_path_requests_total{method="other"} 1.0' in metrics
    # Known paths are not unknown: a wrong method, the disabled bind verb.
    assert client.get("/scheduler/filter").status_code == 405
    assert client.post("/scheduler/bind", data=b"{}").status_code == 404
    metrics = client.get("/metrics").data.decode()
    assert 'extender_unknown_path_requests_total{method="POST"} 3.0' in metrics


def test_unknown_path_warnings_are_bounded(caplog) -> None:
    client = client_for(ExtenderService(framework([])))
    with caplog.at_level("WARNING", logger="extender.webhook.app"):
        for i in range(100):
            assert client.post(f"/flood{i}", data=b"{}").status_code == 404
    assert len(caplog.records) == 64
    metrics = client.get("/metrics").data.decode()
    assert 'extender_unknown_path_requests_total{method="POST"} 100.0' in metrics
