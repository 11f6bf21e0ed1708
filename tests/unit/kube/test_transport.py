"""KubeClient's one HTTP path (``extender/kube/transport.py``) against a scripted HTTP/1.1
server on a socket: one connection per thread, reused; a connection the server closed while
idle is replaced and the request sent again; the bearer token; the connection settings taken
from the configuration; watches streamed over the transport (bookmarks, a 410 as an event or
as the answer, lines split across chunks and reads)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import orjson
import pytest
from kubernetes.client import ApiClient, Configuration

from extender.kube import ApiError, Gone, KubeClient
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


def test_connection_settings_come_from_the_configuration() -> None:
    plain = Transport.for_client(ApiClient(Configuration(host="https://h:6443")))
    assert (plain.host, plain.port, plain.server_name, plain.proxy) == ("h", 6443, "h", None)
    named = Configuration(host="https://h:6443")
    named.tls_server_name = "api.internal"
    assert Transport.for_client(ApiClient(named)).server_name == "api.internal"
    asserted = Configuration(host="https://h:6443")
    asserted.assert_hostname = "other.example"
    assert Transport.for_client(ApiClient(asserted)).server_name == "other.example"
    proxied = Configuration(host="https://h:6443")
    proxied.proxy = "http://proxy:3128"
    assert Transport.for_client(ApiClient(proxied)).proxy == ("proxy", 3128)
    proxied.no_proxy = "h"
    assert Transport.for_client(ApiClient(proxied)).proxy is None
    with pytest.raises(ValueError, match="not http or https"):
        Transport.for_client(ApiClient(Configuration(host="unix:///var/run/api.sock")))


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
        original = client.transport._exchange

        def spy(sock: socket.socket, method: str, target: str, *args: object) -> object:
            sent.append(target)
            return original(sock, method, target, *args)  # type: ignore[arg-type]

        client.transport._exchange = spy  # type: ignore[method-assign,assignment]
        assert client.request("GET", "/b") == {"ok": 2}
        assert sent == ["/b"]
    finally:
        server.close()


class RawServer:
    """Answers every request on a connection with the next of ``answers`` (raw bytes), and
    records each request as it arrived in one read (request line, headers and body)."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = list(answers)
        self.reads: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        sock, _ = self.listener.accept()
        with sock:
            for answer in self.answers:
                data = sock.recv(65536)
                if not data:
                    return
                self.reads.append(data)
                for i in range(0, len(answer), 7):  # in small pieces: the client must gather
                    sock.sendall(answer[i : i + 7])
                    threading.Event().wait(0.001)

    def close(self) -> None:
        self.listener.close()


