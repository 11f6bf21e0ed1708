"""Replay a trace against a real cluster, in scaled wall time, through whatever scheduler runs
there (kube-scheduler, or ours), and write the same replay log as the virtual-time engine.

This is the other half of the fidelity check (issue 32, point 4; ``docs/replay.md``,
"Fidelity"): the same trace under the same KubeSchedulerConfiguration, once through
:func:`extender.replay.engine.replay` in virtual time and once through the real scheduler here,
must give the same figures within a stated tolerance (:mod:`extender.replay.fidelity`).

With ``scale`` the time scale (``--time-scale``; 100: a trace second lasts 10 ms):

1. the trace's ``nodes`` are created (Node objects only: no kubelet, as the end-to-end tests
   do; the trace's ``status`` is written through the status subresource, with a ``Ready``
   condition when it gives none), then its ``objects`` (and the pods' namespaces if missing);
2. each pod is created (its claims just before it) at ``arrival / scale`` seconds of wall
   time, labelled with the run's id, ``spec.schedulerName`` set when asked;
3. the run's pods are watched: a pod seen with ``spec.nodeName`` was bound at that moment;
4. a bound pod is deleted ``duration / scale`` after its binding, a still pending one at
   ``abandon / scale`` (grace period 0: nothing runs on these nodes);
5. the run stops at the trace's ``duration``, or earlier once nothing can change any more
   (every pod created, no deletion due, no binding for ``settle`` wall seconds), and deletes
   what it created.

The log is written by :class:`extender.replay.log.ReplayLog`, as the engine's is, with times
scaled back to trace seconds from the moment the first pod could be created; each event is
stamped when it happened (a binding when the watch delivered it, a deletion when it was sent),
so apiserver and scheduler latency show, multiplied by the scale. The log's ``live`` entry says
how the run went: time scale, scheduler name, the run's id and the worst lateness of an action
against its due time (trace seconds).

GPUs: whole GPUs (``nvidia.com/gpu``) are the lowest-numbered free ones of the node, as a
device plugin hands them out; DRA devices and shares are read from the pod's claims'
``status.allocation`` once it is bound.

Bounded on purpose: a trace with more nodes or pods than ``max_nodes`` / ``max_pods`` is
refused before anything is created, and so is a cluster that has nodes of its own (pods would
land there) unless ``allow_other_nodes``. Requests go through the project's raw-JSON client
(:class:`extender.kube.KubeClient`).

``python -m extender.replay.live --trace T --kubeconfig K --time-scale 100 -o log.json``.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import logging
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from extender.kube import ApiError, Gone, KubeClient, WatchStream, api_client

from .log import ReplayLog
from .trace import Trace, TraceError, TracePod, load

log = logging.getLogger(__name__)

RUN_LABEL = "kube-extender.dev/replay-run"
DEFAULT_MAX_NODES = 200
DEFAULT_MAX_PODS = 2000
DEFAULT_SETTLE = 2.0  # wall seconds without a change before jumping to the end
WATCH_SECONDS = 60

# The collection of each kind a trace's ``objects`` may hold: (resource, namespaced).
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


def check_bounds(trace: Trace, max_nodes: int, max_pods: int) -> None:
    """Refuse a trace bigger than the live replay may put on a cluster, or holding objects
    it does not know how to create."""
    if len(trace.nodes) > max_nodes:
        raise LiveReplayError(
            f"nodes: {len(trace.nodes)} nodes, more than the {max_nodes} allowed (--max-nodes)"
        )
    if len(trace.pods) > max_pods:
        raise LiveReplayError(
            f"pods: {len(trace.pods)} pods, more than the {max_pods} allowed (--max-pods)"
        )
    for i, obj in enumerate(trace.objects):
        if obj.get("kind") not in KINDS:
            raise LiveReplayError(f"objects[{i}].kind: {obj.get('kind')!r} is not replayed live")


def _namespace(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"


def _collection(obj: dict, kind: str | None = None) -> str:
    resource, namespaced = KINDS[kind or obj.get("kind", "")]
    api_version = obj.get("apiVersion") or "v1"
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{base}/namespaces/{_namespace(obj)}/{resource}" if namespaced else f"{base}/{resource}"


def _claim_path(claim: dict) -> str:
    claim = {**claim, "apiVersion": claim.get("apiVersion") or "resource.k8s.io/v1"}
    return f"{_collection(claim, 'ResourceClaim')}/{claim['metadata']['name']}"


def _fresh(obj: dict) -> dict:
    """``obj`` without what the apiserver sets (uid, resourceVersion, status...)."""
    dropped = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in dropped}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def _ready(status: dict) -> dict:
    if status.get("conditions"):
        return status
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "replay"}
    return {**status, "conditions": [ready]}


class _Pod:
    """One trace pod's life in the run."""

    __slots__ = ("entry", "key", "state", "node", "uid", "failure")

    def __init__(self, entry: TracePod) -> None:
        self.entry = entry
        self.key = entry.key
        self.state = "future"  # future | pending | bound | gone
        self.node = ""
        self.uid: str | None = None
        self.failure: tuple | None = None


