"""The standalone scheduler's process: its dispatchers route the informers' events to the
cache and the scheduling queue, and :class:`StandaloneScheduler` holds everything one
``kube-extender run`` process runs."""

from __future__ import annotations

import gc
import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from extender.cache import Cache
from extender.cache.informers import Listers, cache_informers
from extender.config import SchedulerConfig
from extender.framework.handle import NAMESPACES, PODS, Extender, Kind
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm
from extender.framework.status import Status
from extender.kube import EventRecorder, Informer

from .decisions import Decisions
from .metrics import PrometheusMetrics
from .queue import Nominator, SchedulingQueue
from .scheduler import Scheduler
from .storage_events import wire_storage_events

log = logging.getLogger(__name__)


def _assigned(pod: dict) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


class PodDispatcher:
    """Routes pod events: assigned pods to the cache, unassigned ones to the queue
    (upstream ``pkg/scheduler/eventhandlers.go``)."""

    def __init__(self, cache: Cache, scheduler: Scheduler) -> None:
        self.cache = cache
        self.scheduler = scheduler

    def on_add(self, pod: dict) -> None:
        if _assigned(pod):
            self.cache.add_pod(pod)
            self.scheduler.on_assigned_pod_add(pod)
        else:
            self.scheduler.on_unassigned_pod_add(pod)

    def on_update(self, old: dict, new: dict) -> None:
        if _assigned(new):
            if _assigned(old):
                self.cache.update_pod(old, new)
                self.scheduler.on_assigned_pod_update(old, new)
            else:
                self.cache.add_pod(new)
                self.scheduler.on_assigned_pod_add(new)
        else:
            self.scheduler.on_unassigned_pod_update(old, new)

    def on_delete(self, pod: dict) -> None:
        if _assigned(pod):
            self.cache.remove_pod(pod)
            self.scheduler.on_assigned_pod_delete(pod)
        else:
            self.scheduler.on_unassigned_pod_delete(pod)


class NodeDispatcher:
    def __init__(self, cache: Cache, scheduler: Scheduler) -> None:
        self.cache = cache
        self.scheduler = scheduler

    def on_add(self, node: dict) -> None:
        self.cache.add_node(node)
        self.scheduler.on_node_add(node)

    def on_update(self, old: dict, new: dict) -> None:
        self.cache.update_node(old, new)
        self.scheduler.on_node_update(old, new)

    def on_delete(self, node: dict) -> None:
        self.cache.remove_node(node)
        self.scheduler.on_node_delete(node)


@dataclass(frozen=True)
class LoopParts:
    """How the loop keeps time, draws ties and runs its binding cycles: real time, a fresh
    random source and thread pools in ``kube-extender run``; a virtual clock, a seeded source
    and an in-order executor in the replay (``extender.replay``)."""

    clock: Callable[[], float] = time.monotonic
    rng: random.Random | None = None
    executor: Executor | None = None


