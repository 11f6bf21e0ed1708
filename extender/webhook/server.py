"""gunicorn, hardened for kube-extender: the worker class, the health listener.

* :class:`ExtenderWorker`: a gunicorn worker whose connections live in an asyncio event loop
  (:mod:`extender.webhook.front`, HTTP/1.1 by ``h11``) and whose complete requests run in a
  pool of ``--threads`` threads, all on the one WSGI app the worker built. Slow or idle
  clients hold no thread: with a thousand connections dribbling their headers, the verbs and
  ``/healthz`` on the same port answer in their usual time. Header and body deadlines, the
  request limits and a cap on connections are the front's; its error answers (400, 413, 414,
  431, 501, 503) are JSON, ``{"error": ...}``, like the app's. gunicorn's arbiter stays: worker
  processes, heartbeats (``--timeout``), signals, graceful shutdown, logging.
* :class:`HealthListener`: ``/healthz`` and ``/readyz`` on a port of their own
  (``--health-bind``), served by a dedicated thread in every worker. The socket is bound by
  the arbiter before it forks, so the workers share it like gunicorn's own listener. All the
  verb threads being busy (long requests) does not delay a probe.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus

import orjson
from gunicorn import sock as gsock
from gunicorn.workers import base

from extender import health

from .front import Front, Limits

log = logging.getLogger("extender.webhook")


class ExtenderWorker(base.Worker):
    """An event loop for the connections, a thread pool for the app. Set the class attributes
    in the arbiter before it forks; the other limits come from gunicorn's settings
    (``keepalive``, ``worker_connections``, ``threads``, ``limit_request_*``) and from the app
    (``MAX_CONTENT_LENGTH``, and the body budget ``build_app`` puts in its extensions)."""

    header_timeout = 10.0
    body_timeout = 30.0

    def init_process(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.quick = False
        super().init_process()

    def init_signals(self) -> None:
        for sig in self.SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        add = self.loop.add_signal_handler
        add(signal.SIGTERM, self._stop, False)
        add(signal.SIGQUIT, self._stop, True)
        add(signal.SIGINT, self._stop, True)
        add(signal.SIGUSR1, self.log.reopen_files)
        add(signal.SIGWINCH, lambda: None)
        add(signal.SIGABRT, self._abort)

    def _stop(self, quick: bool) -> None:
        if quick and self.alive:
            self.cfg.worker_int(self)
        self.quick = self.quick or quick
        self.alive = False

    def _abort(self) -> None:
        self.alive = False
        self.cfg.worker_abort(self)
        sys.exit(1)

    def limits(self) -> Limits:
        cfg = self.cfg
        shared = getattr(self.wsgi, "extensions", {}).get("kube-extender", {})
        max_body = getattr(self.wsgi, "config", {}).get("MAX_CONTENT_LENGTH")
        return Limits(
            header_timeout=self.header_timeout,
            body_timeout=self.body_timeout,
            keepalive=float(cfg.keepalive),
            max_connections=cfg.worker_connections,
            request_line=cfg.limit_request_line or 1 << 20,
            field_size=cfg.limit_request_field_size or 1 << 20,
            fields=cfg.limit_request_fields,
            max_body=max_body or Limits.max_body,
            budget=shared.get("body_budget"),
        )

    def run(self) -> None:
        context = gsock.ssl_context(self.cfg) if self.cfg.is_ssl else None
        self.front = Front(
            self.wsgi,
            self.limits(),
            threads=self.cfg.threads,
            access=self.log.access,
            ssl_context=context,
            loop=self.loop,
        )
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            self.loop.close()

    async def _serve(self) -> None:
        await self.front.listen(listener.sock for listener in self.sockets)
        while self.alive:
            self.notify()
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                break
            await asyncio.sleep(1.0)
        await self.front.shutdown(0.0 if self.quick else float(self.cfg.graceful_timeout))


class HealthListener:
    """``GET /healthz`` and ``/readyz`` on a socket bound before the fork.

    One accept thread per worker, one short-lived thread per connection (at most
    ``MAX_CONNECTIONS`` at a time, the others are closed at once), each with a total deadline
    of ``DEADLINE`` seconds to send its request line and headers.
    """

    MAX_CONNECTIONS = 16
    DEADLINE = 2.0
    MAX_HEAD = 8192

    def __init__(self, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # "::" is every address, IPv4 too, as gunicorn's listener on "[::]" (the default
        # health address of --bind [::]:PORT): a kubelet may probe the pod's IPv4 address.
        dualstack = host == "::" and socket.has_dualstack_ipv6()
        self.sock = socket.create_server(
            (host, port), family=family, backlog=128, dualstack_ipv6=dualstack
        )
        self.ready: Callable[[], bool] = lambda: False
        self.unknown: Callable[[str, str, str], None] | None = None
        self._slots = threading.BoundedSemaphore(self.MAX_CONNECTIONS)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def start(
        self, ready: Callable[[], bool], unknown: Callable[[str, str, str], None] | None = None
    ) -> None:
        """In the worker, once its app is built. ``unknown(method, path, where)`` records a
        request to another path (a scheduler pointed at this port instead of the verbs')."""
        self.ready = ready
        self.unknown = unknown
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
            # The probes' answers as the app's (extender.health); errors in JSON, as the app's.
            headers = "".join(f"{name}: {value}\r\n" for name, value in health.HEADERS)
            if path not in (b"/healthz", b"/readyz"):
                message = "not found: the health port serves /healthz, /readyz (verbs: --bind)"
                code, data = 404, orjson.dumps({"error": message})
                headers = "Content-Type: application/json\r\n"
                if self.unknown is not None:
                    self.unknown(method.decode("latin1"), path.decode("latin1"), "health port")
            elif method not in (b"GET", b"HEAD"):
                code, data = 405, orjson.dumps({"error": "method not allowed"})
                headers = "Content-Type: application/json\r\n"
            elif path == b"/healthz":
                code, data = health.healthz()
            else:
                code, data = health.readyz(self.ready())
            reply = (
                f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\n"
                f"{headers}Content-Length: {len(data)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode() + (b"" if method == b"HEAD" else data)
            conn.settimeout(self.DEADLINE)
            conn.sendall(reply)
        except OSError:
            pass
        finally:
            conn.close()
            self._slots.release()