class LiveReplay:
    """One live replay of ``trace`` on ``client``'s cluster; :meth:`run` returns the log."""

    def __init__(
        self,
        trace: Trace,
        client: KubeClient,
        *,
        time_scale: float,
        scheduler_name: str | None = None,
        policy: str = "live",
        config: str = "",
        max_nodes: int = DEFAULT_MAX_NODES,
        max_pods: int = DEFAULT_MAX_PODS,
        settle: float = DEFAULT_SETTLE,
        allow_other_nodes: bool = False,
        strip_owners: bool = False,
        progress: Callable[[float, float], None] | None = None,
    ) -> None:
        if not time_scale > 0:
            raise LiveReplayError(f"time scale: must be > 0, not {time_scale}")
        check_bounds(trace, max_nodes, max_pods)
        self.trace = trace
        self.client = client
        self.scale = float(time_scale)
        self.scheduler_name = scheduler_name
        self.settle = settle
        self.allow_other_nodes = allow_other_nodes
        self.strip_owners = strip_owners
        self.progress = progress
        self.run_id = uuid.uuid4().hex[:12]
        self.end = float(trace.duration)
        self.pods = {p.key: _Pod(p) for p in trace.pods}
        self.log = ReplayLog.start(trace, policy=policy, config=config, seed=0)
        self.created: list[str] = []  # API paths, deleted in reverse at the end
        self.watched: queue.Queue[tuple[float, str, dict]] = queue.Queue()
        self.stopping = threading.Event()
        self.stream: WatchStream | None = None
        self.agenda: list[tuple[float, int, str, str]] = []  # (wall time, seq, action, key)
        self.order = itertools.count()
        self.t0 = 0.0
        self.lateness = 0.0
        self.last_change = 0.0
        self.actions = 0

    # -- clock -------------------------------------------------------------------------------

    def at(self, stamp: float) -> float:
        """The trace time of a ``time.monotonic()`` stamp, within ``[0, end]``."""
        return min(max((stamp - self.t0) * self.scale, 0.0), self.end)

    def wall(self, trace_time: float) -> float:
        return self.t0 + trace_time / self.scale

    # -- setup and teardown ------------------------------------------------------------------

    def _check_cluster(self) -> None:
        names = {str((n.get("metadata") or {}).get("name")) for n in self.trace.nodes}
        existing = [n["metadata"]["name"] for n in self.client.list("/api/v1/nodes")[0]]
        clash = sorted(names.intersection(existing))
        if clash:
            raise LiveReplayError(f"nodes: {clash[0]!r} already exists in the cluster")
        if existing and not self.allow_other_nodes:
            raise LiveReplayError(
                f"the cluster has {len(existing)} nodes of its own (e.g. {existing[0]!r}): "
                "the trace's pods could land there; replay on an empty cluster or allow it "
                "(--allow-other-nodes)"
            )

    def _create(self, collection: str, obj: dict) -> dict:
        created = self.client.request("POST", collection, _fresh(obj))
        self.created.append(f"{collection}/{created['metadata']['name']}")
        return created

    def _setup(self) -> None:
        declared = {
            (o.get("metadata") or {}).get("name")
            for o in self.trace.objects
            if o.get("kind") == "Namespace"
        }
        for namespace in sorted({_namespace(p.pod) for p in self.trace.pods} - declared):
            present = self.client.get(f"/api/v1/namespaces/{namespace}")
            if present is None:
                self._create("/api/v1/namespaces", {"metadata": {"name": namespace}})
            elif (present.get("status") or {}).get("phase") == "Terminating":
                raise LiveReplayError(
                    f"pods: namespace {namespace!r} is being deleted; wait, or rename it"
                )
        for obj in sorted(self.trace.objects, key=lambda o: o.get("kind") != "Namespace"):
            self._create(_collection(obj), obj)
        for node in self.trace.nodes:
            created = self._create("/api/v1/nodes", {**node, "apiVersion": "v1", "kind": "Node"})
            self.client.request(
                "PATCH",
                f"/api/v1/nodes/{created['metadata']['name']}/status",
                {"status": _ready(node.get("status") or {})},
                content_type="application/merge-patch+json",
            )
        self.log.nodes_from(self.trace.nodes, self.trace.objects)

    def _teardown(self) -> None:
        for pod in self.pods.values():
            if pod.state in ("pending", "bound"):
                self._delete(pod)
        for path in reversed(self.created):
            try:
                self.client.request("DELETE", path, {"gracePeriodSeconds": 0})
            except ApiError as exc:
                if exc.status != 404:
                    log.warning("could not delete %s: %s", path, exc)

    # -- the watch (its own thread) ----------------------------------------------------------

    def _watch(self, resource_version: str) -> None:
        selector = f"{RUN_LABEL}={self.run_id}"
        while not self.stopping.is_set():
            try:
                with self.client.watch(
                    "/api/v1/pods",
                    resource_version,
                    timeout_seconds=WATCH_SECONDS,
                    label_selector=selector,
                ) as stream:
                    self.stream = stream
                    if self.stopping.is_set():
                        return
                    for kind, obj in stream:
                        resource_version = obj["metadata"].get("resourceVersion", resource_version)
                        if kind != "BOOKMARK":
                            self.watched.put((time.monotonic(), kind, obj))
                        if self.stopping.is_set():
                            return
            except Gone:
                items, resource_version = self.client.list(
                    "/api/v1/pods", {"labelSelector": selector}
                )
                stamp = time.monotonic()
                for obj in items:
                    self.watched.put((stamp, "MODIFIED", obj))
            except ApiError as exc:
                if self.stopping.is_set():
                    return
                log.warning("pod watch: %s; watching again", exc)
                time.sleep(0.2)

    # -- what the cluster did ----------------------------------------------------------------

    def _seen(self, stamp: float, kind: str, obj: dict) -> None:
        meta = obj["metadata"]
        pod = self.pods.get(f"{meta.get('namespace')}/{meta.get('name')}")
        if pod is None or pod.state in ("future", "gone") or meta.get("uid") != pod.uid:
            return
        at = self.at(stamp)
        if kind == "DELETED":
            # Not by this run (its own deletions mark the pod gone first): the scheduler
            # preempted it (its victims carry the DisruptionTarget condition) if it was bound.
            if pod.state == "bound":
                self.log.preempted(at, pod.key, pod.node)
            else:
                self.log.abandoned(at, pod.key)
            pod.state = "gone"
            self.last_change = stamp
            return
        node = (obj.get("spec") or {}).get("nodeName")
        if node and pod.state == "pending":
            self._bound(pod, node, stamp)
        elif pod.state == "pending":
            for condition in (obj.get("status") or {}).get("conditions") or ():
                if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                    mark = (condition.get("lastTransitionTime"), condition.get("message"))
                    if mark != pod.failure:
                        pod.failure = mark
                        self.log.failed(at, pod.key)

    def _bound(self, pod: _Pod, node: str, stamp: float) -> None:
        pod.state, pod.node = "bound", node
        claims = [c for c in map(self.client.get, map(_claim_path, pod.entry.claims)) if c]
        self.log.bound(self.at(stamp), pod.key, node, pod.entry.pod, claims)
        self.last_change = stamp
        if pod.entry.duration is not None:
            self._due(stamp + pod.entry.duration / self.scale, "leave", pod.key)

    # -- what the trace does -----------------------------------------------------------------

    def _due(self, wall: float, action: str, key: str) -> None:
        heapq.heappush(self.agenda, (wall, next(self.order), action, key))

    def _create_pod(self, pod: _Pod, stamp: float) -> None:
        entry = pod.entry
        body = _fresh(entry.pod)
        meta = body["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), RUN_LABEL: self.run_id}
        if self.strip_owners:
            meta.pop("ownerReferences", None)
        spec = {k: v for k, v in (body.get("spec") or {}).items() if k != "nodeName"}
        if entry.node:
            spec["nodeName"] = entry.node
        if self.scheduler_name:
            spec["schedulerName"] = self.scheduler_name
        body["spec"] = spec
        for claim in entry.claims:
            path = _claim_path(claim).rsplit("/", 1)[0]
            self.client.request("POST", path, _fresh(claim))
        created = self.client.request("POST", f"/api/v1/namespaces/{_namespace(body)}/pods", body)
        pod.uid = created["metadata"].get("uid")
        pod.state = "pending"
        self.log.arrived(self.at(stamp), pod.key, entry.pod, entry.claims)
        if entry.node:
            self._bound(pod, entry.node, stamp)

    def _delete(self, pod: _Pod) -> None:
        pod.state = "gone"
        namespace, name = pod.key.split("/", 1)
        try:
            self.client.delete_pod(namespace, name, uid=pod.uid, grace_period_seconds=0)
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise
        for claim in pod.entry.claims:
            try:
                self.client.request("DELETE", _claim_path(claim))
            except ApiError as exc:
                if exc.status != 404:
                    raise

    def _act(self, action: str, key: str, stamp: float) -> None:
        pod = self.pods[key]
        if action == "create":
            self._create_pod(pod, stamp)
        elif action == "leave" and pod.state == "bound":
            self._delete(pod)
            self.log.left(self.at(stamp), key, pod.node, "completed")
            self.last_change = stamp
        elif action == "abandon" and pod.state == "pending":
            self._delete(pod)
            self.log.abandoned(self.at(stamp), key)
            self.last_change = stamp

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> dict:
        self._check_cluster()
        started = time.monotonic()
        watcher: threading.Thread | None = None
        try:
            self._setup()
            _, resource_version = self.client.list(
                "/api/v1/pods", {"labelSelector": f"{RUN_LABEL}={self.run_id}"}
            )
            watcher = threading.Thread(
                target=self._watch, args=(resource_version,), name="live-replay-watch", daemon=True
            )
            watcher.start()
            self.t0 = self.last_change = time.monotonic()
            for pod in self.pods.values():
                self._due(self.wall(pod.entry.arrival), "create", pod.key)
                if pod.entry.abandon is not None and not pod.entry.node:
                    self._due(self.wall(pod.entry.abandon), "abandon", pod.key)
            self._loop()
            for pod in self.pods.values():
                if pod.state == "bound":
                    self.log.left(self.end, pod.key, pod.node, "end")
        finally:
            self.stopping.set()
            if self.stream is not None:
                self.stream.close()  # interrupts the watch thread's blocked read
            self._teardown()
            if watcher is not None:
                watcher.join(timeout=2)
        result = self.log.finish(
            end=self.end, wall_seconds=time.monotonic() - started, cycles=self.actions
        )
        result["events"].sort(key=lambda event: event[0])
        result["live"] = {
            "timeScale": self.scale,
            "schedulerName": self.scheduler_name,
            "maxLateness": round(self.lateness, 3),
            "runId": self.run_id,
        }
        return result

    def _loop(self) -> None:
        end_wall = self.wall(self.end)
        last_progress = 0.0
        while True:
            # What the watch delivered first, then whatever is due.
            wait = (self.agenda[0][0] if self.agenda else end_wall) - time.monotonic()
            try:
                self._seen(*self.watched.get(timeout=min(max(wait, 0.0), 0.05)))
                continue
            except queue.Empty:
                pass
            now = time.monotonic()
            while self.agenda and self.agenda[0][0] <= now and self.agenda[0][0] <= end_wall:
                wall, _, action, key = heapq.heappop(self.agenda)
                self.lateness = max(self.lateness, (now - wall) * self.scale)
                self._act(action, key, max(now, wall))
                self.actions += 1
                now = time.monotonic()
            if self.progress is not None and now - last_progress >= 1.0:
                last_progress = now
                self.progress(self.at(now), self.end)
            pending_work = any(wall <= end_wall for wall, *_ in self.agenda)
            if now >= end_wall or (not pending_work and now - self.last_change >= self.settle):
                return


def replay_live(trace: Trace, client: KubeClient, **options: Any) -> dict:
    """Replay ``trace`` on ``client``'s cluster; the replay log (see :class:`LiveReplay`)."""
    return LiveReplay(trace, client, **options).run()


# -- command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m extender.replay.live",
        description="Replay a trace on a real cluster in scaled wall time; write the replay log.",
    )
    parser.add_argument("--trace", required=True, type=Path)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--time-scale", type=float, default=100.0, help="trace s per wall s")
    parser.add_argument("--scheduler-name", help="spec.schedulerName of every pod")
    parser.add_argument("--policy", default="live", help="the policy's name in the log")
    parser.add_argument("--config", default="", help="the scheduler's config, named in the log")
    parser.add_argument("--max-nodes", type=int, default=DEFAULT_MAX_NODES)
    parser.add_argument("--max-pods", type=int, default=DEFAULT_MAX_PODS)
    parser.add_argument("--settle", type=float, default=DEFAULT_SETTLE)
    parser.add_argument("--allow-other-nodes", action="store_true")
    parser.add_argument(
        "--strip-owners",
        action="store_true",
        help="drop the pods' ownerReferences (a cluster's garbage collector deletes pods "
        "whose owner does not exist)",
    )
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        result = replay_live(
            load(args.trace),
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
    except (LiveReplayError, TraceError, ApiError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.output.write_bytes(orjson.dumps(result))
    print(f"{args.output}: {len(result['events'])} events in {result['wall_seconds']:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
