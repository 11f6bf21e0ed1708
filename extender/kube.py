"""A small raw-JSON Kubernetes client over the ``kubernetes`` package's ApiClient.

Requests go through ``ApiClient.call_api(..., _preload_content=False)`` and are decoded with
orjson: no model classes (building them for 500 nodes takes seconds), and no
kubernetes-client/python#547 (``create_namespaced_binding`` raising on success).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import urllib3
from kubernetes.client import ApiClient

log = logging.getLogger(__name__)

MAX_NOTE_BYTES = 1024
REPORTING_CONTROLLER = "kube-extender"


class ApiError(Exception):
    """The apiserver said no: ``status`` is the HTTP code, ``reason`` the Status reason."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message

    @classmethod
    def from_response(cls, status: int, payload: bytes) -> ApiError:
        """From the apiserver's Status JSON (or whatever text came back)."""
        reason, message = "", f"HTTP {status}"
        try:
            body = orjson.loads(payload)
            reason = body.get("reason") or ""
            message = body.get("message") or message
        except (orjson.JSONDecodeError, TypeError, AttributeError):
            message = payload.decode(errors="replace")[:500] or message
        return cls(status, reason, message)

    def __str__(self) -> str:
        return self.message


def raw_request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    query: dict | list | None = None,
    content_type: str = "application/json",
    timeout: float | tuple[float, float] | None = None,
) -> urllib3.BaseHTTPResponse:
    """One request through the ApiClient's connection pool and auth; the raw, unread response.

    Raises :class:`ApiError` for any status outside 2xx.
    """
    params = list(query.items()) if isinstance(query, dict) else list(query or ())
    _, url, headers, _, _ = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=params or None,
        header_params={"Accept": "application/json", "Content-Type": content_type},
        auth_settings=["BearerToken"],
    )
    data = body if body is None or isinstance(body, bytes) else orjson.dumps(body)
    if isinstance(timeout, tuple):
        limit = urllib3.Timeout(connect=timeout[0], read=timeout[1])
    else:
        limit = urllib3.Timeout(total=timeout) if timeout else urllib3.Timeout(connect=5, read=60)
    try:
        response = api.rest_client.pool_manager.request(
            method, url, body=data, headers=headers, timeout=limit, preload_content=False
        )
    except urllib3.exceptions.HTTPError as exc:
        raise ApiError(0, "ConnectionError", f"{method} {path}: {exc}") from exc
    if not 200 <= response.status < 300:
        payload = response.data
        response.release_conn()
        raise ApiError.from_response(response.status, payload)
    return response


def micro_time(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )


def truncate(note: str, limit: int = MAX_NOTE_BYTES) -> str:
    data = note.encode()
    if len(data) <= limit:
        return note
    return data[: limit - 4].decode(errors="ignore") + " ..."


class KubeClient:
    def __init__(self, api_client: ApiClient, instance: str | None = None) -> None:
        self.api = api_client
        self.instance = instance or f"{socket.gethostname()}-{os.getpid()}"

    # -- raw requests ---------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict | list | None = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        return raw_request(self.api, method, path, body, query, content_type, timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict | None = None,
        content_type: str = "application/json",
    ) -> Any:
        response = self._call(method, path, body, query, content_type, timeout=(5, 60))
        try:
            data = response.data
        finally:
            response.release_conn()
        return orjson.loads(data) if data else None

    def get(self, path: str, **query: Any) -> dict | None:
        try:
            return self.request("GET", path, query=query or None)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, path: str, query: dict | None = None) -> tuple[list[dict], str]:
        """All items (following ``continue``) and the list's resourceVersion."""
        items: list[dict] = []
        params = dict(query or {})
        params.setdefault("limit", "500")
        while True:
            page = self.request("GET", path, query=params)
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, meta.get("resourceVersion", "")
            params["continue"] = meta["continue"]

    def watch(
        self,
        path: str,
        resource_version: str,
        timeout_seconds: int = 300,
        query: dict | None = None,
    ) -> Iterator[tuple[str, dict]]:
        """Watch events ``(type, object)``; BOOKMARK and ERROR events are passed through."""
        params = {
            **(query or {}),
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        response = self._call(
            "GET", path, query=params, stream=True, timeout=(5, timeout_seconds + 30)
        )
        buffer = b""
        try:
            for chunk in response.stream(65536, decode_content=True):
                buffer += chunk
                while True:
                    line, sep, rest = buffer.partition(b"\n")
                    if not sep:
                        break
                    buffer = rest
                    if line.strip():
                        event = orjson.loads(line)
                        yield event.get("type", ""), event.get("object") or {}
        finally:
            response.release_conn()

    # -- pods -----------------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict | None:
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def bind(self, pod: dict, node_name: str) -> None:
        """POST the pod's binding subresource; raises :class:`ApiError` (404 gone, 409 bound)."""
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta["name"]
        binding = {
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
    ) -> None:
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            options["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", options)

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> None:
        self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            patch,
            content_type="application/strategic-merge-patch+json",
        )

    # -- events ---------------------------------------------------------------------------------

    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        """An events.k8s.io/v1 Event about ``pod``, as the scheduler's recorder writes it."""
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = time.time()
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name', 'pod')}.{int(now * 1e9):x}",
                "namespace": namespace,
            },
            "eventTime": micro_time(now),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": truncate(note),
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta.get("name", ""),
                "namespace": namespace,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        }
        try:
            self.request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", event)
        except ApiError as exc:
            log.warning(
                "recording event %s for %s/%s: %s", reason, namespace, meta.get("name"), exc
            )

    # -- leases (leader election) ---------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> dict | None:
        return self.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")

    def create_lease(self, namespace: str, body: dict) -> dict:
        from extender.scheduler.leader_election import Conflict

        try:
            return self.request(
                "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", body
            )
        except ApiError as exc:
            if exc.status == 409:
                raise Conflict(str(exc)) from exc
            raise

    def update_lease(self, namespace: str, name: str, body: dict) -> dict:
        from extender.scheduler.leader_election import Conflict

        try:
            return self.request(
                "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", body
            )
        except ApiError as exc:
            if exc.status == 409:
                raise Conflict(str(exc)) from exc
            raise
