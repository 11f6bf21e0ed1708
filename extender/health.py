"""``/healthz`` and ``/readyz``: one answer for ``run``, ``serve`` and serve's health port.

The Kubernetes components' convention (k8s.io/apiserver ``pkg/server/healthz``, which
kube-scheduler serves): ``200``, ``ok`` as ``text/plain; charset=utf-8`` with
``X-Content-Type-Options: nosniff``. Not ready is ``503`` with the reason as text (upstream
answers a failed check 500; a probe fails on either, and 503 says "not yet").

:func:`wsgi_app` is the one small app of the ports that serve no verbs: ``run``'s
``--metrics-bind`` (with ``/metrics`` and ``/debug/cache`` as extra routes, served by
:func:`serve_wsgi`) and ``serve``'s ``--health-bind`` (answered in each worker's event loop,
``extender.webhook.server.health_front``). Serve's Flask app answers the same on the verbs' port.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import orjson

CONTENT_TYPE = "text/plain; charset=utf-8"
HEADERS = (("Content-Type", CONTENT_TYPE), ("X-Content-Type-Options", "nosniff"))
OK = b"ok"
NOT_READY = b"not ready: informers not synced"


def healthz() -> tuple[int, bytes]:
    return 200, OK


def readyz(ready: bool) -> tuple[int, bytes]:
    return (200, OK) if ready else (503, NOT_READY)


Route = Callable[[], tuple[int, bytes, str]]  # () -> (status, body, content type)
Unknown = Callable[[str, str, str], None]  # (method, path, where): a request to another path


def wsgi_app(
    ready: Callable[[], bool],
    routes: Mapping[str, Route] | None = None,
    *,
    not_found: str = "not found",
    unknown: Unknown | None = None,
    where: str = "",
) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """``GET``/``HEAD`` of ``/healthz``, ``/readyz`` (``ready()``) and of ``routes``; other
    methods ``405``, other paths ``404`` (errors as JSON ``{"error": ...}``, as the app's), the
    latter reported to ``unknown(method, path, where)``."""
    extra = dict(routes or {})

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        headers: list[tuple[str, str]] = [("Content-Type", "application/json")]
        if path not in ("/healthz", "/readyz") and path not in extra:
            code, body = 404, orjson.dumps({"error": not_found})
            if unknown is not None:
                unknown(method, path, where)
        elif method not in ("GET", "HEAD"):
            code, body = 405, orjson.dumps({"error": "method not allowed"})
        elif path in extra:
            code, body, content_type = extra[path]()
            headers = [("Content-Type", content_type)]
            if content_type == CONTENT_TYPE:
                headers = list(HEADERS)
        else:
            code, body = healthz() if path == "/healthz" else readyz(ready())
            headers = list(HEADERS)
        headers.append(("Content-Length", str(len(body))))
        start_response(f"{code} {HTTPStatus(code).phrase}", headers)
        return [b"" if method == "HEAD" else body]

    return app


class _Handler(WSGIRequestHandler):
    timeout = 10  # seconds a client has for each read and write: a silent one frees its thread

    def log_message(self, format: str, *args: Any) -> None:  # no line per scrape
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def serve_wsgi(
    app: Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]], host: str, port: int
) -> WSGIServer:
    """``app`` on ``host:port``, a thread per connection, from a daemon thread; ``shutdown()``
    stops it. Raises ``OSError`` when the address cannot be bound."""
    server = (_Server6 if ":" in host else _Server)((host, port), _Handler)
    server.set_app(app)
    threading.Thread(target=server.serve_forever, daemon=True, name="http").start()
    return server
