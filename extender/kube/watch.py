"""One watch request's event stream, read line by line as the apiserver sends it.

The wire format is apimachinery's ``pkg/apis/meta/v1/watch.go`` ``WatchEvent`` (one JSON
object a line); client-go's ``tools/watch`` and ``rest/watch/decoder.go`` read the same.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import orjson
import urllib3

from .errors import ApiError


class WatchStream:
    """The events of one watch request, ``(type, object)``, read line by line as they arrive.

    Types are ``ADDED``, ``MODIFIED``, ``DELETED`` and ``BOOKMARK`` (an object with only
    ``metadata.resourceVersion``). An ``ERROR`` event raises: :class:`Gone` for 410 (the
    resourceVersion is too old), :class:`ApiError` otherwise. The iteration ends when the
    server closes the stream (its ``timeoutSeconds`` elapsed). ``close()`` may be called from
    another thread to interrupt a blocked read.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self.response = response
        self._events = self._read()
        self._closed = False

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> tuple[str, dict]:
        return next(self._events)

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _chunks(self) -> Iterator[bytes]:
        response = self.response
        if getattr(response, "chunked", False):
            # The apiserver streams a watch as chunked transfer encoding: one chunk is
            # yielded as soon as it arrives.
            yield from response.stream(65536, decode_content=True)
            return
        while True:  # no chunking: read what is there, never wait for a full buffer
            data = response.read1(65536)
            if not data:
                return
            yield data

    def _read(self) -> Iterator[tuple[str, dict]]:
        buffer = b""
        try:
            for chunk in self._chunks():
                buffer += chunk
                while True:
                    line, sep, rest = buffer.partition(b"\n")
                    if not sep:
                        break
                    buffer = rest
                    if line.strip():
                        yield self._event(line)
            if buffer.strip():
                yield self._event(buffer)
        except ApiError:
            raise
        except Exception as exc:  # socket, protocol or decoding trouble: the stream is over
            if self._closed:
                return  # close() from another thread interrupted the read
            raise ApiError(0, "ConnectionError", f"watch stream: {exc}") from exc
        finally:
            self.close()

    @staticmethod
    def _event(line: bytes) -> tuple[str, dict]:
        event = orjson.loads(line)
        kind = event.get("type", "")
        obj = event.get("object") or {}
        if kind == "ERROR":
            raise ApiError.from_status(obj)
        return kind, obj

    def close(self) -> None:
        """Abandon the stream; safe from another thread and more than once."""
        if self._closed:
            return
        self._closed = True
        response = self.response
        # A half-read watch connection must not go back to the pool: shut the socket so a
        # reader blocked in recv() wakes up, then drop it.
        connection = getattr(response, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            response.close()
        except Exception:  # closing a broken socket can fail in many ways; it is gone anyway
            pass
        try:
            response.release_conn()
        except Exception:
            pass


__all__ = ["WatchStream"]
