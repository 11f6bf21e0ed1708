"""The composition root: builds the parts one process runs, and runs nothing itself.

Both shells build here: ``kube-extender serve`` its framework and the watch-fed cache behind
it (:func:`build_extender`), ``kube-extender run`` the client's consumers and one framework
per profile, handed to the standalone scheduler's process object, which wires its queue, loop
and informers (:func:`build_standalone`). Construction runs in dependency order, so nothing is
patched in afterwards.

What a process watches follows from its plugins: each plugin class declares the kinds it reads
(``reads``, :func:`~extender.framework.registry.kinds_read`); nodes are always watched, pods
and namespaces feed the cache, every other kind gets an informer whose store backs
``handle.lister(kind)`` (:mod:`extender.cache.informers`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from extender.cache import Cache
from extender.cache.informers import Listers, cache_informers
from extender.config import SchedulerConfig
from extender.framework.handle import (
    CACHE_KINDS,
    NAMESPACES,
    PODS,
    Extender,
    Kind,
    NoMetrics,
    Services,
)
from extender.framework.handle import EventRecorder as HandleEventRecorder
from extender.framework.handle import Metrics as HandleMetrics
from extender.framework.podgroups import PODGROUPS
from extender.framework.profile import Profile
from extender.framework.registry import Registry, kinds_read
from extender.framework.runtime import Framework
from extender.kube import EventRecorder, Informer
from extender.plugins import in_tree_registry
from extender.scheduler.http_extender import build_extenders
from extender.scheduler.metrics import PrometheusMetrics
from extender.scheduler.queue import Nominator
from extender.scheduler.standalone import LoopParts, StandaloneScheduler


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


def build_standalone(
    config: SchedulerConfig,
    client: Any,
    *,
    registry: Registry | None = None,
    extenders: list[Extender] | None = None,
    record_decisions: bool = False,
    events: HandleEventRecorder | None = None,
    loop: LoopParts | None = None,
) -> StandaloneScheduler:
    """One ``kube-extender run`` process for ``config`` (informers unstarted). ``extenders``:
    the HTTP extenders (default: built from ``config``); ``record_decisions``: each
    unschedulable pod's per-node reasons written to it; ``events``: the recorder (default:
    Events written through ``client``); ``loop``: the clock, random source and executor of
    the loop (default: real time, thread pools; the replay gives virtual ones)."""
    registry = registry or config.registry
    metrics = PrometheusMetrics()
    cache = Cache()
    events = events or EventRecorder(client)
    loop = loop or LoopParts()
    nominator = Nominator()
    kinds = kinds_read(config.profiles, registry)
    if config.features.generic_workload:
        # The scheduler writes each PodGroup's condition (upstream's podGroupLister).
        kinds.add(PODGROUPS)
    listers = Listers.watching(client, kinds - CACHE_KINDS)
    if extenders is None:
        extenders = list(build_extenders(config))
    services = Services(
        client=client,
        event_recorder=events,
        nominator=nominator,
        metrics=metrics,
        extenders=extenders,
        listers=listers,
        namespace_labels=cache.namespace_labels,
        features=config.features,
        rng=loop.rng if loop.rng is not None else random.Random(),
    )
    frameworks = {
        profile.scheduler_name: Framework(profile, registry, services)
        for profile in config.profiles
    }
    return StandaloneScheduler(
        config,
        client,
        frameworks,
        cache=cache,
        events=events,
        metrics=metrics,
        nominator=nominator,
        listers=listers,
        kinds=kinds,
        extenders=extenders,
        record_decisions=record_decisions,
        loop=loop,
    )
