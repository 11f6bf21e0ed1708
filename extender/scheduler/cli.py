"""``kube-extender run``: the standalone scheduler.

Schedules the pods whose ``spec.schedulerName`` names one of the config's profiles, with the
same plugin core the extender serves. Informers feed the cache and the queue; with leader
election on, only the leader schedules (a follower keeps its caches warm).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from extender import logs
from extender.config import ConfigError, SchedulerConfig, load

log = logging.getLogger("extender.scheduler")


def _assigned(pod: dict) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


class PodDispatcher:
    """Routes pod events: assigned pods to the cache, unassigned ones to the queue (spec §5.1)."""

    def __init__(self, cache: Any, scheduler: Any) -> None:
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
    def __init__(self, cache: Any, scheduler: Any) -> None:
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


class Reporter:
    """The scheduler's ``Reporter``: events through the recorder, pod status through the client."""

    def __init__(self, client: Any, events: Any) -> None:
        self.client = client
        self.events = events

    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.record_event(pod, event_type, reason, action, note)

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> None:
        self.client.patch_pod_status(namespace, name, patch)


class Runtime:
    """Everything one ``kube-extender run`` process holds."""

    def __init__(self, config: SchedulerConfig, client: Any) -> None:
        from extender.cache import ACTIVE_PODS, Cache
        from extender.framework.runtime import Framework
        from extender.framework.schedule import SchedulingAlgorithm
        from extender.kube import EventRecorder, Informer
        from extender.plugins import in_tree_registry

        from .http_extender import HTTPExtender
        from .metrics import PrometheusMetrics
        from .queue import SchedulingQueue
        from .scheduler import Scheduler

        self.config = config
        self.client = client
        self.events = EventRecorder(client)
        self.registry = CollectorRegistry()
        self.metrics = PrometheusMetrics(self.registry)
        self.cache = Cache()
        frameworks: dict[str, Framework] = {}

        def profile_of(pod: dict) -> Framework | None:
            return frameworks.get((pod.get("spec") or {}).get("schedulerName") or "")

        def pre_enqueue(pod: dict) -> object | None:
            fwk = profile_of(pod)
            return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None

        def plugin_events(pod: dict) -> dict:
            fwk = profile_of(pod)
            return fwk.events_to_register() if fwk is not None else {}

        first: list[Framework] = []
        self.queue = SchedulingQueue(
            lambda a, b: first[0].queue_sort_less(a, b),
            pre_enqueue=pre_enqueue,
            plugin_events=plugin_events,
            pod_initial_backoff=config.pod_initial_backoff_seconds,
            pod_max_backoff=config.pod_max_backoff_seconds,
        )
        self.pdbs = Informer(client, "/apis/policy/v1/poddisruptionbudgets")
        # Handlers are set once the scheduler exists (it needs the frameworks first).
        self.pods = Informer(client, "/api/v1/pods", field_selector=ACTIVE_PODS)
        registry = in_tree_registry()
        for profile in config.profiles:
            frameworks[profile.scheduler_name] = Framework(
                profile,
                registry,
                client=client,
                nominator=self.queue.nominator,
                pdb_lister=lambda: list(self.pdbs.store.values()),
                namespace_labels=self.cache.namespace_labels,
                event_recorder=self.events,
            )
        first.append(next(iter(frameworks.values())))
        for fwk in frameworks.values():
            fwk.metrics = self.metrics
        extenders = [HTTPExtender(entry) for entry in config.extenders]
        for fwk in frameworks.values():
            for plugin in fwk.plugins.values():
                if hasattr(plugin, "extenders"):
                    plugin.extenders = extenders  # preemption asks the extenders too
        self.scheduler = Scheduler(
            frameworks,
            self.cache,
            self.queue,
            Reporter(client, self.events),
            algorithm=SchedulingAlgorithm(
                extenders, percentage_of_nodes_to_score=config.percentage_of_nodes_to_score
            ),
            # As upstream, the failure handler reads the informer's copy, not the API.
            get_pod=lambda namespace, name: self.pods.get(f"{namespace}/{name}"),
            bind_workers=config.parallelism,
            metrics=self.metrics,
        )
        nodes = NodeDispatcher(self.cache, self.scheduler)
        pods = PodDispatcher(self.cache, self.scheduler)
        self.pods.on_add = pods.on_add
        self.pods.on_update = pods.on_update
        self.pods.on_delete = pods.on_delete
        self.informers = [
            Informer(
                client,
                "/api/v1/nodes",
                on_add=nodes.on_add,
                on_update=nodes.on_update,
                on_delete=nodes.on_delete,
            ),
            self.pods,
            Informer(
                client,
                "/api/v1/namespaces",
                on_add=self.cache.add_namespace,
                on_update=self.cache.update_namespace,
                on_delete=self.cache.remove_namespace,
            ),
            self.pdbs,
        ]
        self.stop_event = threading.Event()
        self.leading = threading.Event()

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers)

    def start_informers(self, timeout: float = 60) -> None:
        # Nodes first, so that the pods arriving next find their NodeInfos.
        for informer in self.informers:
            informer.start()
            if not informer.wait_for_sync(timeout):
                raise RuntimeError(f"informer {informer.path} did not sync in {timeout:.0f} s")

    def schedule(self) -> None:
        self.leading.set()
        log.info("scheduling pods of profiles %s", ", ".join(self.scheduler.frameworks))
        pending = threading.Thread(target=self._report_pending, daemon=True)
        pending.start()
        self.scheduler.run(self.stop_event)

    def _report_pending(self) -> None:
        while not self.stop_event.wait(5):
            self.metrics.pending(self.queue.pending_pods())

    def stop(self) -> None:
        self.stop_event.set()
        self.scheduler.stop()
        for informer in self.informers:
            informer.stop()


