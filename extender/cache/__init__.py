"""The cluster cache and the informers that feed it."""

from __future__ import annotations

from typing import Any

from .cache import Cache, CacheError
from .informer import Gone, Informer
from .kubeconfig import api_client

# Pods in a terminal phase hold no resources: upstream's informers never see them.
ASSIGNED_ACTIVE_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


def wire_informers(
    client: Any, cache: Cache, *, pods: bool = True, namespaces: bool = False
) -> list[Informer]:
    """Informers feeding ``cache``: nodes, assigned pods (optional) and namespaces (optional).

    Not started: call ``start()`` on each (nodes first, so pods find their NodeInfos).
    """
    informers = [
        Informer(
            client,
            "/api/v1/nodes",
            on_add=cache.add_node,
            on_update=cache.update_node,
            on_delete=cache.remove_node,
        )
    ]
    if pods:
        informers.append(
            Informer(
                client,
                "/api/v1/pods",
                field_selector=ASSIGNED_ACTIVE_PODS,
                on_add=cache.add_pod,
                on_update=cache.update_pod,
                on_delete=cache.remove_pod,
            )
        )
    if namespaces:
        informers.append(
            Informer(
                client,
                "/api/v1/namespaces",
                on_add=cache.add_namespace,
                on_update=cache.update_namespace,
                on_delete=cache.remove_namespace,
            )
        )
    return informers


__all__ = [
    "ASSIGNED_ACTIVE_PODS",
    "Cache",
    "CacheError",
    "Gone",
    "Informer",
    "api_client",
    "wire_informers",
]
