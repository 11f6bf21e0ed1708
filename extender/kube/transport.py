"""The one HTTP path to the apiserver: keep-alive ``http.client`` connections for requests,
and a dedicated connection per watch, read line by line as it streams.

The scheduler makes two API calls per pod it places (the binding and the Scheduled event), on
threads that share the GIL with the scheduling thread. Through the generated client, urllib3's
pool manager and connection pool, each call cost several times the CPU of the HTTP exchange
itself (serializing the body object by object, URL parsing, pool keys, retry objects, response
wrappers); this transport sends the orjson bytes over one persistent connection per thread
and reads the whole answer. ``http.client`` opens the connections (TLS, a proxy's tunnel) and
serves the watches; a request leaves in one write and httptools (llhttp) parses its answer, at
a quarter of the CPU of ``http.client``'s.

It reads the TLS material, credentials and connection settings from the ``kubernetes``
client's ``Configuration`` (what ``kubernetes.config`` loads from a kubeconfig or the
in-cluster files): http or https, CA file or data, client certificate, the bearer token
(renewed through the configuration's refresh hook per request, as the generated client does),
``verify_ssl``, ``assert_hostname`` (``False`` skips the name check, a name is checked instead
of the host's), ``tls_server_name`` (the TLS server name), ``socket_options``, and ``proxy``
(a ``CONNECT`` tunnel, with ``proxy_headers``; ``no_proxy`` hosts go direct).

A keep-alive connection the server closed while idle (an apiserver restart, its idle timeout)
is noticed before it is reused, as urllib3's pool does: an idle connection that is readable
has been closed (or holds garbage) and is replaced. If the close races with the request, the
request fails before any answer arrives and is sent again once on a new connection, as Go's
``net/http`` transport does for a request the server could not have read
(``src/net/http/transport.go``, ``errServerClosedIdle``).
"""

from __future__ import annotations

import http.client
import ipaddress
import select
import socket
import ssl
import threading
from typing import Any
from urllib.parse import urlencode, urlsplit

import httptools

# Failures of a reused connection that mean the server closed it before reading the request.
_CLOSED_IDLE = (
    http.client.RemoteDisconnected,
    BrokenPipeError,
    ConnectionResetError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)


def _dropped(sock: socket.socket) -> bool:
    """An idle keep-alive connection with something to read was closed by the server."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _bypass_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Whether ``host`` matches a comma-separated ``no_proxy`` rule (``*``, a domain or a
    subdomain of it, ``host:port``, an IP network), as the kubernetes client's REST layer."""
    host = host.lower()
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in (entry.strip().lower() for entry in no_proxy.split(",")):
        if entry == "*":
            return True
        if not entry:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
        entry = entry.lstrip(".")
        if host == entry or host.endswith("." + entry) or f"{host}:{port}" == entry:
            return True
    return False


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(
        cafile=configuration.ssl_ca_cert or None, cadata=configuration.ca_cert_data or None
    )
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    return context


class _Connection(http.client.HTTPConnection):
    """An HTTP connection that applies the configuration's socket options."""

    socket_options: list[tuple[int, int, Any]] | None = None

    def connect(self) -> None:
        super().connect()
        for option in self.socket_options or ():
            self.sock.setsockopt(*option)


class _TLSConnection(_Connection):
    """HTTPS with a chosen TLS server name (``tls_server_name``, ``assert_hostname``)."""

    def __init__(
        self, host: str, port: int, *, timeout: float, context: ssl.SSLContext, server_name: str
    ) -> None:
        super().__init__(host, port, timeout=timeout)
        self.context = context
        self.server_name = server_name

    def connect(self) -> None:
        super().connect()  # TCP, socket options, and the proxy's tunnel if any
        self.sock = self.context.wrap_socket(self.sock, server_hostname=self.server_name)


class _Answer:
    """One answer, as httptools' (llhttp's) callbacks deliver it; 1xx answers are skipped."""

    __slots__ = (
        "parser",
        "status",
        "parts",
        "framed",
        "headers_done",
        "complete",
        "keep_alive",
        "extra",
    )

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.parts: list[bytes] = []
        self.framed = False  # a Content-Length or Transfer-Encoding says where the body ends
        self.headers_done = self.complete = self.keep_alive = self.extra = False

    def on_message_begin(self) -> None:
        self.extra = self.complete  # bytes past the answer: the connection is out of step

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.parts.append(body)

    def on_message_complete(self) -> None:
        if 100 <= self.status < 200:  # an interim answer (100 Continue): the final one follows
            self.parts.clear()
            self.framed = self.headers_done = False
            return
        self.complete = True
        # Read here: once the message is over the parser is reset for the next one.
        self.keep_alive = self.parser.should_keep_alive()


def _read_response(sock: socket.socket) -> tuple[int, bytes, bool]:
    """Read one HTTP/1.1 answer from ``sock``, framed by httptools (a Content-Length, chunked
    coding or the end of the connection): the status, the body, and whether the connection
    must close after it."""
    answer = _Answer()
    started = False
    while not answer.complete:
        data = sock.recv(65536)
        if not data:
            if not started:  # nothing of an answer: the server closed the connection first
                raise http.client.RemoteDisconnected("closed without an answer")
            if answer.headers_done and not answer.framed:  # the body ran to the end
                return answer.status, b"".join(answer.parts), True
            raise http.client.IncompleteRead(b"".join(answer.parts))
        started = True
        try:
            answer.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if not answer.complete:
                raise http.client.HTTPException(f"malformed answer: {exc}") from None
            answer.extra = True
    return answer.status, b"".join(answer.parts), not answer.keep_alive or answer.extra


