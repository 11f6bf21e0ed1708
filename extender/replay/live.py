"""Replay a trace against a real cluster, in scaled wall time, through whatever scheduler runs
there (kube-scheduler, or ours), and write the same replay log as the virtual-time engine.

This is the other half of the fidelity check (issue 32, point 4; ``docs/replay.md``,
"Fidelity"): the same trace and the same KubeSchedulerConfiguration, once through
:mod:`extender.replay.engine` in virtual time and once through the real scheduler here, must
give the same figures within a stated tolerance.

What it does, with ``scale`` the time scale (``--time-scale``, e.g. 100: a trace second lasts
10 ms):

1. creates the trace's ``nodes`` (Node objects only: no kubelet, as the end-to-end tests do;
   the trace's ``status`` is written through the status subresource, with a ``Ready``
   condition when the trace gives none) and its ``objects``;
2. creates each pod (its claims just before it) at ``arrival / scale`` seconds of wall time,
   labelled with this run's id, ``spec.schedulerName`` set when asked;
3. watches the run's pods: a pod seen with ``spec.nodeName`` is bound at that moment;
4. deletes a bound pod ``duration / scale`` after its binding and a still pending one at
   ``abandon / scale`` (grace period 0, as nothing runs on these nodes);
5. stops at the trace's ``duration`` (or earlier once nothing can change any more: every pod
   created, no deletion due, no binding for ``settle`` seconds) and deletes what it created.

The log (issue 32, section 2) has its times scaled back to trace seconds from the moment the
first pod could be created, so :mod:`extender.replay.metrics` computes the same figures from
both logs. Its ``live`` entry says how the run went (time scale, scheduler, the worst
lateness of an action against its due time, in trace seconds).

GPUs: in the extended mapping (``nvidia.com/gpu``) a bind lists the whole GPUs it took, the
first free ones of the node in id order, as a device plugin would; in the DRA mapping the
devices (and shares) come from the pod's claims' ``status.allocation`` once it is bound.

Bounded on purpose: a trace with more nodes or pods than ``max_nodes`` / ``max_pods`` is
refused before anything is created. Requests go through the project's raw-JSON client
(:class:`extender.kube.KubeClient`).

Run it as ``python -m extender.replay.live --trace T --kubeconfig K --time-scale 100 -o log.json``.
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import json
import logging
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from extender.framework.resources import pod_requests
from extender.kube import ApiError, Gone, KubeClient, api_client

log = logging.getLogger(__name__)

GPU_RESOURCE = "nvidia.com/gpu"
GPU_MODEL_LABEL = "kube-extender.dev/gpu-model"
GPU_DRIVER = "gpu.kube-extender.dev"
RUN_LABEL = "kube-extender.dev/replay-run"
FULL_SHARE = 1000

DEFAULT_MAX_NODES = 200
DEFAULT_MAX_PODS = 2000
DEFAULT_SETTLE = 2.0  # wall seconds without change before jumping to the end

# Collection of each kind a trace's ``objects`` may hold: (resource, namespaced).
KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "PriorityClass": ("priorityclasses", False),
    "StorageClass": ("storageclasses", False),
    "PersistentVolume": ("persistentvolumes", False),
    "PersistentVolumeClaim": ("persistentvolumeclaims", True),
    "DeviceClass": ("deviceclasses", False),
    "ResourceSlice": ("resourceslices", False),
    "ResourceClaim": ("resourceclaims", True),
    "ResourceClaimTemplate": ("resourceclaimtemplates", True),
    "ReplicaSet": ("replicasets", True),
    "StatefulSet": ("statefulsets", True),
    "Service": ("services", True),
    "PodGroup": ("podgroups", True),
}


class LiveReplayError(ValueError):
    """A trace the live replay refuses, or a cluster it will not write into; the message
    names the field or the object."""


# -- the trace as the log describes it ---------------------------------------------------------


def _key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _slice_gpus(objects: Iterable[dict]) -> dict[str, list[dict]]:
    """Per node, the GPUs the DRA mapping's ResourceSlices publish."""
    found: dict[str, list[dict]] = {}
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") != "ResourceSlice" or spec.get("driver") != GPU_DRIVER:
            continue
        node = spec.get("nodeName") or (spec.get("pool") or {}).get("name")
        for device in spec.get("devices") or ():
            model = ((device.get("attributes") or {}).get("model") or {}).get("string", "")
            found.setdefault(node, []).append(
                {"id": f"{node}/{device['name']}", "model": model, "milli": FULL_SHARE}
            )
    return found


