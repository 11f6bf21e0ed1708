"""POST /explain: the filter body in, the explain -o json shape out (docs/explain.md)."""

from __future__ import annotations

import orjson

from extender.config.loader import default_config
from extender.framework.runtime import Framework
from extender.framework.snapshot import Snapshot
from extender.testing import node, pod
from extender.webhook.app import create_app
from extender.webhook.service import ExtenderService


class Cache:
    def __init__(self, nodes: list[dict], pods: list[dict]) -> None:
        self.nodes, self.pods = nodes, pods

    def snapshot(self) -> Snapshot:
        return Snapshot.from_objects(self.nodes, self.pods)


class NoWrites:
    def __getattr__(self, name: str):
        raise AssertionError(f"/explain wrote through client.{name}")


def service() -> tuple[ExtenderService, list[dict], list[dict]]:
    nodes = [node("a", cpu="2"), node("b", cpu="4"), node("c", unschedulable=True)]
    pods = [pod("low", cpu="3", node_name="b", priority=0), pod("x", cpu="1", node_name="a")]
    config = default_config("default-scheduler")
    fwk = Framework(config.profiles[0], config.registry)
    return ExtenderService(fwk, cache=Cache(nodes, pods), client=NoWrites()), nodes, pods


def post(body: dict) -> tuple[int, dict]:
    svc, _, _ = service()
    client = create_app(svc).test_client()
    response = client.post("/explain", data=orjson.dumps(body), content_type="application/json")
    return response.status_code, orjson.loads(response.data)


def test_node_names_mode_answers_every_node_with_plugin_and_scores() -> None:
    status, data = post({"Pod": pod("p", cpu="1"), "NodeNames": ["a", "b", "c", "gone"]})
    assert status == 200
    assert data["version"] == 1 and data["verdict"] == "Schedulable"
    assert data["missingNodes"] == ["gone"]
    by_name = {n["name"]: n for n in data["nodes"]}
    assert set(by_name) == {"a", "b", "c"}
    assert by_name["c"]["plugin"] == "NodeUnschedulable"
    assert by_name["a"]["fits"] and "NodeResourcesFit" in by_name["a"]["scores"]
    assert data["chosen"]


def test_nodes_mode_and_a_dry_run_preemption_that_writes_nothing() -> None:
    _, nodes, _ = service()
    status, data = post({"Pod": pod("big", cpu="3", priority=10), "Nodes": {"items": nodes}})
    assert status == 200
    assert data["verdict"] == "Unschedulable"
    assert data["fitError"].startswith(
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    )
    assert data["preemption"]["node"] == "b"
    assert data["preemption"]["victims"] == [{"namespace": "default", "name": "low", "priority": 0}]


def test_a_bad_body_is_a_400() -> None:
    status, data = post({"Pod": pod("p")})
    assert status == 400 and "error" in data
