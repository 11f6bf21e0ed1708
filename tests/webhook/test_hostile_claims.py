"""Issue 28 through the extender: a filter or prioritize call for a pod whose claim carries a
hostile device selector answers within its budget, per node, instead of holding the worker.

The selectors are the issue's: ``sets.intersects`` of two 990-element lists (the largest the
API server accepts; upstream's runtime cost ~980,000, under the 1,000,000 limit, so it must be
evaluated, as kube-scheduler does), and one that calls ``sets.contains`` once per element of a
985-element list (also under the limit, but each call hands the list to Python anew: slow
here, and bounded by the DRA filter timeout and the pod budget)."""

from __future__ import annotations

import copy

from extender.config import default_profile
from extender.framework import budget
from extender.framework.handle import DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_SLICES, Services
from extender.framework.runtime import Framework
from extender.plugins import in_tree_registry
from extender.webhook.app import Metrics, create_app
from extender.webhook.service import ExtenderService
from tests.unit.builders import make_listers
from tests.unit.plugins.dynamicresources.fixtures import (
    claim,
    device_class,
    node,
    node_slice,
    pod_with_claim_name,
)
from tests.webhook.test_contract import FakeCache, post

NODES = ["gpu-a", "gpu-b"]

LEFT = "[" + ",".join(f"[{i % 10}]" for i in range(990)) + "]"
RIGHT = "[" + ",".join(f"[{10 + i % 10}]" for i in range(990)) + "]"
INTERSECTS = f"sets.intersects({LEFT}, {RIGHT})"
PAIRS = "[" + ",".join(f"[{i}]" for i in range(985)) + "]"
CONTAINS_EACH = f"cel.bind(a, {PAIRS}, a.all(x, sets.contains(a, [x])) && false)"
# Many small library calls: milliseconds a device, and a search that notices its deadline
# within one call (CONTAINS_EACH hands the whole list over on every call: a call past the
# deadline still costs a millisecond or two, for up to 985 calls).
SMALL_CALLS = f"cel.bind(a, {PAIRS}, a.all(x, sets.contains([x], [x])) && false)"


def client(
    expression: str,
    *,
    in_claim: bool,
    pod_budget: float = 10.0,
    filter_timeout=None,
    nodes: list[str] = NODES,
    devices: int = 128,
):
    cls = device_class()
    pending = claim()
    if in_claim:
        request = pending["spec"]["devices"]["requests"][0]["exactly"]
        request["selectors"] = [{"cel": {"expression": expression}}]
    else:
        cls["spec"]["selectors"] = [{"cel": {"expression": expression}}]
    listers = make_listers(
        {
            RESOURCE_CLAIMS: [pending],
            DEVICE_CLASSES: [cls],
            RESOURCE_SLICES: [node_slice(name, devices=devices) for name in nodes],
        }
    )
    profile = copy.deepcopy(default_profile())
    profile.pod_budget = pod_budget
    if filter_timeout is not None:
        profile.plugin_config["DynamicResources"]["filterTimeout"] = filter_timeout
    metrics = Metrics()
    fwk = Framework(profile, in_tree_registry(), Services(listers=listers, metrics=metrics))
    service = ExtenderService(fwk, cache=FakeCache([node(name) for name in nodes]))
    return create_app(service, metrics=metrics).test_client()


def test_the_largest_accepted_selector_gets_a_per_node_answer() -> None:
    for in_claim in (False, True):
        status, reply = post(
            client(INTERSECTS, in_claim=in_claim),
            "filter",
            {"Pod": pod_with_claim_name(), "NodeNames": NODES},
        )
        assert status == 200
        assert not reply.get("Error")
        assert reply["FailedAndUnresolvableNodes"] == {
            name: "cannot allocate all claims" for name in NODES
        }


def test_a_selector_slower_than_the_budget_ends_with_the_budget(monkeypatch) -> None:
    """The search ends at the budget (DynamicResources' own filterTimeout off here: the budget
    reaches the device search, not only the watchdog, held back here so that a loaded machine
    cannot make it the first to act): an Error naming the node, as upstream's filter timeout;
    prioritize fails the same way. One node, so the deadline falls inside its search (seconds
    of devices), never between nodes."""
    monkeypatch.setattr(budget, "GRACE", 30.0)
    app = client(
        SMALL_CALLS,
        in_claim=True,
        pod_budget=0.3,
        filter_timeout="0s",
        nodes=["gpu-a"],
        devices=1024,
    )
    args = {"Pod": pod_with_claim_name(), "NodeNames": ["gpu-a"]}
    status, reply = post(app, "filter", args)
    assert status == 200
    assert reply["Error"] == (
        'running "DynamicResources" filter plugin: node gpu-a: timed out trying to allocate devices'
    )
    status, reply = post(app, "prioritize", args)
    assert status == 500
    assert reply["error"].endswith("node gpu-a: timed out trying to allocate devices")


def test_a_selector_that_hands_big_lists_over_is_ended_too() -> None:
    """Each call of CONTAINS_EACH costs milliseconds even once the deadline has passed: the
    search ends at the deadline or, at the latest, by the watchdog; either way an Error within
    the budget and its grace, never the minutes the search would take."""
    app = client(CONTAINS_EACH, in_claim=True, pod_budget=0.5, filter_timeout="0s")
    status, reply = post(app, "filter", {"Pod": pod_with_claim_name(), "NodeNames": NODES})
    assert status == 200
    assert reply["Error"].endswith(
        ("node gpu-a: timed out trying to allocate devices", "scheduling budget of 0.5s ran out")
    )
