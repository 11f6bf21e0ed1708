"""A small raw-JSON Kubernetes client over the ``kubernetes`` package's ApiClient.

Requests go through ``ApiClient.call_api`` (its connection pool, TLS and auth, including token
refresh hooks) without reading the body up front, and are decoded with orjson: no model
classes (building them for 500 nodes takes seconds), and no kubernetes-client/python#547
(``create_namespaced_binding`` raising on success). Objects in and out are plain dicts with
the API's camelCase keys.

Errors: any non-2xx answer raises :class:`ApiError` carrying the HTTP code and the ``reason``
and ``message`` of the apiserver's ``Status`` body; ``410`` raises its subclass :class:`Gone`.
A connection failure is an ``ApiError`` with status 0. Event recording never raises: events
are best effort, as upstream's broadcaster treats them.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from extender.scheduler.leader_election import Conflict

log = logging.getLogger(__name__)

MAX_NOTE_BYTES = 1024
REPORTING_CONTROLLER = "kube-extender"
# Upstream's event broadcaster buffers this many events before dropping.
MAX_QUEUED_EVENTS = 1000
DEFAULT_TIMEOUT = (5.0, 60.0)  # (connect, read) seconds for ordinary requests
WATCH_READ_SLACK = 30.0  # read timeout beyond the server-side timeoutSeconds of a watch
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """The apiserver said no: ``status`` is the HTTP code, ``reason`` the Status reason
    (``NotFound``, ``Conflict``, ``AlreadyExists``, ``Expired``...), ``message`` its text."""

    def __init__(
        self, status: int, reason: str = "", message: str = "", details: dict | None = None
    ) -> None:
        super().__init__(message or reason or f"HTTP {status}")
        self.status = status
        self.reason = reason
        self.message = message or reason or f"HTTP {status}"
        self.details = details or {}

    @property
    def code(self) -> int:
        """Alias of ``status``, as ``metav1.Status.code`` names it."""
        return self.status

    @classmethod
    def from_status(cls, status: dict, http_status: int = 0) -> ApiError:
        """From a ``Status`` object (an error body, or the object of a watch ERROR event)."""
        code = int(status.get("code") or http_status or 0)
        error_cls = Gone if code == 410 else cls
        return error_cls(
            code, status.get("reason") or "", status.get("message") or "", status.get("details")
        )

    @classmethod
    def from_response(cls, status: int, payload: bytes | None) -> ApiError:
        """From the apiserver's Status JSON (or whatever text came back)."""
        try:
            body = orjson.loads(payload or b"")
        except orjson.JSONDecodeError:
            body = None
        if isinstance(body, dict):
            return cls.from_status({**body, "code": status}, status)
        text = (payload or b"").decode(errors="replace")[:500]
        error_cls = Gone if status == 410 else cls
        return error_cls(status, "", text or f"HTTP {status}")

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.reason!r}, {self.message!r})"


class Gone(ApiError):
    """HTTP 410: the resourceVersion (or continue token) is too old; re-list."""

    def __init__(
        self, status: int = 410, reason: str = "", message: str = "", details: dict | None = None
    ) -> None:
        super().__init__(status, reason or "Expired", message, details)


class LeaseConflict(ApiError, Conflict):
    """A 409 on a Lease: both an :class:`ApiError` and leader election's ``Conflict``."""


def _timeout(timeout: float | tuple[float, float] | None) -> tuple[float, float]:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, tuple):
        return timeout
    return (min(float(timeout), DEFAULT_TIMEOUT[0]), float(timeout))


def _query_params(query: dict | list | None) -> list[tuple[str, str]]:
    items = query.items() if isinstance(query, dict) else (query or ())
    params = []
    for key, value in items:
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        params.append((key, str(value)))
    return params


