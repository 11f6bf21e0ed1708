"""explain speaks DRA: for a node DynamicResources rejects, the upstream reason stays the Filter
status and the detail says which claim and request got no devices, and why (on dumps, offline)."""

from __future__ import annotations

import json

from extender.dra.structured import diagnose as dg
from extender.explain import render
from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.engine import Explainer, Explanation
from extender.testing import Cluster, node

from .dra_dumps import (
    DRIVER,
    claim,
    device_class,
    dra_pod,
    gpu,
    gpu_cluster,
    request,
    slice_,
)


def explain(cluster: Cluster, pod: dict) -> Explanation:
    config, profile = pick_profile(None, "default-scheduler")
    fwk = dry_run_framework(config, profile, cluster)
    return Explainer(fwk, preemption=False).explain(pod, cluster.snapshot())


def only(ex: Explanation, name: str = "node-0") -> dict:
    verdict = ex.node(name)
    assert verdict.status is not None and verdict.status.plugin == "DynamicResources"
    # upstream's reason, unchanged
    assert verdict.status.reasons == ("cannot allocate all claims",)
    assert len(verdict.devices) == 1, verdict.devices
    return verdict.devices[0]


def test_no_slices_on_the_node() -> None:
    cluster = gpu_cluster(slices=False, objects=[claim("c")])
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert (d["claim"], d["request"], d["reason"]) == ("default/c", "gpu", dg.NO_SLICES)


