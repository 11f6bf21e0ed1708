"""The composition root: what one process holds, built once from a :class:`SchedulerConfig`.

Both shells call this module and nothing else builds the parts: the API client's consumers
(cache, informers, listers, event recorder), the frameworks (one per profile, each with its
:class:`~extender.framework.handle.Services`), and for the standalone scheduler the queue and
the scheduling loop. Construction runs in dependency order (nominator, listers, frameworks,
queue, loop, informers), so nothing is patched in afterwards.

What a process watches follows from its plugins: each plugin class declares the kinds it reads
(``reads``); nodes are always watched, pods and namespaces feed the cache, every other kind
gets an informer whose store backs ``handle.lister(kind)``.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from extender.cache import ACTIVE_PODS, ASSIGNED_ACTIVE_PODS, Cache
from extender.config import SchedulerConfig
from extender.framework.handle import (
    CACHE_KINDS,
    NAMESPACES,
    PODS,
    RESOURCE_SLICES,
    EmptyLister,
    Extender,
    Kind,
    Lister,
    NoMetrics,
    Services,
)
from extender.framework.handle import Metrics as HandleMetrics
from extender.framework.profile import Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm
from extender.framework.status import Status
from extender.kube import EventRecorder, Informer
from extender.plugins import in_tree_registry
from extender.scheduler.decisions import Decisions
from extender.scheduler.http_extender import build_extenders
from extender.scheduler.metrics import PrometheusMetrics
from extender.scheduler.queue import Nominator, SchedulingQueue
from extender.scheduler.scheduler import Scheduler
from extender.scheduler.storage_events import wire_storage_events

log = logging.getLogger(__name__)

NODES_PATH = "/api/v1/nodes"
PODS_PATH = PODS.path
NAMESPACES_PATH = NAMESPACES.path


def kinds_read(profiles: Iterable[Profile], registry: Registry) -> set[Kind]:
    """The union of the kinds the enabled plugins of ``profiles`` declare they read."""
    kinds: set[Kind] = set()
    for profile in profiles:
        for name in profile.plugin_names():
            kinds.update(registry.reads(name))
    return kinds


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

    def __call__(self, kind: Kind) -> Lister:
        informer = self.informers.get(kind)
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


# -- the extender service --------------------------------------------------------------------


@dataclass
class ExtenderParts:
    """What one extender worker process holds."""

    framework: Framework
    registry: Registry
    cache: Cache | None
    client: Any
    informers: list[Informer]
    kinds: set[Kind]
    # The cache is fed assigned pods by a watch (not only nodes).
    pods_watched: bool = False

    def reads(self, plugin: str) -> tuple[Kind, ...]:
        return self.registry.reads(plugin)

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()


def build_extender(
    profile: Profile,
    client: Any,
    *,
    registry: Registry | None = None,
    watch_pods: bool | None = None,
    metrics: HandleMetrics | None = None,
    assumed_pod_ttl: float = 0.0,
) -> ExtenderParts:
    """The framework of ``profile`` and, with a ``client``, the watch-fed cache behind it
    (informers unstarted). Without a client the handle has empty listers and no pods.
    ``assumed_pod_ttl``: the cache's bound on a pod the bind verb assumed (``Cache``)."""
    registry = registry or in_tree_registry()
    kinds = kinds_read([profile], registry)
    cache: Cache | None = None
    informers: list[Informer] = []
    listers = Listers()
    pods = (PODS in kinds) if watch_pods is None else watch_pods
    if client is not None:
        cache = Cache(assumed_pod_ttl=assumed_pod_ttl)
        listers = Listers.watching(client, kinds - CACHE_KINDS)
        informers = cache_informers(
            client,
            cache,
            pods=pods,
            namespaces=NAMESPACES in kinds,
        )
        informers += listers.informers.values()
    services = Services(
        client=client,
        metrics=metrics or NoMetrics(),
        listers=listers,
        namespace_labels=cache.namespace_labels if cache is not None else _no_labels,
    )
    fwk = Framework(profile, registry, services)
    return ExtenderParts(
        fwk, registry, cache, client, informers, kinds, pods_watched=cache is not None and pods
    )


def _no_labels(namespace: str) -> dict | None:
    return None


# -- the standalone scheduler ----------------------------------------------------------------


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


class StandaloneScheduler:
    """Everything one ``kube-extender run`` process holds, wired in dependency order."""

    def __init__(
        self,
        config: SchedulerConfig,
        client: Any,
        *,
        registry: Registry | None = None,
        extenders: list[Extender] | None = None,
        record_decisions: bool = False,
    ) -> None:
        registry = registry or config.registry
        self.config = config
        self.client = client
        self.metrics = PrometheusMetrics()
        self.cache = Cache()
        self.events = EventRecorder(client)
        nominator = Nominator()
        self.kinds = kinds_read(config.profiles, registry)
        self.listers = Listers.watching(client, self.kinds - CACHE_KINDS)
        if extenders is None:
            extenders = list(build_extenders(config))
        services = Services(
            client=client,
            event_recorder=self.events,
            nominator=nominator,
            metrics=self.metrics,
            extenders=extenders,
            listers=self.listers,
            namespace_labels=self.cache.namespace_labels,
        )
        self.frameworks: dict[str, Framework] = {
            profile.scheduler_name: Framework(profile, registry, services)
            for profile in config.profiles
        }
        # Profiles share one queue and so one QueueSort plugin (upstream validates that).
        sorter = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            sorter.queue_sort_less,
            nominator=nominator,
            pre_enqueue=self._pre_enqueue,
            plugin_events=self._plugin_events,
            pod_initial_backoff=config.pod_initial_backoff_seconds,
            pod_max_backoff=config.pod_max_backoff_seconds,
        )
        self.scheduler = Scheduler(
            self.frameworks,
            self.cache,
            self.queue,
            self.events,
            client,
            algorithm=SchedulingAlgorithm(
                extenders, percentage_of_nodes_to_score=config.percentage_of_nodes_to_score
            ),
            get_pod=self._informer_pod,
            bind_workers=config.parallelism,
            metrics=self.metrics,
            # --record-decisions: each unschedulable pod's per-node reasons written to it.
            decisions=Decisions(client if record_decisions else None),
        )
        self.informers = cache_informers(
            client,
            self.cache,
            pods=True,
            namespaces=NAMESPACES in self.kinds,
            node_handler=NodeDispatcher(self.cache, self.scheduler),
            pod_handler=PodDispatcher(self.cache, self.scheduler),
        )
        self._pods = self.informers[1]
        wire_storage_events(self.listers.informers, self.queue)
        self.informers += self.listers.informers.values()
        self.stop_event = threading.Event()
        self.leading = threading.Event()

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
        # Nodes first, so that the pods arriving next find their NodeInfos.
        for informer in self.informers:
            informer.start()
            if not informer.wait_for_sync(timeout):
                raise RuntimeError(f"informer {informer.path} did not sync in {timeout:.0f} s")
        # As the extender service does (extender/webhook/cli.py): the synced objects (every
        # node and pod, their NodeInfos and PodInfos) leave the cyclic GC's reach. Otherwise
        # each old-generation collection, which the scheduling cycles' allocations trigger,
        # walks all of them: at 5000 nodes that was a good part of the loop's time.
        gc.collect()
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
