"""The Flask app: the four verbs, health, readiness, metrics and version.

Bodies are parsed with orjson from the raw bytes (a 5000-node ``Nodes`` request is ~80 MB),
envelopes validated by marshmallow, and every bad request answered with a 4xx and a JSON body
naming the problem, never a traceback.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Collection
from http import HTTPStatus
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import orjson
from flask import Flask, Response, request
from marshmallow import ValidationError
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from werkzeug.exceptions import HTTPException, NotFound, RequestEntityTooLarge

from extender import health, wire
from extender.framework.schedule import SchedulingError
from extender.metrics import PluginMetrics

from .explain import Explainer, explain
from .limits import BodyRefused, BytesInFlight, read_body
from .service import ExtenderService, Scores, ServiceUnavailable

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024  # docs/extender.md#memory
# extender_requests_total's outcome label, every value a verb handler sets (docs/extender.md
# #metrics lists them all; tests/unit/test_extender_doc.py checks both).
OUTCOMES = (
    "ok",
    "partial",
    "error",
    "bad_request",
    "unavailable",
    "too_large",
    "refused",
    "forbidden",
)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
NODE_BUCKETS = (1, 5, 10, 50, 100, 250, 500, 1000, 2500, 5000, 15000)


def _version() -> str:
    try:
        return version("kube-extender")
    except PackageNotFoundError:
        return "0+unknown"


class Metrics(PluginMetrics):
    """Prometheus metrics of one process (one registry, shared by the request threads): the
    verbs' and the plugins' (``handle.metrics``)."""

    def __init__(self) -> None:
        super().__init__(CollectorRegistry())
        self.requests = Counter(
            "extender_requests_total",
            "Extender verb requests by verb and outcome.",
            ["verb", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "extender_request_duration_seconds",
            "Time to answer an extender verb, parsing and encoding included.",
            ["verb", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.nodes = Histogram(
            "extender_request_nodes",
            "Nodes in one filter, prioritize or preempt request.",
            ["verb"],
            buckets=NODE_BUCKETS,
            registry=self.registry,
        )
        # Not a verb label: a 404 is no verb, and the path is the caller's (unbounded).
        self.unknown_paths = Counter(
            "extender_unknown_path_requests_total",
            "Requests to a path the extender does not serve (404), such as a misspelt verb "
            "in the scheduler's extender config, by HTTP method.",
            ["method"],
            registry=self.registry,
        )


# The method label's values: a client can send any token as its method.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class UnknownPaths:
    """Counts requests to unknown paths and warns once for each distinct path, for the first
    ``remember`` distinct paths; the others, and repeats, go to the debug log, so that a flood
    of made-up paths cannot fill the log or the memory."""

    def __init__(self, metrics: Metrics, verb_paths: list[str], remember: int = 64) -> None:
        self.metrics = metrics
        self.verb_paths = verb_paths
        self.remember = remember
        self.warned: set[str] = set()
        self._lock = threading.Lock()

    def record(self, method: str, path: str, where: str = "") -> None:
        """``where``: the listener, when not the verbs' (``"health port"``)."""
        method = method if method in METHODS else "other"
        self.metrics.unknown_paths.labels(method).inc()
        shown = repr(path if len(path) <= 200 else path[:200] + "...")
        if where:
            shown += f" on the {where}"
        with self._lock:
            first = len(self.warned) < self.remember and shown not in self.warned
            if first:
                self.warned.add(shown)
        # A scheduler-side typo (prioritizeVerb: prioritise) is otherwise silent: kube-scheduler
        # drops a failed prioritize call, and ignores filter errors of an ignorable extender.
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "%s %s: no such path (404); the verbs are at %s: check urlPrefix and the "
            "filterVerb, prioritizeVerb, preemptVerb and bindVerb of the scheduler's "
            "extender config",
            method,
            shown,
            ", ".join(self.verb_paths),
        )


def _json(body: Any, status: int = 200) -> Response:
    return Response(
        orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS),
        status=status,
        mimetype="application/json",
    )


def _problem(status: int, message: str, **details: Any) -> Response:
    return _json({"error": message, **details}, status)


def _dumps(body: Any) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)


def _problem_body(status: int, message: str, **details: Any) -> tuple[int, bytes]:
    return status, _dumps({"error": message, **details})


JSON_HEADERS = "Content-Type", "application/json"


def _flask_view(handler: Callable[[dict], tuple[int, bytes]]) -> Callable[[], Response]:
    def view() -> Response:
        status, body = handler(request.environ)
        return Response(body, status=status, mimetype="application/json")

    view.__name__ = handler.__name__
    return view