def test_no_device_of_the_class_and_none_matching_the_selector() -> None:
    other = device_class("nic", 'device.driver == "nic.example.com"')
    wants_nic = request(deviceClassName="nic")
    cluster = gpu_cluster(objects=[other, claim("c", [wants_nic])])
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.NO_MATCH
    assert d["message"] == f"none of the node's 2 devices (driver {DRIVER}) matches DeviceClass nic"

    picky = request(
        selectors=[{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "h100"'}}]
    )
    cluster = gpu_cluster(objects=[claim("c", [picky])])
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.NO_MATCH
    assert d["message"] == "2 devices of DeviceClass gpu, none matches the request's selectors"


def test_all_matching_devices_allocated_names_the_claims() -> None:
    holders = [
        claim("a", allocated=[("node-0", "gpu-0")]),
        claim("b", allocated=[("node-0", "gpu-1")]),
    ]
    cluster = gpu_cluster(objects=[*holders, claim("c")])
    ex = explain(cluster, dra_pod("p", {"gpu": "c"}))
    d = only(ex)
    assert d["reason"] == dg.ALLOCATED
    assert d["message"] == (
        "needs 1 device of DeviceClass gpu: 2 match, 0 free "
        "(2 devices allocated, to claims default/a, default/b)"
    )
    # text and json show it beside the reason
    text = render.table(ex)
    assert "cannot allocate all claims" in text and "to claims default/a, default/b" in text
    node_json = json.loads(render.dumps(render.to_dict(ex), "json"))["nodes"][0]
    assert node_json["reasons"] == ["cannot allocate all claims"]
    assert node_json["detail"] == [f"claim default/c, request gpu: {d['message']}"]
    assert node_json["devices"][0]["reason"] == "DevicesAllocated"


def test_a_device_taint_not_tolerated() -> None:
    taint = {"key": "broken", "value": "ecc", "effect": "NoSchedule"}
    cluster = Cluster(nodes=[node("node-0")])
    cluster.add(device_class())
    cluster.add(slice_("node-0", [gpu("gpu-0", taints=[taint])]))
    cluster.add(claim("c"))
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.TAINTED
    assert "broken=ecc:NoSchedule" in d["message"]


def _partitioned(allocated: bool) -> Cluster:
    """One GPU with 40Gi of memory counters, two partitions of 30Gi each."""
    counters = [{"name": "mem", "counters": {"memory": {"value": "40Gi"}}}]
    parts = [
        gpu(
            f"part-{i}",
            consumesCounters=[{"counterSet": "mem", "counters": {"memory": {"value": "30Gi"}}}],
        )
        for i in range(2)
    ]
    cluster = Cluster(nodes=[node("node-0")])
    cluster.add(device_class())
    cluster.add(slice_("node-0", [], name="counters", count=2, counters=counters))
    cluster.add(slice_("node-0", parts, name="parts", count=2))
    if allocated:
        cluster.add(claim("a", allocated=[("node-0", "part-0")]))
    return cluster


def test_counters_exhausted() -> None:
    cluster = _partitioned(allocated=True)
    cluster.add(claim("c"))
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.COUNTERS
    assert "1 device allocated" in d["message"] and "shared counters are used up" in d["message"]
    # two partitions each fit alone, not together
    cluster = _partitioned(allocated=False)
    cluster.add(claim("c", [request(count=2)]))
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.COUNTERS and "share counters" in d["message"]


def test_capacity_insufficient() -> None:
    shared = gpu("gpu-0", allowMultipleAllocations=True, capacity={"memory": {"value": "8Gi"}})
    cluster = Cluster(nodes=[node("node-0")])
    cluster.add(device_class())
    cluster.add(slice_("node-0", [shared]))
    cluster.add(claim("c", [request(capacity={"requests": {"memory": "16Gi"}})]))
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.CAPACITY and "without enough free capacity" in d["message"]


def test_incomplete_pool() -> None:
    cluster = Cluster(nodes=[node("node-0")])
    cluster.add(device_class())
    cluster.add(slice_("node-0", [gpu("gpu-0")], count=2))
    cluster.add(claim("c"))
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.INCOMPLETE_POOL
    assert f"resource pool {DRIVER}/node-0 is incomplete (1 of 2" in d["message"]


def test_match_attribute_constraint_unmet() -> None:
    cluster = Cluster(nodes=[node("node-0")])
    cluster.add(device_class())
    devices = [gpu("gpu-0"), gpu("gpu-1", attributes={"numa": {"int": 1}})]
    cluster.add(slice_("node-0", devices))
    two = [request("a"), request("b")]
    cluster.add(claim("c", two, constraints=[{"matchAttribute": "numa", "requests": ["a", "b"]}]))
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert (d["request"], d["reason"]) == ("", dg.CONSTRAINT)
    assert "matchAttribute numa over requests a, b" in d["message"]


def test_requests_together_need_more_than_is_free() -> None:
    cluster = gpu_cluster(objects=[claim("c", [request("a"), request("b"), request("x")])])
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["reason"] == dg.COMBINATION and "requests together" in d["message"]
    # two claims, each fits alone
    cluster = gpu_cluster(gpus=1, objects=[claim("c1"), claim("c2")])
    d = only(explain(cluster, dra_pod("p", {"gpu": "c1", "other": "c2"})))
    assert (d["claim"], d["reason"]) == ("", dg.COMBINATION)


def test_a_node_that_fits_has_no_detail_and_the_verdicts_are_unchanged() -> None:
    cluster = gpu_cluster(nodes=2, objects=[claim("a", allocated=[("node-0", "gpu-0")])])
    cluster.add(claim("a2", allocated=[("node-0", "gpu-1")]))
    cluster.add(claim("c"))
    ex = explain(cluster, dra_pod("p", {"gpu": "c"}))
    assert ex.feasible == ["node-1"] and not ex.node("node-1").detail
    assert ex.node("node-0").detail


def test_first_available_says_why_each_subrequest_fails() -> None:
    big = {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 4}
    small = {"name": "small", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 3}
    cluster = gpu_cluster(objects=[claim("c", [{"name": "gpu", "firstAvailable": [big, small]}])])
    d = only(explain(cluster, dra_pod("p", {"gpu": "c"})))
    assert d["request"] == "gpu"
    assert d["reason"] == dg.TOO_FEW
    assert d["message"].startswith("no subrequest fits: big: needs 4 devices")
    assert "; small: needs 3 devices of DeviceClass gpu: 2 match, 2 free" in d["message"]


def test_an_allocated_claim_on_another_node() -> None:
    held = claim("c", allocated=[("node-0", "gpu-0")])
    cluster = gpu_cluster(nodes=2, objects=[held])
    ex = explain(cluster, dra_pod("p", {"gpu": "c"}))
    assert ex.feasible == ["node-0"]
    verdict = ex.node("node-1")
    assert verdict.status is not None
    assert verdict.status.reasons == ("resourceclaim not available on the node",)
    assert [d["reason"] for d in verdict.devices] == ["AllocatedElsewhere"]


def test_the_table_shows_a_groups_most_common_details() -> None:
    holders = [claim(f"h{i}", allocated=[(f"node-{i}", "gpu-0")]) for i in range(5)]
    cluster = gpu_cluster(nodes=5, gpus=1, objects=[*holders, claim("c")])
    ex = explain(cluster, dra_pod("p", {"gpu": "c"}))
    text = render.table(ex)
    assert "    5  DynamicResources: cannot allocate all claims" in text
    assert text.count("to claim default/h") == 3 and "... 2 more (--all-nodes, -o json)" in text
    assert render.table(ex, all_nodes=True).count("to claim default/h") == 5
