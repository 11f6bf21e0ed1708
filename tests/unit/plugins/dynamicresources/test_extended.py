"""Extended resources backed by DRA (DRAExtendedResource): upstream
``extendeddynamicresources.go`` and its cases in ``dynamicresources_test.go``
(``extended-resource-name-with-resources``, ``extended-resource-name-with-node-resource``,
``implicit-extended-resource-name-two-containers-with-resources``, ...), and NodeResourcesFit
leaving such resources to DynamicResources (upstream ``noderesources/fit.go``
``shouldDelegateResourceToDRA``)."""

from __future__ import annotations

import copy

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState
from extender.framework.node_info import NodeInfo
from extender.framework.status import Code
from extender.plugins.dynamicresources.extended import (
    class_resolver,
    requests_and_mappings,
)
from extender.plugins.noderesources.fit import NodeResourcesFit

from .fixtures import (
    CLASS_NAME,
    DRIVER,
    NODE_NAME,
    FakeHandle,
    cycle,
    device_class,
    node,
    node_info,
    node_slice,
    plugin,
)

GPU = "example.com/gpu"


def gpu_class(name: str = CLASS_NAME, created: str = "2026-01-01T00:00:00Z") -> dict:
    c = device_class(name)
    c["spec"]["extendedResourceName"] = GPU
    c["metadata"]["creationTimestamp"] = created
    return c


def gpu_pod(*counts: int, init: tuple[int, ...] = ()) -> dict:
    def container(name: str, count: int) -> dict:
        return {"name": name, "image": "i", "resources": {"requests": {GPU: str(count)}}}

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "my-pod", "namespace": "default", "uid": "1234"},
        "spec": {
            "initContainers": [container(f"init-{i}", c) for i, c in enumerate(init)],
            "containers": [container(f"c-{i}", c) for i, c in enumerate(counts)],
        },
    }


def with_gpus(n: dict, count: int) -> dict:
    n = copy.deepcopy(n)
    n["status"]["allocatable"][GPU] = str(count)
    return n


def test_class_resolver_implicit_names_and_the_newest_class() -> None:
    old, new = gpu_class("old", "2026-01-01T00:00:00Z"), gpu_class("new", "2026-02-01T00:00:00Z")
    resolver = class_resolver([old, new])
    assert resolver[GPU]["metadata"]["name"] == "new"
    assert resolver["deviceclass.resource.kubernetes.io/old"] is old
    # A tie: the smaller name.
    a, b = gpu_class("b"), gpu_class("a")
    assert class_resolver([a, b])[GPU]["metadata"]["name"] == "a"


def test_requests_and_mappings_two_containers() -> None:
    requests, mappings = requests_and_mappings(gpu_pod(1, 2), {GPU: 3}, {GPU: gpu_class()})
    assert requests == [
        {
            "name": "container-0-request-0",
            "exactly": {"deviceClassName": CLASS_NAME, "allocationMode": "ExactCount", "count": 1},
        },
        {
            "name": "container-1-request-0",
            "exactly": {"deviceClassName": CLASS_NAME, "allocationMode": "ExactCount", "count": 2},
        },
    ]
    assert mappings == [
        {"containerName": "c-0", "resourceName": GPU, "requestName": "container-0-request-0"},
        {"containerName": "c-1", "resourceName": GPU, "requestName": "container-1-request-0"},
    ]


def test_requests_and_mappings_init_containers_reuse_and_share_the_largest() -> None:
    # Two init containers run one after the other before c-0 (index 2): the larger one's
    # request serves both; each reuses c-0's device first.
    requests, mappings = requests_and_mappings(
        gpu_pod(1, init=(2, 3)), {GPU: 3}, {GPU: gpu_class()}
    )
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("container-1-request-0", 2),
        ("container-2-request-0", 1),
    ]
    assert mappings == [
        {"containerName": "c-0", "resourceName": GPU, "requestName": "container-2-request-0"},
        {"containerName": "init-0", "resourceName": GPU, "requestName": "container-2-request-0"},
        {"containerName": "init-0", "resourceName": GPU, "requestName": "container-1-request-0"},
        {"containerName": "init-1", "resourceName": GPU, "requestName": "container-2-request-0"},
        {"containerName": "init-1", "resourceName": GPU, "requestName": "container-1-request-0"},
    ]