def raw_request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    query: dict | list | None = None,
    content_type: str = "application/json",
    timeout: float | tuple[float, float] | None = None,
) -> urllib3.BaseHTTPResponse:
    """One request through the ApiClient's pool and auth; the raw, unread (streamable) response.

    ``timeout`` is ``(connect, read)`` seconds, or one number for both (never a total: a watch
    may stream for minutes). Raises :class:`ApiError` for any status outside 2xx and for
    connection failures (status 0). The caller reads the body and calls ``release_conn()``.
    """
    params = _query_params(query)
    headers = {"Accept": "application/json", "Content-Type": content_type}
    if isinstance(body, bytes | bytearray | str):
        # The REST layer serializes JSON bodies itself (json.dumps): hand it the object.
        body = orjson.loads(body)
    try:
        if hasattr(api, "param_serialize"):  # kubernetes >= 35 (openapi-generator "python")
            method, url, headers, body, _ = api.param_serialize(
                method=method,
                resource_path=path,
                query_params=params or None,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            result = api.call_api(
                method, url, header_params=headers, body=body, _request_timeout=_timeout(timeout)
            )
            response = result.response
        else:  # older clients ("python-legacy"): raise ApiException on non-2xx themselves
            response = api.call_api(
                path,
                method,
                query_params=params,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=_timeout(timeout),
            )
    except ApiException as exc:
        if exc.status:
            raise ApiError.from_response(exc.status, _bytes(exc.body)) from exc
        raise ApiError(0, "ConnectionError", f"{method} {path}: {exc.reason}") from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ApiError(0, "ConnectionError", f"{method} {path}: {exc}") from exc
    if not 200 <= response.status < 300:
        try:
            payload = response.data
        except (urllib3.exceptions.HTTPError, OSError):
            payload = b""
        finally:
            response.release_conn()
        raise ApiError.from_response(response.status, payload)
    return response


def _bytes(data: Any) -> bytes:
    if data is None:
        return b""
    return data if isinstance(data, bytes) else str(data).encode()


def micro_time(ts: float | None = None) -> str:
    """RFC 3339 with microseconds, as the API's MicroTime."""
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )


def truncate(note: str, limit: int = MAX_NOTE_BYTES) -> str:
    """Cut ``note`` to at most ``limit`` UTF-8 bytes (the API rejects longer event notes)."""
    data = note.encode()
    if len(data) <= limit:
        return note
    return data[: limit - 4].decode(errors="ignore") + " ..."


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


