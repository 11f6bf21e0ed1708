"""Plain request/response calls to the apiserver over keep-alive ``http.client`` connections.

The scheduler makes two API calls per pod it places (the binding and the Scheduled event), on
threads that share the GIL with the scheduling thread. Through the generated client, urllib3's
pool manager and connection pool, each call cost several times the CPU of the HTTP exchange
itself (serializing the body object by object, URL parsing, pool keys, retry objects, response
wrappers); this transport sends the orjson bytes over one persistent connection per thread
and reads the whole answer, with the same TLS material and credentials.

It covers what a kubeconfig usually holds: http or https, CA file or data, client
certificate, bearer token (refreshed through the client's own auth hook, as the generated
client does per request), ``verify_ssl``, ``assert_hostname=False``. Anything else (a proxy,
a TLS server name, a custom hostname to assert, socket options) makes :meth:`for_client`
return ``None``, and callers keep the generated client's path. Watches always do: they
stream.

A keep-alive connection the server closed while idle (an apiserver restart, its idle timeout)
is noticed before it is reused, as urllib3's pool does: an idle connection that is readable
has been closed (or holds garbage) and is replaced. If the close races with the request, the
request fails before any answer arrives and is sent again once on a new connection, as Go's
``net/http`` transport does for a request the server could not have read
(``src/net/http/transport.go``, ``errServerClosedIdle``).
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from typing import Any
from urllib.parse import urlencode, urlsplit

AUTH_SETTINGS = ["BearerToken"]
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


class Transport:
    """One keep-alive connection per calling thread to the client's apiserver."""

    def __init__(self, api: Any) -> None:
        configuration = api.configuration
        url = urlsplit(configuration.host)
        self.api = api
        self.https = url.scheme == "https"
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if self.https else 80)
        self.prefix = url.path.rstrip("/")
        self.context = _ssl_context(configuration) if self.https else None
        self._local = threading.local()
        self._connections: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    @classmethod
    def for_client(cls, api: Any) -> Transport | None:
        """A transport for ``api`` (a generated ``ApiClient``), or ``None`` if its
        configuration needs something only the generated client's path does."""
        configuration = getattr(api, "configuration", None)
        if configuration is None or not hasattr(api, "update_params_for_auth"):
            return None
        if not hasattr(api, "param_serialize"):  # python-legacy client: other auth signature
            return None
        if urlsplit(configuration.host).scheme not in ("http", "https"):
            return None
        if (
            configuration.proxy
            or configuration.tls_server_name
            or configuration.assert_hostname not in (None, True, False)
            or configuration.socket_options is not None
        ):
            return None
        return cls(api)

    def headers(self, method: str, path: str, content_type: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        headers.update(self.api.default_headers)  # User-Agent
        # Per request: the configuration's refresh hook may renew an expiring token.
        self.api.update_params_for_auth(headers, [], AUTH_SETTINGS, path, method, None)
        return headers

    def _connection(self, connect_timeout: float) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=connect_timeout, context=self.context
                )
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=connect_timeout)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

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
        target = self.prefix + path + ("?" + urlencode(query) if query else "")
        headers = self.headers(method, path, content_type)
        for attempt in (0, 1):
            conn = self._connection(timeout[0])
            if conn.sock is not None and _dropped(conn.sock):
                conn.close()
            reused = conn.sock is not None
            try:
                if not reused:
                    conn.timeout = timeout[0]
                    conn.connect()
                if conn.sock is not None and conn.sock.gettimeout() != timeout[1]:
                    conn.sock.settimeout(timeout[1])
                conn.request(method, target, body, headers)
                response = conn.getresponse()
                data = response.read()
                if response.will_close:
                    conn.close()
                return response.status, data
            except _CLOSED_IDLE:
                conn.close()
                if not reused or attempt:
                    raise
            except BaseException:
                conn.close()  # a half-done exchange: the connection is unusable
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()


__all__ = ["Transport"]
