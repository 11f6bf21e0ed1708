"""DynamicResources against real DRA machinery: the upstream kube-controller-manager's
resource-claim controller (claims from ResourceClaimTemplates, ``reservedFor`` cleanup) and
ResourceSlices published through the API as a DRA driver's kubelet plugin would.

``kube-extender run`` allocates and reserves the claims (PreBind writes ``status.allocation``
and ``status.reservedFor``); a pod that cannot get devices gets upstream's FailedScheduling
message, the same one the real kube-scheduler writes, and is scheduled once a slice appears;
and kube-scheduler with our extender schedules a DRA pod where both filters agree.

There is no kubelet: pods never run, so the tests assert bindings and claim statuses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.controlplane import ControlPlane
from extender.kube.errors import ApiError
from extender.scenario.kube import Kube

from .harness import (
    Extender,
    Standalone,
    events_for,
    scheduler_config,
    standalone_config,
    wait_until,
)

PROFILE = "kube-extender"
RESOURCE = "/apis/resource.k8s.io/v1"
# Upstream's message for a pod whose claims fit on no node (DynamicResources Filter, its
# PostFilter, then DefaultPreemption).
NO_DEVICES = (
    "0/{n} nodes are available: {n} cannot allocate all claims. still not schedulable, "
    "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
)


@pytest.fixture(scope="module")
def claim_controller(control_plane: ControlPlane) -> Iterator[None]:
    """The resource-claim controller of kube-controller-manager, for this module's tests."""
    control_plane.start_controller_manager(controllers="resourceclaim-controller")
    try:
        yield
    finally:
        control_plane.stop_component("kube-controller-manager")


# Cluster-scoped objects (classes, slices) a test made, by namespace: deleted after the test.
_cluster_objects: dict[str, list[str]] = {}


@pytest.fixture
def dra(kube: Kube, claim_controller) -> Iterator[Kube]:
    yield kube
    for path in reversed(_cluster_objects.pop(kube.namespace, [])):
        try:
            kube.request("DELETE", path)
        except ApiError:
            pass


def driver(kube: Kube) -> str:
    """A driver name of this test's own, so other tests' slices never match its class."""
    return f"gpu.{kube.namespace}.example.com"


def device_class(kube: Kube, suffix: str = "gpu", expression: str | None = None) -> str:
    """A DeviceClass (removed after the test); by default, every device of this test's driver."""
    name = f"{kube.namespace}-{suffix}"
    if expression is None:
        expression = f'device.driver == "{driver(kube)}"'
    kube.request(
        "POST",
        f"{RESOURCE}/deviceclasses",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        },
    )
    _cluster_objects.setdefault(kube.namespace, []).append(f"{RESOURCE}/deviceclasses/{name}")
    return name


def publish_slice(kube: Kube, node: str, devices: int) -> None:
    """A node-local ResourceSlice with ``gpu-0..N-1``, as a driver's kubelet plugin publishes."""
    name = f"{node}-{driver(kube)}"
    kube.request(
        "POST",
        f"{RESOURCE}/resourceslices",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": driver(kube),
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
                    for i in range(devices)
                ],
            },
        },
    )
    _cluster_objects.setdefault(kube.namespace, []).append(f"{RESOURCE}/resourceslices/{name}")


def claim_template(kube: Kube, class_name: str, name: str = "single-gpu") -> str:
    kube.request(
        "POST",
        f"{RESOURCE}/namespaces/{kube.namespace}/resourceclaimtemplates",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": class_name}}]
                    }
                }
            },
        },
    )
    return name


def gpu_pod(kube: Kube, name: str, template: str) -> None:
    kube.create_pod(
        name,
        cpu="100m",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": template}],
    )


def pod_claim(kube: Kube, pod: str) -> dict:
    """The claim the resource-claim controller generated for the pod."""
    status = (kube.pod(pod) or {}).get("status") or {}
    (entry,) = status["resourceClaimStatuses"]
    return kube.get(
        f"{RESOURCE}/namespaces/{kube.namespace}/resourceclaims/{entry['resourceClaimName']}"
    )


