"""A small raw-JSON Kubernetes client.

Requests and watches go through :class:`~extender.kube.transport.Transport` (``http.client``),
configured from the ``kubernetes`` package's ``ApiClient`` (its ``Configuration``: TLS, auth
and token refresh hooks, as ``kubernetes.config`` loads them), and are decoded with orjson: no
model classes (building them for 500 nodes takes seconds), and no kubernetes-client/python#547
(``create_namespaced_binding`` raising on success). Objects in and out are plain dicts with
the API's camelCase keys. The verbs are those of client-go's typed clients
(``kubernetes/typed/core/v1/pod.go``, ``pod_expansion.go`` for ``Bind``,
``kubernetes/typed/coordination/v1/lease.go``, ``kubernetes/typed/events/v1/event.go``).

Errors: any non-2xx answer raises an :class:`~extender.kube.errors.ApiError` (a subclass for
404, 409, 410 and 422, see :mod:`extender.kube.errors`); a connection failure is an
``ApiError`` with status 0. Recording events (asynchronously, never raising) is
:class:`extender.kube.events.EventRecorder`'s job, not the client's.
"""

from __future__ import annotations

import http.client
import logging
from typing import Any

import orjson
from kubernetes.client import ApiClient

from .errors import ApiError, Gone, NotFound
from .transport import Transport
from .watch import WatchStream

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = (5.0, 60.0)  # (connect, read) seconds for ordinary requests
WATCH_READ_SLACK = 30.0  # read timeout beyond the server-side timeoutSeconds of a watch
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"


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


class KubeClient:
    """Raw-JSON access to the API for the scheduler, the webhook and the informers.

    Also leader election's ``LeaseClient`` (``get_lease``, ``create_lease``, ``update_lease``)
    and the :class:`~extender.kube.events.EventRecorder`'s sink (``create_event``).

    Requests, answers and watches go through one :class:`~extender.kube.transport.Transport`.
    """

    def __init__(
        self, api_client: ApiClient, *, timeout: tuple[float, float] = DEFAULT_TIMEOUT
    ) -> None:
        self.api = api_client
        self.timeout = timeout
        self.transport = Transport.for_client(api_client)

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
        """Send one request; the decoded JSON answer (``None`` for an empty body).

        ``timeout`` is ``(connect, read)`` seconds, or one number for both. Raises
        :class:`ApiError` for any status outside 2xx and for connection failures (status 0).
        """
        if body is None or isinstance(body, bytes):
            data = body
        elif isinstance(body, bytearray | str):
            data = bytes(body, "utf-8") if isinstance(body, str) else bytes(body)
        else:
            data = orjson.dumps(body)
        try:
            status, payload = self.transport.request(
                method,
                path,
                data,
                _query_params(query),
                content_type,
                _timeout(timeout or self.timeout),
            )
        except (http.client.HTTPException, OSError) as exc:
            raise ApiError(0, "ConnectionError", f"{method} {path}: {exc}") from exc
        if not 200 <= status < 300:
            raise ApiError.from_response(status, payload)
        return orjson.loads(payload) if payload else None

    def get(self, path: str, **query: Any) -> dict | None:
        """GET ``path``; ``None`` if it does not exist (404)."""
        try:
            return self.request("GET", path, query=query or None)
        except NotFound:
            return None

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
        try:
            conn, response = self.transport.stream(
                path,
                _query_params(params),
                (self.timeout[0], timeout_seconds + WATCH_READ_SLACK),
            )
        except (http.client.HTTPException, OSError) as exc:
            raise ApiError(0, "ConnectionError", f"watch {path}: {exc}") from exc
        if not 200 <= response.status < 300:
            try:
                payload = response.read()
            except (http.client.HTTPException, OSError):
                payload = b""
            finally:
                conn.close()
            raise ApiError.from_response(response.status, payload)
        return WatchStream(response, conn)

    # -- pods -----------------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict | None:
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def bind(self, pod: dict, node_name: str) -> None:
        """POST the pod's ``binding`` subresource with the pod's UID as a precondition, as
        kube-scheduler's ``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``
        does through client-go's ``Bind``. Raises ``NotFound`` if the pod is gone, ``Conflict``
        if it is already bound (or was replaced by a pod of the same name)."""
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

    def patch_pod_group_status(self, namespace: str, name: str, patch: dict) -> dict | None:
        """Strategic-merge-patch a ``scheduling.k8s.io/v1alpha2`` PodGroup's status
        (conditions merge by ``type``), as upstream's ``PatchPodGroupStatus``."""
        return self.request(
            "PATCH",
            f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups/{name}/status",
            patch,
            content_type=STRATEGIC_MERGE_PATCH,
        )

    # -- resource claims (DynamicResources) -------------------------------------------------

    def _claim_path(self, namespace: str, name: str) -> str:
        return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"

    def get_resource_claim(self, namespace: str, name: str) -> dict | None:
        return self.get(self._claim_path(namespace, name))

    def create_resource_claim(self, namespace: str, claim: dict) -> dict:
        """POST a claim (``metadata.generateName`` names it: the extended-resource claim)."""
        return self.request(
            "POST", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims", claim
        )

    def delete_resource_claim(self, namespace: str, name: str) -> None:
        self.request("DELETE", self._claim_path(namespace, name))

    def update_resource_claim(self, claim: dict) -> dict:
        """PUT the claim (e.g. its finalizers); its resourceVersion guards it (``Conflict``)."""
        meta = claim.get("metadata") or {}
        return self.request(
            "PUT", self._claim_path(meta.get("namespace") or "default", meta["name"]), claim
        )

    def update_resource_claim_status(self, claim: dict) -> dict:
        """PUT ``resourceclaims/{name}/status`` (allocation, reservedFor, devices)."""
        meta = claim.get("metadata") or {}
        path = self._claim_path(meta.get("namespace") or "default", meta["name"])
        return self.request("PUT", f"{path}/status", claim)

    def patch_resource_claim_status(self, namespace: str, name: str, patch: dict) -> dict:
        """Strategic-merge-patch ``resourceclaims/{name}/status`` (``reservedFor`` entries
        merge by ``uid``, so one can be deleted without the latest claim)."""
        return self.request(
            "PATCH",
            f"{self._claim_path(namespace, name)}/status",
            patch,
            content_type=STRATEGIC_MERGE_PATCH,
        )

    # -- events ---------------------------------------------------------------------------------

    def create_event(self, event: dict) -> dict | None:
        """POST an ``events.k8s.io/v1`` Event (synchronously; raises :class:`ApiError`)."""
        namespace = (event.get("metadata") or {}).get("namespace") or "default"
        return self.request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", event)

    def patch_event(self, namespace: str, name: str, patch: dict) -> dict | None:
        """Merge-patch an ``events.k8s.io/v1`` Event (its ``series``, as client-go's sink);
        raises :class:`~extender.kube.errors.NotFound` when it is gone."""
        return self.request(
            "PATCH",
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}",
            patch,
            content_type=MERGE_PATCH,
        )

    # -- leases (leader election) ---------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> dict | None:
        return self.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")

    def create_lease(self, namespace: str, body: dict) -> dict:
        """Create; raises :class:`~extender.kube.errors.Conflict` if it already exists."""
        return self.request(
            "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", body
        )

    def update_lease(self, namespace: str, name: str, body: dict) -> dict:
        """Replace (the body's resourceVersion guards it); a stale one raises ``Conflict``."""
        return self.request(
            "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", body
        )


__all__ = [
    "DEFAULT_TIMEOUT",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "KubeClient",
]