def fit_filter(handle: FakeHandle, pod: dict, nodes: list[dict]):
    fit = NodeResourcesFit({}, handle)  # type: ignore[arg-type]
    state = CycleState()
    fit.pre_filter(state, pod, [])
    infos = [NodeInfo(n) for n in nodes]
    per_node = [fit.filter(state, pod, info) for info in infos]
    batch = fit.filter_batch(state, pod, NodeTable(infos))
    return per_node, batch


def test_node_resources_fit_leaves_dra_extended_resources_to_dynamic_resources() -> None:
    nodes = [node(), with_gpus(node("plugin"), 1), with_gpus(node("busy"), 0)]
    per_node, batch = fit_filter(FakeHandle(classes=[gpu_class()]), gpu_pod(1), nodes)
    # No allocatable of it: DRA's; a device plugin's node: counted as usual.
    assert per_node == [None, None, None]
    assert batch is not None and list(batch) == [True, True, True]
    per_node, batch = fit_filter(FakeHandle(classes=[gpu_class()]), gpu_pod(2), nodes)
    assert per_node[0] is None and per_node[2] is None
    assert per_node[1] is not None and per_node[1].reasons == (f"Insufficient {GPU}",)
    assert batch is not None and list(batch) == [True, False, True]
    # Without a class the resource is the node's to provide.
    per_node, batch = fit_filter(FakeHandle(), gpu_pod(1), nodes[:1])
    assert per_node[0] is not None and per_node[0].reasons == (f"Insufficient {GPU}",)
    assert batch is None or not np.any(batch)


def run(handle: FakeHandle, pod: dict, nodes: list[dict]):
    pl = plugin(handle)
    state = cycle()
    result, status = pl.pre_filter(state, pod, [])
    assert status is None, status
    return pl, state, {n["metadata"]["name"]: pl.filter(state, pod, node_info(n)) for n in nodes}


def test_extended_resource_allocated_through_a_claim_created_in_prebind() -> None:
    handle = FakeHandle([], [gpu_class()], [node_slice()])
    pod = gpu_pod(1)
    pl, state, statuses = run(handle, pod, [node()])
    assert statuses == {NODE_NAME: None}
    assert pl.reserve(state, pod, NODE_NAME) is None
    assert pl.tracker.in_flight_count() == 1
    pl._wait_for_claim_in_informer = lambda claim: None  # type: ignore[method-assign]
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    assert pl.tracker.in_flight_count() == 0
    verbs = [verb for verb, _ in handle.client.writes]
    # Created, the finalizer in a normal update (as upstream), the status, the pod's status.
    assert verbs == ["create", "update", "update-status", "patch-pod-status"]
    created = handle.client.writes[0][1]
    assert created["metadata"]["generateName"] == "my-pod-extended-resources-"
    assert "name" not in created["metadata"] and "uid" not in created["metadata"]
    assert created["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"
    }
    assert created["spec"]["devices"]["requests"][0]["name"] == "container-0-request-0"
    (stored,) = handle.claims
    results = stored["status"]["allocation"]["devices"]["results"]
    assert [(r["request"], r["driver"], r["device"]) for r in results] == [
        ("container-0-request-0", DRIVER, "instance-1")
    ]
    assert stored["status"]["reservedFor"][0]["uid"] == "1234"
    assert handle.client.writes[3][1] == {
        "status": {
            "extendedResourceClaimStatus": {
                "requestMappings": [
                    {
                        "containerName": "c-0",
                        "resourceName": GPU,
                        "requestName": "container-0-request-0",
                    }
                ],
                "resourceClaimName": "my-pod-extended-resources-abcde",
            }
        }
    }


def test_a_device_plugin_node_needs_no_claim() -> None:
    handle = FakeHandle([], [gpu_class()], [])
    pod = gpu_pod(1)
    pl, state, statuses = run(handle, pod, [with_gpus(node(), 1)])
    assert statuses == {NODE_NAME: None}
    assert pl.reserve(state, pod, NODE_NAME) is None
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    assert handle.client.writes == []


