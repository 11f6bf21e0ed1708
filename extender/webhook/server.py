"""gunicorn, hardened for kube-extender: the worker class, the health port.

* :class:`ExtenderWorker`: a gunicorn worker whose connections live in an asyncio event loop
  (:mod:`extender.webhook.front`, HTTP/1.1 by ``h11``) and whose complete requests run in a
  pool of ``--threads`` threads, all on the one WSGI app the worker built. Slow or idle
  clients hold no thread: with a thousand connections dribbling their headers, the verbs and
  ``/healthz`` on the same port answer in their usual time. Header and body deadlines, the
  request limits and a cap on connections are the front's; its error answers (400, 413, 414,
  431, 501, 503) are JSON, ``{"error": ...}``, like the app's. gunicorn's arbiter stays: worker
  processes, heartbeats (``--timeout``), signals, graceful shutdown, logging.
* :func:`health_front`: ``/healthz`` and ``/readyz`` on a port of their own (``--health-bind``),
  answered in every worker's event loop by a second :class:`~extender.webhook.front.Front`
  without a pool. The socket is bound by the arbiter before it forks (:func:`bind_health`),
  so the workers share it like gunicorn's own listener. All the verb threads being busy (long
  requests) does not delay a probe.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable

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
    health_socket: socket.socket | None = None  # --health-bind, from bind_health

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
            # Off (no --access-log): not even the record is built for each request.
            access=self.log.access if getattr(self.log, "access_log_enabled", True) else None,
            ssl_context=context,
            loop=self.loop,
        )
        self.health: Front | None = None
        if self.health_socket is not None:
            shared = self.wsgi.extensions["kube-extender"]
            ready, unknown = shared["service"].ready, shared["unknown_paths"].record
            self.health = health_front(ready, unknown, self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            self.loop.close()

    async def _serve(self) -> None:
        await self.front.listen(listener.sock for listener in self.sockets)
        if self.health is not None:
            await self.health.listen([self.health_socket])
        while self.alive:
            self.notify()
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                break
            await asyncio.sleep(1.0)
        if self.health is not None:
            await self.health.shutdown(0.0)
        await self.front.shutdown(0.0 if self.quick else float(self.cfg.graceful_timeout))


HEALTH_LIMITS = Limits(
    header_timeout=2.0,  # a probe sends its request at once
    body_timeout=2.0,
    keepalive=2.0,
    max_connections=16,  # at the cap, the longest waiting is evicted (front.py)
    max_body=8192,
)
HEALTH_NOT_FOUND = "not found: the health port serves /healthz, /readyz (verbs: --bind)"


def bind_health(host: str, port: int) -> socket.socket:
    """The ``--health-bind`` socket, bound by the arbiter before it forks (the workers share
    it, as gunicorn's own listener)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # "::" is every address, IPv4 too, as gunicorn's listener on "[::]" (the default
    # health address of --bind [::]:PORT): a kubelet may probe the pod's IPv4 address.
    dualstack = host == "::" and socket.has_dualstack_ipv6()
    return socket.create_server((host, port), family=family, backlog=128, dualstack_ipv6=dualstack)


def health_front(
    ready: Callable[[], bool],
    unknown: health.Unknown | None,
    loop: asyncio.AbstractEventLoop,
) -> Front:
    """``/healthz`` and ``/readyz`` (:func:`extender.health.wsgi_app`) answered in ``loop``
    itself, with the verbs' parser, deadlines and eviction at a cap of its own
    (``HEALTH_LIMITS``): busy verb threads and slow clients of the verb port delay no probe.
    ``unknown`` records a request to another path (a scheduler pointed at this port)."""
    app = health.wsgi_app(ready, not_found=HEALTH_NOT_FOUND, unknown=unknown, where="health port")
    return Front(app, HEALTH_LIMITS, threads=0, loop=loop)
