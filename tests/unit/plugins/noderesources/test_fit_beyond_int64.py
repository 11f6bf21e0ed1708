"""Requests beyond int64 (issue 28): never placed where they do not fit by value.

Go's ``Quantity.Value()`` overflows past int64 and this project saturates there; a saturated
*request* would equal a saturated allocatable and "fit". NodeResourcesFit refuses such a pod in
PreFilter (UnschedulableAndUnresolvable, one constant reason naming the resource and the
amount); a node's allocatable beyond int64 still compares as at least ``MAX_INT64``."""

from __future__ import annotations

import pytest

from extender import testing
from extender.cache import Cache
from extender.framework.cycle_state import CycleState
from extender.framework.quantity import (
    BEYOND_INT64,
    MAX_INT64,
    exceeds_int64,
    request_int_value,
)
from extender.framework.status import Code
from extender.plugins.noderesources.fit import (
    NodeResourcesFit,
    beyond_int64_reason,
)
from extender.plugins.volume_util import find_matching_volume
from tests.unit.builders import make_node, make_pod

from ..helpers import cycle, filter_all

# Allocatable that saturates (or sits exactly at) int64 in the compared unit.
HUGE = {
    "ephemeral-storage": "9223372036854775807",
    "example.com/gpu": "1e30",
    "hugepages-2Mi": "8Ei",
}


def huge_node(name: str = "n") -> dict:
    return make_node(name, cpu="1e30", memory="1e30", extra_allocatable=HUGE)


def requests(**amounts: object) -> dict:
    return {"resources": {"requests": {k.replace("_", "-"): v for k, v in amounts.items()}}}


def container(name: str = "c", **amounts: object) -> dict:
    return {"name": name, **requests(**amounts)}


@pytest.mark.parametrize(
    ("value", "scale", "beyond"),
    [
        ("9223372036854775807", 0, False),
        ("9223372036854775808", 0, True),
        ("8Ei", 0, True),
        ("7Ei", 0, False),
        ("9223372036854775807m", 3, False),
        ("9223372036854775808m", 3, True),
        ("9223372036854775807", 3, True),  # fine as a quantity, beyond int64 in milli
        ("9223372036854775", 3, False),
        (9223372036854775807, 3, True),  # a JSON number
        ("-8Ei", 0, False),  # exactly MIN_INT64
        ("-9223372036854775809", 0, True),
        ("1e999999", 0, True),
        ("1" * 5000, 0, True),
        ("0.5", 0, False),
    ],
)
def test_exceeds_int64(value: object, scale: int, beyond: bool) -> None:
    assert exceeds_int64(value, scale) is beyond


def test_a_request_beyond_int64_is_more_than_any_saturated_capacity() -> None:
    assert request_int_value("8Ei") == BEYOND_INT64 > MAX_INT64
    assert request_int_value("9223372036854775807") == MAX_INT64
    assert request_int_value("1Gi") == 1 << 30


def reason(resource: str, quantity: str) -> str:
    return (
        f"pod requests {resource} {quantity}, beyond the largest quantity a scheduler can "
        "compare (int64)"
    )


@pytest.mark.parametrize(
    ("spec", "resource", "quantity"),
    [
        ({"containers": [container(ephemeral_storage="8Ei")]}, "ephemeral-storage", "8Ei"),
        ({"containers": [container(cpu="9223372036854775807")]}, "cpu", "9223372036854775807"),
        ({"containers": [container(cpu=9223372036854775807)]}, "cpu", "9223372036854775807"),
        ({"containers": [container(memory="1e19")]}, "memory", "1e19"),
        ({"containers": [container(**{"example.com/gpu": "1e19"})]}, "example.com/gpu", "1e19"),
        ({"containers": [container(hugepages_2Mi="16Ei")]}, "hugepages-2Mi", "16Ei"),
        # an init container, a sidecar, overhead, pod-level resources
        (
            {"containers": [container()], "initContainers": [container(memory="8Ei")]},
            "memory",
            "8Ei",
        ),
        (
            {
                "containers": [container()],
                "initContainers": [{**container(memory="8Ei"), "restartPolicy": "Always"}],
            },
            "memory",
            "8Ei",
        ),
        ({"containers": [container()], "overhead": {"cpu": "1e17"}}, "cpu", "1e17"),
        (
            {"containers": [container(cpu="1")], "resources": {"requests": {"cpu": "1e16"}}},
            "cpu",
            "1e16",
        ),
        # each part fits int64, the pod's total does not: named as the total
        (
            {"containers": [container("a", memory="5Ei"), container("b", memory="5Ei")]},
            "memory",
            str(10 << 60),
        ),
        (
            {"containers": [container("a", cpu="5e15"), container("b", cpu="5e15")]},
            "cpu",
            "10000000000000000000m",
        ),
        # a long (hostile) quantity is named, cut short
        (
            {"containers": [container(memory="1" * 5000)]},
            "memory",
            "1" * 37 + "...",
        ),
    ],
)
def test_a_request_beyond_int64_is_refused_once_in_pre_filter(
    spec: dict, resource: str, quantity: str
) -> None:
    pod = make_pod("p", containers=spec.pop("containers"), **spec)
    plugin = NodeResourcesFit({}, testing.handle())
    state, snapshot = cycle([huge_node("a"), huge_node("b")])
    _, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (reason(resource, quantity),)
    assert status.reasons == (beyond_int64_reason(resource, quantity),)


