"""``kube-extender serve``: the extender service under gunicorn
(:class:`extender.webhook.server.ExtenderWorker`: an event loop for the connections, a thread
pool for the app), whose own lines (arbiter, workers, access log) :class:`JSONLogger` formats
with the commands' formatter, so ``--log-format json`` gives one object a line.

Each gunicorn worker process builds the app once: the config, the framework, and one
watch-fed cache shared by all of its request threads. Scale out with replicas.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import resource
import ssl
import sys
import threading
from pathlib import Path
from typing import Any

from gunicorn import glogging
from gunicorn.app.base import BaseApplication

from extender.cli import logs
from extender.cli.common import add_log_flags, bind_type, check_kubeconfig, parse_bind
from extender.config import ConfigError, SchedulerConfig, load
from extender.framework.runtime import Framework, ProfileError
from extender.webhook.server import ExtenderWorker, bind_health

log = logging.getLogger("extender.webhook")


class StartupError(Exception):
    pass


# gunicorn's exit code when the app cannot load in a worker (gunicorn.arbiter.Arbiter).
APP_LOAD_ERROR = 4


def _profile(config: SchedulerConfig) -> Any:
    wanted = config.extender.profile
    if not wanted:
        return config.profiles[0]
    for profile in config.profiles:
        if profile.scheduler_name == wanted:
            return profile
    names = ", ".join(p.scheduler_name for p in config.profiles)
    raise StartupError(
        f"{config.source}: ExtenderConfiguration.profile: no profile named {wanted!r} "
        f"(profiles: {names})"
    )


def offline_pods_problem(profile: Any, registry: Any) -> str | None:
    """Why ``profile`` cannot be served without a cluster connection (a plugin that needs the
    pods on each node), or ``None``."""
    from extender.framework.handle import PODS
    from extender.framework.registry import kinds_read

    if PODS not in kinds_read([profile], registry):
        return None
    need = ", ".join(sorted(n for n in profile.plugin_names() if PODS in registry.reads(n)))
    return (
        f"profile {profile.scheduler_name!r} enables {need}, which need the pods on each "
        "node; the extender reads them from the cluster, but it has no cluster "
        "connection: give --kubeconfig (or run in a cluster), or disable those plugins"
    )


# Plugins that need Permit's wait and the pod group cycle, which the extender protocol lacks.
GANG_PLUGINS = ("GangScheduling", "Coscheduling")


def check_startup(config: SchedulerConfig, connected: bool, kubeconfig: str | None = None) -> None:
    """What a worker would refuse at boot, checked in the parent before gunicorn forks (so
    it is one line and exit 2, not a worker that fails to boot): the profile exists, the
    kubeconfig loads, every plugin constructs (``cls(args, handle)``, once here with a handle
    that has no cluster), and without a cluster connection no plugin needs the pods."""
    profile = _profile(config)
    gang = [name for name in GANG_PLUGINS if name in profile.plugin_names()]
    if gang:
        raise StartupError(
            f"{config.source}: profile {profile.scheduler_name!r} enables {', '.join(gang)}, "
            "which an extender cannot serve: gang scheduling needs Permit (pods wait for their "
            "quorum) and a pod group cycle, and the extender protocol has only filter, "
            "prioritize, preempt and bind. Run `kube-extender run --feature-gates "
            "GenericWorkload=true,GangScheduling=true` as the gangs' scheduler, or let "
            "kube-scheduler do gang scheduling (its --feature-gates) with kube-extender as its "
            "extender for the rest; disable the plugin in the served profile (docs/gang.md)"
        )
    if connected:
        from extender.kube.kubeconfig import load_configuration

        try:
            load_configuration(kubeconfig)
        except Exception as exc:  # any kubeconfig problem: one line (YAML errors span several)
            raise StartupError(f"no cluster connection: {' '.join(str(exc).split())}") from exc
    try:
        Framework(profile, config.registry)
    except ProfileError as exc:
        raise StartupError(f"{config.source}: {exc}") from exc
    problem = None if connected else offline_pods_problem(profile, config.registry)
    if problem:
        raise StartupError(problem)


def has_cluster(kubeconfig: str | None) -> bool:
    return bool(
        kubeconfig
        or os.environ.get("KUBECONFIG")
        or os.environ.get("KUBERNETES_SERVICE_HOST")
        or Path.home().joinpath(".kube/config").exists()
    )


def allowed_clients(settings: Any, from_flags: list[str] | None) -> list[str]:
    """The allow-list: ``--allowed-client`` flags and ``allowedClients`` together."""
    return sorted({*(from_flags or ()), *settings.allowed_clients})


def check_client_auth(settings: Any, allowed: list[str], ca_certs: str | None) -> None:
    """Bind is never open: it needs verified client certificates and an allow-list."""
    if allowed and not ca_certs:
        raise StartupError(
            "an allow-list of clients (--allowed-client, allowedClients) needs --ca-certs: "
            "identities come from verified client certificates"
        )
    if settings.bind_enabled and not (ca_certs and allowed):
        raise StartupError(
            "ExtenderConfiguration.bind.enabled needs client certificates (--certfile, "
            "--keyfile, --ca-certs) and an allow-list (--allowed-client or allowedClients): "
            "the bind verb is never served unauthenticated"
        )


def build_app(
    config_path: str,
    kubeconfig: str | None,
    offline: bool,
    max_inflight_bytes: int | None = None,
    allowed_flags: list[str] | None = None,
) -> Any:
    """The app of one worker process: framework, cache and informers, Flask routes."""
    from extender.webhook.app import Metrics, create_app
    from extender.webhook.limits import BytesInFlight
    from extender.webhook.service import ExtenderService
    from extender.wiring import build_extender

    config = load(config_path)
    settings = config.extender
    profile = _profile(config)
    kubeconfig = kubeconfig or settings.kubeconfig
    connected = not offline and has_cluster(kubeconfig)
    client = None
    if connected:
        from extender.kube import KubeClient, api_client

        try:
            client = KubeClient(api_client(kubeconfig))
        except Exception as exc:  # a kubeconfig that changed since the parent checked it
            raise StartupError(f"no cluster connection: {exc}") from exc
    metrics = Metrics()
    parts = build_extender(
        profile,
        client,
        registry=config.registry,
        watch_pods=settings.watch_pods,
        metrics=metrics,
        assumed_pod_ttl=settings.bind_assume_ttl,
    )
    problem = None if connected else offline_pods_problem(profile, config.registry)
    if problem:
        raise StartupError(problem)
    parts.start()
    if parts.informers:
        threading.Thread(
            target=_freeze_after_sync, args=(parts.informers, parts.cache), daemon=True
        ).start()
    # A pod the bind verb bound counts at once in this worker's cache; only with a pod watch,
    # which confirms it (without one the cache holds no pods, so there is nothing to count).
    assume = settings.bind_enabled and settings.bind_assume and parts.pods_watched
    service = ExtenderService(
        parts.framework,
        cache=parts.cache,
        client=client,
        ready=parts.synced,
        filter_unresolvable=settings.filter_unresolvable,
        assume_on_bind=assume,
    )
    log.info(
        "serving profile %r (%s) at %s; cluster connection: %s%s",
        profile.scheduler_name,
        ", ".join(sorted(profile.plugin_names())),
        settings.url_prefix,
        "yes" if connected else "no",
        f"; bind assumes pods for up to {settings.bind_assume_ttl:g} s" if assume else "",
    )
    if parts.cache is not None:
        _cache_size_gauge(metrics, parts.cache)
    budget = max_inflight_bytes or settings.max_request_bytes
    allowed = allowed_clients(settings, allowed_flags)
    app = create_app(
        service,
        url_prefix=settings.url_prefix,
        max_request_bytes=settings.max_request_bytes,
        metrics=metrics,
        # The server admits bodies against the budget before it reads them (front.py):
        # the app gets them whole and holds none itself.
        body_budget=None,
        allowed_clients=allowed or None,
        bind_enabled=settings.bind_enabled,
    )
    app.extensions["kube-extender"]["body_budget"] = BytesInFlight(
        max(budget, settings.max_request_bytes)
    )
    return app


def _cache_size_gauge(metrics: Any, cache: Any) -> None:
    """``extender_cache_size{type}``: nodes, pods and assumed pods in this worker's cache, read
    at each scrape (upstream's ``scheduler_cache_size``)."""
    from prometheus_client import Gauge

    gauge = Gauge(
        "extender_cache_size",
        "Nodes, pods and assumed pods in this worker's cache.",
        ["type"],
        registry=metrics.registry,
    )
    gauge.labels("nodes").set_function(cache.node_count)
    gauge.labels("pods").set_function(cache.pod_count)
    gauge.labels("assumed_pods").set_function(lambda: len(cache.assumed_pods()))


def _freeze_after_sync(informers: list[Any], cache: Any = None) -> None:
    """Move the synced cache, and its first snapshot, out of the cyclic GC's reach.

    A full-Node request allocates hundreds of thousands of objects; each old-generation
    collection it triggers would otherwise walk every cached node and pod too. The snapshot
    (a clone of every NodeInfo, and the node table) is built here rather than by the first
    verb call: built after the freeze, 5000 nodes' clones cost each full collection ~25 ms.
    """
    for informer in informers:
        informer.wait_for_sync()
    if cache is not None:
        cache.snapshot().table  # noqa: B018 -- built now, to be frozen with the cache
    gc.collect()
    gc.freeze()


FD_HEADROOM = 256  # descriptors besides the verb connections: health, cluster, logs, pipes


def open_file_limit(max_connections: int) -> int:
    """Raise the soft open-file limit for ``max_connections`` plus headroom (the workers
    inherit it); return the connection cap the limit allows, lower if the hard limit is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max_connections + FD_HEADROOM
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return max_connections
    return max(soft - FD_HEADROOM, 1)


class _Server(BaseApplication):
    def __init__(self, options: dict[str, Any], factory: Any) -> None:
        self.options = options
        self.factory = factory
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key.startswith("control_socket") and key not in self.cfg.settings:
                continue  # gunicorn < 25.1 has no control socket
            self.cfg.set(key, value)

    def load(self) -> Any:
        try:
            return self.factory()
        except (StartupError, ConfigError, ProfileError) as exc:
            # The parent checked all this before forking (check_startup); a config that
            # changed since is reported the same way: exit APP_LOAD_ERROR, mapped to 2 in main.
            log.error("kube-extender serve: %s", exc)
            sys.exit(APP_LOAD_ERROR)


def default_health_bind(bind: str) -> str:
    """The health port's default: the host of ``--bind`` (an extender bound to loopback
    opens no port on other interfaces), on the next port (a second extender on another
    port does not collide with the first one's health port)."""
    host, port = parse_bind(bind, "--bind")
    if port == 65535:
        raise ValueError(
            "--health-bind: the default is the port after --bind's, and 65535 has none: "
            "give --health-bind HOST:PORT (or off)"
        )
    return f"[{host}]:{port + 1}" if ":" in host else f"{host}:{port + 1}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kube-extender serve", description="Serve the scheduler extender verbs."
    )
    parser.add_argument("--config", required=True, help="KubeSchedulerConfiguration file")
    parser.add_argument(
        "--bind",
        default="0.0.0.0:8888",
        type=bind_type("--bind"),
        help="HOST:PORT of the verbs (default %(default)s)",
    )
    parser.add_argument(
        "--health-bind",
        help="HOST:PORT of /healthz and /readyz, plain HTTP, answered in each worker's event "
        "loop so that busy verb threads and slow clients do not fail probes; 'off' to disable "
        "(default: the host of --bind, its port + 1)",
    )
    parser.add_argument("--workers", type=int, default=1, help="processes (default %(default)s)")
    parser.add_argument(
        "--threads", type=int, default=8, help="app threads per worker (complete requests)"
    )
    parser.add_argument("--timeout", type=int, default=30, help="worker timeout in seconds")
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=ExtenderWorker.header_timeout,
        help="seconds a connection has to send its request headers (default %(default)s)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=ExtenderWorker.body_timeout,
        help="seconds a request has to send its body once its headers are in (default %(default)s)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=2048,
        help="open connections per worker, idle and slow ones included (they hold no "
        "thread); at the cap a new connection closes the longest-idle one, else the one "
        "slowest to send its headers, else it is answered 503 (default %(default)s)",
    )
    parser.add_argument(
        "--keepalive",
        type=int,
        default=15,
        help="seconds an idle kept-alive connection stays open (default %(default)s)",
    )
    parser.add_argument(
        "--max-inflight-bytes",
        type=int,
        help="request-body bytes one worker holds at a time; more is answered 503 "
        "(default: maxRequestBytes, so one largest body at a time)",
    )
    parser.add_argument("--kubeconfig", help="cluster to watch (default: in-cluster/KUBECONFIG)")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="no cluster connection: only plugins that need no pods, full Nodes mode",
    )
    parser.add_argument("--certfile", help="serve HTTPS with this certificate")
    parser.add_argument("--keyfile", help="private key of --certfile")
    parser.add_argument("--ca-certs", help="require client certificates signed by this CA")
    parser.add_argument(
        "--allowed-client",
        action="append",
        metavar="NAME",
        help="with --ca-certs: a client certificate subject CN or SAN allowed to call the "
        "verbs (repeatable; adds to allowedClients); others get 403",
    )
    parser.add_argument(
        "--access-log", action="store_true", help="log each request (latency, sizes) to stdout"
    )
    parser.add_argument(
        "--control-socket",
        metavar="PATH",
        help="gunicorn's control socket (gunicornc) at PATH; off unless given",
    )
    add_log_flags(parser)
    args = parser.parse_args(argv)

    if args.workers < 1 or args.threads < 1:
        parser.error("--workers and --threads must be at least 1")
    if args.max_connections <= args.threads:
        parser.error("--max-connections must be larger than --threads")
    for flag in ("header_timeout", "body_timeout", "keepalive"):
        if getattr(args, flag) <= 0:
            parser.error(f"--{flag.replace('_', '-')} must be positive")
    if args.max_inflight_bytes is not None and args.max_inflight_bytes < 1:
        parser.error("--max-inflight-bytes must be positive")
    if bool(args.certfile) != bool(args.keyfile):
        parser.error("--certfile and --keyfile go together")
    if args.ca_certs and not args.certfile:
        parser.error("--ca-certs needs --certfile and --keyfile (client certificates need TLS)")
    for flag in ("config", "certfile", "keyfile", "ca_certs"):
        value = getattr(args, flag)
        if value and not Path(value).is_file():
            parser.error(f"--{flag.replace('_', '-')}: no such file: {value}")
    if not args.offline:
        check_kubeconfig(parser, args.kubeconfig)
    try:
        if args.health_bind is None:
            args.health_bind = default_health_bind(args.bind)
        elif args.health_bind != "off":
            parse_bind(args.health_bind, "--health-bind")
    except ValueError as exc:
        parser.error(str(exc))

    logs.setup(args.log_level, args.log_format)
    # Fail fast in the parent on a bad config, before gunicorn forks workers.
    try:
        config = load(args.config)
        kubeconfig = args.kubeconfig or config.extender.kubeconfig
        check_startup(config, not args.offline and has_cluster(kubeconfig), kubeconfig)
        check_client_auth(
            config.extender, allowed_clients(config.extender, args.allowed_client), args.ca_certs
        )
    except (ConfigError, StartupError) as exc:
        print(f"kube-extender serve: {exc}", file=sys.stderr)
        return 2

    if args.health_bind != "off":
        try:
            ExtenderWorker.health_socket = bind_health(
                *parse_bind(args.health_bind, "--health-bind")
            )
        except OSError as exc:
            print(f"kube-extender serve: --health-bind {args.health_bind}: {exc}", file=sys.stderr)
            return 2
        log.info("/healthz and /readyz also on %s (--health-bind)", args.health_bind)

    max_connections = open_file_limit(args.max_connections)
    if max_connections < args.max_connections:
        log.warning(
            "--max-connections %d lowered to %d: the open-file limit (ulimit -n) is %d",
            args.max_connections,
            max_connections,
            resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        )
    ExtenderWorker.header_timeout = args.header_timeout
    ExtenderWorker.body_timeout = args.body_timeout
    options: dict[str, Any] = {
        "bind": args.bind,
        "workers": args.workers,
        "threads": args.threads,
        "worker_class": "extender.webhook.server.ExtenderWorker",
        "worker_connections": max_connections,
        "timeout": args.timeout,
        "loglevel": args.log_level,
        "logger_class": "extender.cli.serve.JSONLogger",
        "accesslog": "-" if args.access_log else None,
        "errorlog": "-",
        "keepalive": args.keepalive,
        # gunicorn's defaults, stated: the request line and the header fields.
        "limit_request_line": 4094,
        "limit_request_field_size": 8190,
        "limit_request_fields": 100,
    }
    # gunicorn 25.1+ opens a control socket, by default one path for every instance of the
    # user ($XDG_RUNTIME_DIR or ~/.gunicorn): off, unless asked for at a path of its own.
    if args.control_socket:
        options["control_socket"] = args.control_socket
    else:
        options["control_socket_disable"] = True
    if args.certfile:
        options.update(certfile=args.certfile, keyfile=args.keyfile)
        if args.ca_certs:
            options.update(ca_certs=args.ca_certs, cert_reqs=ssl.CERT_REQUIRED)
    try:
        _Server(
            options,
            lambda: build_app(
                args.config,
                args.kubeconfig,
                args.offline,
                args.max_inflight_bytes,
                args.allowed_client,
            ),
        ).run()
    except SystemExit as exc:
        if exc.code == APP_LOAD_ERROR:
            return 2  # a config error, already logged on one line by _Server.load
        raise
    return 0


class JSONLogger(glogging.Logger):
    """gunicorn's logger with the project's formatter, and a structured access log."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        fmt = logs.formatter(logs.current_format())
        for logger in (self.error_log, self.access_log):
            for handler in logger.handlers:
                handler.setFormatter(fmt)

    def access(self, resp: Any, req: Any, environ: dict, request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        status = getattr(resp, "status_code", None) or str(getattr(resp, "status", "")).split()[0]
        fields = {
            "method": getattr(req, "method", "-"),
            "path": getattr(req, "path", "-"),
            "status": int(status) if str(status).isdigit() else status,
            "duration_ms": round(request_time.total_seconds() * 1000, 3),
            "request_bytes": int(environ.get("CONTENT_LENGTH") or 0),
            "response_bytes": getattr(resp, "sent", 0),
            "remote": environ.get("REMOTE_ADDR", "-"),
        }
        self.access_log.info(
            "%(method)s %(path)s %(status)s %(duration_ms)sms in=%(request_bytes)s "
            "out=%(response_bytes)s from %(remote)s",
            fields,
            extra={"fields": fields},
        )
