"""Cluster dumps with DRA objects for the explain and simulate tests: nodes with GPUs
published as ResourceSlices (driver ``gpu.example.com``, one pool per node), a DeviceClass
``gpu`` and claims, as ``kubectl get ... -o yaml`` lists them."""

from __future__ import annotations

from typing import Any

from extender.testing import Cluster, node

DRIVER = "gpu.example.com"
CLASS = "gpu"


def device_class(name: str = CLASS, expression: str = f'device.driver == "{DRIVER}"') -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def gpu(name: str, **extra: Any) -> dict:
    return {
        "name": name,
        "attributes": {"model": {"string": "a100"}, "numa": {"int": 0}},
        **extra,
    }


def slice_(
    node_name: str,
    devices: list[dict],
    *,
    name: str | None = None,
    count: int = 1,
    pool: str | None = None,
    counters: list[dict] | None = None,
) -> dict:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool or node_name, "generation": 1, "resourceSliceCount": count},
        "nodeName": node_name,
        "devices": devices,
    }
    if counters is not None:
        spec["sharedCounters"] = counters
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name}-{DRIVER}"},
        "spec": spec,
    }


def request(name: str = "gpu", count: int = 1, **exactly: Any) -> dict:
    return {
        "name": name,
        "exactly": {
            "deviceClassName": CLASS,
            "allocationMode": "ExactCount",
            "count": count,
            **exactly,
        },
    }


def claim(
    name: str,
    requests: list[dict] | None = None,
    *,
    constraints: list[dict] | None = None,
    allocated: list[tuple[str, str]] | None = None,
    namespace: str = "default",
) -> dict:
    devices: dict[str, Any] = {"requests": requests or [request()]}
    if constraints:
        devices["constraints"] = constraints
    out: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-claim-{name}",
            "resourceVersion": "1",
        },
        "spec": {"devices": devices},
    }
    if allocated is not None:
        out["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}
                        for pool, device in allocated
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [allocated[0][0]],
                                }
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": f"{name}-user", "uid": f"u-{name}"}],
        }
    return out


def claim_template(name: str = "single-gpu", requests: list[dict] | None = None) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": requests or [request()]}}},
    }


def dra_pod(name: str, claims: dict[str, str] | None = None, template: str | None = None) -> dict:
    """A pod with ``claims`` (pod claim name -> ResourceClaim name), or one claim ``gpu`` from
    ResourceClaimTemplate ``template``."""
    resource_claims: list[dict] = []
    for pod_claim, claim_name in (claims or {}).items():
        resource_claims.append({"name": pod_claim, "resourceClaimName": claim_name})
    if template is not None:
        resource_claims.append({"name": "gpu", "resourceClaimTemplateName": template})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": resource_claims,
        },
        "status": {"phase": "Pending"},
    }


def gpu_cluster(
    nodes: int = 1, gpus: int = 2, objects: list[dict] | None = None, slices: bool = True
) -> Cluster:
    names = [f"node-{i}" for i in range(nodes)]
    cluster = Cluster(nodes=[node(n, cpu="64", memory="256Gi") for n in names])
    cluster.add(device_class())
    if slices:
        for n in names:
            cluster.add(slice_(n, [gpu(f"gpu-{i}") for i in range(gpus)]))
    for obj in objects or ():
        cluster.add(obj)
    return cluster
