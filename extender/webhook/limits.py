"""Reading a request body within the limits: size, encoding, and bytes in flight per process.

A full-Node body costs several times its size once parsed (about 6-8 MiB of RSS per MiB of
body, docs/extender.md#memory), so a process admits request bodies only while the bytes it
holds stay under a budget: a request that would go over it is answered 503 at once, before
its body is read, rather than letting concurrent large bodies push the container past its
memory limit.
"""

from __future__ import annotations

import threading
from typing import Any

CHUNK = 1024 * 1024


class BodyRefused(Exception):
    """The body is not read; answer ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details


class BytesInFlight:
    """A non-blocking budget of request-body bytes held by one process at a time."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._lock = threading.Lock()

    def try_acquire(self, n: int) -> bool:
        with self._lock:
            if self.used + n > self.capacity and self.used > 0:
                return False
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self.used -= n


def _busy(budget: BytesInFlight, wanted: int) -> BodyRefused:
    return BodyRefused(
        503,
        f"too many request body bytes in flight in this process ({budget.used} of "
        f"{budget.capacity}; this request needs {wanted} more): retry",
        limit=budget.capacity,
    )


def _too_large(limit: int) -> BodyRefused:
    return BodyRefused(
        413, f"the request body is larger than the limit of {limit} bytes", limit=limit
    )


def check_headers(environ: dict, limit: int) -> None:
    """Refuse what needs no body to refuse: media type, encoding, declared size."""
    encoding = environ.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding and encoding != "identity":
        raise BodyRefused(415, f"Content-Encoding {encoding} is not supported")
    media = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise BodyRefused(
            415,
            f"Content-Type must be application/json, not {media or 'missing'!r}",
        )
    length = environ.get("CONTENT_LENGTH")
    if length and length.isdigit() and int(length) > limit:
        raise _too_large(limit)


def _body_read(environ: dict) -> None:
    """Tell the server the body is in (it ends the body's read deadline)."""
    done = environ.get("kube_extender.body_read")
    if done is not None:
        done()


def read_body(environ: dict, limit: int, budget: BytesInFlight | None) -> tuple[bytes, int]:
    """The whole body, at most ``limit`` bytes, and the bytes it holds of ``budget``.

    The caller releases the held bytes when the request is answered. A chunked body (no
    Content-Length) is read a chunk at a time, and refused with 413 as soon as it passes the
    limit, never cut and parsed.
    """
    check_headers(environ, limit)
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    held = 0
    try:
        if length:
            n = int(length)
            if budget is not None:
                if not budget.try_acquire(n):
                    raise _busy(budget, n)
                held = n
            data = stream.read(n) if n else b""
            if len(data) < n:
                raise BodyRefused(400, f"the request body ended after {len(data)} of {n} bytes")
            _body_read(environ)
            return data, held
        parts: list[bytes] = []
        size = 0
        while True:
            part = stream.read(CHUNK)
            if not part:
                break
            size += len(part)
            if size > limit:
                raise _too_large(limit)
            if budget is not None:
                if not budget.try_acquire(len(part)):
                    raise _busy(budget, len(part))
                held += len(part)
            parts.append(part)
        _body_read(environ)
        return b"".join(parts), held
    except BaseException:
        if budget is not None and held:
            budget.release(held)
        raise