class KubeClient:
    """Raw-JSON access to the API for the scheduler, the webhook and the informers.

    Also the scheduler's ``Reporter`` (``record_event``, ``patch_pod_status``) and leader
    election's ``LeaseClient`` (``get_lease``, ``create_lease``, ``update_lease``).
    """

    def __init__(
        self,
        api_client: ApiClient,
        instance: str | None = None,
        *,
        controller: str = REPORTING_CONTROLLER,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        async_events: bool = True,
    ) -> None:
        self.api = api_client
        self.controller = controller
        # Upstream's recorder names the instance "<controller>-<hostname>" (max 128 chars).
        self.instance = (instance or f"{controller}-{socket.gethostname()}")[:128]
        self.timeout = timeout
        self.async_events = async_events
        self._events: queue.Queue[dict | None] = queue.Queue(MAX_QUEUED_EVENTS)
        self._event_thread: threading.Thread | None = None
        self._event_lock = threading.Lock()

    # -- raw requests ---------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict | list | None = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        """Send one request; the decoded JSON answer (``None`` for an empty body)."""
        response = raw_request(
            self.api, method, path, body, query, content_type, timeout or self.timeout
        )
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(0, "ConnectionError", f"{method} {path}: {exc}") from exc
        finally:
            response.release_conn()
        return orjson.loads(data) if data else None

    def get(self, path: str, **query: Any) -> dict | None:
        """GET ``path``; ``None`` if it does not exist (404)."""
        try:
            return self.request("GET", path, query=query or None)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(
        self, path: str, query: dict | None = None, *, page_size: int = 500
    ) -> tuple[list[dict], str]:
        """All items of a collection (following ``continue``) and the list's resourceVersion.

        Pages are consistent with each other; if the continue token expires mid-way (410) the
        list starts over unpaginated, as client-go's pager does.
        """
        base = {k: v for k, v in (query or {}).items() if v is not None}
        params = {**base, "limit": str(page_size)} if page_size else dict(base)
        items: list[dict] = []
        while True:
            try:
                page = self.request("GET", path, query=params)
            except Gone:
                if "continue" not in params:
                    raise
                log.info("list %s: continue token expired; listing in one request", path)
                items, params = [], dict(base)
                continue
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, meta.get("resourceVersion", "")
            params["continue"] = token

    def watch(
        self,
        path: str,
        resource_version: str,
        timeout_seconds: int = 300,
        query: dict | None = None,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
    ) -> WatchStream:
        """Watch ``path`` from ``resource_version`` with bookmarks; see :class:`WatchStream`.

        The server ends the watch after ``timeout_seconds``; the read timeout allows that
        plus a margin, so a silently dead connection is noticed too.
        """
        params = {
            **(query or {}),
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(int(timeout_seconds)),
        }
        if field_selector:
            params["fieldSelector"] = field_selector
        if label_selector:
            params["labelSelector"] = label_selector
        response = raw_request(
            self.api,
            "GET",
            path,
            query=params,
            timeout=(self.timeout[0], timeout_seconds + WATCH_READ_SLACK),
        )
        return WatchStream(response)

    # -- pods -----------------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict | None:
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def bind(self, pod: dict, node_name: str) -> None:
        """POST the pod's ``binding`` subresource (spec §9.1) with the pod's UID as a
        precondition. Raises :class:`ApiError`: 404 the pod is gone, 409 it is already bound
        (or was replaced by a pod of the same name)."""
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta["name"]
        binding: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        if meta.get("uid"):
            binding["metadata"]["uid"] = meta["uid"]
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)

    def delete_pod(
        self,
        namespace: str,
        name: str,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict | None:
        """DELETE a pod; with ``uid`` only that incarnation (409 if the name was reused)."""
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            options["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        return self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", options)

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict | None:
        """Strategic-merge-patch ``pods/{name}/status`` (conditions merge by ``type``; a
        ``None`` value deletes the field)."""
        return self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            patch,
            content_type=STRATEGIC_MERGE_PATCH,
        )

    # -- events ---------------------------------------------------------------------------------

    def create_event(self, event: dict) -> dict | None:
        """POST an ``events.k8s.io/v1`` Event (synchronously; raises :class:`ApiError`)."""
        namespace = (event.get("metadata") or {}).get("namespace") or "default"
        return self.request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", event)

    def make_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> dict:
        """The Event upstream's recorder writes about ``pod`` (spec §9.2)."""
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = time.time()
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name', 'pod')}.{time.time_ns():x}",
                "namespace": namespace,
            },
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": truncate(note),
            "regarding": {
                "apiVersion": pod.get("apiVersion") or "v1",
                "kind": pod.get("kind") or "Pod",
                "name": meta.get("name", ""),
                "namespace": namespace,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        }

    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        """Record an Event about ``pod``; never raises.

        With ``async_events`` (the default) the event is queued and posted by a background
        thread, so a slow apiserver never delays a scheduling cycle; a full queue drops it.
        """
        event = self.make_event(pod, event_type, reason, action, note)
        if not self.async_events:
            self._post_event(event)
            return
        self._ensure_event_thread()
        try:
            self._events.put_nowait(event)
        except queue.Full:
            log.warning("event queue full; dropping %s event for %s", reason, _ref(event))

    def flush_events(self, timeout: float = 5.0) -> bool:
        """Wait until queued events were posted; ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        while self._events.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        """Post what is queued (briefly) and stop the event thread."""
        if self._event_thread is not None:
            self.flush_events(2.0)
            try:
                self._events.put_nowait(None)
            except queue.Full:
                pass

    def _ensure_event_thread(self) -> None:
        if self._event_thread is not None:
            return
        with self._event_lock:
            if self._event_thread is None:
                thread = threading.Thread(target=self._event_loop, daemon=True, name="events")
                thread.start()
                self._event_thread = thread

    def _event_loop(self) -> None:
        while True:
            event = self._events.get()
            try:
                if event is None:
                    return
                self._post_event(event)
            finally:
                self._events.task_done()

    def _post_event(self, event: dict) -> None:
        try:
            self.create_event(event)
        except Exception as exc:  # best effort: an event must never fail scheduling
            log.warning("recording event %s for %s: %s", event.get("reason"), _ref(event), exc)

    # -- leases (leader election) ---------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> dict | None:
        return self.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")

    def create_lease(self, namespace: str, body: dict) -> dict:
        """Create; raises :class:`LeaseConflict` (a ``Conflict``) if it already exists."""
        return self._lease_write(
            "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", body
        )

    def update_lease(self, namespace: str, name: str, body: dict) -> dict:
        """Replace (the body's resourceVersion guards it); 409 raises :class:`LeaseConflict`."""
        return self._lease_write(
            "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", body
        )

    def _lease_write(self, method: str, path: str, body: dict) -> dict:
        try:
            return self.request(method, path, body)
        except ApiError as exc:
            if exc.status == 409:
                raise LeaseConflict(exc.status, exc.reason, exc.message, exc.details) from exc
            raise


def _ref(event: dict) -> str:
    regarding = event.get("regarding") or {}
    return f"{regarding.get('namespace')}/{regarding.get('name')}"


__all__ = [
    "ApiError",
    "Gone",
    "KubeClient",
    "LeaseConflict",
    "WatchStream",
    "micro_time",
    "raw_request",
    "truncate",
]
