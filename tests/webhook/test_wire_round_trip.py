"""Both halves of the extender protocol against each other: the standalone scheduler's HTTP
extender client (``extender.scheduler.http_extender``) talks to our webhook app through
Flask's test client, so the client's requests must load in the server and the server's
replies must load in the client (one codec, ``extender.wire``)."""

from __future__ import annotations

import orjson
import pytest
from marshmallow import ValidationError

from extender import wire
from extender.framework.handle import MAX_EXTENDER_PRIORITY
from extender.framework.node_info import NodeInfo
from extender.scheduler.http_extender import ExtenderError, HTTPExtender
from extender.webhook.service import ExtenderService
from tests.unit.builders import make_node, make_pod
from tests.webhook.test_contract import SCHEDULER, FakeBinder, FakeCache, PeerSocket, framework


class FlaskSession:
    """A ``requests.Session`` stand-in that posts to a Flask app in process."""

    def __init__(self, app_client: object, prefix: str) -> None:
        self.app_client = app_client
        self.prefix = prefix
        self.bodies: list[dict] = []

    def post(self, url: str, data: bytes, headers: dict, timeout: float) -> object:
        self.bodies.append(orjson.loads(data))
        response = self.app_client.post(  # type: ignore[attr-defined]
            url.removeprefix(self.prefix),
            data=data,
            content_type=headers["Content-Type"],
            environ_base={"gunicorn.socket": PeerSocket(SCHEDULER)},
        )

        class Reply:
            status_code = response.status_code
            content = response.data

        return Reply()


NODES = [make_node("node1"), make_node("node2", unschedulable=True), make_node("node3")]
INFOS = [NodeInfo(n) for n in NODES]


def extender(cache_capable: bool, service: ExtenderService) -> tuple[HTTPExtender, FlaskSession]:
    from extender.webhook.app import create_app

    prefix = "http://extender.test"
    app = create_app(service, bind_enabled=True, allowed_clients=[SCHEDULER])
    session = FlaskSession(app.test_client(), prefix)
    config = {
        "urlPrefix": prefix,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt",
        "bindVerb": "bind",
        "weight": 2,
        "nodeCacheCapable": cache_capable,
    }
    return HTTPExtender(config, session=session), session  # type: ignore[arg-type]


@pytest.mark.parametrize("cache_capable", [True, False])
def test_filter_round_trip_in_both_node_modes(cache_capable: bool) -> None:
    service = ExtenderService(framework(["NodeUnschedulable"]), cache=FakeCache(NODES))
    client, session = extender(cache_capable, service)
    kept, failed, unresolvable = client.filter(make_pod("p"), INFOS)
    assert [n.name for n in kept] == ["node1", "node3"]
    assert failed == {}
    assert unresolvable == {"node2": "node(s) were unschedulable"}
    sent = session.bodies[0]
    assert (sent["NodeNames"] is not None) == cache_capable
    assert (sent["Nodes"] is not None) == (not cache_capable)


def test_prioritize_round_trip() -> None:
    service = ExtenderService(
        framework([], [("NodeNumber", 1)]), cache=FakeCache([make_node("n1"), make_node("n4")])
    )
    client, _ = extender(True, service)
    infos = [NodeInfo(make_node("n1")), NodeInfo(make_node("n4"))]
    scores = client.prioritize(make_pod("p4"), infos)
    assert set(scores) == {"n1", "n4"}
    assert all(0 <= s <= MAX_EXTENDER_PRIORITY for s in scores.values())
    assert scores["n4"] > scores["n1"]


def test_bind_round_trip_and_in_band_error() -> None:
    pod = make_pod("p", uid="u-1")
    binder = FakeBinder(pods={("default", "p"): pod})
    cache = FakeCache(NODES)
    client, _ = extender(True, ExtenderService(framework([]), client=binder, cache=cache))
    client.bind(pod, "node1")
    assert [(p["metadata"]["uid"], node) for p, node in binder.calls] == [("u-1", "node1")]

    failing = FakeBinder(RuntimeError("no"), pods={("default", "p"): pod})
    failing, _ = extender(True, ExtenderService(framework([]), client=failing, cache=cache))
    with pytest.raises(ExtenderError, match="no"):
        failing.bind(pod, "node1")


def test_preemption_round_trip_keeps_the_candidates_that_fit() -> None:
    victim = make_pod("v", node_name="node1", uid="u-v")
    service = ExtenderService(framework(["NodeUnschedulable"]), cache=FakeCache(NODES, [victim]))
    client, session = extender(True, service)
    kept = client.process_preemption(make_pod("p"), {"node1": ([victim], 0), "node2": ([], 0)})
    assert kept == {"node1": (["u-v"], 0)}
    assert session.bodies[0]["NodeNameToMetaVictims"]["node1"]["Pods"] == [{"UID": "u-v"}]


def test_client_rejects_malformed_replies_with_a_clear_error() -> None:
    with pytest.raises(wire.ReplyError, match="NodeNames must be an array"):
        wire.load_filter_result({"NodeNames": "node1"})
    with pytest.raises(wire.ReplyError, match="Score of a must be an integer"):
        wire.load_host_priority_list([{"Host": "a", "Score": "high"}])
    assert wire.load_host_priority_list([{"host": "a", "score": 3}]) == [("a", 3)]
    assert wire.load_binding_result({"error": "boom"}) == "boom"


POD = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}}


@pytest.mark.parametrize(
    "body",
    [
        {"Pod": POD, "Nodes": None, "NodeNames": ["a", "b"]},
        {"Pod": POD, "NodeNames": []},
        {"Pod": {**POD, "spec": None, "status": None}, "Nodes": None, "NodeNames": ["a", "a"]},
        {"Pod": POD, "NodeNames": ["a"], "Extra": 1},  # unknown key: the schema's way
        {"pod": POD, "nodenames": ["a"]},  # another casing: the schema's way
        {"Pod": POD, "Nodes": {"items": []}, "NodeNames": ["a"]},  # Nodes set: the schema's way
        {"Pod": POD, "NodeNames": ["a", 1]},
        {"Pod": POD, "NodeNames": "a"},
        {"Pod": POD, "NodeNames": None},
        {"Pod": {"metadata": {"name": ""}}, "NodeNames": ["a"]},
        {"Pod": {**POD, "spec": []}, "NodeNames": ["a"]},
        {"Pod": [], "NodeNames": ["a"]},
        {"NodeNames": ["a"]},
        {"Pod": POD, "NodeNames": ["a"] * (wire.MAX_NODES + 1)},
    ],
)
def test_names_fast_path_loads_what_the_schema_loads(body: dict) -> None:
    """The direct check of a NodeNames body (``_names_args``) answers what the schema does,
    or leaves the body to it: same args, or the same error."""
    fast = wire._names_args(body)
    try:
        expected = wire._args_schema.load(wire._canonical_keys(body, wire.ARGS_KEYS))
    except ValidationError as exc:
        assert fast is None
        with pytest.raises(ValidationError) as raised:
            wire.load_args(body)
        assert raised.value.messages == exc.messages
        return
    if fast is not None:
        assert fast == expected
        assert fast["pod"] is expected["pod"] and fast["node_names"] is expected["node_names"]
    assert wire.load_args(body) == expected
