"""What feeds a process's cache and listers from the API: informers on nodes, pods and
namespaces into the :class:`~extender.cache.Cache` (or into the standalone scheduler's
dispatchers), and one informer per other kind a plugin reads behind ``handle.lister(kind)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from extender.framework.handle import NAMESPACES, PODS, RESOURCE_SLICES, EmptyLister, Kind, Lister
from extender.kube import Informer

from . import ACTIVE_PODS, ASSIGNED_ACTIVE_PODS
from .cache import Cache

NODES_PATH = "/api/v1/nodes"
PODS_PATH = PODS.path
NAMESPACES_PATH = NAMESPACES.path


class StoreLister:
    """``handle.lister(kind)``: reads one informer's store (the API's dicts, shared)."""

    __slots__ = ("_informer",)

    def __init__(self, informer: Informer) -> None:
        self._informer = informer

    def list(self, namespace: str | None = None) -> list[dict]:
        objects = self._informer.list()
        if namespace is None:
            return objects
        return [o for o in objects if (o.get("metadata") or {}).get("namespace") == namespace]

    def get(self, namespace: str, name: str) -> dict | None:
        return self._informer.get(f"{namespace}/{name}" if namespace else name)

    def changed_since(self, mark: int) -> tuple[int, list[str] | None]:
        """``Informer.changed_since``: keys are ``namespace/name`` (``name`` if cluster-scoped)."""
        return self._informer.changed_since(mark)


def forget_resource_slice(slice_: dict) -> None:
    """A ResourceSlice object left the informer's store: the allocator forgets it (imported
    here, not at startup: only a profile with DynamicResources watches slices)."""
    from extender.dra.structured.allocator import forget_resource_slices

    forget_resource_slices((slice_,))


@dataclass
class Listers:
    """One informer per lister kind; ``listers(kind)`` is the lister (empty if unwatched)."""

    informers: dict[Kind, Informer] = field(default_factory=dict)
    # Kinds served from an informer the process runs anyway (the standalone scheduler's pod
    # informer serves PODS): not started here.
    served: dict[Kind, Informer] = field(default_factory=dict)

    @classmethod
    def watching(cls, client: Any, kinds: Iterable[Kind]) -> Listers:
        informers = {kind: Informer(client, kind.path) for kind in sorted(kinds, key=str)}
        slices = informers.get(RESOURCE_SLICES)
        if slices is not None:
            # A slice that leaves the store (deleted, replaced) takes what the allocator's
            # caches derived from its devices along: memory is given back without waiting for
            # the next allocation.
            slices.on_forget = forget_resource_slice
        return cls(informers)

    def serve(self, kind: Kind, informer: Informer) -> None:
        """Answer ``kind`` from ``informer``, which its owner starts."""
        self.served[kind] = informer

    def __call__(self, kind: Kind) -> Lister:
        informer = self.informers.get(kind) or self.served.get(kind)
        return EmptyLister() if informer is None else StoreLister(informer)


def cache_informers(
    client: Any,
    cache: Cache,
    *,
    pods: bool,
    namespaces: bool,
    node_handler: Any = None,
    pod_handler: Any = None,
) -> list[Informer]:
    """The informers feeding the cache: nodes, pods (``pods``), namespaces (``namespaces``).

    Without handlers, nodes and assigned active pods go straight into ``cache``. A handler
    (``on_add``/``on_update``/``on_delete``) takes over its kind: the standalone scheduler's
    dispatchers feed the cache and the queue, and watch unassigned pods too.
    """
    nodes = node_handler or _CacheNodes(cache)
    informers = [
        Informer(
            client,
            NODES_PATH,
            on_add=nodes.on_add,
            on_update=nodes.on_update,
            on_delete=nodes.on_delete,
        )
    ]
    if pods:
        handler = pod_handler or _CachePods(cache)
        informers.append(
            Informer(
                client,
                PODS_PATH,
                field_selector=ASSIGNED_ACTIVE_PODS if pod_handler is None else ACTIVE_PODS,
                on_add=handler.on_add,
                on_update=handler.on_update,
                on_delete=handler.on_delete,
            )
        )
    if namespaces:
        informers.append(
            Informer(
                client,
                NAMESPACES_PATH,
                on_add=cache.add_namespace,
                on_update=cache.update_namespace,
                on_delete=cache.remove_namespace,
            )
        )
    return informers


class _CacheNodes:
    def __init__(self, cache: Cache) -> None:
        self.on_add = cache.add_node
        self.on_update = cache.update_node
        self.on_delete = cache.remove_node


class _CachePods:
    def __init__(self, cache: Cache) -> None:
        self.on_add = cache.add_pod
        self.on_update = cache.update_pod
        self.on_delete = cache.remove_pod