def allocated_devices(claim: dict) -> list[tuple[str, str, str, str]]:
    results = claim["status"]["allocation"]["devices"]["results"]
    return [(r["request"], r["driver"], r["pool"], r["device"]) for r in results]


def standalone(control_plane: ControlPlane, kube: Kube, processes: list) -> None:
    kube.scheduler_name = PROFILE
    sched = Standalone(control_plane, standalone_config(), name=f"standalone-{kube.namespace}")
    processes.append(sched)
    sched.wait_ready()


def test_claims_from_templates_are_allocated_and_reserved(dra, control_plane, processes) -> None:
    kube = dra
    standalone(control_plane, kube, processes)
    ns = kube.namespace
    gpu_node, plain_node = f"{ns}-gpu", f"{ns}-plain"
    kube.create_node(gpu_node)
    kube.create_node(plain_node)
    publish_slice(kube, gpu_node, devices=2)
    template = claim_template(kube, device_class(kube))

    gpu_pod(kube, "first", template)
    gpu_pod(kube, "second", template)
    assert kube.wait_bound("first", timeout=60) == gpu_node
    assert kube.wait_bound("second", timeout=60) == gpu_node
    devices = set()
    for name in ("first", "second"):
        claim = pod_claim(kube, name)
        pod = kube.pod(name)
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}
        ]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
        ((request, drv, pool, device),) = allocated_devices(claim)
        assert (request, drv, pool) == ("gpu", driver(kube), gpu_node)
        devices.add(device)
        # Node-local devices: the allocation pins the claim to the node.
        terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        assert terms == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [gpu_node]}]}
        ]
    # Two pods, two devices: never the same one (the in-flight allocation of the first pod is
    # counted before its PreBind's write reaches the informer).
    assert devices == {"gpu-0", "gpu-1"}

    # A third pod finds no free device: upstream's message, pending until a slice appears.
    gpu_pod(kube, "third", template)
    wait_until(
        lambda: "cannot allocate all claims" in kube.why_pending("third"), 30, "FailedScheduling"
    )
    assert kube.why_pending("third") == NO_DEVICES.format(n=len(nodes_of(kube)))
    failed = wait_until(lambda: events_for(kube, "third", "FailedScheduling"), 10, "the event")
    assert failed[0]["note"] == NO_DEVICES.format(n=len(nodes_of(kube)))
    publish_slice(kube, plain_node, devices=1)
    assert kube.wait_bound("third", timeout=60) == plain_node
    assert allocated_devices(pod_claim(kube, "third")) == [
        ("gpu", driver(kube), plain_node, "gpu-0")
    ]


def nodes_of(kube: Kube) -> list[str]:
    return [n["metadata"]["name"] for n in kube.get("/api/v1/nodes")["items"]]


def test_a_freed_device_goes_to_the_waiting_pod(dra, control_plane, processes) -> None:
    """The resource-claim controller deallocates the claim of a deleted pod; that claim
    update requeues the pod waiting for the device (well before the 5 minutes after which
    unschedulable pods are retried anyway)."""
    kube = dra
    standalone(control_plane, kube, processes)
    node = f"{kube.namespace}-gpu"
    kube.create_node(node)
    publish_slice(kube, node, devices=1)
    template = claim_template(kube, device_class(kube))
    gpu_pod(kube, "holder", template)
    assert kube.wait_bound("holder", timeout=60) == node
    gpu_pod(kube, "waiter", template)
    wait_until(
        lambda: "cannot allocate all claims" in kube.why_pending("waiter"), 30, "FailedScheduling"
    )
    kube.delete_pod("holder")
    assert kube.wait_bound("waiter", timeout=60) == node
    assert allocated_devices(pod_claim(kube, "waiter")) == [("gpu", driver(kube), node, "gpu-0")]


