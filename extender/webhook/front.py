"""The HTTP/1.1 front of one worker process: an asyncio event loop that reads whole requests,
and a bounded thread pool that runs the one WSGI app.

A connection costs a few kilobytes and no thread while it is idle, sends its request head or
sends its body: slow or idle clients wait in the event loop, and only complete requests reach
the pool (``--threads``). This is the model of Go's ``net/http`` that kube-scheduler uses: a
thousand connections dribbling their headers do not delay a ``filter`` call on the next one.

Parsing and framing are ``h11``'s. What this module adds, per connection:

* deadlines: ``keepalive`` seconds to send the first byte of a request (on a new connection,
  or after a response), then ``header_timeout`` seconds from that byte to the end of the head,
  then ``body_timeout`` seconds from the head to the end of the body; a response the client
  does not read (the write buffer stays full) is dropped after ``body_timeout``;
* limits, with gunicorn's statuses and JSON answers: request line (414), header field size,
  field count and the whole head (431), a body over the app's ``MAX_CONTENT_LENGTH`` (413,
  answered from the declared length before the body is read, or as soon as a chunked body
  passes it) and the process's budget of body bytes in flight (503, ``limits.BytesInFlight``);
* a cap on open connections per process: at the cap, a new connection evicts the connection
  that has waited the longest, idle (new, or kept alive after a response) or sending its
  request head (a legitimate client sends its head in one packet, at once); when every
  connection is inside a request (body, app, answer), the new one is answered ``503`` and
  closed. Logged at most every 10 seconds.

The app's body refusals (413 for a chunked body over the limit, 503 for the budget) are
raised from ``wsgi.input`` as :class:`~extender.webhook.limits.BodyRefused`, so the app's own
handler answers them (JSON, metrics, access log) exactly as when it read the body itself.

Why a front of our own: the well-kept servers, measured on 2026-12-07 with
``bench/slow_clients.py --scenarios`` (the cases of tests/webhook/test_slow_clients.py,
test_front.py and test_hardening.py; the same app; 1 worker, 2 threads, a cap of 20
connections, a 2 s head and 1 s body deadline, as far as each server has the knob): gunicorn
27.0.1's ``gthread``; its ASGI worker (``-k asgi``) with a2wsgi 1.10.10, or with a 60-line
adapter that buffers the body in the loop (in the bench); hypercorn 0.18.0 (WSGI mode);
waitress 3.0.2::

    scenario               front  gthread  asgi+a2wsgi  asgi+buffered  hypercorn  waitress
    1000 slow + idle       pass   FAIL     pass         pass           pass       pass
    head deadline (total)  pass   FAIL     FAIL         FAIL           FAIL       FAIL
    body stall             pass   FAIL     FAIL         FAIL           pass       pass
    body dribble (total)   pass   FAIL     FAIL         FAIL           FAIL       FAIL
    slow bodies, no thread pass   FAIL     FAIL         pass           pass       pass
    cap: 30 slow heads     pass   FAIL     pass*        pass*          pass*      FAIL
    cap: 1000 idle         pass   FAIL     pass*        pass*          pass*      FAIL
    cap: all in a request  pass   FAIL     FAIL         pass*          pass*      pass
    413 declared length    pass   pass     pass         pass           pass       pass
    413 chunked            pass   pass     pass         pass           FAIL (400) pass
    bytes in flight        pass   FAIL     FAIL         FAIL           FAIL       FAIL

``*``: passes by having no cap (the ASGI worker counts ``worker_connections`` but refuses none:
1003 sockets held with a cap of 20; hypercorn has no cap), so the descriptors run out instead.
None has a *total* head or body deadline (hypercorn's ``read_timeout`` and waitress's
``channel_timeout`` are per read and inactivity: a byte every 0.3 s keeps a connection
forever), none evicts at a cap, and none bounds the body bytes a process holds (four 24 MiB
bodies at once: +96 to +240 MiB RSS, the front +49 MiB and three 503s). waitress at its cap
stops accepting (idle and slow clients lock new ones out); a2wsgi reads the body from a pool
thread, so slow bodies hold threads. Figures and req/s in docs/benchmarks.md.

One concept, the connection's life from accept to close (deadlines, caps, the body budget), in
one module so that each limit's path can be read end to end.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import io
import logging
import ssl
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote_to_bytes

import h11
import orjson

from .limits import BodyRefused, BytesInFlight, _busy, _too_large

log = logging.getLogger("extender.webhook")

REASONS = {
    400: "Bad Request",
    413: "Content Too Large",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}
LINGER = 2.0  # seconds a closing connection's unread input is discarded (no RST on the reply)
FLUSH = 1024 * 1024  # response bytes handed from a pool thread to the loop at a time
WRITE_HIGH_WATER = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The serving limits of one worker process (``kube-extender serve`` flags)."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keepalive: float = 15.0
    max_connections: int = 2048
    request_line: int = 4094
    field_size: int = 8190
    fields: int = 100
    head_bytes: int = 32 * 1024
    max_body: int = 32 * 1024 * 1024
    budget: BytesInFlight | None = None


class RefusedInput(io.RawIOBase):
    """``wsgi.input`` of a request whose body is refused: reading raises the refusal."""

    def __init__(self, refusal: BodyRefused) -> None:
        super().__init__()
        self.refusal = refusal

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        raise self.refusal

    def readinto(self, buffer: Any) -> int:
        raise self.refusal


class _Throttled:
    """A warning logged at most every ``every`` seconds, with the count since the last."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.last = -every
        self.count = 0

    def warn(self, message: str, *args: Any) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self.last >= self.every:
            log.warning(message + " (%d such since the last line)", *args, self.count)
            self.last, self.count = now, 0


