"""``kube-extender run``: the standalone scheduler.

Schedules the pods whose ``spec.schedulerName`` names one of the config's profiles, with the
same plugin core the extender serves. Informers feed the cache and the queue; with leader
election on, only the leader schedules (a follower keeps its caches warm).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender import health
from extender.cli import logs
from extender.cli.common import (
    add_feature_gates_flag,
    add_log_flags,
    bind_type,
    check_kubeconfig,
    connect,
    parse_bind,
)
from extender.config import ConfigError, load
from extender.scheduler.http_extender import build_extenders
from extender.scheduler.standalone import StandaloneScheduler
from extender.wiring import build_standalone

log = logging.getLogger("extender.scheduler")


def serve_http(runtime: StandaloneScheduler, bind: str) -> WSGIServer:
    """/healthz, /readyz (informers synced), /metrics and /debug/cache (the cache's dump:
    nodes, their pods and requests, and the assumed pods); ``shutdown()`` stops it."""

    def metrics() -> tuple[int, bytes, str]:
        return 200, generate_latest(runtime.metrics.registry), CONTENT_TYPE_LATEST

    def cache() -> tuple[int, bytes, str]:
        return 200, json.dumps(runtime.cache.dump(), sort_keys=True).encode(), "application/json"

    app = health.wsgi_app(runtime.synced, {"/metrics": metrics, "/debug/cache": cache})
    return health.serve_wsgi(app, *parse_bind(bind, "--metrics-bind"))


def watch_lease(
    elector: Any,
    stop: threading.Event,
    exit: Any = None,
    interval: float = 0.1,
) -> None:
    """Exit the process as soon as a leader no longer holds its lease.

    Upstream's kube-scheduler dies with ``klog.Fatalf`` when leadership is lost; a graceful
    stop would let binding cycles in flight (a pod waiting at Permit, say) bind after
    another replica took over: the chaos soak saw a pod bound 3 s after the lease was lost.
    """
    leading = False
    while not stop.wait(interval):
        if elector.is_leader():
            leading = True
        if leading and not elector.holds_lease():
            log.error("leader election lost (no renewal within renewDeadline): exiting now")
            (exit or _exit_now)(1)
            return


def _exit_now(code: int = 1) -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(code)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kube-extender run", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="KubeSchedulerConfiguration file")
    parser.add_argument("--kubeconfig", help="cluster (default: KUBECONFIG or in-cluster)")
    parser.add_argument(
        "--metrics-bind",
        default="0.0.0.0:10251",
        type=bind_type("--metrics-bind"),
        help="HOST:PORT of /metrics, /healthz, /readyz, plain HTTP (default %(default)s: "
        "kube-scheduler's former insecure port, not its HTTPS port 10259)",
    )
    parser.add_argument("--identity", help="leader-election identity (default: host_uuid)")
    parser.add_argument(
        "--record-decisions",
        action="store_true",
        help="write each unschedulable pod's per-node reasons to its annotation "
        "kube-extender.io/last-decision (4 KiB) and FailedScheduling event note (1 KiB)",
    )
    add_feature_gates_flag(parser)
    add_log_flags(parser)
    args = parser.parse_args(argv)
    if not Path(args.config).is_file():
        parser.error(f"--config: no such file: {args.config}")
    check_kubeconfig(parser, args.kubeconfig)
    logs.setup(args.log_level, args.log_format)
    try:
        config = load(args.config, features=args.feature_gates)
        # Before connecting: a tlsConfig file that does not load is a config error.
        extenders = build_extenders(config)
    except ConfigError as exc:
        print(f"kube-extender run: {exc}", file=sys.stderr)
        return 2

    from extender.kube import LeaderElectionConfig, LeaderElector

    client = connect("kube-extender run", args.kubeconfig)
    if client is None:
        return 2
    runtime = build_standalone(
        config, client, extenders=list(extenders), record_decisions=args.record_decisions
    )
    try:
        server = serve_http(runtime, args.metrics_bind)
    except OSError as exc:
        print(f"kube-extender run: --metrics-bind {args.metrics_bind}: {exc}", file=sys.stderr)
        return 2

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
                if not runtime.stop_event.is_set():
                    # Lost, not asked to stop: die now, so that no binding cycle in flight
                    # binds after another replica took over.
                    _exit_now()
            runtime.stop_event.set()

        guard = threading.Thread(
            target=watch_lease, args=(elector, runtime.stop_event), daemon=True, name="lease"
        )
        guard.start()
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