class StandaloneScheduler:
    """Everything one ``kube-extender run`` process holds and runs. Given the parts the
    composition root builds (:func:`extender.wiring.build_standalone`: the cache, the event
    recorder, the metrics, the nominator, the listers and one framework per profile), it wires
    its loop in dependency order: the queue, the scheduler, then the informers feeding both."""

    def __init__(
        self,
        config: SchedulerConfig,
        client: Any,
        frameworks: dict[str, Framework],
        *,
        cache: Cache,
        events: EventRecorder,
        metrics: PrometheusMetrics,
        nominator: Nominator,
        listers: Listers,
        kinds: set[Kind],
        extenders: list[Extender],
        record_decisions: bool = False,
        loop: LoopParts | None = None,
    ) -> None:
        loop = loop or LoopParts()
        self.config = config
        self.client = client
        self.metrics = metrics
        self.cache = cache
        self.events = events
        self.kinds = kinds
        self.listers = listers
        self.frameworks = frameworks
        # Profiles share one queue and so one QueueSort plugin (upstream validates that).
        sorter = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            sorter.queue_sort_less,
            nominator=nominator,
            pre_enqueue=self._pre_enqueue,
            plugin_events=self._plugin_events,
            pod_initial_backoff=config.pod_initial_backoff_seconds,
            pod_max_backoff=config.pod_max_backoff_seconds,
            generic_workload=config.features.generic_workload,
            pop_from_backoff=config.features.scheduler_pop_from_backoff_q,
            clock=loop.clock,
        )
        self.scheduler = Scheduler(
            self.frameworks,
            self.cache,
            self.queue,
            self.events,
            client,
            algorithm=SchedulingAlgorithm(
                extenders,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                rng=loop.rng,
            ),
            get_pod=self._informer_pod,
            bind_workers=config.parallelism,
            metrics=self.metrics,
            # --record-decisions: each unschedulable pod's per-node reasons written to it.
            decisions=Decisions(client if record_decisions else None),
            features=config.features,
            clock=loop.clock,
            executor=loop.executor,
        )
        self.informers = cache_informers(
            client,
            self.cache,
            pods=True,
            namespaces=NAMESPACES in self.kinds,
            node_handler=NodeDispatcher(self.cache, self.scheduler),
            pod_handler=PodDispatcher(self.cache, self.scheduler),
        )
        self._pods = self.informers[1]  # [nodes, pods, (namespaces)]
        # The pods of every phase but finished, pending ones included, for the plugins that
        # read PODS through their lister (Coscheduling counts a group's pods).
        self.listers.serve(PODS, self._pods)
        wire_storage_events(self.listers.informers, self.queue, self._registered_resources())
        # Nodes, then the plugins' kinds, then pods and namespaces (start_informers syncs them
        # in this order): a gang member that arrives before its PodGroup is held at PreEnqueue
        # and every later pod add re-checks it, so with PodGroups first the pods of thousands
        # of gangs enter in linear, not quadratic, time (bench/gang.py).
        nodes, rest = self.informers[0], self.informers[1:]
        self.informers = [nodes, *self.listers.informers.values(), *rest]
        self.stop_event = threading.Event()
        self.leading = threading.Event()

    def _registered_resources(self) -> set[str]:
        """The resources the profiles' plugins registered events for (custom resources among
        them get their informers' events)."""
        return {
            str(registration.event.resource)
            for fwk in self.frameworks.values()
            for registered in fwk.events_to_register().values()
            for registration in registered
        }

    def _framework_of(self, pod: dict) -> Framework | None:
        return self.frameworks.get((pod.get("spec") or {}).get("schedulerName") or "")

    def _pre_enqueue(self, pod: dict) -> Status | None:
        fwk = self._framework_of(pod)
        return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None

    def _plugin_events(self, pod: dict) -> dict:
        fwk = self._framework_of(pod)
        return fwk.events_to_register() if fwk is not None else {}

    def _informer_pod(self, namespace: str, name: str) -> dict | None:
        # As upstream, the failure handler reads the informer's copy, not the API.
        return self._pods.get(f"{namespace}/{name}")

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers)

    def start_informers(self, timeout: float = 60) -> None:
        """Start every informer and wait until all have synced (upstream's
        ``WaitForCacheSync`` and ``WaitForHandlersSync`` before the first cycle). They list
        concurrently, as client-go's informer factory starts them, but each hands its list to
        its handlers after the one before it: nodes first, so that the pods arriving next find
        their NodeInfos (see ``__init__`` for the order)."""
        previous: Informer | None = None
        for informer in self.informers:
            informer.start(after=previous)
            previous = informer
        for informer in self.informers:
            if not informer.wait_for_sync(timeout):
                raise RuntimeError(f"informer {informer.path} did not sync in {timeout:.0f} s")
        # As the extender service does (extender/cli/serve.py): the synced objects (every
        # node and pod, their NodeInfos and PodInfos) leave the cyclic GC's reach. Otherwise
        # each old-generation collection, which the scheduling cycles' allocations trigger,
        # walks all of them: at 5000 nodes that was a good part of the loop's time. Only the
        # young generations are collected first: a full collection walks every object the
        # lists made (0.4 s of CPU at 5000 nodes, before the first pod), and the old
        # generation holds next to no cyclic garbage (the decoded JSON has no cycles).
        gc.collect(1)
        gc.freeze()

    def schedule(self) -> None:
        self.leading.set()
        log.info("scheduling pods of profiles %s", ", ".join(self.frameworks))
        threading.Thread(target=self._report_pending, daemon=True, name="pending").start()
        self.scheduler.run(self.stop_event)

    def _report_pending(self) -> None:
        while not self.stop_event.wait(5):
            self.metrics.pending(self.queue.pending_pods())

    def stop(self) -> None:
        self.stop_event.set()
        self.scheduler.stop()
        for informer in self.informers:
            informer.stop()
        self.events.close()
