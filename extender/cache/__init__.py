"""The cluster cache and the informers that feed it.

:mod:`.informers` builds the informers a process needs for its cache (nodes, pods,
namespaces) and its listers, from what its plugins declare they read.
"""

from __future__ import annotations

from .cache import Cache, CacheError

# Assigned pods in a non-terminal phase: the ones holding node resources. Upstream's pod
# informer filters terminal pods the same way; a pod that finishes leaves the selector, which
# the watch reports as a deletion.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
ASSIGNED_ACTIVE_PODS = "spec.nodeName!=," + ACTIVE_PODS


__all__ = [
    "ACTIVE_PODS",
    "ASSIGNED_ACTIVE_PODS",
    "Cache",
    "CacheError",
]
