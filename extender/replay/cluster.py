"""The replay's virtual cluster: an in-memory API that the standalone scheduler's own parts
(cache, queue, listers, plugins) read and write as they do a kube-apiserver.

It stores the API's objects as plain dicts, answers the writes plugins make (the ``Client``
of ``extender.framework.handle``: bind, pod deletion and status patches, ResourceClaim
reads and writes) and records every change as a watch event. :meth:`deliver` hands the
events, in order, to the informers attached to it, which are never started: the scheduler's
dispatchers and listers see the changes exactly as a watch would bring them, on the
replay's one thread, at the moment the driver chooses (after a scheduling cycle, as a watch
delivers after the API call returned). API calls take no virtual time.

What it is not: an apiserver. There is no admission (the trace's objects are taken as
stored), no validation beyond what the scheduler relies on (UID and resourceVersion
preconditions, a bound pod cannot be bound again), no controllers (the replay driver deletes
a finished pod's claims itself) and no field or label selectors on the informers' feeds.
"""

from __future__ import annotations

import copy
import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from extender.kube import Conflict, Informer, NotFound, object_key
from extender.offline.cluster import plural

# Trace time 0 as a wall-clock time, for the timestamps objects carry.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

Handler = Callable[..., None]


def collection_path(obj: dict) -> str:
    """The collection's URL path of an object from its ``apiVersion`` and ``kind`` (what an
    informer of that kind is created with, e.g. ``/apis/resource.k8s.io/v1/resourceclaims``)."""
    api_version = obj.get("apiVersion") or "v1"
    resource = plural(obj.get("kind") or "")
    if "/" in api_version:
        return f"/apis/{api_version}/{resource}"
    return f"/api/{api_version}/{resource}"


PODS_PATH = "/api/v1/pods"
CLAIMS_PATH = "/apis/resource.k8s.io/v1/resourceclaims"


