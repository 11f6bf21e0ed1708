"""Replay a trace in virtual time through the standalone scheduler's own loop.

The scheduler is the one ``kube-extender run`` runs, built by the same composition root
(:func:`extender.wiring.build_standalone`): the profiles of the given
KubeSchedulerConfiguration with every plugin it names (in-tree, installed packages, a user's
own), the cache, the scheduling queue (activeQ, backoffQ, the unschedulable pool, queueing
hints), preemption, DRA and gang scheduling. Only its surroundings are virtual:

* the API is :class:`~extender.replay.cluster.VirtualCluster` (in memory; calls take no time);
* the clock is the trace's: it jumps from one event to the next, where an event is a pod's
  arrival, a bound pod's end (``duration`` after its binding), a pending pod's abandonment,
  or the queue's next move by time alone (a backoff expiry, the unschedulable pool's
  5-minute timeout); a day of trace replays in as many steps as it has events;
* scheduling takes ``cycle_seconds`` of virtual time per attempt (default 0);
* binding cycles run after their scheduling cycle, in order, on the replay's thread, and the
  seed seeds every random choice (ties, preemption's offset, DRA's candidate order): a replay
  is deterministic for a seed;
* SchedulerAsyncPreemption is off: with API calls that take no time its only effect, the
  victims' deletions overlapping the next cycles, is void, and inline they keep the order.

What it writes is the replay log (``extender.replay.log``): every arrival, binding (with the
GPUs it took), failed attempt, preemption, end and abandonment with its virtual time.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import random
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from extender.config import load
from extender.framework.features import DEFAULT_FEATURES, Features
from extender.framework.registry import Registry
from extender.scheduler.standalone import LoopParts
from extender.wiring import build_standalone

from .cluster import CLAIMS_PATH, PODS_PATH, VirtualClock, VirtualCluster
from .log import ReplayLog
from .trace import Trace

ASYNC_PREEMPTION = "SchedulerAsyncPreemption"
# The cyclic garbage collector's pace during a replay (the default is 700 allocations). Filter
# makes an answer per node for each pod (with DRA, an allocation result per feasible node), so
# the default pace collects over and over, and the full collections it leads to walk the whole
# growing heap: a third of a DRA replay's time. Restored afterwards.
GC_THRESHOLD = (50_000, 20, 10)


class InOrderExecutor(Executor):
    """Runs what the loop submits (binding cycles, status writes) when the driver says, in
    submission order, on the driver's thread."""

    def __init__(self) -> None:
        self._pending: list[tuple[Future, Callable[..., Any], tuple, dict]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        self._pending.append((future, fn, args, kwargs))
        return future

    def run_pending(self) -> int:
        ran = 0
        while self._pending:
            batch, self._pending = self._pending, []
            for future, fn, args, kwargs in batch:
                ran += 1
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:
                    future.set_exception(exc)
        return ran

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if not cancel_futures:
            self.run_pending()
        self._pending = []


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    action: str = field(compare=False)  # arrive | end | abandon
    index: int = field(compare=False)
    uid: str = field(compare=False, default="")


class _Replay:
    """One replay: the driver's state between events."""

    def __init__(
        self,
        trace: Trace,
        config_path: str | Path,
        *,
        seed: int,
        policy: str | None,
        features: Features,
        registry: Registry | None,
        cycle_seconds: float,
    ) -> None:
        self.trace = trace
        self.cycle_seconds = cycle_seconds
        features = Features(enabled=features.enabled - {ASYNC_PREEMPTION})
        config = load(config_path, features=features)
        if registry is not None:
            config = replace(config, registry=registry)
        self.clock = VirtualClock(0.0)
        self.log = ReplayLog.start(
            trace, policy=policy or Path(config_path).stem, config=str(config_path), seed=seed
        )
        self.cluster = VirtualCluster(
            self.clock,
            on_bound=self._bound,
            on_deleted=self._deleted,
            on_event=self._event,
        )
        self.executor = InOrderExecutor()
        self.runtime = build_standalone(
            config,
            self.cluster,
            events=self.cluster,
            loop=LoopParts(clock=self.clock, rng=random.Random(seed), executor=self.executor),
        )
        self.cluster.attach(self.runtime.informers)
        self.scheduler = self.runtime.scheduler
        self.queue = self.runtime.queue
        self._due: list[_Due] = []
        self._seq = itertools.count()
        self._index_of: dict[str, int] = {}  # pod key -> trace index

    # -- what the scheduler did -------------------------------------------------------------

    def _bound(self, pod: dict, node: str) -> None:
        key = _key(pod)
        index = self._index_of.get(key)
        claims = [
            self.cluster.get(CLAIMS_PATH, f"{pod['metadata']['namespace']}/{name}")
            for name in _claim_names(pod)
        ]
        self.log.bound(self.clock.now, key, node, pod, [c for c in claims if c])
        if index is None:
            return
        duration = self.trace.pods[index].duration
        if duration is not None:
            self._push(self.clock.now + duration, "end", index, pod["metadata"]["uid"])

    def _deleted(self, pod: dict, by_scheduler: bool) -> None:
        if by_scheduler:
            node = (pod.get("spec") or {}).get("nodeName") or ""
            self.log.preempted(self.clock.now, _key(pod), node)
            self._delete_claims(pod)

    def _event(self, obj: dict, event_type: str, reason: str, note: str) -> None:
        if reason == "FailedScheduling":
            self.log.failed(self.clock.now, _key(obj))

    # -- the trace's side ---------------------------------------------------------------------

    def _push(self, at: float, action: str, index: int, uid: str = "") -> None:
        heapq.heappush(self._due, _Due(at, next(self._seq), action, index, uid))

    def _delete_claims(self, pod: dict) -> None:
        # What the resourceclaim controller does for a claim made for the pod (the trace's
        # claims are the pod's own): it frees the claim first, the pod out of reservedFor and
        # the allocation cleared in one status update (kubernetes
        # pkg/controller/resourceclaim/controller.go), which is the event DynamicResources
        # requeues waiting pods on (it registers claim Add and Update, not Delete); then the
        # claim goes with the pod.
        namespace = pod["metadata"]["namespace"]
        for name in _claim_names(pod):
            claim = self.cluster.get(CLAIMS_PATH, f"{namespace}/{name}")
            if claim is None:
                continue
            status = claim.get("status") or {}
            if status.get("reservedFor") or status.get("allocation"):
                freed = {k: v for k, v in status.items() if k not in ("reservedFor", "allocation")}
                self.cluster.update_resource_claim_status({**claim, "status": freed})
            self.cluster.delete_resource_claim(namespace, name)

    def _arrive(self, index: int) -> None:
        entry = self.trace.pods[index]
        for claim in entry.claims:
            self.cluster.create(claim)
        pod = dict(entry.pod)
        if entry.node:
            pod["spec"] = {**(pod.get("spec") or {}), "nodeName": entry.node}
        created = self.cluster.create(pod)
        key = _key(created)
        self._index_of[key] = index
        self.log.arrived(self.clock.now, key, created, entry.claims)
        if entry.node:
            self._bound(created, entry.node)
        elif entry.abandon is not None:
            self._push(max(entry.abandon, self.clock.now), "abandon", index, "")

    def _end(self, due: _Due) -> None:
        key = self.trace.pods[due.index].key
        current = self.cluster.get(PODS_PATH, key)
        if current is None or current["metadata"]["uid"] != due.uid:
            return  # preempted meanwhile
        node = current["spec"].get("nodeName") or ""
        self.cluster.delete_pod_as_user(current)
        self._delete_claims(current)
        self.log.left(self.clock.now, key, node, "completed")

    def _abandon(self, due: _Due) -> None:
        key = self.trace.pods[due.index].key
        current = self.cluster.get(PODS_PATH, key)
        if current is None or (current.get("spec") or {}).get("nodeName"):
            return  # bound (or gone) before its user gave up
        self.cluster.delete_pod_as_user(current)
        self._delete_claims(current)
        self.log.abandoned(self.clock.now, key)

    # -- the loop -----------------------------------------------------------------------------

    def setup(self) -> None:
        namespaces = sorted(
            {(p.pod.get("metadata") or {}).get("namespace") or "default" for p in self.trace.pods}
        )
        present = {
            (o.get("metadata") or {}).get("name")
            for o in self.trace.objects
            if o.get("kind") == "Namespace"
        }
        for name in namespaces:
            if name not in present:
                self.cluster.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                )
        for obj in self.trace.objects:
            self.cluster.create(obj)
        for node in self.trace.nodes:
            self.cluster.create(node)
        self.log.nodes_from(self.trace.nodes, self.trace.objects)
        for index, entry in enumerate(self.trace.pods):
            self._push(entry.arrival, "arrive", index)
        self.cluster.deliver()
        self.cluster.mark_synced()

    def run(self, progress: Callable[[float, float], None] | None = None) -> dict:
        previous = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLD)
        try:
            return self._run(progress)
        finally:
            gc.set_threshold(*previous)

    def _run(self, progress: Callable[[float, float], None] | None) -> dict:
        started = time.perf_counter()
        self.setup()
        end = self.trace.duration
        cycles = 0
        last_progress = 0.0
        while True:
            wake = self.queue.next_wakeup()
            head = self._due[0].at if self._due else None
            candidates = [t for t in (wake, head) if t is not None]
            if not candidates:
                break
            now = max(self.clock.now, min(candidates))
            if now > end:
                break
            self.clock.now = now
            while self._due and self._due[0].at <= now:
                due = heapq.heappop(self._due)
                if due.action == "arrive":
                    self._arrive(due.index)
                elif due.action == "end":
                    self._end(due)
                else:
                    self._abandon(due)
            self.cluster.deliver()
            self.queue.flush_backoff_completed()
            self.queue.flush_unschedulable_leftover()
            while self.scheduler.schedule_one(timeout=0):
                cycles += 1
                self.executor.run_pending()
                self.cluster.deliver()
                if self.cycle_seconds:
                    self.clock.now += self.cycle_seconds
            if progress is not None and time.perf_counter() - last_progress >= 1.0:
                last_progress = time.perf_counter()
                progress(self.clock.now, end)
        self.clock.now = max(self.clock.now, end) if end else self.clock.now
        self.executor.shutdown()
        if progress is not None:
            progress(end, end)
        return self.log.finish(end=end, wall_seconds=time.perf_counter() - started, cycles=cycles)


def replay(
    trace: Trace,
    config_path: str | Path,
    *,
    seed: int = 0,
    policy: str | None = None,
    features: Features = DEFAULT_FEATURES,
    registry: Registry | None = None,
    cycle_seconds: float = 0.0,
    progress: Callable[[float, float], None] | None = None,
) -> dict:
    """Replay ``trace`` under the KubeSchedulerConfiguration at ``config_path``; the replay
    log (a JSON-able dict). ``policy``: its name in reports (default: the file's stem);
    ``features``: the feature gates (``--feature-gates``); ``registry``: the plugins the
    config may name (default: in-tree and installed packages); ``progress(now, end)`` is
    called about once a second of wall time."""
    return _Replay(
        trace,
        config_path,
        seed=seed,
        policy=policy,
        features=features,
        registry=registry,
        cycle_seconds=cycle_seconds,
    ).run(progress)


def _key(pod: dict) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _claim_names(pod: dict) -> list[str]:
    names = []
    for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = ref.get("resourceClaimName")
        if name:
            names.append(name)
    return names


__all__ = ["InOrderExecutor", "replay"]