def describe_nodes(trace: dict) -> list[dict]:
    """The log's ``nodes``: allocatable CPU (milli) and memory (bytes), labels and GPUs."""
    sliced = _slice_gpus(trace.get("objects") or ())
    nodes = []
    for node in trace.get("nodes") or ():
        meta = node.get("metadata") or {}
        name = meta["name"]
        status = node.get("status") or {}
        allocatable = pod_requests(
            {"spec": {"containers": [{"resources": {"requests": status.get("allocatable")}}]}}
        )
        labels = dict(meta.get("labels") or {})
        gpus = sliced.get(name, [])
        whole = allocatable.scalar.get(GPU_RESOURCE, 0)
        if whole and not gpus:
            model = labels.get(GPU_MODEL_LABEL, "")
            gpus = [
                {"id": f"{name}/gpu-{i}", "model": model, "milli": FULL_SHARE} for i in range(whole)
            ]
        nodes.append(
            {
                "name": name,
                "cpu": allocatable.milli_cpu,
                "memory": allocatable.memory,
                "labels": labels,
                "gpus": gpus,
            }
        )
    return nodes


def _claim_gpus(claims: Iterable[dict]) -> tuple[int, int]:
    """GPUs and share per GPU the DRA mapping's claims ask for."""
    count, share = 0, FULL_SHARE
    for claim in claims:
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            exactly = request.get("exactly") or request
            count += int(exactly.get("count") or 1)
            asked = ((exactly.get("capacity") or {}).get("requests") or {}).get("share")
            if asked is not None:
                share = int(str(asked))
    return count, share


def describe_pods(trace: dict) -> dict[str, dict]:
    """The log's ``pods``: requests, GPUs asked, owner and arrival of each pod."""
    described = {}
    for entry in trace.get("pods") or ():
        pod = entry["pod"]
        requests = pod_requests(pod)
        gpus = requests.scalar.get(GPU_RESOURCE, 0)
        milli = FULL_SHARE
        if not gpus and entry.get("claims"):
            gpus, milli = _claim_gpus(entry["claims"])
        owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
        owner = next((f"{o.get('kind')}/{o.get('name')}" for o in owners), None)
        described[_key(pod)] = {
            "cpu": requests.milli_cpu,
            "memory": requests.memory,
            "gpus": gpus,
            "gpuMilli": milli if gpus else 0,
            "owner": owner,
            "arrival": float(entry["arrival"]),
        }
    return described


def check_bounds(trace: dict, max_nodes: int, max_pods: int) -> None:
    """Refuse a trace bigger than the live replay is allowed to put on a cluster, or one
    whose entries it cannot replay."""
    nodes, pods = trace.get("nodes"), trace.get("pods")
    if not isinstance(nodes, list):
        raise LiveReplayError("nodes: must be a list")
    if not isinstance(pods, list):
        raise LiveReplayError("pods: must be a list")
    if len(nodes) > max_nodes:
        raise LiveReplayError(
            f"nodes: {len(nodes)} nodes, more than the {max_nodes} allowed (--max-nodes)"
        )
    if len(pods) > max_pods:
        raise LiveReplayError(
            f"pods: {len(pods)} pods, more than the {max_pods} allowed (--max-pods)"
        )
    for i, obj in enumerate(trace.get("objects") or ()):
        if obj.get("kind") not in KINDS:
            raise LiveReplayError(f"objects[{i}].kind: {obj.get('kind')!r} is not replayed")
    end = trace.get("duration")
    if not isinstance(end, int | float) or end < 0:
        raise LiveReplayError("duration: must be a number >= 0")
    for i, entry in enumerate(pods):
        for field in ("arrival", "duration", "abandon"):
            value = entry.get(field)
            if field == "arrival" and value is None:
                raise LiveReplayError(f"pods[{i}].arrival: must be a number >= 0")
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise LiveReplayError(f"pods[{i}].{field}: must be a number >= 0")
        if not isinstance(entry.get("pod"), dict):
            raise LiveReplayError(f"pods[{i}].pod: must be a Pod object")


# -- talking to the cluster --------------------------------------------------------------------


