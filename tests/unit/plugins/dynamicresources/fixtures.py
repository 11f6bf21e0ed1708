"""Objects and a handle for the DynamicResources unit tests, after upstream's
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go`` (same names:
``my-pod``, ``my-resource``, ``my-pod-my-resource``, class ``my-resource-class``, driver
``some-driver``, node ``worker``)."""

from __future__ import annotations

import copy
import random
from typing import Any, TypeVar

from extender.framework.cycle_state import CycleState
from extender.framework.handle import (
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Kind,
    SharedKey,
)
from extender.framework.node_info import NodeInfo
from extender.kube.errors import Conflict
from extender.plugins.dynamicresources.dynamic_resources import DynamicResources

T = TypeVar("T")

NAMESPACE = "default"
POD_NAME = "my-pod"
POD_UID = "1234"
RESOURCE_NAME = "my-resource"
CLAIM_NAME = f"{POD_NAME}-{RESOURCE_NAME}"
CLASS_NAME = "my-resource-class"
DRIVER = "some-driver"
NODE_NAME = "worker"


def node(name: str = NODE_NAME, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod_with_claim_name(claim: str = CLAIM_NAME) -> dict:
    """A pod naming its claim directly (``resourceClaimName``)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD_NAME, "namespace": NAMESPACE, "uid": POD_UID},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "resourceClaims": [{"name": RESOURCE_NAME, "resourceClaimName": claim}],
        },
    }


def pod_with_claim_template(generated: str | None = CLAIM_NAME) -> dict:
    """A pod whose claim comes from a template; ``generated``: the name the resource-claim
    controller recorded in the pod's status (``None``: not created yet)."""
    pod = pod_with_claim_name()
    pod["spec"]["resourceClaims"] = [
        {"name": RESOURCE_NAME, "resourceClaimTemplateName": "my-template"}
    ]
    if generated is not None:
        pod["status"] = {
            "resourceClaimStatuses": [{"name": RESOURCE_NAME, "resourceClaimName": generated}]
        }
    return pod


def claim(
    name: str = CLAIM_NAME, *, owner: dict | None = None, uid: str | None = None, count: int = 1
) -> dict:
    """A pending claim with one request ``req-1`` for ``count`` devices of the class."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid or f"uid-{name}",
        "resourceVersion": "1",
    }
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "req-1",
                        "exactly": {
                            "deviceClassName": CLASS_NAME,
                            "allocationMode": "ExactCount",
                            "count": count,
                        },
                    }
                ]
            }
        },
    }


def allocated(c: dict, device: str = "instance-1", node_name: str = NODE_NAME) -> dict:
    c = copy.deepcopy(c)
    c["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    c["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "req-1", "driver": DRIVER, "pool": node_name, "device": device}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            },
        }
    }
    return c


def reserved_for(c: dict, pod: dict) -> dict:
    c = copy.deepcopy(c)
    c.setdefault("status", {})["reservedFor"] = [
        {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
    ]
    return c


def device_class(name: str = CLASS_NAME) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def node_slice(node_name: str = NODE_NAME, devices: int = 1, name: str | None = None) -> dict:
    """A node-local ResourceSlice of ``some-driver`` with ``instance-1..N``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name}-slice"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"instance-{i + 1}"} for i in range(devices)],
        },
    }


class ListLister:
    def __init__(self, objects: list[dict]) -> None:
        self.objects = objects

    def list(self, namespace: str | None = None) -> list[dict]:
        return [
            o
            for o in self.objects
            if namespace is None or o["metadata"].get("namespace") == namespace
        ]

    def get(self, namespace: str, name: str) -> dict | None:
        for o in self.objects:
            m = o["metadata"]
            if m["name"] == name and (m.get("namespace") or "") == namespace:
                return o
        return None


class FakeClient:
    """Records the claim writes and applies them to the claims list, as the API would
    (resourceVersion bumped; a stale resourceVersion is a Conflict)."""

    def __init__(self, claims: list[dict]) -> None:
        self.claims = claims
        self.writes: list[tuple[str, dict]] = []
        self.conflicts = 0  # answer this many writes with a Conflict first

    def _find(self, namespace: str, name: str) -> int:
        for i, c in enumerate(self.claims):
            if c["metadata"]["name"] == name and c["metadata"]["namespace"] == namespace:
                return i
        raise KeyError(name)

    def _store(self, verb: str, claim: dict) -> dict:
        self.writes.append((verb, copy.deepcopy(claim)))
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict(409, "Conflict", "the object has been modified")
        i = self._find(claim["metadata"]["namespace"], claim["metadata"]["name"])
        current = self.claims[i]
        if claim["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "the object has been modified")
        stored = copy.deepcopy(claim)
        stored["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.claims[i] = stored
        return copy.deepcopy(stored)

    def get_resource_claim(self, namespace: str, name: str) -> dict | None:
        return copy.deepcopy(self.claims[self._find(namespace, name)])

    def update_resource_claim(self, claim: dict) -> dict:
        return self._store("update", claim)

    def update_resource_claim_status(self, claim: dict) -> dict:
        return self._store("update-status", claim)

    def patch_resource_claim_status(self, namespace: str, name: str, patch: dict) -> dict:
        self.writes.append(("patch-status", patch))
        return {}

    def create_resource_claim(self, namespace: str, claim: dict) -> dict:
        self.writes.append(("create", copy.deepcopy(claim)))
        created = copy.deepcopy(claim)
        created["metadata"].update(
            name=claim["metadata"]["generateName"] + "abcde",
            uid="created-uid",
            resourceVersion="1",
        )
        self.claims.append(created)
        return copy.deepcopy(created)

    def delete_resource_claim(self, namespace: str, name: str) -> None:
        self.writes.append(("delete", {"name": name}))
        self.claims[:] = [c for c in self.claims if c["metadata"]["name"] != name]

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict:
        self.writes.append(("patch-pod-status", patch))
        return {}


class Events:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append((reason, note))


class FakeHandle:
    profile_name = "default-scheduler"

    def __init__(
        self,
        claims: list[dict] | None = None,
        classes: list[dict] | None = None,
        slices: list[dict] | None = None,
    ) -> None:
        self.claims = claims if claims is not None else []
        self.listers = {
            RESOURCE_CLAIMS: ListLister(self.claims),
            DEVICE_CLASSES: ListLister(classes or []),
            RESOURCE_SLICES: ListLister(slices or []),
        }
        self.client = FakeClient(self.claims)
        self.event_recorder = Events()
        self.rng = random.Random(0)

    def lister(self, kind: Kind) -> ListLister:
        return self.listers.get(kind) or ListLister([])

    def shared(self, key: SharedKey[T]) -> T:
        # Built per call: each plugin on this fake keeps its own (it has no Services).
        return key.build(self)  # type: ignore[arg-type]


def plugin(handle: FakeHandle, args: dict | None = None) -> DynamicResources:
    return DynamicResources(args or {}, handle)  # type: ignore[arg-type]


def node_info(n: dict) -> NodeInfo:
    return NodeInfo(n)


def cycle() -> CycleState:
    return CycleState()
