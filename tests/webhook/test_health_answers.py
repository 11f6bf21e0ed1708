"""``/healthz`` and ``/readyz`` answer the same in ``run``, ``serve`` (the Flask app) and serve's
health listener (issue 27: ``run`` said ``ok``, ``serve`` ``{"status":"ready"}``): the Kubernetes
components' ``ok`` as ``text/plain``, and ``503`` with the reason when not ready."""

from __future__ import annotations

import http.client
from types import SimpleNamespace

import pytest

from extender.cli.run import serve_http
from extender.controlplane import free_port
from extender.framework.profile import Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.webhook.app import create_app
from extender.webhook.server import HealthListener
from extender.webhook.service import ExtenderService

OK = (200, "text/plain; charset=utf-8", "nosniff", b"ok")
NOT_READY = (503, "text/plain; charset=utf-8", "nosniff", b"not ready: informers not synced")


def _get(port: int, path: str) -> tuple[int, str | None, str | None, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
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
    listener = HealthListener("127.0.0.1", free_port())
    listener.start(lambda: synced[0])
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
        return [_get(run_port, path), _get(listener.port, path), app]

    yield synced, answers
    run.shutdown()
    listener.sock.close()


def test_run_serve_and_the_health_port_answer_alike(servers) -> None:
    synced, answers = servers
    assert answers("/healthz") == [OK] * 3
    assert answers("/readyz") == [NOT_READY] * 3
    synced[0] = True
    assert answers("/readyz") == [OK] * 3
    assert answers("/healthz") == [OK] * 3