class Transport:
    """Requests over one keep-alive connection per calling thread, and watch streams, to the
    apiserver of a ``kubernetes`` client ``Configuration``."""

    def __init__(self, configuration: Any, default_headers: dict[str, str] | None = None) -> None:
        url = urlsplit(configuration.host)
        if url.scheme not in ("http", "https"):
            raise ValueError(f"apiserver URL {configuration.host!r}: not http or https")
        self.configuration = configuration
        self.default_headers = dict(default_headers or {})
        self.https = url.scheme == "https"
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if self.https else 80)
        self.prefix = url.path.rstrip("/")
        self.context = _ssl_context(configuration) if self.https else None
        assert_hostname = configuration.assert_hostname
        self.server_name = (
            configuration.tls_server_name
            or (assert_hostname if isinstance(assert_hostname, str) else None)
            or self.host
        )
        self.proxy = None
        no_proxy = getattr(configuration, "no_proxy", None) or ""
        if configuration.proxy and not _bypass_proxy(self.host, self.port, no_proxy):
            proxy = urlsplit(configuration.proxy)
            if proxy.scheme not in ("http", ""):
                raise ValueError(f"proxy {configuration.proxy!r}: only an http proxy is supported")
            self.proxy = (proxy.hostname or "localhost", proxy.port or 80)
        # Host as http.client sends it: the apiserver's (the tunnel's target with a proxy).
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if self.https else 80
        self.host_value = host + ("" if self.port == default_port else f":{self.port}")
        self._local = threading.local()
        self._connections: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    @classmethod
    def for_client(cls, api: Any) -> Transport:
        """The transport for ``api``, a generated ``ApiClient``: its configuration and default
        headers (the User-Agent)."""
        return cls(api.configuration, api.default_headers)

    def headers(self, content_type: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        headers.update(self.default_headers)
        # Per request: get_api_key_with_prefix calls the refresh hook (an expiring token).
        auth = self.configuration.auth_settings().get("BearerToken")
        if auth and auth.get("in") == "header" and auth.get("value"):
            headers[auth["key"]] = auth["value"]
        return headers

    def _new_connection(self, connect_timeout: float) -> http.client.HTTPConnection:
        host, port = self.proxy or (self.host, self.port)
        conn: _Connection
        if self.https:
            assert self.context is not None
            conn = _TLSConnection(
                host,
                port,
                timeout=connect_timeout,
                context=self.context,
                server_name=self.server_name,
            )
        else:
            conn = _Connection(host, port, timeout=connect_timeout)
        conn.socket_options = self.configuration.socket_options
        if self.proxy:
            conn.set_tunnel(self.host, self.port, headers=self.configuration.proxy_headers)
        return conn

    def _connection(self, connect_timeout: float) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._new_connection(connect_timeout)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _target(self, path: str, query: list[tuple[str, str]]) -> str:
        return self.prefix + path + ("?" + urlencode(query) if query else "")

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        query: list[tuple[str, str]],
        content_type: str,
        timeout: tuple[float, float],
    ) -> tuple[int, bytes]:
        """Send one request; the status and the whole body. Raises ``OSError`` or
        ``http.client.HTTPException`` when the exchange fails."""
        target = self._target(path, query)
        headers = self.headers(content_type)
        for attempt in (0, 1):
            conn = self._connection(timeout[0])
            if conn.sock is not None and _dropped(conn.sock):
                conn.close()
            reused = conn.sock is not None
            try:
                if not reused:
                    conn.timeout = timeout[0]
                    conn.connect()
                sock = conn.sock
                assert sock is not None
                if sock.gettimeout() != timeout[1]:
                    sock.settimeout(timeout[1])
                status, data, will_close = self._exchange(sock, method, target, headers, body)
                if will_close:
                    conn.close()
                return status, data
            except _CLOSED_IDLE:
                conn.close()
                if not reused or attempt:
                    raise
            except BaseException:
                conn.close()  # a half-done exchange: the connection is unusable
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _exchange(
        self,
        sock: socket.socket,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None,
    ) -> tuple[int, bytes, bool]:
        """One HTTP/1.1 request and its answer on ``sock``: the status, the body, and whether
        the server closes the connection after it.

        The request (line, headers and body) leaves in one write and httptools (llhttp)
        parses the answer: ``http.client`` (and h11 alike) cost about 4x the CPU per
        exchange, a write for the headers and another for the body, and the ``email``
        package parsing every answer's headers, most of the binding and event threads' CPU."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_value}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        sock.sendall(head + body if body else head)
        return _read_response(sock)

    def stream(
        self, path: str, query: list[tuple[str, str]], timeout: tuple[float, float]
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """GET ``path`` on a connection of its own (a watch holds it for minutes); the
        connection and the response, its body unread. The caller reads the body and closes
        the connection. Raises ``OSError`` or ``http.client.HTTPException``."""
        conn = self._new_connection(timeout[0])
        try:
            conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(timeout[1])
            conn.request("GET", self._target(path, query), None, self.headers("application/json"))
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()


__all__ = ["Transport"]