def test_no_devices_and_no_device_plugin() -> None:
    handle = FakeHandle([], [gpu_class()], [])
    _, _, statuses = run(handle, gpu_pod(1), [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("cannot allocate all claims",)


def test_other_extended_resource_the_node_lacks() -> None:
    pod = gpu_pod(1)
    pod["spec"]["containers"][0]["resources"]["requests"]["example.com/fpga"] = "1"
    handle = FakeHandle([], [gpu_class()], [node_slice()])
    _, _, statuses = run(handle, pod, [node()])
    assert statuses[NODE_NAME] is not None
    assert statuses[NODE_NAME].reasons == ("cannot fit resource",)


def test_a_claim_of_an_earlier_cycle_is_deleted_in_postfilter() -> None:
    earlier = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "my-pod-extended-resources-x",
            "namespace": "default",
            "uid": "earlier",
            "resourceVersion": "3",
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [
                {"kind": "Pod", "name": "my-pod", "uid": "1234", "controller": True}
            ],
        },
        "spec": {"devices": {"requests": [{"name": "container-0-request-0"}]}},
    }
    handle = FakeHandle([earlier], [gpu_class()], [node_slice()])
    pod = gpu_pod(1)
    pl, state, statuses = run(handle, pod, [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.reasons == ("cannot schedule extended resource claim",)
    _, post = pl.post_filter(state, pod, statuses)
    assert post.code == Code.UNSCHEDULABLE
    assert post.reasons == ("deletion of ResourceClaim completed",)
    assert [verb for verb, _ in handle.client.writes] == ["update", "delete"]
    assert handle.client.writes[0][1]["metadata"]["finalizers"] == []


def test_failed_pod_status_patch_then_unreserve_deletes_the_created_claim() -> None:
    # upstream "extended-resource-name-with-resources-fail-patch".
    handle = FakeHandle([], [gpu_class()], [node_slice()])
    pod = gpu_pod(1)
    pl, state, _ = run(handle, pod, [node()])
    pl.reserve(state, pod, NODE_NAME)
    pl._wait_for_claim_in_informer = lambda claim: None  # type: ignore[method-assign]

    def broken(namespace: str, name: str, patch: dict) -> dict:
        raise RuntimeError("patch error")

    handle.client.patch_pod_status = broken  # type: ignore[method-assign]
    status = pl.pre_bind(state, pod, NODE_NAME)
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == ("update pod default/my-pod ExtendedResourceClaimStatus: patch error",)
    pl.unreserve(state, pod, NODE_NAME)
    assert [verb for verb, _ in handle.client.writes][-2:] == ["update", "delete"]
    assert handle.claims == []
    assert pl.tracker.in_flight_count() == 0


def test_node_resources_fit_hints_for_dra_extended_resources() -> None:
    from extender.framework.events import QueueingHint
    from extender.plugins.noderesources.fit import is_schedulable_after_device_class_event

    pod = gpu_pod(1)
    with_class = NodeResourcesFit({}, FakeHandle(classes=[gpu_class()]))  # type: ignore[arg-type]
    without = NodeResourcesFit({}, FakeHandle())  # type: ignore[arg-type]
    # A node without the resource: DRA may provide it only with a class.
    assert with_class.is_schedulable_after_node_change(pod, None, node()) == QueueingHint.QUEUE
    assert without.is_schedulable_after_node_change(pod, None, node()) == QueueingHint.QUEUE_SKIP
    # A DeviceClass naming the resource (upstream isSchedulableAfterDeviceClassEvent).
    plain = device_class("other")
    assert is_schedulable_after_device_class_event(pod, None, gpu_class()) == QueueingHint.QUEUE
    assert is_schedulable_after_device_class_event(pod, None, plain) == QueueingHint.QUEUE_SKIP
    assert (
        is_schedulable_after_device_class_event(pod, plain, {**plain, "spec": gpu_class()["spec"]})
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_device_class_event(pod, gpu_class(), gpu_class())
        == QueueingHint.QUEUE_SKIP
    )