def test_in_range_requests_fit_a_node_whose_allocatable_is_beyond_int64() -> None:
    # The node's real allocatable is larger than anything in range: never a smaller number.
    pod = make_pod(
        "p",
        containers=[
            container(
                cpu="9223372036854775",
                memory="9223372036854775807",
                ephemeral_storage="7Ei",
                **{"example.com/gpu": "9223372036854775807", "hugepages-2Mi": "1Gi"},
            )
        ],
    )
    assert filter_all(NodeResourcesFit({}, testing.handle()), pod, [huge_node()]) == {"n": None}


def test_an_ignored_resource_is_not_compared_so_not_refused() -> None:
    pod = make_pod("p", containers=[container(**{"example.com/gpu": "1e30"})])
    plugin = NodeResourcesFit({"ignoredResources": ["example.com/gpu"]}, testing.handle())
    assert filter_all(plugin, pod, [make_node("n")]) == {"n": None}
    plugin = NodeResourcesFit({"ignoredResourceGroups": ["example.com"]}, testing.handle())
    assert filter_all(plugin, pod, [make_node("n")]) == {"n": None}


def test_the_node_hint_skips_a_pod_no_node_can_take() -> None:
    from extender.framework.events import QueueingHint

    pod = make_pod("p", containers=[container(ephemeral_storage="8Ei")])
    plugin = NodeResourcesFit({}, testing.handle())
    assert plugin.is_schedulable_after_node_change(pod, None, huge_node()) == (
        QueueingHint.QUEUE_SKIP
    )


def test_many_large_pods_on_a_node_sum_exactly_in_the_pod_cache() -> None:
    """The standalone pod cache's per-node sums neither wrap nor saturate: 4 pods of 4Ei each
    hold 16Ei (beyond int64), so not one more byte fits on a node of 8Ei and more; the
    snapshot's node table declines (not exact) rather than wrapping in int64 columns."""
    cache = Cache()
    cache.add_node(huge_node())
    bound = [
        make_pod(f"b{i}", node_name="n", containers=[container(ephemeral_storage="4Ei")])
        for i in range(4)
    ]
    for pod in bound:
        cache.add_pod(pod)
    snapshot = cache.snapshot()
    assert snapshot.get("n").requested.ephemeral_storage == 16 << 60
    one_byte = make_pod("p", containers=[container(ephemeral_storage="1")])
    plugin = NodeResourcesFit({}, testing.handle())
    state = CycleState()
    state.snapshot = snapshot
    assert plugin.pre_filter(state, one_byte, snapshot.node_info_list) == (None, None)
    status = plugin.filter(state, one_byte, snapshot.get("n"))
    assert status is not None and status.reasons == ("Insufficient ephemeral-storage",)
    assert plugin.filter_batch(state, one_byte, snapshot.table) is None
    cache.remove_pod(bound[0])
    assert cache.snapshot().get("n").requested.ephemeral_storage == 12 << 60


def test_a_claim_beyond_int64_matches_no_saturated_volume() -> None:
    claim = {
        "metadata": {"name": "c", "namespace": "default", "uid": "u"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "8Ei"}},
            "storageClassName": "",
        },
    }
    volume = {
        "metadata": {"name": "v"},
        "spec": {
            "capacity": {"storage": "9223372036854775807"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
        },
        "status": {"phase": "Available"},
    }
    assert find_matching_volume(claim, [volume], None, set()) is None
    volume["spec"]["capacity"]["storage"] = "1e30"  # saturates too: still not known to fit
    assert find_matching_volume(claim, [volume], None, set()) is None
    claim["spec"]["resources"]["requests"]["storage"] = "7Ei"
    assert find_matching_volume(claim, [volume], None, set()) is volume