def test_a_request_leaves_in_one_write_and_answers_are_parsed_whatever_their_framing() -> None:
    chunked = (
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"a":\r\n3;ext=1\r\n1}\n\r\n0\r\nTrailer: x\r\n\r\n'
    )
    interim = b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n{"b": 2}'
    empty = b"HTTP/1.1 204 No Content\r\n\r\n"
    closing = b"HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    server = RawServer([chunked, interim, empty, closing])
    try:
        transport = Transport.for_client(ApiClient(Configuration(host=server.url)))
        timeout = (5.0, 5.0)
        body = orjson.dumps({"kind": "Binding"})
        args = ("application/json", timeout)
        assert transport.request("POST", "/p", body, [], *args) == (201, b'{"a":1}\n')
        assert transport.request("GET", "/q", None, [("x", "1")], *args) == (200, b'{"b": 2}')
        assert transport.request("DELETE", "/r", None, [], *args) == (204, b"")
        assert transport.request("PUT", "/s", b"{}", [], *args) == (409, b"{}")
        assert transport._local.conn.sock is None  # Connection: close was honoured
        first = server.reads[0]
        assert first.startswith(b"POST /p HTTP/1.1\r\nHost: 127.0.0.1:")
        assert first.endswith(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert server.reads[1].startswith(b"GET /q?x=1 HTTP/1.1\r\n")
        assert b"Content-Length" not in server.reads[1]
    finally:
        server.close()


def test_an_answer_cut_short_is_a_connection_error() -> None:
    # Two bytes of ten, then the server closes the connection.
    server = RawServer([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}"])
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        with pytest.raises(ApiError) as raised:
            client.request("GET", "/a", timeout=(2.0, 2.0))
        assert raised.value.status == 0
    finally:
        server.close()


def _readable(sock: socket.socket) -> bool:
    import select

    return bool(select.select([sock], [], [], 0)[0])


class WatchServer:
    """Answers one watch request with ``status``, then writes ``pieces`` (raw bytes of the
    chunked body) one at a time, each flushed and followed by a pause, so the client reads
    them in separate reads."""

    def __init__(
        self,
        pieces: list[bytes],
        status: bytes = b"200 OK",
        body: bytes = b"",
        hold: float = 0,
        pause: float = 0.05,
    ) -> None:
        self.pieces = pieces
        self.hold = hold
        self.pause = pause
        self.status = status
        self.body = body
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.request_line = ""
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        sock, _ = self.listener.accept()
        reader = sock.makefile("rb")
        with sock, reader:
            self.request_line = reader.readline().decode().strip()
            while reader.readline() not in (b"\r\n", b""):
                pass
            if self.body:
                sock.sendall(
                    b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (self.status, len(self.body), self.body)
                )
                return
            sock.sendall(
                b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" % self.status
            )
            for piece in self.pieces:
                try:
                    sock.sendall(piece)
                except OSError:
                    return  # the client closed the watch
                threading.Event().wait(self.pause)
            threading.Event().wait(self.hold)  # the stream stays open, silent

    def close(self) -> None:
        self.listener.close()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _line(kind: str, obj: dict) -> bytes:
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def test_watch_streams_events_split_across_chunks_and_reads() -> None:
    added = _line("ADDED", {"metadata": {"name": "a", "resourceVersion": "5"}})
    bookmark = _line("BOOKMARK", {"metadata": {"resourceVersion": "9"}})
    modified = _line("MODIFIED", {"metadata": {"name": "a", "resourceVersion": "10"}})
    pieces = [
        _chunk(added[:7]),  # one line in three chunks, each its own read
        _chunk(added[7:20]),
        _chunk(added[20:] + bookmark[:4]),  # a chunk ending one line and starting the next
        _chunk(bookmark[4:] + modified),  # two lines ending in one chunk
        b"0\r\n\r\n",
    ]
    server = WatchServer(pieces)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        with client.watch("/api/v1/nodes", "4", timeout_seconds=30) as stream:
            events = list(stream)
        assert [(kind, obj["metadata"]["resourceVersion"]) for kind, obj in events] == [
            ("ADDED", "5"),
            ("BOOKMARK", "9"),
            ("MODIFIED", "10"),
        ]
        assert "allowWatchBookmarks=true" in server.request_line
        assert "resourceVersion=4" in server.request_line
    finally:
        server.close()


def test_watch_chunk_framing_split_anywhere() -> None:
    """Size lines, extensions and the CRLFs after the data, cut at every third byte."""
    lines = [
        _line("ADDED", {"metadata": {"name": f"n{i}", "resourceVersion": str(i)}}) for i in range(4)
    ]
    body = b"".join(
        b"%x;ext=1\r\n%s\r\n" % (len(line), line) if i % 2 else _chunk(line)
        for i, line in enumerate(lines)
    )
    body += b"0\r\nTrailer: x\r\n\r\n"
    server = WatchServer([body[i : i + 3] for i in range(0, len(body), 3)], pause=0.002)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        with client.watch("/api/v1/nodes", "0") as stream:
            names = [obj["metadata"]["name"] for _, obj in stream]
        assert names == ["n0", "n1", "n2", "n3"]
    finally:
        server.close()


def test_watch_cut_mid_chunk_is_a_connection_error() -> None:
    line = _line("ADDED", {"metadata": {"name": "a", "resourceVersion": "5"}})
    server = WatchServer([_chunk(line), _chunk(line)[:10]])  # then the server closes
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        stream = client.watch("/api/v1/nodes", "4")
        assert next(stream)[0] == "ADDED"
        with pytest.raises(ApiError) as raised:
            next(stream)
        assert raised.value.status == 0
    finally:
        server.close()


def test_watch_410_error_event_raises_gone() -> None:
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    pieces = [
        _chunk(_line("BOOKMARK", {"metadata": {"resourceVersion": "9"}})),
        _chunk(_line("ERROR", gone)),
        b"0\r\n\r\n",
    ]
    server = WatchServer(pieces)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        stream = client.watch("/api/v1/nodes", "4")
        assert next(stream)[0] == "BOOKMARK"
        with pytest.raises(Gone):
            next(stream)
    finally:
        server.close()


def test_watch_answered_410_raises_gone() -> None:
    body = orjson.dumps({"kind": "Status", "code": 410, "reason": "Expired", "message": "old"})
    server = WatchServer([], status=b"410 Gone", body=body)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        with pytest.raises(Gone):
            client.watch("/api/v1/nodes", "4")
    finally:
        server.close()


def test_watch_closed_from_another_thread_ends_quietly() -> None:
    bookmark = _chunk(_line("BOOKMARK", {"metadata": {"resourceVersion": "9"}}))
    server = WatchServer([bookmark], hold=10)
    try:
        client = KubeClient(ApiClient(Configuration(host=server.url)))
        stream = client.watch("/api/v1/nodes", "4", timeout_seconds=30)
        assert next(stream)[0] == "BOOKMARK"
        threading.Timer(0.2, stream.close).start()
        assert list(stream) == []  # the blocked read wakes up and the iteration ends
    finally:
        server.close()
