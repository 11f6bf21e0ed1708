"""``kube-extender record``: a trace (format v1, :mod:`extender.replay.trace`) of what a cluster
did; ``docs/record.md`` is the user's account.

Two sources, one :class:`Timeline`:

* a live cluster (:func:`record_live`), read-only: everything is listed once at the start of
  the window (time 0), then pods are watched for the window: creations, bindings, the end of a
  pod (deleted, or Succeeded/Failed). Pods present at the start arrive at 0; those already
  bound are created bound there (``node``, the initial state).
* a dump (:func:`from_dump`), as ``kubectl get -o json`` writes it: times come from each pod's
  ``creationTimestamp``, its ``PodScheduled`` condition (which the binding subresource sets,
  kubernetes ``pkg/registry/core/pod/storage/storage.go``), its ``deletionTimestamp`` or its
  containers' ``finishedAt``. The trace starts at the first pod's creation unless ``start``
  says when.

Recorded pods lose what the apiserver adds (status, managedFields, resourceVersion, uid,
``spec.nodeName``, the service-account token volume) so that they can be created again; a
pod's claims generated from a ResourceClaimTemplate become ``claims`` created with it, and the
pod names them directly. Nodes and the objects that bear on placement (DRA, volumes,
PriorityClasses, Namespaces) are recorded as they were at the start.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .trace import API_VERSION, KIND, VERSION

__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_OBJECTS",
    "DEFAULT_MAX_PODS",
    "OBJECT_KINDS",
    "RecordError",
    "Timeline",
    "clean_object",
    "clean_pod",
    "from_dump",
    "parse_time",
    "record_live",
]

CREATED_BY = "kube-extender record"
DEFAULT_MAX_PODS = 100_000
DEFAULT_MAX_OBJECTS = 200_000
TERMINATED = ("Succeeded", "Failed")
PROGRESS_EVERY = 10  # seconds

# kind -> (collection path, namespaced, apiVersion), listed at the start and kept in
# ``objects`` (ResourceClaims owned by a recorded pod go to that pod's ``claims`` instead).
OBJECT_KINDS: dict[str, tuple[str, bool, str]] = {
    "Namespace": ("/api/v1/namespaces", False, "v1"),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", False, "scheduling.k8s.io/v1"),
    "StorageClass": ("/apis/storage.k8s.io/v1/storageclasses", False, "storage.k8s.io/v1"),
    "PersistentVolume": ("/api/v1/persistentvolumes", False, "v1"),
    "PersistentVolumeClaim": ("/api/v1/persistentvolumeclaims", True, "v1"),
    "DeviceClass": ("/apis/resource.k8s.io/v1/deviceclasses", False, "resource.k8s.io/v1"),
    "ResourceSlice": ("/apis/resource.k8s.io/v1/resourceslices", False, "resource.k8s.io/v1"),
    "ResourceClaim": ("/apis/resource.k8s.io/v1/resourceclaims", True, "resource.k8s.io/v1"),
}

# metadata the apiserver writes: dropped from every recorded object.
_SERVER_METADATA = (
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_TOKEN_VOLUME_PREFIX = "kube-api-access-"


class RecordError(ValueError):
    """Bad input or a bound exceeded: one line naming the flag or the field."""


# -- times -------------------------------------------------------------------------------------


def parse_time(text: Any, where: str = "") -> float | None:
    """An RFC 3339 timestamp (``2026-12-07T11:57:46Z``, with or without a fraction) in Unix
    seconds; ``None`` for a missing one. Raises :class:`RecordError` naming ``where``."""
    if text in (None, ""):
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise RecordError(f"{where}: {text!r} is not an RFC 3339 time") from None


def refine(stamp: float | None, seen: float | None) -> float | None:
    """When something happened, from the object's own timestamp (whole seconds, the
    apiserver's clock) and the moment the recorder saw it (sub-second, ours): the moment seen
    when it falls within the stamp's second, else the stamp (the recorder lagged, or saw it
    in a list)."""
    if stamp is None:
        return seen
    if seen is not None and stamp <= seen < stamp + 1.0:
        return seen
    return stamp


def scheduled_at(pod: dict) -> float | None:
    """The ``lastTransitionTime`` of the pod's ``PodScheduled=True`` condition."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"), f"pod {_key(pod)} PodScheduled")
    return None


def finished_at(pod: dict) -> float | None:
    """When a Succeeded/Failed pod's last container finished (``None`` if not said)."""
    times = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        terminated = (status.get("state") or {}).get("terminated") or {}
        stamp = parse_time(terminated.get("finishedAt"), f"pod {_key(pod)} finishedAt")
        if stamp is not None:
            times.append(stamp)
    return max(times) if times else None


