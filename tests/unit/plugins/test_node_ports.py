"""NodePorts (upstream ``pkg/scheduler/framework/plugins/nodeports``): PreFilter, Filter conflict
rules, queueing hint."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from extender.framework.node_info import NodeInfo
from extender.framework.status import Code
from extender.plugins.node_ports import (
    PRE_FILTER_KEY,
    NodePorts,
    check_conflict,
    is_schedulable_after_pod_deleted,
)
from tests.unit.builders import make_node, make_pod

from .helpers import cycle, filter_all

CONFLICT = (Code.UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",))


def port(host_port: int, ip: str | None = None, protocol: str | None = None) -> dict:
    spec: dict = {"containerPort": 8080, "hostPort": host_port}
    if ip is not None:
        spec["hostIP"] = ip
    if protocol is not None:
        spec["protocol"] = protocol
    return spec


def with_ports(name: str, *ports: dict, node: str | None = None, **fields: object) -> dict:
    return make_pod(
        name, node_name=node, containers=[{"name": "c", "ports": list(ports)}], **fields
    )


def run(wanted: list[dict], existing: list[list[dict]]) -> tuple | None:
    pods = [with_ports(f"old{i}", *ports, node="n") for i, ports in enumerate(existing)]
    return filter_all(
        NodePorts({}, testing.handle()), with_ports("new", *wanted), [make_node("n")], pods
    )["n"]


@pytest.mark.parametrize(
    ("wanted", "existing", "fits"),
    [
        pytest.param([port(80)], [], True, id="empty-node"),
        pytest.param([port(81)], [[port(80)]], True, id="other-port"),
        pytest.param([port(80)], [[port(80)]], False, id="same-port"),
        pytest.param([port(80, protocol="UDP")], [[port(80)]], True, id="other-protocol"),
        pytest.param([port(80, protocol="TCP")], [[port(80)]], False, id="empty-protocol-is-TCP"),
        pytest.param([port(80, protocol="SCTP")], [[port(80, protocol="SCTP")]], False, id="sctp"),
        pytest.param(
            [port(80, "127.0.0.1")], [[port(80, "127.0.0.2")]], True, id="different-host-ips"
        ),
        pytest.param([port(80, "127.0.0.1")], [[port(80, "127.0.0.1")]], False, id="same-host-ip"),
        pytest.param(
            [port(80, "127.0.0.1")], [[port(80)]], False, id="specific-vs-existing-wildcard"
        ),
        pytest.param(
            [port(80)], [[port(80, "127.0.0.1")]], False, id="wildcard-vs-existing-specific"
        ),
        pytest.param(
            [port(80, "0.0.0.0")], [[port(80, "10.0.0.1")]], False, id="explicit-wildcard"
        ),
        pytest.param(
            [port(80, "127.0.0.1", "UDP")],
            [[port(80, "0.0.0.0", "TCP")]],
            True,
            id="wildcard-other-protocol",
        ),
        pytest.param(
            [port(8001), port(8002), port(8003)],
            [[port(9000)], [port(8003, "10.0.0.1")]],
            False,
            id="one-of-several",
        ),
        pytest.param(
            [port(80)], [[{"containerPort": 80}]], True, id="existing-container-port-only"
        ),
    ],
)
def test_filter(wanted: list[dict], existing: list[list[dict]], fits: bool) -> None:
    assert run(wanted, existing) == (None if fits else CONFLICT)


def test_pre_filter_collects_sanitized_ports_of_containers_and_sidecars() -> None:
    pod = make_pod(
        "p",
        containers=[
            {"name": "a", "ports": [port(80), {"containerPort": 90}, port(0)]},
            {"name": "b", "ports": [port(53, "10.0.0.1", "UDP")]},
        ],
        initContainers=[
            {"name": "sidecar", "restartPolicy": "Always", "ports": [port(9000)]},
            {"name": "init", "ports": [port(9001)]},  # runs to completion: not counted
        ],
    )
    state = CycleState()
    result, status = NodePorts({}, testing.handle()).pre_filter(state, pod, [])
    assert (result, status) == (None, None)
    assert sorted(state.read(PRE_FILTER_KEY).ports) == [
        ("0.0.0.0", "TCP", 80),
        ("0.0.0.0", "TCP", 9000),
        ("10.0.0.1", "UDP", 53),
    ]


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(make_pod("p"), id="no-ports"),
        pytest.param(with_ports("p", {"containerPort": 80}), id="container-port-only"),
        pytest.param(with_ports("p", port(0)), id="host-port-zero"),
        pytest.param(
            make_pod("p", initContainers=[{"name": "i", "ports": [port(80)]}]),
            id="plain-init-container",
        ),
    ],
)
def test_pre_filter_skips_without_host_ports(pod: dict) -> None:
    state = CycleState()
    result, status = NodePorts({}, testing.handle()).pre_filter(state, pod, [])
    assert result is None and status is not None and status.code == Code.SKIP
    assert state.get(PRE_FILTER_KEY) is None


def test_existing_sidecar_ports_are_used_but_plain_init_ports_are_not() -> None:
    existing = make_pod(
        "old",
        node_name="n",
        initContainers=[
            {"name": "s", "restartPolicy": "Always", "ports": [port(9000)]},
            {"name": "i", "ports": [port(9001)]},
        ],
    )
    plugin = NodePorts({}, testing.handle())
    nodes = [make_node("n")]
    assert filter_all(plugin, with_ports("a", port(9000)), nodes, [existing])["n"] == CONFLICT
    assert filter_all(plugin, with_ports("b", port(9001)), nodes, [existing])["n"] is None


def test_wanted_sidecar_port_conflicts() -> None:
    pod = make_pod(
        "new", initContainers=[{"name": "s", "restartPolicy": "Always", "ports": [port(443)]}]
    )
    existing = with_ports("old", port(443), node="n")
    assert (
        filter_all(NodePorts({}, testing.handle()), pod, [make_node("n")], [existing])["n"]
        == CONFLICT
    )


def test_removing_the_holder_frees_the_port() -> None:
    # what preemption simulates: a clone of the node without the victim
    holder = with_ports("old", port(80), node="n")
    pod = with_ports("new", port(80))
    state, snapshot = cycle([make_node("n")], [holder])
    plugin = NodePorts({}, testing.handle())
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    info = snapshot.get("n")
    status = plugin.filter(state, pod, info)
    assert status is not None and (status.code, status.reasons) == CONFLICT
    clone = info.clone()
    clone.remove_pod(clone.pods[0].key)
    assert plugin.filter(state, pod, clone) is None
    assert plugin.filter(state, pod, info) is not None  # the original is untouched


def test_filter_without_pre_filter_is_an_error() -> None:
    status = NodePorts({}, testing.handle()).filter(
        CycleState(), with_ports("p", port(80)), NodeInfo(make_node("n"))
    )
    assert status is not None and status.code == Code.ERROR


def test_check_conflict_rules() -> None:
    used = {"10.0.0.1": {("TCP", 80)}, "0.0.0.0": {("UDP", 53)}}
    assert check_conflict(used, "0.0.0.0", "TCP", 80)
    assert check_conflict(used, "", "", 80)  # empty IP/protocol mean 0.0.0.0/TCP
    assert check_conflict(used, "10.0.0.1", "TCP", 80)
    assert not check_conflict(used, "10.0.0.2", "TCP", 80)
    assert check_conflict(used, "10.0.0.2", "UDP", 53)  # existing wildcard covers every IP
    assert not check_conflict(used, "0.0.0.0", "TCP", 0)  # port 0 never conflicts


# -- queueing ---------------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = NodePorts({}, testing.handle()).events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE),
        ClusterEvent(Resource.NODE, ActionType.ADD),
    ]
    assert events[0].hint is is_schedulable_after_pod_deleted
    assert events[1].hint is None


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        pytest.param(with_ports("d", port(80), node="n"), QUEUE, id="freed-wanted-port"),
        pytest.param(with_ports("d", port(81), node="n"), SKIP, id="freed-other-port"),
        pytest.param(with_ports("d", port(80)), SKIP, id="never-assigned"),
        pytest.param(
            {**with_ports("d", port(80)), "status": {"nominatedNodeName": "n"}},
            QUEUE,
            id="nominated-only",
        ),
        pytest.param(make_pod("d", node_name="n"), SKIP, id="no-host-ports"),
        pytest.param(
            with_ports("d", port(80, "10.0.0.1"), node="n"), QUEUE, id="specific-ip-vs-wildcard"
        ),
        pytest.param(
            with_ports("d", port(80, protocol="UDP"), node="n"), SKIP, id="other-protocol"
        ),
    ],
)
def test_pod_deleted_hint(deleted: dict, hint: QueueingHint) -> None:
    pod = with_ports("p", port(80))
    assert is_schedulable_after_pod_deleted(pod, deleted, None) == hint


def test_pod_deleted_hint_specific_ips() -> None:
    pod = with_ports("p", port(80, "10.0.0.1"))
    assert (
        is_schedulable_after_pod_deleted(pod, with_ports("d", port(80, "10.0.0.2"), node="n"), None)
        == SKIP
    )
    assert is_schedulable_after_pod_deleted(pod, with_ports("d", port(80), node="n"), None) == QUEUE