def _collection(obj: dict) -> str:
    kind = obj.get("kind", "")
    resource, namespaced = KINDS[kind]
    api_version = obj.get("apiVersion") or "v1"
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespaced:
        namespace = (obj.get("metadata") or {}).get("namespace") or "default"
        return f"{base}/namespaces/{namespace}/{resource}"
    return f"{base}/{resource}"


def _fresh(obj: dict) -> dict:
    """``obj`` without what the apiserver sets (uid, resourceVersion, status...)."""
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
    }
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def _ready_status(status: dict) -> dict:
    status = dict(status)
    if not status.get("conditions"):
        status["conditions"] = [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "replay"}
        ]
    return status


def _bound_gpus(extended: dict[str, list[str]], node: str, count: int) -> list[list]:
    """Take the first ``count`` free whole GPUs of ``node`` (id order), as a device plugin."""
    free = extended.get(node, [])
    taken, extended[node] = free[:count], free[count:]
    return [[gpu, FULL_SHARE] for gpu in taken]


def _release_gpus(extended: dict[str, list[str]], node: str, gpus: list[list]) -> None:
    if node in extended:
        extended[node] = sorted(
            extended[node] + [gpu for gpu, _ in gpus], key=lambda g: int(g.rsplit("-", 1)[1])
        )


def _claim_devices(claims: Iterable[dict]) -> list[list]:
    devices = []
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            if result.get("driver") != GPU_DRIVER:
                continue
            share = (result.get("consumedCapacity") or {}).get("share")
            devices.append(
                [
                    f"{result.get('pool')}/{result.get('device')}",
                    int(str(share)) if share is not None else FULL_SHARE,
                ]
            )
    return devices


class _Pod:
    """One trace pod's life in the run."""

    __slots__ = ("entry", "key", "state", "node", "gpus", "failure", "uid")

    def __init__(self, entry: dict) -> None:
        self.entry = entry
        self.key = _key(entry["pod"])
        self.state = "future"  # future | pending | bound | gone
        self.node: str | None = None
        self.gpus: list[list] = []
        self.failure: tuple | None = None
        self.uid: str | None = None


