"""Hostile cluster objects (issue 28), shared by ``tests/e2e/test_hostile.py`` (outcomes and
bounds) and ``bench/hostile.py`` (timings, against kube-scheduler): objects any user who may
create a pod or a ResourceClaim in their namespace (or a node agent) can feed a scheduler.

Every case creates its objects through a ``Kube`` client (``extender.scenario.kube``; passed
in, not imported, so another tree's ``extender`` can be measured with them), a clean node for
the canary (tainted so that no hostile pod lands there), then the hostile pods; the canary is
a small pod that tolerates that taint and is pinned to that node. A case says which words the
hostile pods' FailedScheduling message may contain (any of them), or that they must bind.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

RESOURCE = "/apis/resource.k8s.io/v1"
CANARY = "canary"
CANARY_TAINT = "hostile.e2e.io/canary"

# The largest list the API server accepts in ``heavy_selector``: one more element and
# ``validateCELSelector`` refuses it, "too complex, exceeds cost limit" (its cost estimate goes
# over ``CELSelectorExpressionMaxCost``, 1,000,000; measured on kube-apiserver v1.36.3).
LARGEST_ACCEPTED = 998
DEVICES = 128  # devices in the one slice of the selector cases (issue 28)


def heavy_selector(size: int = LARGEST_ACCEPTED) -> str:
    """``sets.intersects`` of two disjoint lists of ``size`` 2-element lists: true of no device,
    and every pair is compared (size² list comparisons) before that is known. The lists are
    built of two bound variables so that the largest accepted size fits the 10 KiB limit on
    the expression's length."""
    a = ", ".join(["a"] * size)
    b = ", ".join(["b"] * size)
    return f"cel.bind(a, [1, 2], cel.bind(b, [3, 4], sets.intersects([{a}], [{b}])))"


def driver(tag: str) -> str:
    return f"gpu.{tag}.example.com"


def device_class(name: str, expression: str) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def resource_slice(tag: str, node: str, devices: int) -> dict:
    """A node-local slice of ``devices`` devices, as a driver's kubelet plugin publishes it."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-slice"},
        "spec": {
            "driver": driver(tag),
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(devices)
            ],
        },
    }


def resource_claim(name: str, class_name: str, selector: str | None = None) -> dict:
    request: dict[str, Any] = {"deviceClassName": class_name}
    if selector is not None:
        request["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }


def pod(
    name: str,
    scheduler: str,
    *,
    requests: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    claim: str | None = None,
    **spec: Any,
) -> dict:
    """A pause pod (grace 0); ``claim``: the name of a ResourceClaim its container uses."""
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if claim:
        resources["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    if resources:
        container["resources"] = resources
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [container],
            **spec,
        },
    }


def create_pod(kube: Any, body: dict) -> None:
    body["metadata"]["namespace"] = kube.namespace
    kube.request("POST", f"/api/v1/namespaces/{kube.namespace}/pods", body)
    kube.created_pods.append(body["metadata"]["name"])


def create_pods(kube: Any, bodies: list[dict]) -> None:
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda body: create_pod(kube, body), bodies))


def canary_node(tag: str) -> str:
    return f"{tag}-canary"


def create_canary_node(kube: Any, tag: str) -> None:
    """A clean node only the canary tolerates."""
    kube.create_node(
        canary_node(tag),
        labels={CANARY_TAINT: tag},
        taints=[{"key": CANARY_TAINT, "value": tag, "effect": "NoSchedule"}],
    )


def canary_pod(tag: str, scheduler: str, name: str = CANARY) -> dict:
    return pod(
        name,
        scheduler,
        requests={"cpu": "10m", "memory": "16Mi"},
        nodeSelector={CANARY_TAINT: tag},
        tolerations=[{"key": CANARY_TAINT, "operator": "Equal", "value": tag}],
    )


def set_ephemeral_storage(kube: Any, node: str, size: str) -> None:
    """Add ``ephemeral-storage`` to the node's capacity and allocatable (the kubelet reports it;
    ``Kube.create_node`` does not)."""
    kube.request(
        "PATCH",
        f"/api/v1/nodes/{node}/status",
        {
            "status": {
                "capacity": {"ephemeral-storage": size},
                "allocatable": {"ephemeral-storage": size},
            }
        },
        content_type="application/merge-patch+json",
    )


@dataclass
class Case:
    """``setup(kube, tag)`` creates the cluster objects (nodes, slices, classes, claims);
    ``hostile(tag, scheduler)`` the hostile pods' bodies; ``reasons``: words any of which the
    hostile pods' FailedScheduling message must contain, or empty: they must bind."""

    name: str
    what: str
    setup: Callable[[Any, str], None]
    hostile: Callable[[str, str], list[dict]]
    reasons: tuple[str, ...] = ()