def test_missing_class_then_created(dra, control_plane, processes) -> None:
    kube = dra
    standalone(control_plane, kube, processes)
    node = f"{kube.namespace}-gpu"
    kube.create_node(node)
    publish_slice(kube, node, devices=1)
    class_name = f"{kube.namespace}-gpu"
    template = claim_template(kube, class_name)
    gpu_pod(kube, "waits", template)
    wait_until(
        lambda: "does not exist" in kube.why_pending("waits"), 30, "FailedScheduling (no class)"
    )
    message = kube.why_pending("waits")
    assert f"request gpu: device class {class_name} does not exist" in message, message
    device_class(kube)  # a DeviceClass event requeues the pod
    assert kube.wait_bound("waits", timeout=60) == node


def test_kube_scheduler_agrees_and_the_extender_filter_agrees(
    dra, control_plane, processes, kube_scheduler
) -> None:
    """The real kube-scheduler (its own DynamicResources) with our extender (ours): a DRA pod
    is scheduled where both filters agree, an unschedulable one gets the same message as
    from ``kube-extender run``."""
    kube = dra
    ns = kube.namespace
    gpu_node, plain_node = f"{ns}-gpu", f"{ns}-plain"
    kube.create_node(gpu_node)
    kube.create_node(plain_node)
    publish_slice(kube, gpu_node, devices=1)
    template = claim_template(kube, device_class(kube))
    ext = Extender(
        control_plane,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - schedulerName: kube-extender\n",
        name=f"extender-{ns}",
    )
    processes.append(ext)
    ext.wait_ready()
    kube_scheduler(scheduler_config(ext))
    kube.scheduler_name = "default-scheduler"

    gpu_pod(kube, "via-kube-scheduler", template)
    assert kube.wait_bound("via-kube-scheduler", timeout=60) == gpu_node
    # The extender's own filter answer for a second pod of the same template, once its
    # informers saw the first claim allocated: no node has a free device.
    assert ext.metric("extender_requests_total", verb="filter", outcome="ok") >= 1
    gpu_pod(kube, "no-device", template)
    wait_until(lambda: "cannot allocate all claims" in kube.why_pending("no-device"), 30, "pending")
    upstream = kube.why_pending("no-device")
    assert upstream == NO_DEVICES.format(n=len(nodes_of(kube)))
    names = [gpu_node, plain_node]
    status, reply = ext.post("filter", {"Pod": kube.pod("no-device"), "NodeNames": names})
    assert status == 200, reply
    assert reply["NodeNames"] == [] and not reply.get("Error"), reply
    assert reply["FailedAndUnresolvableNodes"] == {
        name: "cannot allocate all claims" for name in names
    }, reply
    # And for a pod whose claim does not exist yet, no node at all.
    probe = {
        "metadata": {"name": "probe", "namespace": ns, "uid": "probe-uid"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "nope"}]},
    }
    status, reply = ext.post("filter", {"Pod": probe, "NodeNames": names})
    assert status == 200 and reply["NodeNames"] == [], reply


def test_prefilter_rejection_by_another_plugin_gives_kube_schedulers_message(
    kube, control_plane, processes, kube_scheduler
) -> None:
    """DynamicResources' PostFilter also runs when another PreFilter plugin (here
    VolumeBinding) rejected the pod: kube-scheduler v1.36 ends the message with its
    ``not found`` and does not preempt; so do we."""
    kube_scheduler(scheduler_config(None))
    standalone(control_plane, kube, processes)
    kube.create_node(f"{kube.namespace}-n1")
    missing = [{"name": "d", "persistentVolumeClaim": {"claimName": "missing"}}]
    kube.scheduler_name = "default-scheduler"
    kube.create_pod("theirs", volumes=missing)
    kube.scheduler_name = PROFILE
    kube.create_pod("ours", volumes=missing)
    theirs = wait_until(lambda: events_for(kube, "theirs", "FailedScheduling"), 30, "theirs")
    ours = wait_until(lambda: events_for(kube, "ours", "FailedScheduling"), 30, "ours")
    n = len(nodes_of(kube))
    expected = f'0/{n} nodes are available: persistentvolumeclaim "missing" not found. not found'
    assert theirs[-1]["note"] == expected
    assert ours[-1]["note"] == expected


