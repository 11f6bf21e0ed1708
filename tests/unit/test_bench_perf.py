"""bench/perf_workloads.py: every workload builds valid nodes and pods, its init pods occupy
the nodes as upstream's would, and its measured pods fit (or, for preemption, fit only by
preempting) on the default profile: a typo in a template fails here, not after minutes of a
benchmark run."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from bench import perf_workloads as pw
from bench.cluster import BENCH_NAMESPACE
from bench.dra_objects import allocation
from bench.gang import scenario
from extender.config import default_profile
from extender.framework import CycleState, Framework, SchedulingAlgorithm, Snapshot
from extender.framework.schedule import FitError
from extender.plugins import in_tree_registry
from extender.wire_fields import check_node, check_pod

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
QUICK = 20
PODS = [w for w in pw.WORKLOADS if w.kind == "pods"]


def _schedule(nodes: list[dict], pods: list[dict], pod: dict) -> str:
    fwk = Framework(default_profile(), in_tree_registry())
    snapshot = Snapshot.from_objects(nodes, pods)
    return SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod, snapshot).suggested_host


def _init(w: pw.Workload, size: pw.Size, nodes: int) -> list[dict]:
    return [pw.init_pod(w, i, size.init, nodes) for i in range(size.init)]


def test_the_issue_workloads_are_all_there() -> None:
    assert {
        "SchedulingBasic",
        "SchedulingPodAntiAffinity",
        "SchedulingPodAffinity",
        "SchedulingPreferredPodAffinity",
        "SchedulingPreferredPodAntiAffinity",
        "TopologySpreading",
        "PreferredTopologySpreading",
        "SchedulingNodeAffinity",
        "MixedSchedulingBasePod",
        "Unschedulable",
        "PreemptionBasic",
        "SchedulingWithMixedChurn",
        "SteadyStateClusterResourceClaimTemplate",
        "SchedulingWithResourceClaimTemplate",
        "Gang",
    } <= set(pw.BY_NAME)


@pytest.mark.parametrize("w", pw.WORKLOADS, ids=lambda w: w.name)
def test_nodes_are_valid_with_a_hostname_label(w: pw.Workload) -> None:
    for i in (0, 1, 2, 499):
        node = w.node(i)
        check_node(node, "node")
        name = node["metadata"]["name"]
        assert DNS_SUBDOMAIN.match(name)
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name


@pytest.mark.parametrize("w", PODS, ids=lambda w: w.name)
def test_pods_are_valid_and_named_for_the_scheduler(w: pw.Workload) -> None:
    assert w.measured_pod is not None
    pod = w.measured_pod("ks-x-500-00001", "ks-x-500")
    check_pod(pod, "pod")
    assert pod["metadata"]["namespace"] == BENCH_NAMESPACE
    assert pod["spec"]["schedulerName"] == "ks-x-500"
    size, _ = w.size(500)
    for init in _init(w, size, 500)[:5]:
        check_pod(init, "init")
        assert DNS_SUBDOMAIN.match(init["metadata"]["name"])
        assert init["metadata"]["namespace"] == pw.INIT_NAMESPACE
        assert init["spec"]["nodeName"].startswith("node-")


@pytest.mark.parametrize("w", PODS, ids=lambda w: w.name)
def test_a_measured_pod_fits_the_cluster_the_workload_builds(w: pw.Workload) -> None:
    """On the quick size: the measured pod fits the nodes with the init pods bound, except
    PreemptionBasic's, which fits only once low-priority pods are preempted."""
    size, _ = w.size(QUICK)
    nodes = [w.node(i) for i in range(QUICK)]
    init = _init(w, size, QUICK)
    assert w.measured_pod is not None
    pod = w.measured_pod("ks-x-20-00001", "ks-x-20")
    pod["metadata"]["uid"] = "uid-1"
    if w.init_consumed:
        with pytest.raises(FitError):
            _schedule(nodes, init, pod)
        assert _schedule(nodes, [], pod).startswith("node-")
    else:
        assert _schedule(nodes, init, pod).startswith("node-")


def test_churn_pods_fit_no_node() -> None:
    nodes = [pw.plain_node(i) for i in range(3)] + [pw.churn_node(0)]
    pod = pw.high_priority_large_cpu_pod("churn-1")
    check_pod(pod, "churn")
    with pytest.raises(FitError):
        _schedule(nodes, [], pod)


@pytest.mark.parametrize("nodes", [QUICK, 500, 5000])
def test_required_anti_affinity_init_pods_never_share_a_node(nodes: int) -> None:
    for w in (pw.BY_NAME["SchedulingPodAntiAffinity"], pw.BY_NAME["MixedSchedulingBasePod"]):
        size, _ = w.size(nodes)
        green = Counter(
            p["spec"]["nodeName"]
            for p in _init(w, size, nodes)
            if (p["metadata"].get("labels") or {}).get("color") == "green"
        )
        assert green and max(green.values()) == 1


@pytest.mark.parametrize("nodes", [QUICK, 500, 5000])
def test_preemption_init_fills_every_node_with_four_low_priority_pods(nodes: int) -> None:
    w = pw.BY_NAME["PreemptionBasic"]
    size, factor = w.size(nodes)
    assert Counter(p["spec"]["nodeName"] for p in _init(w, size, nodes)) == {
        pw.node_name(i): 4 for i in range(nodes)
    }
    assert size.measure <= nodes  # one 3-CPU pod a node, after preempting three
    if nodes == 5000:
        assert (factor, size.measure) == (0.2, 1000)


def test_scale_applies_to_the_measured_pods_and_keeps_structural_init_counts() -> None:
    basic, _ = pw.BY_NAME["SchedulingBasic"].size(500, 0.5)
    assert (basic.init, basic.measure) == (250, 500)
    preemption, _ = pw.BY_NAME["PreemptionBasic"].size(500, 0.5)
    assert (preemption.init, preemption.measure) == (2000, 250)


@pytest.mark.parametrize("w", [w for w in pw.WORKLOADS if w.kind.startswith("dra")])
def test_dra_sizes_fit_the_devices_and_init_objects_are_valid(w: pw.Workload) -> None:
    for nodes in (QUICK, 500):
        size, _ = w.size(nodes)
        assert size.init + size.measure <= nodes * pw.DRA_DEVICES
        devices = {pw.dra_device(i, nodes) for i in range(size.init)}
        assert len(devices) == size.init
        assert all(int(d.split("-")[1]) < pw.DRA_DEVICES for _, d in devices)
    pod = pw.init_claim_pod("init-00001", "init-claim-00001")
    check_pod(pod, "pod")
    assert pod["spec"]["resourceClaims"][0]["resourceClaimName"] == "init-claim-00001"
    claim = pw.init_claim("init-claim-00001")
    assert claim["metadata"]["namespace"] == pw.INIT_NAMESPACE
    result = allocation("node-00003", "instance-2")["devices"]["results"][0]
    assert (result["pool"], result["device"]) == ("node-00003", "instance-2")


def test_gang_sizes_build_the_bench_gang_scenario() -> None:
    w = pw.BY_NAME["Gang"]
    for nodes in (QUICK, 500, 5000):
        size, _ = w.size(nodes)
        sc = scenario("all", nodes, size.measure // pw.GANG_SIZE, pw.GANG_SIZE, pw.GANG_SIZE)
        assert sc.pods == sc.expected > 0
    assert w.feature_gates == {"GenericWorkload": True, "GangScheduling": True}
