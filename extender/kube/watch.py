"""One watch request's event stream, read line by line as the apiserver sends it.

The wire format is apimachinery's ``pkg/apis/meta/v1/watch.go`` ``WatchEvent`` (one JSON
object a line); client-go's ``tools/watch`` and ``rest/watch/decoder.go`` read the same.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator

import orjson

from .errors import ApiError


class WatchStream:
    """The events of one watch request, ``(type, object)``, read line by line as they arrive.

    Types are ``ADDED``, ``MODIFIED``, ``DELETED`` and ``BOOKMARK`` (an object with only
    ``metadata.resourceVersion``). An ``ERROR`` event raises: :class:`Gone` for 410 (the
    resourceVersion is too old), :class:`ApiError` otherwise. The iteration ends when the
    server closes the stream (its ``timeoutSeconds`` elapsed). ``close()`` may be called from
    another thread to interrupt a blocked read.
    """

    def __init__(
        self, response: http.client.HTTPResponse, connection: http.client.HTTPConnection
    ) -> None:
        self.response = response
        self.connection = connection
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
        """The body as it arrives, never waiting for a full buffer."""
        response = self.response
        if not response.chunked:
            while data := response.read1(65536):
                yield data
            return
        # The apiserver writes each event as one chunk. http.client's read1 returns one chunk
        # per call at several calls' cost each, about half of a busy watch's CPU; decode the
        # framing (RFC 9112 section 7.1) over whatever has arrived instead.
        buffer, pos = b"", 0
        while True:
            parts: list[bytes] = []
            while (eol := buffer.find(b"\r\n", pos)) >= 0:
                size = int(buffer[pos:eol].split(b";", 1)[0], 16)
                if size == 0:  # the last chunk; trailers are not read
                    yield b"".join(parts)
                    return
                end = eol + 2 + size
                if len(buffer) < end + 2:
                    break
                parts.append(buffer[eol + 2 : end])
                pos = end + 2
            if parts:
                yield b"".join(parts)
            data = response.fp.read1(65536)
            if not data:
                raise http.client.IncompleteRead(buffer[pos:])
            buffer, pos = buffer[pos:] + data, 0

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
        # A half-read watch connection is never reused: shut the socket so a reader blocked
        # in recv() wakes up, then drop it.
        sock = self.connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self.response.close()
        except Exception:  # closing a broken socket can fail in many ways; it is gone anyway
            pass
        self.connection.close()


__all__ = ["WatchStream"]