# -- cleaning ----------------------------------------------------------------------------------


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _key(obj: dict) -> str:
    meta = _meta(obj)
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _clean_metadata(meta: dict) -> dict:
    out = {k: copy.deepcopy(v) for k, v in meta.items() if k not in _SERVER_METADATA}
    annotations = {k: v for k, v in (out.get("annotations") or {}).items() if k != _LAST_APPLIED}
    if annotations:
        out["annotations"] = annotations
    else:
        out.pop("annotations", None)
    return out


def clean_object(obj: dict, api_version: str = "", kind: str = "") -> dict:
    """``obj`` without the metadata the apiserver writes; status kept (a node's allocatable,
    a volume's binding, a claim's allocation are the state at the start)."""
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k != "metadata"}
    out["apiVersion"] = obj.get("apiVersion") or api_version
    out["kind"] = obj.get("kind") or kind
    out["metadata"] = _clean_metadata(_meta(obj))
    claim_ref = (out.get("spec") or {}).get("claimRef")
    if out["kind"] == "PersistentVolume" and isinstance(claim_ref, dict):
        # The claim is created anew (a new uid): a PV that names it by name and namespace
        # only is pre-bound to it (kubernetes pkg/controller/volume/persistentvolume/
        # pv_controller.go, syncVolume), not released.
        for key in ("uid", "resourceVersion"):
            claim_ref.pop(key, None)
    return out


def clean_pod(pod: dict, claim_names: dict[str, str] | None = None) -> dict:
    """A pod that can be created again: no status, no server metadata, no ``spec.nodeName``,
    no service-account token volume (admission adds it back). ``claim_names`` maps a
    ``spec.resourceClaims`` entry made from a template to its generated claim, which the
    entry then names directly (the claim is recorded with the pod)."""
    spec = copy.deepcopy(pod.get("spec") or {})
    spec.pop("nodeName", None)
    spec.pop("serviceAccount", None)  # the deprecated alias of serviceAccountName
    volumes = [
        v
        for v in spec.get("volumes") or ()
        if not v.get("name", "").startswith(_TOKEN_VOLUME_PREFIX)
    ]
    if "volumes" in spec:
        spec["volumes"] = volumes
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            if "volumeMounts" in container:
                container["volumeMounts"] = [
                    m
                    for m in container["volumeMounts"]
                    if not m.get("name", "").startswith(_TOKEN_VOLUME_PREFIX)
                ]
    for entry in spec.get("resourceClaims") or ():
        generated = (claim_names or {}).get(entry.get("name", ""))
        if generated and entry.get("resourceClaimTemplateName"):
            entry.pop("resourceClaimTemplateName")
            entry["resourceClaimName"] = generated
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _clean_metadata(_meta(pod)),
        "spec": spec,
    }


def generated_claims(pod: dict) -> dict[str, str]:
    """``spec.resourceClaims`` entry name -> the claim generated for it from a template, as
    the pod's ``status.resourceClaimStatuses`` names it."""
    templated = {
        e.get("name")
        for e in (pod.get("spec") or {}).get("resourceClaims") or ()
        if e.get("resourceClaimTemplateName")
    }
    return {
        s["name"]: s["resourceClaimName"]
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        if s.get("name") in templated and s.get("resourceClaimName")
    }


MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def _gated(pod: dict) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def created_bound(pod: dict) -> bool:
    """A pod that names its node and that no scheduler bound: a static pod's mirror, or one
    without a ``PodScheduled=True`` condition (the binding subresource sets it; a pod created
    with ``spec.nodeName`` has none until its kubelet reports)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if MIRROR_ANNOTATION in (_meta(pod).get("annotations") or {}):
        return True
    return scheduled_at(pod) is None


# -- the timeline ------------------------------------------------------------------------------


@dataclass
class _Entry:
    """One pod (one uid) as the recorder saw it, times in seconds from the start."""

    pod: dict  # the latest version seen
    arrival: float
    order: int
    initial_node: str | None = None
    node: str | None = None
    scheduled: float | None = None
    end: float | None = None
    claims: dict[str, dict] = field(default_factory=dict)  # claim name -> the claim


class Timeline:
    """Pods' creations, bindings and ends, in seconds from ``start`` (Unix seconds), and
    the objects present at the start; :meth:`trace` writes the trace's dict.

    ``get_claim(namespace, name)`` reads a claim the start did not list (live: one GET).
    """

    def __init__(
        self,
        start: float,
        *,
        max_pods: int = DEFAULT_MAX_PODS,
        get_claim: Callable[[str, str], dict | None] | None = None,
    ) -> None:
        self.start = start
        self.max_pods = max_pods
        self.get_claim = get_claim
        self.nodes: list[dict] = []
        self.objects: list[dict] = []
        self.claims: dict[tuple[str, str], dict] = {}  # listed at the start
        self.owned_claims: dict[str, list[tuple[str, str]]] = {}  # pod uid -> claims' keys
        self.entries: dict[str, _Entry] = {}  # uid (or namespace/name) -> entry
        self.notes: list[str] = []
        self.ungated = 0  # pods that arrive when their scheduling gates were lifted
        self.last = 0.0  # the latest time seen

    # -- the start --------------------------------------------------------------------------

    def add_node(self, node: dict) -> None:
        self.nodes.append(clean_object(node, "v1", "Node"))

    def add_object(self, obj: dict) -> None:
        if obj.get("kind") == "ResourceClaim":
            meta = _meta(obj)
            key = (meta.get("namespace") or "", meta.get("name") or "")
            self.claims[key] = obj
            for ref in meta.get("ownerReferences") or ():
                if ref.get("kind") == "Pod" and ref.get("uid"):
                    self.owned_claims.setdefault(ref["uid"], []).append(key)
        else:
            self.objects.append(clean_object(obj))

    # -- pods -------------------------------------------------------------------------------

    @staticmethod
    def uid(pod: dict) -> str:
        return _meta(pod).get("uid") or _key(pod)

    def _at(self, when: float) -> float:
        at = max(0.0, when - self.start)
        self.last = max(self.last, at)
        return at

    def initial(self, pod: dict) -> _Entry:
        """A pod present at the start: it arrives at 0, created bound where it runs."""
        node = (pod.get("spec") or {}).get("nodeName") or None
        entry = self._new(pod, 0.0)
        entry.initial_node = entry.node = node
        entry.scheduled = 0.0 if node else None
        return entry

    def created(self, pod: dict, when: float) -> _Entry:
        """A pod created at ``when`` (Unix seconds). One that names its node when first seen
        and that no scheduler bound (:func:`created_bound`) is created there."""
        entry = self._new(pod, self._at(when))
        node = (pod.get("spec") or {}).get("nodeName") or None
        if node and created_bound(pod):
            entry.initial_node = entry.node = node
            entry.scheduled = entry.arrival
        return entry

    def place(
        self,
        pod: dict,
        created: float,
        node: str | None,
        scheduled: float | None,
        end: float | None,
    ) -> _Entry:
        """A pod whose whole life is known (a dump): created, bound to ``node`` at
        ``scheduled``, gone at ``end`` (Unix seconds, ``None`` for not). Created before the
        start, it is there at 0, bound there if it was bound by then."""
        if created <= self.start:
            entry = self._new(pod, 0.0)
            if node and scheduled is not None and scheduled <= self.start:
                entry.initial_node = entry.node = node
                entry.scheduled = 0.0
        else:
            entry = self._new(pod, self._at(created))
            if node and created_bound(pod):
                entry.initial_node = entry.node = node
                entry.scheduled = entry.arrival
        if node and entry.node is None and scheduled is not None:
            entry.node = node
            entry.scheduled = max(entry.arrival, self._at(scheduled))
        if end is not None:
            self.ended(pod, end)
        return entry

    def _new(self, pod: dict, arrival: float) -> _Entry:
        if len(self.entries) >= self.max_pods:
            raise RecordError(
                f"--max-pods: more than {self.max_pods} pods to record; raise --max-pods, "
                "shorten --window or give --namespace"
            )
        entry = _Entry(pod=pod, arrival=arrival, order=len(self.entries))
        self.entries[self.uid(pod)] = entry
        self._collect_claims(entry)
        return entry

    def update(self, pod: dict, seen: float) -> None:
        """A new version of a known pod, seen at ``seen``: ungated? bound? terminated?

        A pod whose scheduling gates are lifted arrives then: the trace's pod, as last seen,
        has none, and a replay has no controller to lift them (a pod still gated at the end
        keeps them and is never scheduled, as it was not)."""
        entry = self.entries.get(self.uid(pod))
        if entry is None:
            return
        if _gated(entry.pod) and not _gated(pod) and entry.node is None:
            entry.arrival = max(entry.arrival, self._at(seen))
            self.ungated += 1
        entry.pod = pod
        node = (pod.get("spec") or {}).get("nodeName") or None
        if node and entry.node is None:
            entry.node = node
            when = refine(scheduled_at(pod), seen)
            entry.scheduled = max(entry.arrival, self._at(when if when is not None else seen))
        if (pod.get("status") or {}).get("phase") in TERMINATED and entry.end is None:
            when = refine(finished_at(pod), seen)
            self.ended(pod, when if when is not None else seen)
        self._collect_claims(entry)

    def ended(self, pod: dict, when: float) -> None:
        """The pod stopped holding its node at ``when`` (deleted, or terminated)."""
        entry = self.entries.get(self.uid(pod))
        if entry is not None and entry.end is None:
            entry.end = max(entry.arrival, entry.scheduled or 0.0, self._at(when))

    def _collect_claims(self, entry: _Entry) -> None:
        """The claims generated for the pod from templates (status.resourceClaimStatuses),
        and the listed claims the pod owns."""
        meta = _meta(entry.pod)
        namespace = meta.get("namespace") or ""
        for claim_name in generated_claims(entry.pod).values():
            if claim_name in entry.claims:
                continue
            claim = self.claims.get((namespace, claim_name))
            if claim is None and self.get_claim is not None:
                claim = self.get_claim(namespace, claim_name)
            if claim is not None:
                entry.claims[claim_name] = claim
        for key in self.owned_claims.get(meta.get("uid") or "", ()):
            if key[0] == namespace and key[1] not in entry.claims:
                entry.claims[key[1]] = self.claims[key]

    # -- the trace --------------------------------------------------------------------------

    def pod_records(self) -> list[dict]:
        """The trace's ``pods``, sorted by arrival. A name seen again (a pod deleted and
        created anew, as a StatefulSet's) gets a ``-N`` suffix, the format's keys being
        unique; a pod created bound to a node that is not recorded (one added during the
        window) arrives unbound."""
        node_names = {_meta(n).get("name") for n in self.nodes}
        seen: dict[str, int] = {}
        renamed = unbound = 0
        records = []
        for entry in sorted(self.entries.values(), key=lambda e: (e.arrival, e.order)):
            duration = abandon = None
            if entry.end is not None:
                if entry.scheduled is not None:
                    duration = round(entry.end - entry.scheduled, 6)
                else:
                    abandon = round(entry.end, 6)
            initial = entry.initial_node
            if initial is not None and initial not in node_names:
                initial, unbound = None, unbound + 1
            claims = [
                _clean_claim(c, keep_status=initial is not None) for c in entry.claims.values()
            ]
            pod = clean_pod(entry.pod, generated_claims(entry.pod))
            key = _key(pod)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                pod["metadata"]["name"] = f"{pod['metadata'].get('name')}-{seen[key]}"
                renamed += 1
            records.append(
                {
                    "arrival": round(entry.arrival, 6),
                    "pod": pod,
                    "claims": claims,
                    "duration": duration,
                    "abandon": abandon,
                    "node": initial,
                    "recorded": {
                        "node": entry.node,
                        "scheduled": None if entry.scheduled is None else round(entry.scheduled, 6),
                    },
                }
            )
        if self.ungated:
            self.notes.append(f"{self.ungated} pod(s) arrive when their scheduling gates lifted")
        if renamed:
            self.notes.append(f"{renamed} pod(s) reusing an earlier pod's name renamed NAME-N")
        if unbound:
            self.notes.append(
                f"{unbound} pod(s) created bound to an unrecorded node arrive unbound"
            )
        return records

    def trace(self, *, name: str, source: str, end: float | None = None, notes: str = "") -> dict:
        """The trace's dict (format v1); ``end`` (seconds from the start) defaults to the
        latest time seen."""
        pods = self.pod_records()
        owned = {
            (_meta(c).get("namespace") or "", _meta(c).get("name") or "")
            for entry in self.entries.values()
            for c in entry.claims.values()
        }
        objects = list(self.objects)
        objects += [clean_object(c) for key, c in self.claims.items() if key not in owned]
        all_notes = [f"recorded from {_rfc3339(self.start)}", *self.notes]
        if notes:
            all_notes.append(notes)
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "version": VERSION,
            "metadata": {
                "name": name,
                "source": source,
                "gpuMapping": gpu_mapping(self.nodes, objects),
                "anonymised": False,
                "createdBy": CREATED_BY,
                "notes": "; ".join(all_notes),
            },
            "duration": round(max(self.last, end or 0.0), 6),
            "nodes": self.nodes,
            "objects": objects,
            "pods": pods,
        }


def _clean_claim(claim: dict, keep_status: bool) -> dict:
    out = clean_object(claim, "resource.k8s.io/v1", "ResourceClaim")
    if not keep_status:
        out.pop("status", None)
    return out


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def gpu_mapping(nodes: list[dict], objects: list[dict]) -> str:
    """How the recorded cluster exposes GPUs: ``dra`` (ResourceSlices), ``extended`` (a
    ``*/gpu`` extended resource on a node) or ``none``."""
    if any(o.get("kind") == "ResourceSlice" for o in objects):
        return "dra"
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        if any(k.endswith("/gpu") for k in allocatable):
            return "extended"
    return "none"


def _check_objects(count: int, max_objects: int) -> None:
    if count > max_objects:
        raise RecordError(
            f"--max-objects: more than {max_objects} nodes and objects to record; raise "
            "--max-objects or give --namespace"
        )


# -- a dump ------------------------------------------------------------------------------------


def from_dump(
    objects: Iterable[dict],
    *,
    namespace: str | None = None,
    start: float | None = None,
    max_pods: int = DEFAULT_MAX_PODS,
    max_objects: int = DEFAULT_MAX_OBJECTS,
    name: str = "recorded",
    source: str = "dump",
) -> dict:
    """A trace from a dump's objects (any order). The start is ``start`` (Unix seconds) or
    the first pod's creation; a pod created before it is there at 0 (bound there if it was
    scheduled before it); one gone before it is left out; the end is the latest time any pod
    says. A pod's times are its creationTimestamp, PodScheduled condition, and
    deletionTimestamp or (Succeeded/Failed) its containers' finishedAt."""
    nodes: list[dict] = []
    pods: list[dict] = []
    others: list[dict] = []
    for i, obj in enumerate(objects):
        kind = obj.get("kind")
        if not isinstance(obj, dict) or not kind:
            raise RecordError(f"items[{i}]: not a Kubernetes object (no kind)")
        obj_namespace = _meta(obj).get("namespace")
        if kind == "Node":
            nodes.append(obj)
        elif kind == "Pod":
            if namespace is None or obj_namespace == namespace:
                pods.append(obj)
        elif kind in OBJECT_KINDS:
            if _in_namespace(obj, kind, namespace):
                others.append(obj)
    if not nodes:
        raise RecordError(f"{source}: no Node in the dump")
    _check_objects(len(nodes) + len(others), max_objects)
    times = []
    for pod in pods:
        created = parse_time(_meta(pod).get("creationTimestamp"), f"pod {_key(pod)}")
        if created is None:
            raise RecordError(f"pod {_key(pod)}: metadata.creationTimestamp: missing")
        times.append(created)
    if start is None:
        start = min(times) if times else 0.0
    timeline = Timeline(start, max_pods=max_pods)
    for node_obj in nodes:
        timeline.add_node(node_obj)
    for obj in others:
        timeline.add_object(obj)
    skipped = 0
    for pod, created in sorted(zip(pods, times, strict=True), key=lambda pc: pc[1]):
        node = (pod.get("spec") or {}).get("nodeName") or None
        scheduled = (scheduled_at(pod) or created) if node else None
        end = parse_time(_meta(pod).get("deletionTimestamp"), f"pod {_key(pod)}")
        if (pod.get("status") or {}).get("phase") in TERMINATED:
            finished = finished_at(pod)
            if finished is not None and (end is None or finished < end):
                end = finished
            if end is None:
                skipped += 1  # terminated, but when is not said
                continue
        if end is not None and end <= start:
            continue  # gone before the trace starts
        timeline.place(pod, created, node, scheduled, end)
    if skipped:
        timeline.notes.append(f"{skipped} terminated pod(s) without finishedAt left out")
    return timeline.trace(name=name, source=source)