class Front:
    """The connections and the pool of one worker process. ``threads=0``: no pool, the app
    runs in the event loop (an app that never blocks, as the health port's)."""

    def __init__(
        self,
        app: Callable,
        limits: Limits,
        *,
        threads: int,
        access: Callable[[Any, Any, dict, datetime.timedelta], None] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.access = access
        self.ssl_context = ssl_context
        self.loop = loop or asyncio.get_event_loop()
        # No pool: the app runs in the loop itself (one that never blocks, the health port's).
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="verb") if threads else None
        self.conns: set[Connection] = set()
        # Idle or sending a head, by the time they started to: the eviction order at the cap.
        self.waiting: OrderedDict[Connection, float] = OrderedDict()
        self.servers: list[asyncio.base_events.Server] = []
        self.evicted = {"head": _Throttled(), "idle": _Throttled()}
        self.refused = _Throttled()
        self.closing = False

    async def listen(self, sockets: Iterable[Any]) -> None:
        for sock in sockets:
            server = await self.loop.create_server(
                lambda: Connection(self),
                sock=sock,
                ssl=self.ssl_context,
                ssl_handshake_timeout=self.limits.header_timeout if self.ssl_context else None,
                backlog=2048,
            )
            self.servers.append(server)

    def admit(self, conn: Connection) -> bool:
        """Register ``conn``; at the cap, evict a waiting connection or refuse ``conn``."""
        if len(self.conns) >= self.limits.max_connections:
            if not self.waiting:
                self.refused.warn(
                    "connection limit (%d) reached with every connection in a request: "
                    "new connections are answered 503",
                    self.limits.max_connections,
                )
                return False
            victim, since = next(iter(self.waiting.items()))
            self.evicted["head" if victim.state == "head" else "idle"].warn(
                "connection limit (%d) reached: closing the connection from %s, %s for %.1fs",
                self.limits.max_connections,
                victim.peer,
                "sending its request head" if victim.state == "head" else "idle",
                time.monotonic() - since,
            )
            victim.close()
        self.conns.add(conn)
        return True

    def forget(self, conn: Connection) -> None:
        self.conns.discard(conn)
        self.waiting.pop(conn, None)

    async def shutdown(self, graceful_timeout: float) -> None:
        """Stop accepting, close waiting connections, let requests in progress finish."""
        self.closing = True
        for server in self.servers:
            server.close()
        deadline = self.loop.time() + graceful_timeout
        while True:
            for conn in list(self.waiting):
                conn.close()
            if not self.conns or self.loop.time() >= deadline:
                break
            await asyncio.sleep(0.1)
        for conn in list(self.conns):
            conn.abort()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    # -- in a pool thread (or the loop, without a pool) ----------------------------------------

    def call_app(self, conn: Connection, environ: dict, held: int) -> None:
        """Run the app on a complete request and hand its response to the loop.

        Never waits on the client: a client that reads its response slowly is the loop's
        concern (``Connection.pause_writing``), not a pool thread's."""
        status = "500 Internal Server Error"
        headers: list[tuple[str, str]] = []
        chunks: list[bytes] = []
        size = 0
        started = False

        def start_response(st: str, hd: list, exc_info: Any = None) -> Callable[[bytes], None]:
            nonlocal status, headers
            if exc_info and started:
                raise exc_info[1].with_traceback(exc_info[2])
            status, headers = st, list(hd)
            return chunks.append

        def flush(last: bool) -> None:
            nonlocal started, size
            data = chunks[:]
            chunks.clear()
            size = 0
            first, started = not started, True
            self.loop.call_soon_threadsafe(conn.send, status, headers, data, first, last)

        try:
            try:
                result = self.app(environ, start_response)
                try:
                    for chunk in result:
                        if chunk:
                            chunks.append(chunk)
                            size += len(chunk)
                            if size >= FLUSH:
                                flush(last=False)
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
            finally:
                if held and self.limits.budget is not None:
                    self.limits.budget.release(held)
        except Exception as exc:  # the app answers its own errors: this is a bug in it
            log.exception("unhandled error serving %s", environ.get("PATH_INFO"))
            if started:
                self.loop.call_soon_threadsafe(conn.abort)
                return
            message = f"internal error: {type(exc).__name__}"
            status, headers = _error(500, message)
            chunks[:] = [_error_body(500, message)]
        flush(last=True)


