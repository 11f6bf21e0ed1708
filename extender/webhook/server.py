"""gunicorn, hardened for kube-extender: the worker class, the logger class, the health listener.

* :class:`ExtenderWorker` is gunicorn's gthread worker with deadlines: a connection that has
  not sent its request headers ``header_timeout`` seconds after its first byte, or its body
  ``body_timeout`` seconds after its headers, is shut down (a watchdog on the worker's main
  loop, which wakes at least once a second). A connection that sends nothing holds a thread
  for at most ``FIRST_BYTE_WAIT`` seconds, then waits in the poller without one. gunicorn's
  own error answers (400, 414, 431, ...) are JSON, ``{"error": ...}``, like the app's.
* :class:`JSONLogger` formats gunicorn's lines (arbiter, workers, access log) with the
  project's formatter (``extender.logs``), so ``--log-format json`` gives one object a line.
* :class:`HealthListener`: ``/healthz`` and ``/readyz`` on a port of their own
  (``--health-bind``), served by a dedicated thread in every worker. The socket is bound by
  the arbiter before it forks, so the workers share it like gunicorn's own listener. The
  verb threads being all busy (slow clients, large bodies) does not delay a probe.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
from gunicorn import glogging, util
from gunicorn.workers import gthread

from extender import logs
from extender.cliutil import parse_bind

log = logging.getLogger("extender.webhook")

FIRST_BYTE_WAIT = 0.5
_DEFER = getattr(gthread, "_DEFER", None)
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
}


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's ``util.write_error``, answering JSON instead of an HTML page."""
    body = orjson.dumps({"error": mesg or reason})
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin1") + body)


class ExtenderWorker(gthread.ThreadWorker):
    """gthread with header/body deadlines and JSON error answers. Set the class attributes
    in the arbiter before it forks."""

    header_timeout = 10.0
    body_timeout = 30.0

    def init_process(self) -> None:
        # gunicorn answers malformed requests through util.write_error (worker process only).
        util.write_error = write_json_error
        self._deadlines: dict[int, tuple[float, Any, str]] = {}
        self._deadline_lock = threading.Lock()
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app = self.wsgi

        def with_body_deadline(environ: dict, start_response: Callable) -> Any:
            # Headers are in: the body now has body_timeout; the app ends it once read.
            key = threading.get_ident()
            self._extend(key, self.body_timeout, "body")
            environ["kube_extender.body_read"] = lambda: self._clear(key)
            try:
                return app(environ, start_response)
            finally:
                self._clear(key)

        self.wsgi = with_body_deadline

    def _extend(self, key: int, seconds: float, what: str) -> None:
        with self._deadline_lock:
            entry = self._deadlines.get(key)
            if entry is not None:
                self._deadlines[key] = (time.monotonic() + seconds, entry[1], what)

    def _clear(self, key: int) -> None:
        with self._deadline_lock:
            self._deadlines.pop(key, None)

    def handle(self, conn: Any) -> Any:
        if _DEFER is not None and not conn.initialized and not getattr(conn, "data_ready", True):
            # gunicorn waits 5 s for a first byte in a pool thread; wait less, then park the
            # connection in the poller, where it holds no thread.
            if not conn.wait_for_data(FIRST_BYTE_WAIT):
                return _DEFER
        key = threading.get_ident()
        with self._deadline_lock:
            self._deadlines[key] = (time.monotonic() + self.header_timeout, conn, "headers")
        try:
            return super().handle(conn)
        finally:
            self._clear(key)

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        with self._deadline_lock:
            expired = [(k, v) for k, v in self._deadlines.items() if v[0] <= now]
            for key, _ in expired:
                del self._deadlines[key]
        for _, (_, conn, what) in expired:
            timeout = self.header_timeout if what == "headers" else self.body_timeout
            self.log.warning(
                "closing the connection from %s: request %s not received within %ss",
                _peer(conn.client),
                what,
                timeout,
            )
            try:
                # The base class's shutdown, also for an SSL socket: it wakes the thread
                # blocked in recv, which then gives the connection up.
                socket.socket.shutdown(conn.sock, socket.SHUT_RDWR)
            except OSError:
                pass


def _peer(addr: Any) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return f"{addr[0]}:{addr[1]}"
    return str(addr)


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


class HealthListener:
    """``GET /healthz`` and ``/readyz`` on a socket bound before the fork.

    One accept thread per worker, one short-lived thread per connection (at most
    ``MAX_CONNECTIONS`` at a time, the others are closed at once), each with a total deadline
    of ``DEADLINE`` seconds to send its request line and headers.
    """

    MAX_CONNECTIONS = 16
    DEADLINE = 2.0
    MAX_HEAD = 8192

    def __init__(self, bind: str) -> None:
        host, port = parse_bind(bind, "--health-bind")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.create_server((host, port), family=family, backlog=128)
        self.ready: Callable[[], bool] = lambda: False
        self._slots = threading.BoundedSemaphore(self.MAX_CONNECTIONS)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def start(self, ready: Callable[[], bool]) -> None:
        """In the worker, once its app is built."""
        self.ready = ready
        threading.Thread(target=self._accept, daemon=True, name="health").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            deadline = time.monotonic() + self.DEADLINE
            head = b""
            while b"\r\n\r\n" not in head and b"\n\n" not in head:
                left = deadline - time.monotonic()
                if left <= 0 or len(head) > self.MAX_HEAD:
                    return
                conn.settimeout(left)
                part = conn.recv(1024)
                if not part:
                    return
                head += part
            method, _, rest = head.partition(b" ")
            path = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if method not in (b"GET", b"HEAD"):
                code, body = 405, {"error": "method not allowed"}
            elif path == b"/healthz":
                code, body = 200, {"status": "ok"}
            elif path == b"/readyz":
                if self.ready():
                    code, body = 200, {"status": "ready"}
                else:
                    code, body = 503, {"status": "not ready", "reason": "caches not synced"}
            else:
                code, body = 404, {"error": "not found: the health port serves /healthz, /readyz"}
            data = orjson.dumps(body)
            reply = (
                f"HTTP/1.1 {code} {'OK' if code == 200 else 'Error'}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode() + (b"" if method == b"HEAD" else data)
            conn.settimeout(self.DEADLINE)
            conn.sendall(reply)
        except OSError:
            pass
        finally:
            conn.close()
            self._slots.release()