def _in_namespace(obj: dict, kind: str, namespace: str | None) -> bool:
    if namespace is None:
        return True
    if kind == "Namespace":
        return _meta(obj).get("name") == namespace
    if OBJECT_KINDS[kind][1]:
        return _meta(obj).get("namespace") == namespace
    return True


# -- a live cluster ----------------------------------------------------------------------------


def _listed(client: Any, path: str, api_version: str, kind: str) -> tuple[list[dict], str]:
    items, resource_version = client.list(path)
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items, resource_version


def _collection(kind: str, namespace: str | None) -> str:
    path, namespaced, _ = OBJECT_KINDS[kind]
    if namespaced and namespace is not None:
        head, _, resource = path.rpartition("/")
        return f"{head}/namespaces/{namespace}/{resource}"
    return path


def record_live(
    client: Any,
    window: float,
    *,
    namespace: str | None = None,
    max_pods: int = DEFAULT_MAX_PODS,
    max_objects: int = DEFAULT_MAX_OBJECTS,
    name: str = "recorded",
    source: str = "live",
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[float, int], None] | None = None,
) -> dict:
    """Record ``client``'s cluster for ``window`` seconds (read-only: LIST, WATCH, GET).

    A kind the apiserver does not serve (no DRA API) or that the user may not list is left
    out and said in the notes. The
    watch restarts from its last resourceVersion when the server ends it, and from a new list
    when that is too old (410): pods gone meanwhile end at the relist.
    """
    from extender.kube import ApiError, Gone, NotFound

    def get_claim(ns: str, claim: str) -> dict | None:
        try:
            found = client.get(f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{claim}")
        except ApiError:
            return None
        if found is not None:
            found.setdefault("apiVersion", "resource.k8s.io/v1")
            found.setdefault("kind", "ResourceClaim")
        return found

    start = clock()
    timeline = Timeline(start, max_pods=max_pods, get_claim=get_claim)
    nodes, _ = _listed(client, "/api/v1/nodes", "v1", "Node")
    count = len(nodes)
    _check_objects(count, max_objects)
    for node in nodes:
        timeline.add_node(node)
    for kind, (_, _, api_version) in OBJECT_KINDS.items():
        try:
            items, _ = _listed(client, _collection(kind, namespace), api_version, kind)
        except NotFound:
            timeline.notes.append(f"{kind}: not served, not recorded")
            continue
        except ApiError as exc:
            if exc.status != 403:
                raise
            timeline.notes.append(f"{kind}: not allowed to list, not recorded")
            continue
        items = [o for o in items if _in_namespace(o, kind, namespace)]
        count += len(items)
        _check_objects(count, max_objects)
        for obj in items:
            timeline.add_object(obj)
    pods_path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    pods, resource_version = _listed(client, pods_path, "v1", "Pod")
    live: set[str] = set()
    reconnects = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in TERMINATED:
            continue
        timeline.initial(pod)
        live.add(Timeline.uid(pod))
    end = start + window

    def handle(kind: str, pod: dict, seen: float) -> None:
        uid = Timeline.uid(pod)
        if kind == "ADDED" and uid not in timeline.entries:
            if (pod.get("status") or {}).get("phase") in TERMINATED:
                return
            created = parse_time(_meta(pod).get("creationTimestamp"), f"pod {_key(pod)}")
            timeline.created(pod, refine(created, seen) or seen)
            timeline.update(pod, seen)
            live.add(uid)
        elif kind in ("ADDED", "MODIFIED"):
            timeline.update(pod, seen)
        elif kind == "DELETED":
            timeline.update(pod, seen)
            timeline.ended(pod, seen)
            live.discard(uid)

    while (now := clock()) < end:
        if progress is not None:
            progress(now - start, len(timeline.entries))
        try:
            # Watches of at most PROGRESS_EVERY seconds, so that progress is told meanwhile.
            seconds = max(1, min(math.ceil(end - now), PROGRESS_EVERY))
            stream = client.watch(pods_path, resource_version, timeout_seconds=seconds)
            with stream:
                for kind, obj in stream:
                    seen = clock()
                    if seen >= end:
                        break
                    resource_version = _meta(obj).get("resourceVersion") or resource_version
                    if kind != "BOOKMARK":
                        handle(kind, obj, seen)
        except Gone:
            pods, resource_version = _listed(client, pods_path, "v1", "Pod")
            seen = clock()
            current = {Timeline.uid(p): p for p in pods}
            for uid in list(live - set(current)):
                entry = timeline.entries[uid]
                timeline.ended(entry.pod, seen)
                live.discard(uid)
            for pod in pods:
                handle("ADDED", pod, seen)
        except ApiError as exc:
            if exc.status != 0:
                raise RecordError(f"watching {pods_path}: {exc}") from None
            reconnects += 1  # the connection dropped: again, from the last resourceVersion
            sleep(min(1.0, max(0.0, end - clock())))
    if reconnects:
        timeline.notes.append(f"the pod watch lost its connection {reconnects} time(s)")
    if progress is not None:
        progress(window, len(timeline.entries))
    return timeline.trace(name=name, source=source, end=window)
