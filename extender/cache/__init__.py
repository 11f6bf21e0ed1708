"""The cluster cache and the informers that feed it.

``wire_informers`` builds the informers a process needs for its cache: nodes, assigned pods
(optional) and namespaces (optional). They are returned unstarted; start the node informer
first, so that the pods arriving next find their NodeInfos (pods of unknown nodes are kept on
placeholders anyway, so the order is a nicety, not a requirement).
"""

from __future__ import annotations

from typing import Any

from extender.kube import Informer

from .cache import Cache, CacheError

# Assigned pods in a non-terminal phase: the ones holding node resources. Upstream's pod
# informer filters terminal pods the same way; a pod that finishes leaves the selector, which
# the watch reports as a deletion.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
ASSIGNED_ACTIVE_PODS = "spec.nodeName!=," + ACTIVE_PODS


def wire_informers(
    client: Any,
    cache: Cache,
    *,
    pods: bool = True,
    namespaces: bool = False,
    extra_pod_handler: Any = None,
) -> list[Informer]:
    """Informers feeding ``cache``: nodes, assigned pods (``pods``), namespaces (``namespaces``).

    ``extra_pod_handler`` (an object with any of ``on_add(pod)``, ``on_update(old, new)``,
    ``on_delete(pod)``) sees each assigned-pod event after the cache applied it.
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
        on_add, on_update, on_delete = cache.add_pod, cache.update_pod, cache.remove_pod
        if extra_pod_handler is not None:
            on_add = _chain(cache.add_pod, getattr(extra_pod_handler, "on_add", None))
            on_update = _chain(cache.update_pod, getattr(extra_pod_handler, "on_update", None))
            on_delete = _chain(cache.remove_pod, getattr(extra_pod_handler, "on_delete", None))
        informers.append(
            Informer(
                client,
                "/api/v1/pods",
                field_selector=ASSIGNED_ACTIVE_PODS,
                on_add=on_add,
                on_update=on_update,
                on_delete=on_delete,
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


def _chain(first: Any, then: Any) -> Any:
    if then is None:
        return first

    def handler(*args: dict) -> None:
        try:
            first(*args)
        finally:  # the extra handler runs even if the cache rejected the event
            then(*args)

    handler.__name__ = getattr(first, "__name__", "handler")
    return handler


__all__ = [
    "ACTIVE_PODS",
    "ASSIGNED_ACTIVE_PODS",
    "Cache",
    "CacheError",
    "wire_informers",
]