class LiveReplay:
    """One live replay of ``trace`` through ``client``'s cluster; :meth:`run` returns the log."""

    def __init__(
        self,
        trace: dict,
        client: KubeClient,
        *,
        time_scale: float,
        scheduler_name: str | None = None,
        policy: str | None = None,
        config: str | None = None,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_pods: int = DEFAULT_MAX_PODS,
        settle: float = DEFAULT_SETTLE,
        allow_other_nodes: bool = False,
        strip_owners: bool = False,
        progress: Callable[[float, float], None] | None = None,
    ) -> None:
        if not time_scale > 0:
            raise LiveReplayError("time scale: must be > 0")
        check_bounds(trace, max_nodes, max_pods)
        self.trace = trace
        self.client = client
        self.scale = float(time_scale)
        self.scheduler_name = scheduler_name
        self.policy = policy
        self.config = config
        self.settle = settle
        self.allow_other_nodes = allow_other_nodes
        self.strip_owners = strip_owners
        self.progress = progress
        self.run_id = uuid.uuid4().hex[:12]
        self.end = float(trace["duration"])
        self.pods = {p.key: p for p in map(_Pod, trace["pods"])}
        if len(self.pods) != len(trace["pods"]):
            raise LiveReplayError("pods: two pods have the same namespace/name")
        self.nodes = describe_nodes(trace)
        self.extended = {
            n["name"]: [g["id"] for g in n["gpus"]]
            for n in self.nodes
            if n["gpus"] and not _slice_gpus(trace.get("objects") or ()).get(n["name"])
        }
        self.events: list[list] = []
        self.created: list[str] = []  # API paths, deleted in reverse at the end
        self.watched: queue.Queue[tuple[float, str, dict] | None] = queue.Queue()
        self.stop = threading.Event()
        self.t0 = 0.0
        self.lateness = 0.0
        self.last_change = 0.0
        self.cycles = 0

    # -- clock -------------------------------------------------------------------------------

    def now(self) -> float:
        """Trace seconds since the start."""
        return (time.monotonic() - self.t0) * self.scale

    def wall(self, trace_time: float) -> float:
        return self.t0 + trace_time / self.scale

    # -- setup and teardown ------------------------------------------------------------------

    def _check_cluster(self) -> None:
        names = {(n.get("metadata") or {}).get("name") for n in self.trace["nodes"]}
        existing, _ = self.client.list("/api/v1/nodes")
        clash = sorted(names & {n["metadata"]["name"] for n in existing})
        if clash:
            raise LiveReplayError(f"nodes: {clash[0]!r} already exists in the cluster")
        if existing and not self.allow_other_nodes:
            raise LiveReplayError(
                f"the cluster has {len(existing)} nodes of its own (e.g. "
                f"{existing[0]['metadata']['name']!r}): pods would land there too; "
                "replay on an empty cluster or pass --allow-other-nodes"
            )

    def _create(self, collection: str, obj: dict) -> dict:
        created = self.client.request("POST", collection, _fresh(obj))
        self.created.append(f"{collection}/{created['metadata']['name']}")
        return created

    def _setup(self) -> None:
        namespaces = {
            (entry["pod"].get("metadata") or {}).get("namespace") or "default"
            for entry in self.trace["pods"]
        }
        declared = {
            (o.get("metadata") or {}).get("name")
            for o in self.trace.get("objects") or ()
            if o.get("kind") == "Namespace"
        }
        for namespace in sorted(namespaces - declared):
            if self.client.get(f"/api/v1/namespaces/{namespace}") is None:
                self._create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        objects = sorted(
            self.trace.get("objects") or (), key=lambda o: o.get("kind") != "Namespace"
        )
        for obj in objects:
            self._create(_collection(obj), obj)
        for node in self.trace["nodes"]:
            created = self._create("/api/v1/nodes", {**node, "apiVersion": "v1", "kind": "Node"})
            self.client.request(
                "PATCH",
                f"/api/v1/nodes/{created['metadata']['name']}/status",
                {"status": _ready_status(node.get("status") or {})},
                content_type="application/merge-patch+json",
            )

    def _teardown(self) -> None:
        for pod in self.pods.values():
            if pod.state in ("pending", "bound"):
                self._delete_pod(pod)
        for path in reversed(self.created):
            try:
                self.client.request("DELETE", path, {"gracePeriodSeconds": 0})
            except ApiError as exc:
                if exc.status != 404:
                    log.warning("could not delete %s: %s", path, exc)

    # -- the watch ---------------------------------------------------------------------------

    def _watch(self, resource_version: str) -> None:
        selector = f"{RUN_LABEL}={self.run_id}"
        while not self.stop.is_set():
            try:
                with self.client.watch(
                    "/api/v1/pods", resource_version, timeout_seconds=60, label_selector=selector
                ) as stream:
                    for kind, obj in stream:
                        resource_version = obj["metadata"].get("resourceVersion", resource_version)
                        if kind != "BOOKMARK":
                            self.watched.put((time.monotonic(), kind, obj))
                        if self.stop.is_set():
                            return
            except Gone:
                items, resource_version = self.client.list(
                    "/api/v1/pods", {"labelSelector": selector}
                )
                stamp = time.monotonic()
                for obj in items:
                    self.watched.put((stamp, "MODIFIED", obj))
            except ApiError as exc:
                if self.stop.is_set():
                    return
                log.warning("pod watch: %s; watching again", exc)
                time.sleep(0.2)

    def _seen(self, stamp: float, kind: str, obj: dict) -> None:
        pod = self.pods.get(_key(obj))
        if (
            pod is None
            or pod.state == "gone"
            or (pod.uid and obj["metadata"].get("uid") != pod.uid)
        ):
            return
        at = (stamp - self.t0) * self.scale
        node = (obj.get("spec") or {}).get("nodeName")
        if kind == "DELETED":
            # Deleted by someone else: preempted (kube-scheduler's victims carry the
            # DisruptionTarget condition) if it was bound, else given up.
            if pod.state == "bound":
                self._record(at, "preempt", pod.key, pod.node, "")
                _release_gpus(self.extended, pod.node or "", pod.gpus)
            else:
                self._record(at, "abandon", pod.key)
            pod.state = "gone"
            self.last_change = stamp
            return
        if node and pod.state == "pending":
            self._bind(pod, node, at, stamp)
            return
        if pod.state == "pending":
            for condition in (obj.get("status") or {}).get("conditions") or ():
                if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                    mark = (condition.get("lastTransitionTime"), condition.get("message"))
                    if mark != pod.failure:
                        pod.failure = mark
                        self._record(at, "fail", pod.key)

    def _bind(self, pod: _Pod, node: str, at: float, stamp: float) -> None:
        pod.state, pod.node = "bound", node
        if node in self.extended:
            count = pod_requests(pod.entry["pod"]).scalar.get(GPU_RESOURCE, 0)
            pod.gpus = _bound_gpus(self.extended, node, count)
        elif pod.entry.get("claims"):
            pod.gpus = _claim_devices(self._claims(pod))
        self._record(at, "bind", pod.key, node, pod.gpus)
        self.last_change = stamp
        duration = pod.entry.get("duration")
        if duration is not None:
            self._due(stamp + duration / self.scale, "leave", pod.key)

    def _claims(self, pod: _Pod) -> list[dict]:
        found = []
        for claim in pod.entry.get("claims") or ():
            path = f"{_collection({**claim, 'kind': 'ResourceClaim'})}/{claim['metadata']['name']}"
            current = self.client.get(path)
            if current is not None:
                found.append(current)
        return found

    # -- actions -----------------------------------------------------------------------------

    def _record(self, at: float, *event: Any) -> None:
        self.events.append([round(min(max(at, 0.0), self.end), 6), *event])

    def _due(self, wall: float, action: str, key: str) -> None:
        heapq.heappush(self.agenda, (wall, next(self.order), action, key))

    def _create_pod(self, pod: _Pod, at: float) -> None:
        entry = pod.entry
        body = _fresh(entry["pod"])
        meta = body["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), RUN_LABEL: self.run_id}
        if self.strip_owners:
            meta.pop("ownerReferences", None)
        spec = dict(body.get("spec") or {})
        spec.pop("nodeName", None)
        if entry.get("node"):
            spec["nodeName"] = entry["node"]
        if self.scheduler_name:
            spec["schedulerName"] = self.scheduler_name
        body["spec"] = spec
        namespace = meta.get("namespace") or "default"
        for claim in entry.get("claims") or ():
            claim = {**claim, "apiVersion": claim.get("apiVersion") or "resource.k8s.io/v1"}
            self.client.request(
                "POST", _collection({**claim, "kind": "ResourceClaim"}), _fresh(claim)
            )
        created = self.client.request("POST", f"/api/v1/namespaces/{namespace}/pods", body)
        pod.uid = created["metadata"].get("uid")
        pod.state = "pending"
        self._record(at, "arrive", pod.key)
        if entry.get("node"):
            self._bind(pod, entry["node"], at, time.monotonic())

    def _delete_pod(self, pod: _Pod) -> None:
        namespace, name = pod.key.split("/", 1)
        try:
            self.client.delete_pod(namespace, name, uid=pod.uid, grace_period_seconds=0)
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise
        for claim in pod.entry.get("claims") or ():
            path = f"{_collection({**claim, 'kind': 'ResourceClaim'})}/{claim['metadata']['name']}"
            try:
                self.client.request("DELETE", path)
            except ApiError as exc:
                if exc.status != 404:
                    raise
        pod.state = "gone"

    def _act(self, action: str, key: str, at: float) -> None:
        pod = self.pods[key]
        if action == "create":
            self._create_pod(pod, at)
        elif action == "leave" and pod.state == "bound":
            self._record(at, "leave", key, pod.node, "completed")
            _release_gpus(self.extended, pod.node or "", pod.gpus)
            self._delete_pod(pod)
            self.last_change = time.monotonic()
        elif action == "abandon" and pod.state == "pending":
            self._record(at, "abandon", key)
            self._delete_pod(pod)
            self.last_change = time.monotonic()

    def _quiet(self) -> bool:
        """Nothing left to do but wait for the end: every pod created, no deletion due, and
        no binding or departure for ``settle`` seconds."""
        return not self.agenda and time.monotonic() - self.last_change >= self.settle

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> dict:
        self._check_cluster()
        started = time.monotonic()
        self.agenda: list[tuple[float, int, str, str]] = []
        self.order = iter(range(sys.maxsize))
        watcher: threading.Thread | None = None
        try:
            self._setup()
            _, resource_version = self.client.list(
                "/api/v1/pods", {"labelSelector": f"{RUN_LABEL}={self.run_id}"}
            )
            watcher = threading.Thread(
                target=self._watch, args=(resource_version,), name="replay-watch", daemon=True
            )
            watcher.start()
            self.t0 = self.last_change = time.monotonic()
            for pod in self.pods.values():
                self._due(self.wall(float(pod.entry["arrival"])), "create", pod.key)
                if pod.entry.get("abandon") is not None:
                    self._due(self.wall(float(pod.entry["abandon"])), "abandon", pod.key)
            self._loop()
            for pod in self.pods.values():
                if pod.state == "bound":
                    self._record(self.end, "leave", pod.key, pod.node, "end")
        finally:
            self.stop.set()
            self._teardown()
            if watcher is not None:
                watcher.join(timeout=2)
        self.events.sort(key=lambda e: e[0])
        return self._log(time.monotonic() - started)

    def _loop(self) -> None:
        end_wall = self.wall(self.end)
        while True:
            wait = (self.agenda[0][0] if self.agenda else end_wall) - time.monotonic()
            try:
                item = self.watched.get(timeout=max(0.0, min(wait, 0.05)))
            except queue.Empty:
                item = None
            if item is not None:
                self._seen(*item)
                continue
            now = time.monotonic()
            while self.agenda and self.agenda[0][0] <= now:
                wall, _, action, key = heapq.heappop(self.agenda)
                if wall > end_wall:
                    self.agenda.clear()
                    break
                self.lateness = max(self.lateness, (now - wall) * self.scale)
                self._act(action, key, (wall - self.t0) * self.scale)
                self.cycles += 1
            if self.progress is not None:
                self.progress(min(self.now(), self.end), self.end)
            if now >= end_wall or self._quiet():
                return

    def _log(self, wall_seconds: float) -> dict:
        metadata = self.trace.get("metadata") or {}
        return {
            "version": 1,
            "policy": self.policy,
            "config": self.config,
            "seed": None,
            "trace": {
                "name": metadata.get("name"),
                "source": metadata.get("source"),
                "gpuMapping": metadata.get("gpuMapping"),
            },
            "nodes": self.nodes,
            "pods": describe_pods(self.trace),
            "events": self.events,
            "end": self.end,
            "wall_seconds": round(wall_seconds, 3),
            "cycles": self.cycles,
            "live": {
                "timeScale": self.scale,
                "schedulerName": self.scheduler_name,
                "maxLateness": round(self.lateness, 3),
                "runId": self.run_id,
            },
        }


def replay_live(trace: dict, client: KubeClient, **options: Any) -> dict:
    """Replay ``trace`` on ``client``'s cluster; the replay log (see :class:`LiveReplay`)."""
    return LiveReplay(trace, client, **options).run()


# -- command line ------------------------------------------------------------------------------


def _load(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            trace = json.load(f)
    except (OSError, ValueError) as exc:
        raise LiveReplayError(f"{path}: {exc}") from exc
    if not isinstance(trace, dict):
        raise LiveReplayError(f"{path}: not a trace document")
    return trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m extender.replay.live",
        description="Replay a trace on a real cluster in scaled wall time; write the replay log.",
    )
    parser.add_argument("--trace", required=True, type=Path)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--time-scale", type=float, default=100.0, help="trace s per wall s")
    parser.add_argument("--scheduler-name", help="spec.schedulerName of every pod")
    parser.add_argument("--policy", help="the policy's name in the log")
    parser.add_argument("--config", help="the scheduler's config file, named in the log")
    parser.add_argument("--max-nodes", type=int, default=DEFAULT_MAX_NODES)
    parser.add_argument("--max-pods", type=int, default=DEFAULT_MAX_PODS)
    parser.add_argument("--settle", type=float, default=DEFAULT_SETTLE)
    parser.add_argument("--allow-other-nodes", action="store_true")
    parser.add_argument(
        "--strip-owners",
        action="store_true",
        help="drop ownerReferences (a cluster's garbage collector deletes pods whose owner "
        "does not exist)",
    )
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        trace = _load(args.trace)
        result = replay_live(
            trace,
            KubeClient(api_client(args.kubeconfig)),
            time_scale=args.time_scale,
            scheduler_name=args.scheduler_name,
            policy=args.policy,
            config=args.config,
            max_nodes=args.max_nodes,
            max_pods=args.max_pods,
            settle=args.settle,
            allow_other_nodes=args.allow_other_nodes,
            strip_owners=args.strip_owners,
        )
    except (LiveReplayError, ApiError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.output.write_text(json.dumps(result))
    print(f"{args.output}: {len(result['events'])} events in {result['wall_seconds']:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