def serve_http(runtime: Runtime, bind: str) -> ThreadingHTTPServer:
    """/healthz, /readyz (informers synced) and /metrics."""
    host, _, port = bind.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/metrics":
                self._reply(200, generate_latest(runtime.registry), CONTENT_TYPE_LATEST)
            elif self.path == "/healthz":
                self._reply(200, b"ok")
            elif self.path == "/readyz":
                ok = runtime.synced()
                self._reply(200 if ok else 503, b"ok" if ok else b"informers not synced")
            else:
                self._reply(404, b"not found")

        def _reply(self, code: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="http").start()
    return server


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kube-extender run", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="KubeSchedulerConfiguration file")
    parser.add_argument("--kubeconfig", help="cluster (default: KUBECONFIG or in-cluster)")
    parser.add_argument(
        "--metrics-bind", default="0.0.0.0:10259", help="HOST:PORT of /metrics, /healthz, /readyz"
    )
    parser.add_argument("--identity", help="leader-election identity (default: host_uuid)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="json: one object a line"
    )
    args = parser.parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    try:
        config = load(args.config)
    except ConfigError as exc:
        print(f"kube-extender run: {exc}", file=sys.stderr)
        return 2

    from extender.kube import KubeClient, LeaderElectionConfig, LeaderElector, api_client

    try:
        client = KubeClient(api_client(args.kubeconfig))
    except Exception as exc:
        print(f"kube-extender run: no cluster connection: {exc}", file=sys.stderr)
        return 2
    runtime = Runtime(config, client)
    server = serve_http(runtime, args.metrics_bind)

    def shutdown(signum: int, frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        runtime.stop_event.set()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    runtime.start_informers()
    log.info("caches synced: %d nodes", runtime.cache.node_count())

    election = config.leader_election
    if not election.get("leaderElect", True):
        runtime.schedule()
    else:
        elector = LeaderElector(
            client,
            LeaderElectionConfig(
                namespace=election["resourceNamespace"],
                name=election["resourceName"],
                identity=args.identity or "",
                lease_duration=election["leaseDuration"],
                renew_deadline=election["renewDeadline"],
                retry_period=election["retryPeriod"],
            ),
        )
        lost = threading.Event()

        def stopped_leading() -> None:
            if runtime.leading.is_set():
                # As upstream: a scheduler that loses its lease exits rather than risk
                # binding alongside the new leader.
                log.error("leader election lost: exiting")
                lost.set()
            runtime.stop_event.set()

        watcher = threading.Thread(target=lambda: (runtime.stop_event.wait(), elector.stop()))
        watcher.daemon = True
        watcher.start()
        log.info(
            "leader election: lease %s/%s as %s",
            election["resourceNamespace"],
            election["resourceName"],
            elector.identity,
        )
        elector.run(runtime.schedule, stopped_leading)
        if lost.is_set():
            runtime.stop()
            server.shutdown()
            return 1
    runtime.stop()
    server.shutdown()
    return 0
