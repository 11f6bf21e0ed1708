"""KubeClient's keep-alive transport (``extender/kube/transport.py``) against a scripted
HTTP/1.1 server on a socket: one connection per thread, reused; a connection the server
closed while idle is replaced and the request sent again; the bearer token; fallbacks."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import orjson
import pytest
from kubernetes.client import ApiClient, Configuration

from extender.kube import ApiError, KubeClient
from extender.kube.transport import Transport


class ScriptedServer:
    """Answers each request ``{"ok": n}``; with ``close_after_each`` it closes every
    connection right after answering (without ``Connection: close``: an idle close)."""

    def __init__(self, close_after_each: bool = False) -> None:
        self.close_after_each = close_after_each
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        reader = sock.makefile("rb")
        with sock, reader:
            while True:
                line = reader.readline()
                if not line:
                    return
                headers: dict[str, str] = {}
                while (header := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length") or 0))
                with self._lock:
                    self.requests.append((line.decode().strip(), headers, body))
                    n = len(self.requests)
                data = orjson.dumps({"ok": n})
                sock.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
                )
                if self.close_after_each:
                    sock.shutdown(socket.SHUT_RDWR)
                    return

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    fake = ScriptedServer()
    yield fake
    fake.close()


def test_requests_of_one_thread_share_one_connection(server: ScriptedServer) -> None:
    client = KubeClient(ApiClient(Configuration(host=server.url)))
    assert client.transport is not None
    for i in range(3):
        assert client.request("POST", "/api/v1/x", {"i": i}) == {"ok": i + 1}
    assert server.connections == 1
    line, headers, body = server.requests[2]
    assert line == "POST /api/v1/x HTTP/1.1"
    assert headers["content-type"] == "application/json"
    assert orjson.loads(body) == {"i": 2}


def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_again() -> None:
    server = ScriptedServer(close_after_each=True)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        assert client.request("GET", "/a") == {"ok": 1}
        assert client.request("GET", "/b", query={"limit": 5}) == {"ok": 2}
        assert [r[0] for r in server.requests] == ["GET /a HTTP/1.1", "GET /b?limit=5 HTTP/1.1"]
        assert server.connections == 2
    finally:
        server.close()


def test_a_refused_connection_is_a_connection_error() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    client = KubeClient(ApiClient(Configuration(host=f"http://127.0.0.1:{port}")))
    with pytest.raises(ApiError) as raised:
        client.request("GET", "/a")
    assert raised.value.status == 0


def test_bearer_token_and_user_agent_are_sent(server: ScriptedServer) -> None:
    configuration = Configuration(
        host=server.url,
        api_key={"BearerToken": "secret"},
        api_key_prefix={"BearerToken": "Bearer"},
    )
    api = ApiClient(configuration)
    api.user_agent = "kube-extender-test"
    KubeClient(api).request("GET", "/a")
    headers = server.requests[0][1]
    assert headers["authorization"] == "Bearer secret"
    assert headers["user-agent"] == "kube-extender-test"


def test_configurations_it_does_not_cover_keep_the_generated_client() -> None:
    assert Transport.for_client(ApiClient(Configuration(host="https://h:6443"))) is not None
    for field, value in (
        ("proxy", "http://proxy:3128"),
        ("tls_server_name", "api.internal"),
        ("assert_hostname", "other.example"),
    ):
        configuration = Configuration(host="https://h:6443")
        setattr(configuration, field, value)
        assert Transport.for_client(ApiClient(configuration)) is None, field
    assert KubeClient(ApiClient(Configuration(host="http://h")), fast=False).transport is None


def test_a_connection_the_server_closed_is_not_reused() -> None:
    """Closed while idle and noticed before the next request: no failed attempt at all (a
    request that fails on a reused connection is sent again, which is harmless for these
    GETs but is a second POST of a binding if the server did read the first)."""
    server = ScriptedServer(close_after_each=True)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        assert client.transport is not None
        assert client.request("GET", "/a") == {"ok": 1}
        conn = client.transport._local.conn
        deadline = 100
        while not _readable(conn.sock) and deadline:  # the server's close reached us
            deadline -= 1
            threading.Event().wait(0.05)
        sent: list[str] = []
        original = conn.request

        def spy(method: str, url: str, *args: object, **kwargs: object) -> None:
            sent.append(url)
            original(method, url, *args, **kwargs)

        conn.request = spy  # type: ignore[method-assign]
        assert client.request("GET", "/b") == {"ok": 2}
        assert sent == ["/b"]
    finally:
        server.close()


def _readable(sock: socket.socket) -> bool:
    import select

    return bool(select.select([sock], [], [], 0)[0])