# -- the heavy selectors (issue 28: the canary waited 190.6 s and 177.4 s) -------------------

# What a bounded DRA filter may answer for the heavy selectors: the selector matched no device
# (evaluated in full, as kube-scheduler does), the DRA filter timeout (10 s), the CEL cost limit.
SELECTOR_REASONS = ("cannot allocate all claims", "timed out", "cost limit")


def _gpu_node(kube: Any, tag: str) -> None:
    node = f"{tag}-gpu"
    kube.create_node(node)
    kube.create(f"{RESOURCE}/resourceslices", resource_slice(tag, node, DEVICES))


def _class_selector_setup(kube: Any, tag: str) -> None:
    _gpu_node(kube, tag)
    expression = f'device.driver == "{driver(tag)}" && {heavy_selector()}'
    kube.create(f"{RESOURCE}/deviceclasses", device_class(f"{tag}-heavy", expression))
    kube.create(
        kube.namespaced(RESOURCE, "resourceclaims"), resource_claim("heavy", f"{tag}-heavy")
    )


def _claim_selector_setup(kube: Any, tag: str) -> None:
    _gpu_node(kube, tag)
    cheap = f'device.driver == "{driver(tag)}"'
    kube.create(f"{RESOURCE}/deviceclasses", device_class(f"{tag}-cheap", cheap))
    claim = resource_claim("heavy", f"{tag}-cheap", selector=heavy_selector())
    kube.create(kube.namespaced(RESOURCE, "resourceclaims"), claim)


def _claim_pod(tag: str, scheduler: str) -> list[dict]:
    return [pod("hostile", scheduler, requests={"cpu": "100m"}, claim="heavy")]


CLASS_SELECTOR = Case(
    "class-selector",
    f"DeviceClass selector sets.intersects of two {LARGEST_ACCEPTED}-element lists, "
    f"{DEVICES} devices",
    _class_selector_setup,
    _claim_pod,
    SELECTOR_REASONS,
)
CLAIM_SELECTOR = Case(
    "claim-selector",
    f"the same selector in the claim's request, cheap class, {DEVICES} devices",
    _claim_selector_setup,
    _claim_pod,
    SELECTOR_REASONS,
)

# -- taints x tolerations (issue 28: 22-32 s) -------------------------------------------------

TAINTED_NODES, TAINTS, TOLERATIONS = 100, 300, 5000
TAINTED_LABEL = "hostile.e2e.io/tainted"


def _taints_setup(kube: Any, tag: str, nodes: int = TAINTED_NODES) -> None:
    def create(i: int) -> None:
        taints = [
            {"key": f"hostile.e2e.io/t-{i}-{j}", "value": "x", "effect": "NoSchedule"}
            for j in range(TAINTS)
        ]
        kube.create_node(f"{tag}-t{i:03d}", labels={TAINTED_LABEL: tag}, taints=taints)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(nodes)))


def _tolerating_pod(tag: str, scheduler: str) -> list[dict]:
    """5000 tolerations of taints no node has: each node's every taint is checked against all."""
    tolerations = [
        {"key": f"hostile.e2e.io/other-{k}", "operator": "Exists", "effect": "NoSchedule"}
        for k in range(TOLERATIONS)
    ]
    return [
        pod(
            "hostile",
            scheduler,
            requests={"cpu": "10m"},
            nodeSelector={TAINTED_LABEL: tag},
            tolerations=tolerations,
        )
    ]


TAINTS_CASE = Case(
    "taints",
    f"{TAINTED_NODES} nodes x {TAINTS} distinct taints, a pod with {TOLERATIONS} tolerations",
    _taints_setup,
    _tolerating_pod,
    ("untolerated taint",),
)

# -- quantities beyond int64 -----------------------------------------------------------------

