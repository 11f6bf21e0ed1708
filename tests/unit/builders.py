"""Small builders for pods and nodes as the API serves them (plain dicts)."""

from __future__ import annotations

import itertools
from typing import Any

_uid = itertools.count(1)


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict] | None = None,
    unschedulable: bool = False,
    images: list[tuple[list[str], int]] | None = None,
    extra_allocatable: dict[str, str] | None = None,
) -> dict:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra_allocatable or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": allocatable, "capacity": dict(allocatable)}
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": status,
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    priority: int | None = None,
    uid: str | None = None,
    containers: list[dict] | None = None,
    **spec_fields: Any,
) -> dict:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if containers is None:
        container: dict[str, Any] = {"name": "c", "image": "busybox"}
        if requests:
            container["resources"] = {"requests": requests}
        containers = [container]
    spec: dict[str, Any] = {"containers": containers, **spec_fields}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}-{next(_uid)}",
            "labels": labels or {},
        },
        "spec": spec,
        "status": {"phase": "Pending" if not node_name else "Running"},
    }


def make_handle(**services: Any) -> Any:
    """A real Handle (a Framework with no plugins) over ``Services(**services)``."""
    from extender.framework.handle import Services
    from extender.framework.profile import Profile
    from extender.framework.registry import Registry
    from extender.framework.runtime import Framework

    return Framework(Profile("test"), Registry(), Services(**services))


class ListLister:
    """A Lister over a fixed list of objects (what an informer's store would hold)."""

    def __init__(self, objects: list[dict]) -> None:
        self.objects = objects

    def list(self, namespace: str | None = None) -> list[dict]:
        return [
            o
            for o in self.objects
            if namespace is None or o["metadata"].get("namespace") == namespace
        ]

    def get(self, namespace: str, name: str) -> dict | None:
        for o in self.list(namespace or None):
            if o["metadata"]["name"] == name:
                return o
        return None


def make_listers(objects: dict[Any, list[dict]]) -> Any:
    """``Services.listers`` answering from ``{Kind: [objects]}`` (empty for other kinds)."""
    return lambda kind: ListLister(objects.get(kind, []))