def extended_resource_pod(kube: Kube, name: str, resource: str) -> None:
    kube.request(
        "POST",
        f"/api/v1/namespaces/{kube.namespace}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": kube.namespace},
            "spec": {
                "schedulerName": kube.scheduler_name,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"limits": {resource: "1"}},
                    }
                ],
            },
        },
    )
    kube.created_pods.append(name)


def test_extended_resource_backed_by_dra(dra, control_plane, processes, kube_scheduler) -> None:
    """A pod asking for an extended resource no node advertises gets it through the
    DeviceClass that names it (DRAExtendedResource): kube-extender run creates the claim,
    allocates it and names it in the pod's status, as kube-scheduler does for its own pod."""
    kube = dra
    ns = kube.namespace
    resource = f"{ns}.example.com/gpu"
    class_name = device_class(kube)
    kube.request(
        "PATCH",
        f"{RESOURCE}/deviceclasses/{class_name}",
        {"spec": {"extendedResourceName": resource}},
        content_type="application/merge-patch+json",
    )
    gpu_node = f"{ns}-gpu"
    kube.create_node(gpu_node)
    kube.create_node(f"{ns}-plain")
    publish_slice(kube, gpu_node, devices=2)
    kube_scheduler(scheduler_config(None))
    standalone(control_plane, kube, processes)

    # One after the other: two schedulers do not see each other's in-flight allocations.
    for name in ("ours", "theirs"):
        kube.scheduler_name = PROFILE if name == "ours" else "default-scheduler"
        extended_resource_pod(kube, name, resource)
        assert kube.wait_bound(name, timeout=60) == gpu_node
        status = wait_until(
            lambda n=name: (kube.pod(n) or {}).get("status", {}).get("extendedResourceClaimStatus"),
            30,
            "extendedResourceClaimStatus",
        )
        assert status["requestMappings"] == [
            {
                "containerName": "main",
                "resourceName": resource,
                "requestName": "container-0-request-0",
            }
        ]
        claim = kube.get(f"{RESOURCE}/namespaces/{ns}/resourceclaims/{status['resourceClaimName']}")
        assert claim["metadata"]["annotations"] == {
            "resource.kubernetes.io/extended-resource-claim": "true"
        }
        assert claim["metadata"]["name"].startswith(f"{name}-extended-resources-")
        ((request, drv, pool, _device),) = allocated_devices(claim)
        assert (request, drv, pool) == ("container-0-request-0", driver(kube), gpu_node)
        assert claim["status"]["reservedFor"][0]["name"] == name
    devices = {
        allocated_devices(
            kube.get(
                f"{RESOURCE}/namespaces/{ns}/resourceclaims/"
                + kube.pod(n)["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
            )
        )[0][3]
        for n in ("ours", "theirs")
    }
    assert devices == {"gpu-0", "gpu-1"}


def test_a_hostile_selector_is_answered_in_seconds(dra, control_plane, processes) -> None:
    """Issue 28: ``sets.intersects`` of two 990-element lists (the most the API server takes,
    ~8 KB) against a node of 128 devices took ~195 s of the scheduler for the pod's first
    attempt (pairwise comparison, no deadline inside the evaluation); kube-scheduler 6.6 s."""
    kube = dra
    standalone(control_plane, kube, processes)
    node = f"{kube.namespace}-gpu"
    kube.create_node(node)
    publish_slice(kube, node, devices=128)
    left = "[" + ",".join(f"[{i % 10}]" for i in range(990)) + "]"
    right = "[" + ",".join(f"[{10 + i % 10}]" for i in range(990)) + "]"
    name = device_class(kube, "hostile", f"sets.intersects({left}, {right})")
    gpu_pod(kube, "hostile", claim_template(kube, name))
    wait_until(
        lambda: "cannot allocate all claims" in kube.why_pending("hostile"), 30, "FailedScheduling"
    )
    assert kube.why_pending("hostile") == NO_DEVICES.format(n=len(nodes_of(kube)))
