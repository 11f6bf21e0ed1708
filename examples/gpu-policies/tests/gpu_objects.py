"""Small GPU clusters of plain dicts, in the replay's two GPU mappings (extended resource
``nvidia.com/gpu``; DRA devices with a consumable capacity ``share`` of 1000)."""

from __future__ import annotations

from collections.abc import Sequence

from extender.testing import Cluster, node, pod

DRIVER = "gpu.kube-extender.dev"
MODEL_LABEL = "kube-extender.dev/gpu-model"
GPU = "nvidia.com/gpu"


# -- extended resource ------------------------------------------------------------------------


def ext_node(name: str, gpus: int = 0, cpu: str = "32", model: str = "V100") -> dict:
    extra = {GPU: str(gpus)} if gpus else None
    labels = {MODEL_LABEL: model} if gpus else None
    return node(name, cpu=cpu, memory="256Gi", allocatable=extra, labels=labels)


def ext_pod(name: str, gpus: int = 0, cpu: str = "1", on: str | None = None) -> dict:
    limits = {GPU: str(gpus)} if gpus else None
    return pod(name, cpu=cpu, memory="1Gi", limits=limits, node_name=on)


def ext_cluster(nodes: Sequence[dict], used: dict[str, int] | None = None) -> Cluster:
    """``used``: node -> whole GPUs taken by one running pod there."""
    pods = [ext_pod(f"run-{n}", gpus, on=n) for n, gpus in (used or {}).items()]
    return Cluster(nodes=nodes, pods=pods)


# -- DRA --------------------------------------------------------------------------------------


def dra_node(name: str, cpu: str = "32") -> dict:
    return node(name, cpu=cpu, memory="256Gi")


def device_class() -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def gpu_slice(node_name: str, gpus: int, model: str = "V100") -> dict:
    devices = [
        {
            "name": f"gpu-{i}",
            "allowMultipleAllocations": True,
            "attributes": {"model": {"string": model}},
            "capacity": {
                "share": {
                    "value": "1000",
                    "requestPolicy": {
                        "default": "1000",
                        "validRange": {"min": "1", "max": "1000", "step": "1"},
                    },
                }
            },
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def claim(
    name: str,
    share: int = 1000,
    count: int = 1,
    allocated: Sequence[tuple[str, int]] = (),
    node_name: str = "",
    model: str | None = None,
) -> dict:
    """A claim of ``count`` GPUs with ``share`` of each; ``allocated``: (device, share) on
    ``node_name`` (the pool) when the claim is already allocated."""
    exactly: dict = {
        "deviceClassName": DRIVER,
        "allocationMode": "ExactCount",
        "count": count,
        "capacity": {"requests": {"share": str(share)}},
    }
    if model is not None:
        expression = f'device.attributes["{DRIVER}"].model == "{model}"'
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    obj: dict = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-claim-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        "status": {},
    }
    if allocated:
        results = [
            {
                "request": "gpu",
                "driver": DRIVER,
                "pool": node_name,
                "device": device,
                "shareID": f"share-{name}-{i}",
                "consumedCapacity": {"share": str(amount)},
            }
            for i, (device, amount) in enumerate(allocated)
        ]
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def dra_pod(
    name: str, claim_name: str | None = None, cpu: str = "1", on: str | None = None
) -> dict:
    extra = {}
    if claim_name is not None:
        extra["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return pod(name, cpu=cpu, memory="1Gi", node_name=on, **extra)


def dra_cluster(
    gpus: dict[str, int],
    used: dict[str, Sequence[tuple[str, int]]] | None = None,
    cpu_nodes: Sequence[str] = (),
    pending: Sequence[dict] = (),
) -> Cluster:
    """``gpus``: node -> GPUs (one slice each); ``used``: node -> (device, share) taken by one
    running pod with an allocated claim; ``pending``: claims of the pods to schedule."""
    nodes = [dra_node(n) for n in gpus] + [dra_node(n) for n in cpu_nodes]
    pods, claims = [], list(pending)
    for node_name, taken in (used or {}).items():
        name = f"run-{node_name}"
        claims.append(claim(name, allocated=taken, node_name=node_name))
        pods.append(dra_pod(name, name, on=node_name))
    return Cluster(
        nodes=nodes,
        pods=pods,
        objects={
            "deviceclasses.resource.k8s.io": [device_class()],
            "resourceslices.resource.k8s.io": [gpu_slice(n, g) for n, g in gpus.items()],
            "resourceclaims.resource.k8s.io": claims,
        },
    )
