"""An in-memory cluster: nodes, pods and other objects as the API's dicts, with the listers,
namespace labels and snapshot a framework reads (what the testing kit, ``explain`` on a dump
and ``simulate`` run plugins on)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from extender.framework import (
    CONFIG_MAPS,
    NAMESPACES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    Kind,
    Lister,
    Snapshot,
)
from extender.framework.handle import Services

from .defaults import apiserver_defaults

_BUILT_IN_KINDS = {
    kind.name: kind
    for kind in (
        PODS,
        NAMESPACES,
        SERVICES,
        REPLICATION_CONTROLLERS,
        CONFIG_MAPS,
        REPLICA_SETS,
        STATEFUL_SETS,
        POD_DISRUPTION_BUDGETS,
    )
}


def plural(kind: str) -> str:
    """The resource name of a kind, as the API pluralises it (``ResourceSlice`` ->
    ``resourceslices``)."""
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def _resource_of(obj: dict) -> str:
    """``resource.group`` (``Kind.name``) of an object from its ``apiVersion`` and ``kind``."""
    group, _, _version = (obj.get("apiVersion") or "v1").rpartition("/")
    resource = plural(obj.get("kind") or "")
    return f"{resource}.{group}" if group else resource


class _ObjectLister:
    """A lister over a list of objects (what ``handle.lister(kind)`` returns in the kit)."""

    def __init__(self, objects: list[dict]) -> None:
        self._objects = objects

    def list(self, namespace: str | None = None) -> list[dict]:
        if namespace is None:
            return list(self._objects)
        return [o for o in self._objects if _meta(o).get("namespace") == namespace]

    def get(self, namespace: str, name: str) -> dict | None:
        for obj in self._objects:
            meta = _meta(obj)
            if meta.get("name") == name and (meta.get("namespace") or "") == (namespace or ""):
                return obj
        return None


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


class Cluster:
    """Nodes, pods and other objects, as the API's dicts.

    ``objects`` maps a :class:`~extender.framework.Kind` or its name (``"configmaps"``,
    ``"widgets.example.com"``: plural resource, dot, group) to that kind's objects; a plugin
    reads them with ``handle.lister(kind)`` (matched on resource and group). Namespaces
    (``"namespaces"``) also answer ``handle.namespace_labels``. Pods with ``spec.nodeName``
    count on their node; the kit never mutates what it is given.
    """

    def __init__(
        self,
        nodes: Iterable[dict] = (),
        pods: Iterable[dict] = (),
        objects: Mapping[Kind | str, Iterable[dict]] | None = None,
    ) -> None:
        self.nodes: list[dict] = list(nodes)
        self.pods: list[dict] = list(pods)
        self.objects: dict[str, list[dict]] = {}
        for kind, items in (objects or {}).items():
            self.objects.setdefault(_kind_name(kind), []).extend(items)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cluster:
        """``{"nodes": [...], "pods": [...], "configmaps": [...], "widgets.example.com": [...]}``
        (keys other than nodes and pods are kind names), or ``{"items": [...]}`` as a v1 List
        whose objects are sorted by their ``apiVersion`` and ``kind``."""
        if "items" in data:
            return cls.from_objects(data["items"])
        rest = {k: v for k, v in data.items() if k not in ("nodes", "pods")}
        return cls(data.get("nodes") or (), data.get("pods") or (), rest)

    @classmethod
    def from_objects(cls, objects: Iterable[dict]) -> Cluster:
        """Manifests of any kinds (``kind: Node``, ``kind: Pod``, ``kind: ConfigMap``...)."""
        cluster = cls()
        for obj in objects:
            cluster.add(obj)
        return cluster

    @classmethod
    def from_yaml(cls, source: str | Path) -> Cluster:
        """A YAML file (a ``Path``, or a ``str`` without a newline) or YAML text: either one
        mapping in the :meth:`from_dict` shape, or manifests (``---``-separated documents, or a
        ``kind: List``)."""
        text = Path(source).read_text() if is_path(source) else str(source)
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        if len(documents) == 1 and "kind" not in documents[0]:
            return cls.from_dict(documents[0])
        objects: list[dict] = []
        for document in documents:
            objects.extend(
                document.get("items") or [] if document.get("kind") == "List" else [document]
            )
        return cls.from_objects(objects)

    def add(self, obj: dict) -> Cluster:
        """Add one manifest, sorted by its ``kind``; returns the cluster."""
        kind = obj.get("kind")
        if kind == "Node":
            self.nodes.append(obj)
        elif kind == "Pod":
            self.pods.append(obj)
        else:
            self.objects.setdefault(_resource_of(obj), []).append(obj)
        return self

    def snapshot(self) -> Snapshot:
        """A fresh snapshot: every node with its assigned pods, as the apiserver stores them
        (:func:`apiserver_defaults`), built once per run."""
        return Snapshot.from_objects(self.nodes, [apiserver_defaults(p) for p in self.pods])

    def lister(self, kind: Kind) -> Lister:
        """What ``handle.lister(kind)`` answers; pods come from ``pods``."""
        if kind.name == PODS.name:
            return _ObjectLister(self.pods)
        # The kind's own list, kept: objects added later (simulate's PodGroups) are seen.
        return _ObjectLister(self.objects.setdefault(kind.name, []))

    def namespace_labels(self, namespace: str) -> dict | None:
        found = self.lister(NAMESPACES).get("", namespace)
        return None if found is None else dict(_meta(found).get("labels") or {})

    def services(self, seed: int = 0) -> Services:
        """The handle's services: these listers, no client, no events, a seeded RNG."""
        return Services(
            listers=self.lister, namespace_labels=self.namespace_labels, rng=random.Random(seed)
        )


def _kind_name(kind: Kind | str) -> str:
    if isinstance(kind, Kind):
        return kind.name
    return _BUILT_IN_KINDS[kind].name if kind in _BUILT_IN_KINDS else kind


def is_path(source: str | Path) -> bool:
    """A ``Path``, or a ``str`` without a newline, names a file; other text is the content."""
    return isinstance(source, Path) or "\n" not in source
