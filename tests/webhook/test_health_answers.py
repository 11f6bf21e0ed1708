"""``/healthz`` and ``/readyz`` answer the same in ``run``, ``serve`` (the Flask app) and serve's
health port (issue 27: ``run`` said ``ok``, ``serve`` ``{"status":"ready"}``): the Kubernetes
components' ``ok`` as ``text/plain``, and ``503`` with the reason when not ready."""

from __future__ import annotations

import asyncio
import http.client
import threading
from types import SimpleNamespace

import pytest

from extender.cli.run import serve_http
from extender.controlplane import free_port
from extender.framework.profile import Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.webhook.app import create_app
from extender.webhook.server import bind_health, health_front
from extender.webhook.service import ExtenderService

OK = (200, "text/plain; charset=utf-8", "nosniff", b"ok")
NOT_READY = (503, "text/plain; charset=utf-8", "nosniff", b"not ready: informers not synced")


def _get(port: int, path: str, method: str = "GET") -> tuple[int, str | None, str | None, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        body = resp.read()
        return (
            resp.status,
            resp.getheader("Content-Type"),
            resp.getheader("X-Content-Type-Options"),
            body,
        )
    finally:
        conn.close()


@pytest.fixture
def servers():
    """The three servers, all ready when ``synced[0]`` is."""
    synced = [False]
    run_port = free_port()
    run = serve_http(
        SimpleNamespace(synced=lambda: synced[0]),  # type: ignore[arg-type]
        f"127.0.0.1:{run_port}",
    )
    health_port = free_port()
    sock = bind_health("127.0.0.1", health_port)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    listener = health_front(lambda: synced[0], None, loop)
    asyncio.run_coroutine_threadsafe(listener.listen([sock]), loop).result(10)
    service = ExtenderService(Framework(Profile("p", {}), Registry({})), ready=lambda: synced[0])
    client = create_app(service).test_client()

    def answers(path: str) -> list[tuple]:
        response = client.get(path)
        app = (
            response.status_code,
            response.headers.get("Content-Type"),
            response.headers.get("X-Content-Type-Options"),
            response.data,
        )
        return [_get(run_port, path), _get(health_port, path), app]

    yield synced, answers, (run_port, health_port)
    run.shutdown()
    asyncio.run_coroutine_threadsafe(listener.shutdown(0.0), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    sock.close()


def test_run_serve_and_the_health_port_answer_alike(servers) -> None:
    synced, answers, _ = servers
    assert answers("/healthz") == [OK] * 3
    assert answers("/readyz") == [NOT_READY] * 3
    synced[0] = True
    assert answers("/readyz") == [OK] * 3
    assert answers("/healthz") == [OK] * 3


def test_run_and_the_health_port_refuse_alike(servers) -> None:
    """Both ports serve one small app (``extender.health.wsgi_app``): other paths 404 and
    other methods 405, as JSON errors."""
    _, _, ports = servers
    for path, method, status in (("/nope", "GET", 404), ("/healthz", "POST", 405)):
        for port in ports:
            code, content_type, _, body = _get(port, path, method)
            assert (code, content_type) == (status, "application/json"), (port, path)
            assert body.startswith(b'{"error":')