class _VerbsFirst:
    """The WSGI app: a POST to a verb's path goes straight to its handler; everything else
    (health, metrics, version, other methods, unknown paths) to Flask.

    A verb call is a body in, a body out: Flask's request context, URL matching and Response
    object cost more per call than the extender protocol's own parse and encode (profile in
    docs/benchmarks.md, "Issue 31: the extender's verbs"). The answers are Flask's: the same
    status, Content-Type and body, and an error the handler did not expect is logged and
    answered 500 as the app's error handler does."""

    def __init__(self, flask_app: Callable, verbs: dict[str, Callable[[dict], tuple[int, bytes]]]):
        self.flask_app = flask_app
        self.verbs = verbs

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        handler = self.verbs.get(environ.get("PATH_INFO", ""))
        if handler is None or environ.get("REQUEST_METHOD") != "POST":
            return self.flask_app(environ, start_response)
        try:
            status, body = handler(environ)
        except Exception as exc:
            log.exception("unhandled error in POST %s", environ.get("PATH_INFO"))
            status, body = _problem_body(500, f"internal error: {type(exc).__name__}: {exc}")
        start_response(
            f"{status} {HTTPStatus(status).phrase.upper()}",
            [JSON_HEADERS, ("Content-Length", str(len(body)))],
        )
        return [body]


ERR_BIND_DISABLED = (
    "the bind verb is disabled: enable it with bind.enabled in the ExtenderConfiguration "
    "(it then needs client certificates and an allow-list, see docs/extender.md)"
)
ERR_BIND_NO_ALLOW_LIST = (
    "the bind verb needs an allow-list of client certificate identities "
    "(--allowed-client or bind.allowedClients) and is refused without one"
)


def peer_identities(environ: dict) -> set[str]:
    """The identities of the verified TLS client certificate of this request: its subject
    CNs and its DNS, URI, IP and e-mail SANs. gunicorn puts the connection's ``SSLSocket``
    in the environ (``gunicorn.socket``); ``getpeercert()`` is empty unless the handshake
    verified a certificate (``--ca-certs``, CERT_REQUIRED)."""
    sock = environ.get("gunicorn.socket")
    getpeercert = getattr(sock, "getpeercert", None)
    if getpeercert is None:
        return set()
    try:
        cert = getpeercert() or {}
    except ValueError:  # no handshake
        return set()
    found: set[str] = set()
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                found.add(value)
    for _kind, value in cert.get("subjectAltName") or ():
        found.add(value)
    return found


def _forbidden(allowed: frozenset[str], environ: dict) -> tuple[int, bytes] | None:
    """403 unless the TLS client certificate names one of ``allowed``."""
    identities = peer_identities(environ)
    if identities & allowed:
        return None
    if not identities:
        return _problem_body(403, "a client certificate is required (TLS client authentication)")
    return _problem_body(
        403,
        "the client certificate's identities are not in the allow-list",
        identities=sorted(identities),
    )


def _with_pod_uid(args: dict) -> dict:
    """An empty PodUID would drop the binding's UID precondition: refuse it."""
    if not args["pod_uid"]:
        raise ValidationError({"PodUID": ["must not be empty"]})
    return args