# The API server stores a pod's 8Ei (2^63) as 2^63 - 1, the largest int64; two such requests
# in one pod (two containers, or a container and a sidecar) sum to 2^64 - 2, which fits neither
# a node of 100Gi nor one of 9Ei by value. Summed in int64 they wrap to -2: kube-scheduler
# v1.36.3 binds both (bench/hostile.py).
QUANTITY_REASONS = ("int64", "ephemeral-storage")


def _disk_setup(kube: Any, tag: str) -> None:
    for node, size in ((f"{tag}-disk", "100Gi"), (f"{tag}-huge", "9Ei")):
        kube.create_node(node)
        set_ephemeral_storage(kube, node, size)


def _huge_storage_pod(tag: str, scheduler: str) -> list[dict]:
    storage = {"cpu": "10m", "ephemeral-storage": "8Ei"}
    two = pod("hostile-two", scheduler, requests=storage)
    (container,) = two["spec"]["containers"]
    two["spec"]["containers"].append({**container, "name": "second"})
    sidecar = pod("hostile-sidecar", scheduler, requests=storage)
    sidecar["spec"]["initContainers"] = [
        {**container, "name": "sidecar", "restartPolicy": "Always"}
    ]
    return [two, sidecar]


QUANTITY = Case(
    "ephemeral-8ei",
    "pods of two 8Ei ephemeral-storage requests (two containers; a container and a sidecar), "
    "nodes of 100Gi and 9Ei",
    _disk_setup,
    _huge_storage_pod,
    QUANTITY_REASONS,
)

# -- held cases (issue 28: the canary within seconds) ----------------------------------------

ANNOTATIONS = 256 * 1024  # the API server's limit on a pod's annotations, keys and values


def _huge_annotations(prefix: str) -> dict[str, str]:
    """Exactly the limit: eight keys, their values filling 256 KiB."""
    keys = [f"{prefix}/a{i}" for i in range(8)]
    per_key = ANNOTATIONS // len(keys)
    return {key: "x" * (per_key - len(key)) for key in keys}


def _annotations_setup(kube: Any, tag: str) -> None:
    node = f"{tag}-plain"
    kube.create_node(node, labels={"hostile.e2e.io/plain": tag})
    kube.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        {"metadata": {"annotations": _huge_annotations("hostile.e2e.io")}},
        content_type="application/merge-patch+json",
    )


def _annotated_pod(tag: str, scheduler: str) -> list[dict]:
    return [
        pod(
            "hostile",
            scheduler,
            requests={"cpu": "10m"},
            annotations=_huge_annotations("hostile.e2e.io"),
            nodeSelector={"hostile.e2e.io/plain": tag},
        )
    ]


ANNOTATIONS_CASE = Case(
    "annotations",
    "256 KiB of annotations on a pod and on its node",
    _annotations_setup,
    _annotated_pod,
)

LABELS = 4000


def _labels_setup(kube: Any, tag: str) -> None:
    labels = {f"hostile.e2e.io/l{i}": f"v{i}" for i in range(LABELS)}
    kube.create_node(f"{tag}-labelled", labels={**labels, "hostile.e2e.io/labelled": tag})


def _label_selecting_pod(tag: str, scheduler: str) -> list[dict]:
    """Required affinity to the last of the node's labels (and a selector on its own)."""
    last = LABELS - 1
    term = {
        "matchExpressions": [
            {"key": f"hostile.e2e.io/l{last}", "operator": "In", "values": [f"v{last}"]}
        ]
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    return [
        pod(
            "hostile",
            scheduler,
            requests={"cpu": "10m"},
            nodeSelector={"hostile.e2e.io/labelled": tag},
            affinity=affinity,
        )
    ]


LABELS_CASE = Case(
    "labels",
    f"a node with {LABELS} labels, a pod selecting it by its last",
    _labels_setup,
    _label_selecting_pod,
)

STORM = 200


def storm(count: int = STORM) -> Case:
    """``count`` pods that fit no node (1000 CPUs each), then the canary as the latecomer."""

    def setup(kube: Any, tag: str) -> None:
        kube.create_node(f"{tag}-small", cpu="4")

    def hostile(tag: str, scheduler: str) -> list[dict]:
        return [pod(f"storm-{i:04d}", scheduler, requests={"cpu": "1000"}) for i in range(count)]

    return Case(
        "storm",
        f"{count} unschedulable pods, then the latecomer",
        setup,
        hostile,
        ("Insufficient cpu",),
    )