def _error_body(status: int, message: str) -> bytes:
    return orjson.dumps({"error": message or REASONS.get(status, "error")})


def _error(status: int, message: str) -> tuple[str, list[tuple[str, str]]]:
    body = _error_body(status, message)
    return f"{status} {REASONS.get(status, 'Error')}", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ]


_date_cache: tuple[int, bytes] = (0, b"")


def _date() -> bytes:
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, email.utils.formatdate(now, usegmt=True).encode())
    return _date_cache[1]


class Connection(asyncio.Protocol):
    """One client connection: h11's state machine, our deadlines and limits."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.limits = front.limits
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.head_bytes)
        self.transport: asyncio.Transport | None = None
        self.peer = "-"
        self.environ_base: dict[str, Any] = {}
        self.timer: asyncio.TimerHandle | None = None
        # idle, head, body (reading a request), app (in the pool, then being written),
        # drain-write (answered, waiting for a slow reader), drain (closing), closed
        self.state = "idle"
        self.line_bytes = 0  # of the request line so far, while the head is incomplete
        self.line_done = False
        self.head: bytearray | None = None  # a head being received, before h11 sees it
        self.request: h11.Request | None = None
        self.declared: int | None = None  # the Content-Length of the request
        self.body: list[bytes] = []
        self.body_size = 0
        self.held = 0  # body bytes held of the budget, released by the pool thread
        self.started = 0.0
        self.response_status = 0
        self.response_sent = 0
        self.refusal: BodyRefused | None = None
        self.unread_body = False
        self.write_paused = False  # the transport's buffer is over its high-water mark
        self.paused_timer: asyncio.TimerHandle | None = None

    # -- asyncio callbacks -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer or "-")
        if not self.front.admit(self):
            self._answer_error(503, "too many connections to this worker: retry", linger=False)
            return
        if self.front.closing:
            self.close()
            return
        self.environ_base = self._environ_base(transport)
        self._to_idle()

    def data_received(self, data: bytes) -> None:
        try:
            self._received(data)
        except Exception:  # a bug here must cost one connection, not hang it
            log.exception("closing the connection from %s after an internal error", self.peer)
            self.abort()

    def _received(self, data: bytes) -> None:
        if self.state == "drain":
            return
        if self.state == "idle":
            self._to_head()
            self.head = bytearray()  # h11 holds nothing of this request yet
        if self.state == "head" and not self.line_done:
            end = data.find(b"\n")
            self.line_bytes += len(data) if end < 0 else end
            self.line_done = end >= 0
            if self.line_bytes > self.limits.request_line + 1:
                self._answer_error(414, f"the request line is longer than {self._line_limit()}")
                return
        if self.head is not None:
            # A head is handed to h11 once it is complete: a dribbled byte costs a search of
            # the last few bytes, not a parse.
            start = max(len(self.head) - 2, 0)
            self.head += data
            found = (self.head.find(b"\n\r\n", start), self.head.find(b"\n\n", start))
            end = min((i for i in found if i >= 0), default=len(self.head))
            if end > self.limits.head_bytes:
                self._answer_error(
                    431, f"the request head is larger than {self.limits.head_bytes} bytes"
                )
                return
            if end == len(self.head):
                return
            data, self.head = bytes(self.head), None
        try:
            self.h11.receive_data(data)
        except RuntimeError:  # data after the client closed, or in an error state
            return
        self._advance()

    def eof_received(self) -> bool:
        try:
            self.h11.receive_data(b"")
        except RuntimeError:
            pass
        if self.state in ("app", "drain-write"):
            return True  # half-closed after its request: the answer can still be written
        self._advance()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = "closed"
        self._cancel_timer()
        if self.paused_timer is not None:
            self.paused_timer.cancel()
        self.front.forget(self)
        self._release_unsent_budget()

    def pause_writing(self) -> None:
        self.write_paused = True
        if self.paused_timer is not None:
            self.paused_timer.cancel()
        self.paused_timer = self.front.loop.call_later(
            self.limits.body_timeout, self._write_timed_out
        )

    def resume_writing(self) -> None:
        if self.paused_timer is not None:
            self.paused_timer.cancel()
            self.paused_timer = None
        self.write_paused = False
        if self.state == "drain-write":
            self.state = "app"
            self._after_response()

    # -- states ----------------------------------------------------------------------------

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        self._cancel_timer()
        self.timer = self.front.loop.call_later(seconds, callback)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _wait(self) -> None:
        """(Re-)enter the eviction order, as its newest member."""
        self.front.waiting.pop(self, None)
        self.front.waiting[self] = time.monotonic()

    def _to_idle(self) -> None:
        self.state = "idle"
        self._wait()
        self._arm(self.limits.keepalive, self.close)

    def _to_head(self) -> None:
        self.state = "head"
        self.line_bytes, self.line_done = 0, False
        self._wait()
        self._arm(self.limits.header_timeout, lambda: self._timed_out("headers"))

    def _timed_out(self, what: str) -> None:
        timeout = self.limits.header_timeout if what == "headers" else self.limits.body_timeout
        log.warning(
            "closing the connection from %s: request %s not received within %ss",
            self.peer,
            what,
            timeout,
        )
        self.abort()

    def _write_timed_out(self) -> None:
        log.warning(
            "closing the connection from %s: the response was not read within %ss",
            self.peer,
            self.limits.body_timeout,
        )
        self.abort()

    def close(self) -> None:
        if self.transport is not None and self.state != "closed":
            self.state = "closed"
            self._cancel_timer()
            self.front.forget(self)
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and self.state != "closed":
            self.state = "closed"
            self._cancel_timer()
            self.front.forget(self)
            self.transport.abort()

    def _linger(self) -> None:
        """Close after the answer, discarding what the client still sends for a moment, so
        that the kernel does not reset the connection before the client reads the answer."""
        assert self.transport is not None
        self.state = "drain"
        self.front.forget(self)
        self.front.conns.add(self)  # still an open socket until it closes
        if self.transport.can_write_eof():
            try:
                self.transport.write_eof()
            except (OSError, RuntimeError):
                pass
        self.transport.resume_reading()
        self._arm(LINGER, self.close)

    # -- reading a request -----------------------------------------------------------------

    def _advance(self) -> None:
        """Consume h11's events until it needs more data or the request goes to the app."""
        while self.state in ("idle", "head", "body"):
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                if status == 431 or "buffer" in str(exc).lower():
                    message = f"the request head is larger than {self.limits.head_bytes} bytes"
                    status = 431
                else:
                    message = str(exc) or REASONS.get(status, "bad request")
                self._answer_error(status, message)
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                self._on_request(event)
            elif isinstance(event, h11.Data):
                self._on_data(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                self._dispatch()
            elif isinstance(event, h11.ConnectionClosed):
                self.close()
                return

    def _line_limit(self) -> str:
        return f"{self.limits.request_line} bytes"

    def _on_request(self, request: h11.Request) -> None:
        if self.state == "idle":
            self._to_head()
        limits = self.limits
        line = len(request.method) + len(request.target) + len(b" HTTP/1.1") + 1
        if line > limits.request_line:
            self._answer_error(414, f"the request line is longer than {self._line_limit()}")
            return
        if len(request.headers) > limits.fields:
            self._answer_error(431, f"more than {limits.fields} header fields")
            return
        for name, value in request.headers:
            if len(name) + len(value) + 2 > limits.field_size:
                self._answer_error(
                    431,
                    f"the header field {name.decode('latin1')} is longer than "
                    f"{limits.field_size} bytes",
                )
                return
        self.request = request
        self.started = time.monotonic()
        self.state = "body"
        self.front.waiting.pop(self, None)
        self.body, self.body_size, self.held = [], 0, 0
        self.refusal, self.unread_body = None, False
        self._arm(limits.body_timeout, lambda: self._timed_out("body"))
        length = self.declared = _content_length(request)
        chunked = any(
            name == b"transfer-encoding" and b"chunked" in value.lower()
            for name, value in request.headers
        )
        if not length and not chunked:
            return  # no body: h11's next event is the end of the message
        if length and length > limits.max_body:
            # The app answers 413 from the declared length; the body is never read.
            self._dispatch(unread=True)
            return
        if length and limits.budget is not None:
            if not limits.budget.try_acquire(length):
                self.refusal = _busy(limits.budget, length)
                self._dispatch(unread=True)
                return
            self.held = length
        if self.h11.they_are_waiting_for_100_continue:
            self._write(
                self.h11.send(
                    h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")
                )
            )

    def _on_data(self, data: bytes) -> None:
        if not data:
            return
        self.body_size += len(data)
        if self.declared is None:  # chunked: checked as it arrives
            if self.body_size > self.limits.max_body:
                self.refusal = _too_large(self.limits.max_body)
                self._dispatch(unread=True)
                return
            budget = self.limits.budget
            if budget is not None:
                if not budget.try_acquire(len(data)):
                    self.refusal = _busy(budget, len(data))
                    self._dispatch(unread=True)
                    return
                self.held += len(data)
        self.body.append(data)

    def _release_unsent_budget(self) -> None:
        """The budget held for a body that never reached the app."""
        if self.held and self.limits.budget is not None:
            self.limits.budget.release(self.held)
        self.held = 0

    # -- the app ---------------------------------------------------------------------------

    def _dispatch(self, unread: bool = False) -> None:
        assert self.request is not None and self.transport is not None
        self._cancel_timer()
        self.unread_body = unread
        self.state = "app"
        self.transport.pause_reading()
        environ = self._environ(self.request)
        if self.refusal is not None:
            environ["wsgi.input"] = RefusedInput(self.refusal)
        held, self.held = self.held, 0
        self.response_status = 0
        self.response_sent = 0
        if self.front.pool is None:
            self.front.call_app(self, environ, held)
            return
        # A concurrent future, not the loop's: its completion wakes no loop (the response
        # already did, from call_app), one wake-up per request instead of two.
        future = self.front.pool.submit(self.front.call_app, self, environ, held)
        future.add_done_callback(_log_failure)

    def send(
        self,
        status: str,
        headers: list[tuple[str, str]],
        chunks: list[bytes],
        first: bool,
        last: bool,
    ) -> None:
        """In the loop: write (part of) the app's response."""
        if self.state != "app" or self.transport is None or self.request is None:
            return  # the client went away
        try:
            if first:
                code, _, reason = status.partition(" ")
                self.response_status = int(code)
                wire = [(n.encode("latin1"), v.encode("latin1")) for n, v in headers]
                wire.append((b"Date", _date()))
                if self.unread_body or self.front.closing:
                    wire.append((b"Connection", b"close"))
                response = h11.Response(
                    status_code=self.response_status, headers=wire, reason=reason.encode("latin1")
                )
                self._write(self.h11.send(response))
            if self.request.method != b"HEAD":
                for chunk in chunks:
                    out = self.h11.send_with_data_passthrough(h11.Data(data=chunk))
                    self.response_sent += len(chunk)
                    if out:
                        self.transport.writelines(out)
            if last:
                self._write(self.h11.send(h11.EndOfMessage()))
        except (h11.LocalProtocolError, ValueError, UnicodeEncodeError) as exc:
            log.error("cannot send the response to %s: %s", self.peer, exc)
            self.abort()
            return
        if last:
            self._log_access()
            if self.write_paused:
                # The client reads slowly: its next request waits until this answer is out
                # (pause_writing's deadline drops it if it never is).
                self.state = "drain-write"
                return
            self._after_response()

    def _write(self, data: bytes | None) -> None:
        if data and self.transport is not None:
            self.transport.write(data)

    def _after_response(self) -> None:
        if self.state == "closed":
            return
        if self.unread_body:
            self._linger()  # the client may still be sending the body we did not read
            return
        if self.h11.our_state is h11.MUST_CLOSE or self.front.closing:
            self.close()  # the request was read whole: nothing unread to reset the connection
            return
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
            self.request = None
            self.body = []
            assert self.transport is not None
            self.transport.resume_reading()
            if self.h11.trailing_data[0]:
                self._to_head()  # a pipelined request is already here, in h11's buffer
                self.line_done = True  # its line is checked once parsed
            else:
                self._to_idle()
            self._advance()
            return
        self.close()

    def _log_access(self) -> None:
        access = self.front.access
        if access is None or self.request is None:
            return
        request = self.request
        target = request.target.decode("latin1")
        req = SimpleNamespace(
            method=request.method.decode("latin1"),
            path=target.split("?", 1)[0],
            query=target.partition("?")[2],
            uri=target,
            version=(1, 1),
            headers=[(n.decode("latin1").upper(), v.decode("latin1")) for n, v in request.headers],
        )
        resp = SimpleNamespace(
            status=f"{self.response_status} {REASONS.get(self.response_status, '')}".strip(),
            status_code=self.response_status,
            sent=self.response_sent,
            response_length=self.response_sent,
            headers=[],
        )
        environ = {
            "CONTENT_LENGTH": str(self.body_size),
            "REMOTE_ADDR": self.environ_base.get("REMOTE_ADDR", "-"),
        }
        elapsed = datetime.timedelta(seconds=time.monotonic() - self.started)
        try:
            access(resp, req, environ, elapsed)
        except Exception:
            log.exception("the access log failed")

    def _answer_error(self, status: int, message: str, linger: bool = True) -> None:
        """Answer a request the app never sees (malformed, over a limit) and close."""
        if self.transport is None or self.state in ("closed", "drain"):
            return
        self._cancel_timer()
        body = _error_body(status, message)
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin1")
        self.transport.write(head + body)
        self._release_unsent_budget()
        if linger:
            self._linger()
        else:
            self.state = "closed"
            self.transport.close()

    # -- the WSGI environ ------------------------------------------------------------------

    def _environ_base(self, transport: asyncio.Transport) -> dict[str, Any]:
        sockname = transport.get_extra_info("sockname")
        peername = transport.get_extra_info("peername")
        ssl_object = transport.get_extra_info("ssl_object")
        server = sockname if isinstance(sockname, tuple) else ("", 0)
        client = peername if isinstance(peername, tuple) else ("", 0)
        return {
            "SCRIPT_NAME": "",
            "SERVER_NAME": str(server[0]),
            "SERVER_PORT": str(server[1]),
            "REMOTE_ADDR": str(client[0]),
            "REMOTE_PORT": str(client[1]),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "https" if ssl_object is not None else "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "wsgi.input_terminated": True,
            # The app reads the verified client certificate from here (``getpeercert``).
            "gunicorn.socket": ssl_object
            if ssl_object is not None
            else transport.get_extra_info("socket"),
        }

    def _environ(self, request: h11.Request) -> dict[str, Any]:
        environ = dict(self.environ_base)
        target = request.target
        if not target.startswith(b"/") and b"://" in target:  # absolute form
            target = b"/" + target.split(b"://", 1)[1].partition(b"/")[2]
        path, _, query = target.partition(b"?")
        body = b"".join(self.body) if not self.unread_body else b""
        self.body = []
        environ.update(
            REQUEST_METHOD=request.method.decode("ascii"),
            PATH_INFO=unquote_to_bytes(path).decode("latin1"),
            QUERY_STRING=query.decode("latin1"),
            RAW_URI=request.target.decode("latin1"),
            SERVER_PROTOCOL="HTTP/" + request.http_version.decode("ascii"),
        )
        environ["wsgi.input"] = io.BytesIO(body)
        for raw_name, raw_value in request.headers:
            name = raw_name.decode("latin1").upper().replace("-", "_")
            value = raw_value.decode("latin1")
            if name == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = value
                continue
            if name == "CONTENT_LENGTH":
                environ["CONTENT_LENGTH"] = value
                continue
            key = "HTTP_" + name
            if key in environ:
                sep = "; " if name == "COOKIE" else ","
                environ[key] = environ[key] + sep + value
            else:
                environ[key] = value
        if "CONTENT_LENGTH" not in environ and not self.unread_body:
            # A chunked body, read whole: the app sees its length.
            environ["CONTENT_LENGTH"] = str(len(body))
        return environ


def _log_failure(future: Future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("serving a request failed", exc_info=future.exception())


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return None