def create_app(
    service: ExtenderService,
    *,
    url_prefix: str = "/",
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    metrics: Metrics | None = None,
    body_budget: BytesInFlight | None = None,
    allowed_clients: Collection[str] | None = None,
    bind_enabled: bool = False,
) -> Flask:
    """``allowed_clients``: the certificate identities (CN or SAN) that may call any verb;
    ``None`` checks none (plain HTTP, or any certificate of the CA). ``bind`` answers 404
    unless ``bind_enabled``, and 403 to everyone without an allow-list."""
    app = Flask("kube-extender")
    app.config["MAX_CONTENT_LENGTH"] = max_request_bytes
    metrics = metrics or Metrics()
    app.extensions["kube-extender"] = {"service": service, "metrics": metrics}
    prefix = "/" + url_prefix.strip("/")
    prefix = "" if prefix == "/" else prefix

    def verb(
        name: str, load: Callable[[Any], dict], run: Callable[[dict], Any], count: Callable
    ) -> Callable[[dict], tuple[int, bytes]]:
        """The verb on a WSGI environ: its status and JSON body (no framework objects)."""

        def handler(environ: dict) -> tuple[int, bytes]:
            start = time.perf_counter()
            outcome = "error"
            held = 0
            try:
                refused = gate(name, environ)
                if refused is not None:
                    outcome = "forbidden"
                    return refused
                try:
                    raw, held = read_body(environ, max_request_bytes, body_budget)
                except BodyRefused as exc:
                    outcome = "too_large" if exc.status == 413 else "refused"
                    return _problem_body(exc.status, exc.message, **exc.details)
                try:
                    data = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    outcome = "bad_request"
                    return _problem_body(400, f"the request body is not valid JSON: {exc}")
                try:
                    args = load(data)
                except ValidationError as exc:
                    outcome = "bad_request"
                    return _problem_body(400, "invalid request body", fields=exc.messages)
                metrics.nodes.labels(name).observe(count(args))
                try:
                    reply = run(args)
                except ServiceUnavailable as exc:
                    outcome = "unavailable"
                    return _problem_body(503, str(exc))
                except SchedulingError as exc:
                    outcome = "error"
                    return _problem_body(500, exc.status.message)
                if isinstance(reply, Scores):
                    # Some Score plugins failed and were left out: still an answer, but not "ok".
                    outcome = "partial" if reply.failed else "ok"
                    return 200, _dumps(reply.priorities)
                outcome = "error" if isinstance(reply, dict) and reply.get("Error") else "ok"
                return 200, _dumps(reply)
            finally:
                if held and body_budget is not None:
                    body_budget.release(held)
                elapsed = time.perf_counter() - start
                metrics.requests.labels(name, outcome).inc()
                metrics.latency.labels(name, outcome).observe(elapsed)

        handler.__name__ = f"verb_{name}"
        return handler

    allowed = None if allowed_clients is None else frozenset(allowed_clients)

    def gate(name: str, environ: dict) -> tuple[int, bytes] | None:
        if name == "bind":
            if not bind_enabled:
                return _problem_body(404, ERR_BIND_DISABLED)
            if not allowed:
                return _problem_body(403, ERR_BIND_NO_ALLOW_LIST)
        return _forbidden(allowed, environ) if allowed is not None else None

    def count_args(args: dict) -> int:
        return len(args["nodes"] if args["nodes"] is not None else args["node_names"])

    def count_victims(args: dict) -> int:
        victims = args["node_name_to_meta_victims"] or args["node_name_to_victims"] or {}
        return len(victims)

    @functools.cache
    def explainer() -> Explainer:  # one per app, built on the first /explain
        return Explainer(service.fwk)

    routes = {
        "filter": (wire.load_args, service.filter, count_args),
        "prioritize": (wire.load_args, service.prioritize, count_args),
        "preempt": (wire.load_preemption_args, service.preempt, count_victims),
        "bind": (
            lambda data: _with_pod_uid(wire.load_binding_args(data)),
            service.bind,
            lambda args: 1,
        ),
        # Not a kube-scheduler verb: the per-node, per-plugin breakdown (docs/explain.md).
        "explain": (wire.load_args, lambda args: explain(service, explainer(), args), count_args),
    }
    verbs: dict[str, Callable[[dict], tuple[int, bytes]]] = {}
    for name, (load, run, count) in routes.items():
        handler = verbs[f"{prefix}/{name}"] = verb(name, load, run, count)
        # The rule stays: Flask answers the other methods (405) and the unknown paths (404).
        app.add_url_rule(f"{prefix}/{name}", view_func=_flask_view(handler), methods=["POST"])
    app.wsgi_app = _VerbsFirst(app.wsgi_app, verbs)  # type: ignore[method-assign]
    verb_paths = [f"{prefix}/{name}" for name in routes]
    unknown_paths = UnknownPaths(metrics, verb_paths)
    app.extensions["kube-extender"]["unknown_paths"] = unknown_paths

    def _health(status: int, body: bytes) -> Response:
        return Response(body, status=status, headers=health.HEADERS)

    @app.get("/healthz")
    def healthz() -> Response:
        return _health(*health.healthz())

    @app.get("/readyz")
    def readyz() -> Response:
        return _health(*health.readyz(service.ready()))

    @app.get("/metrics")
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), mimetype=CONTENT_TYPE_LATEST)

    @app.get("/version")
    def version_info() -> Response:
        return _json({"name": "kube-extender", "version": _version()})

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        if isinstance(exc, NotFound) and request.url_rule is None:
            unknown_paths.record(request.method, request.path)
            return _problem(404, f"no such path: {request.path}", verbs=verb_paths)
        message = exc.description or exc.name
        if isinstance(exc, RequestEntityTooLarge):
            message = f"the request body is larger than the limit of {max_request_bytes} bytes"
        return _problem(exc.code or 500, message)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unhandled error in %s %s", request.method, request.path)
        return _problem(500, f"internal error: {type(exc).__name__}: {exc}")

    return app