def timestamp(seconds: float) -> str:
    """RFC 3339 time of trace second ``seconds``."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class VirtualClock:
    """The replay's clock (seconds from the trace's start); the loop and the queue read it."""

    __slots__ = ("now",)

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class VirtualCluster:
    """The objects of the replayed cluster and the plugins' API client.

    ``on_bound(pod, node)`` and ``on_deleted(pod, preempted)`` tell the driver what the
    scheduler did (a deletion the scheduler asked for is a preemption)."""

    def __init__(
        self,
        clock: VirtualClock,
        *,
        on_bound: Callable[[dict, str], None] = lambda pod, node: None,
        on_deleted: Callable[[dict, bool], None] = lambda pod, preempted: None,
        on_event: Callable[[dict, str, str, str], None] = lambda obj, type_, reason, note: None,
    ) -> None:
        self.clock = clock
        self.on_bound = on_bound
        self.on_deleted = on_deleted
        self.on_event = on_event
        self.stores: dict[str, dict[str, dict]] = defaultdict(dict)
        self._informers: dict[str, list[Informer]] = defaultdict(list)
        self._pending: deque[tuple[str, str, dict]] = deque()
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)

    # -- the informers' feed -----------------------------------------------------------------

    def attach(self, informers: Iterable[Informer]) -> None:
        """Feed these (unstarted) informers, each the changes of its collection."""
        for informer in informers:
            self._informers[informer.path].append(informer)

    def deliver(self) -> None:
        """Hand every change made so far to the informers, in the order made."""
        while self._pending:
            path, kind, obj = self._pending.popleft()
            for informer in self._informers.get(path, ()):
                informer.feed(kind, obj)

    def mark_synced(self) -> None:
        for informers in self._informers.values():
            for informer in informers:
                informer.mark_synced()

    # -- storage -----------------------------------------------------------------------------

    def _changed(self, path: str, kind: str, obj: dict) -> None:
        self._pending.append((path, kind, obj))

    def _stamp(self, obj: dict) -> dict:
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._versions))
        return obj

    def create(self, obj: dict) -> dict:
        """Store a new object (a copy), with a UID, resourceVersion and creation time."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        path = collection_path(obj)
        key = object_key(obj)
        if key in self.stores[path]:
            raise Conflict(409, "AlreadyExists", f"{path} {key} already exists")
        meta.setdefault("uid", f"replay-{next(self._uids):07d}")
        meta.setdefault("creationTimestamp", timestamp(self.clock.now))
        self._stamp(obj)
        self.stores[path][key] = obj
        self._changed(path, "ADDED", obj)
        return obj

    def get(self, path: str, key: str) -> dict | None:
        return self.stores[path].get(key)

    def list(self, path: str) -> list[dict]:
        return list(self.stores[path].values())

    def replace(self, obj: dict, *, check_version: bool = True) -> dict:
        """Store a new version of an existing object; with ``check_version`` its
        resourceVersion must be the stored one (409 otherwise), as an update's is."""
        path = collection_path(obj)
        key = object_key(obj)
        current = self.stores[path].get(key)
        if current is None:
            raise NotFound(404, "NotFound", f"{path} {key} not found")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if check_version and version and version != current["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", f"{path} {key}: the object has been modified")
        new = copy.deepcopy(obj)
        new["metadata"]["uid"] = current["metadata"]["uid"]
        self._stamp(new)
        self.stores[path][key] = new
        self._changed(path, "MODIFIED", new)
        return new

    def remove(self, path: str, key: str, uid: str | None = None) -> dict:
        current = self.stores[path].get(key)
        if current is None:
            raise NotFound(404, "NotFound", f"{path} {key} not found")
        if uid and current["metadata"].get("uid") != uid:
            raise Conflict(409, "Conflict", f"{path} {key}: UID precondition failed")
        del self.stores[path][key]
        final = self._stamp(copy.copy(current))
        self._changed(path, "DELETED", final)
        return final

    # -- the plugins' client (``extender.framework.handle.Client``) ---------------------------

    def bind(self, pod: dict, node_name: str) -> None:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        current = self.stores[PODS_PATH].get(key)
        if current is None:
            raise NotFound(404, "NotFound", f"pod {key} not found")
        if meta.get("uid") and current["metadata"].get("uid") != meta.get("uid"):
            raise Conflict(409, "Conflict", f"pod {key}: UID precondition failed")
        if (current.get("spec") or {}).get("nodeName"):
            raise Conflict(409, "Conflict", f"pod {key} is already assigned to a node")
        bound = copy.deepcopy(current)
        bound["spec"]["nodeName"] = node_name
        status = bound.setdefault("status", {})
        # The apiserver clears the nomination when the binding lands
        # (ClearingNominatedNodeNameAfterBinding).
        status.pop("nominatedNodeName", None)
        _set_condition(
            status,
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": self._now()},
        )
        status["phase"] = "Running"
        self._stamp(bound)
        self.stores[PODS_PATH][key] = bound
        self._changed(PODS_PATH, "MODIFIED", bound)
        self.on_bound(bound, node_name)

    def delete_pod(
        self,
        namespace: str,
        name: str,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict | None:
        final = self.remove(PODS_PATH, f"{namespace}/{name}", uid)
        self.on_deleted(final, True)
        return final

    def delete_pod_as_user(self, pod: dict) -> dict:
        """The trace's own deletion (a finished or abandoned pod), not the scheduler's."""
        meta = pod["metadata"]
        final = self.remove(PODS_PATH, f"{meta['namespace']}/{meta['name']}", meta.get("uid"))
        self.on_deleted(final, False)
        return final

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict | None:
        return self._patch_status(PODS_PATH, "pod", f"{namespace}/{name}", patch)

    def get_resource_claim(self, namespace: str, name: str) -> dict | None:
        return self.stores[CLAIMS_PATH].get(f"{namespace}/{name}")

    def create_resource_claim(self, namespace: str, claim: dict) -> dict:
        return self.create(claim)

    def delete_resource_claim(self, namespace: str, name: str) -> None:
        self.remove(CLAIMS_PATH, f"{namespace}/{name}")

    def update_resource_claim(self, claim: dict) -> dict:
        return self.replace(claim)

    def update_resource_claim_status(self, claim: dict) -> dict:
        return self.replace(claim)

    def patch_resource_claim_status(self, namespace: str, name: str, patch: dict) -> dict:
        return self._patch_status(CLAIMS_PATH, "resourceclaim", f"{namespace}/{name}", patch)

    def _patch_status(self, path: str, kind: str, key: str, patch: dict) -> dict:
        """A strategic merge patch of ``status``: conditions merge by type, ``None`` deletes
        a field, any other value replaces it."""
        current = self.stores[path].get(key)
        if current is None:
            raise NotFound(404, "NotFound", f"{kind} {key} not found")
        new = copy.deepcopy(current)
        status = new.setdefault("status", {})
        for field, value in (patch.get("status") or {}).items():
            if field == "conditions":
                for condition in value:
                    _set_condition(status, condition)
            elif value is None:
                status.pop(field, None)
            else:
                status[field] = value
        return self.replace(new, check_version=False)

    def patch_pod_group_status(self, namespace: str, name: str, patch: dict) -> dict | None:
        path = "/apis/scheduling.k8s.io/v1alpha2/podgroups"
        return self._patch_status(path, "podgroup", f"{namespace}/{name}", patch)

    def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """The generic writes the volume binder makes (``PUT`` of a PV or PVC)."""
        if method == "PUT" and isinstance(body, dict):
            return self.replace(body)
        raise NotFound(404, "NotFound", f"{method} {path}: not served by the replay")

    # -- the event recorder (``extender.framework.handle.EventRecorder``) ----------------------

    def record_event(
        self, regarding: dict, event_type: str, reason: str, action: str, note: str
    ) -> None:
        self.on_event(regarding, event_type, reason, note)

    def close(self) -> None:
        pass

    def _now(self) -> str:
        return timestamp(self.clock.now)


def _set_condition(status: dict, condition: dict) -> None:
    """Merge ``condition`` into ``status.conditions`` by type (strategic merge)."""
    conditions = status.setdefault("conditions", [])
    for i, existing in enumerate(conditions):
        if existing.get("type") == condition.get("type"):
            conditions[i] = {**existing, **condition}
            return
    conditions.append(dict(condition))
