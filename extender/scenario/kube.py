"""A small client for scenarios: create nodes and pods, wait, and report where pods landed.

Scenarios are teaching material, so this favours readable calls over completeness. Objects
are plain dicts; requests go through the ``kubernetes`` client's ApiClient with raw JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from extender.config import DEFAULT_SCHEDULER_NAME
from extender.kube import ApiError, KubeClient

# Dynamic Resource Allocation: DeviceClasses, ResourceSlices, ResourceClaims and their templates.
RESOURCE_API = "/apis/resource.k8s.io/v1"
# Workload-aware scheduling (feature gate GenericWorkload): Workloads and PodGroups.
SCHEDULING_API = "/apis/scheduling.k8s.io/v1alpha2"
# The condition the scheduler writes to a PodGroup after each pod group cycle.
POD_GROUP_SCHEDULED = "PodGroupScheduled"


class ScenarioError(AssertionError):
    """A scenario expectation failed (a pod did not land, or landed where it must not)."""


class Kube:
    def __init__(
        self,
        api_client: Any,  # the process's ApiClient (extender.kube.api_client)
        *,
        namespace: str = "default",
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        out: Any = print,
    ) -> None:
        self.api = api_client
        self.client = KubeClient(api_client)
        self.namespace = namespace
        self.scheduler_name = scheduler_name
        self.out = out
        self.created_nodes: list[str] = []
        self.created_pods: list[str] = []
        # API paths of other objects made with create(), deleted by cleanup() in reverse.
        self.created_objects: list[str] = []

    # -- raw requests (the project's raw-JSON client) ------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict | None = None,
        content_type: str = "application/json",
    ) -> Any:
        return self.client.request(method, path, body, query, content_type)

    def get(self, path: str, **query: Any) -> Any:
        return self.client.get(path, **query)

    def serves(self, api: str) -> bool:
        """The API server serves this group version (e.g. ``/apis/scheduling.k8s.io/v1alpha2``)."""
        return self.get(api) is not None

    # -- objects --------------------------------------------------------------------------

    def create(self, collection: str, obj: dict) -> dict:
        """POST ``obj`` to an API collection path (cluster-scoped, e.g.
        ``/apis/resource.k8s.io/v1/deviceclasses``, or namespaced, e.g.
        ``/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates``); cleanup()
        deletes it."""
        created = self.request("POST", collection, obj)
        self.created_objects.append(f"{collection}/{created['metadata']['name']}")
        return created

    def namespaced(self, api: str, resource: str) -> str:
        """The collection path of ``resource`` in this client's namespace."""
        return f"{api}/namespaces/{self.namespace}/{resource}"

    def create_node(
        self,
        name: str,
        *,
        cpu: str = "4",
        memory: str = "16Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        taints: list[dict] | None = None,
        unschedulable: bool = False,
    ) -> dict:
        allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
        spec: dict[str, Any] = {"unschedulable": unschedulable}
        if taints:
            spec["taints"] = taints
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": spec,
        }
        created = self.request("POST", "/api/v1/nodes", node)
        # Nodes created through the API have no kubelet: report capacity and readiness.
        status = {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "scenario node",
                }
            ],
        }
        self.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )
        self.created_nodes.append(name)
        return created

    def update_node(self, name: str, patch: dict) -> dict:
        return self.request(
            "PATCH", f"/api/v1/nodes/{name}", patch, content_type="application/merge-patch+json"
        )

    def create_pod(
        self,
        name: str,
        *,
        cpu: str | None = None,
        memory: str | None = None,
        priority_class: str | None = None,
        labels: dict[str, str] | None = None,
        resource_claims: list[dict] | None = None,
        pod_group: str | None = None,
        **spec_fields: Any,
    ) -> dict:
        """A pause pod; ``resource_claims`` are ``spec.resourceClaims`` entries (``{"name": ...,
        "resourceClaimTemplateName": ...}``), all of them used by its container; ``pod_group``
        makes it a member of that PodGroup (``spec.schedulingGroup.podGroupName``)."""
        if pod_group is not None:
            spec_fields["schedulingGroup"] = {"podGroupName": pod_group}
        requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = requests
        if resource_claims:
            resources["claims"] = [{"name": claim["name"]} for claim in resource_claims]
            spec_fields["resourceClaims"] = resource_claims
        if resources:
            container["resources"] = resources
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [container],
            **spec_fields,
        }
        if priority_class:
            spec["priorityClassName"] = priority_class
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels or {}},
            "spec": spec,
        }
        created = self.request("POST", f"/api/v1/namespaces/{self.namespace}/pods", pod)
        self.created_pods.append(name)
        return created

    def create_priority_class(self, name: str, value: int) -> None:
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        try:
            self.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body)
        except ApiError as exc:
            if exc.status != 409:
                raise

    def create_pod_group(
        self, name: str, *, min_count: int | None = None, labels: dict[str, str] | None = None
    ) -> dict:
        """A ``scheduling.k8s.io/v1alpha2`` PodGroup: with ``min_count`` the Gang policy (all
        or nothing, at least that many pods), else the Basic one. Its pods name it with
        ``create_pod(..., pod_group=name)``."""
        policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
        body = {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"schedulingPolicy": policy},
        }
        return self.create(self.namespaced(SCHEDULING_API, "podgroups"), body)

    def pod_group(self, name: str) -> dict | None:
        return self.get(f"{self.namespaced(SCHEDULING_API, 'podgroups')}/{name}")

    def pod_group_condition(self, name: str) -> dict | None:
        """The PodGroup's ``PodGroupScheduled`` condition, or None before the scheduler wrote
        one (or if the group is gone)."""
        conditions = ((self.pod_group(name) or {}).get("status") or {}).get("conditions") or ()
        return next((c for c in conditions if c.get("type") == POD_GROUP_SCHEDULED), None)

    def pod(self, name: str) -> dict | None:
        return self.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")

    def node_of(self, name: str) -> str | None:
        pod = self.pod(name)
        return ((pod or {}).get("spec") or {}).get("nodeName")

    def delete_pod(self, name: str) -> None:
        self.delete(f"/api/v1/namespaces/{self.namespace}/pods/{name}", {"gracePeriodSeconds": 0})

    def delete_node(self, name: str) -> None:
        self.delete(f"/api/v1/nodes/{name}")

    def pod_claims(self, name: str, pod: dict | None = None) -> dict[str, dict | None]:
        """The pod's ResourceClaims by their name in ``spec.resourceClaims``; None for one not
        created yet (a claim from a template exists once the resource-claim controller of
        kube-controller-manager has named it in ``status.resourceClaimStatuses``). ``pod``:
        the pod object when the caller has just read it."""
        pod = pod or self.pod(name) or {}
        generated = {
            entry["name"]: entry.get("resourceClaimName")
            for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        }
        claims: dict[str, dict | None] = {}
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            claim_name = entry.get("resourceClaimName") or generated.get(entry["name"])
            path = f"{self.namespaced(RESOURCE_API, 'resourceclaims')}/{claim_name}"
            claims[entry["name"]] = self.get(path) if claim_name else None
        return claims

    @staticmethod
    def allocated_devices(claim: dict | None) -> list[str]:
        """``driver/pool/device`` of each device allocated to the claim (none if unallocated)."""
        allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or ()
        return [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results]

    def why_pending(self, name: str) -> str:
        """The scheduler's latest word on a pending pod (its PodScheduled condition)."""
        pod = self.pod(name) or {}
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                return condition.get("message") or condition.get("reason") or ""
        return "not tried yet"

    # -- expectations -----------------------------------------------------------------------

    @staticmethod
    def _poll(check: Callable[[], Any], seconds: float) -> Any:
        """``check()``'s first true answer within ``seconds`` (asked every 0.2 s), or None."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            answer = check()
            if answer:
                return answer
            time.sleep(0.2)
        return None

    def _still_pending(self, name: str) -> None:
        node = self.node_of(name)
        if node:
            raise ScenarioError(f"pod {name} was expected to stay pending, but went to {node}")

    def wait_bound(self, name: str, timeout: float = 30.0) -> str:
        node = self._poll(lambda: self.node_of(name), timeout)
        if node is None:
            raise ScenarioError(
                f"pod {name} was not scheduled within {timeout:g}s: {self.why_pending(name)}"
            )
        return node

    def expect_pending(self, name: str, seconds: float = 3.0) -> str:
        """Wait ``seconds`` and check the pod is still unscheduled; returns why."""
        self._poll(lambda: self._still_pending(name), seconds)
        return self.why_pending(name)

    def wait_pending(self, name: str, reason: str, timeout: float = 30.0) -> str:
        """Wait until the scheduler has said ``reason`` about the pod (it stays unscheduled);
        returns its whole message."""

        def said() -> str | None:
            self._still_pending(name)
            why = self.why_pending(name)
            return why if reason in why else None

        why = self._poll(said, timeout)
        if why is None:
            raise ScenarioError(
                f"pod {name}: no {reason!r} from the scheduler within {timeout:g}s: "
                f"{self.why_pending(name)}"
            )
        return why

    def wait_unschedulable(self, name: str, timeout: float = 30.0) -> str:
        """Wait until the scheduler has tried the pod and said why it is not bound (its
        PodScheduled condition is False); returns that message."""

        def tried() -> str | None:
            self._still_pending(name)
            pod = self.pod(name) or {}
            for condition in (pod.get("status") or {}).get("conditions") or ():
                if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                    return condition.get("message") or condition.get("reason") or "?"
            return None

        why = self._poll(tried, timeout)
        if why is None:
            raise ScenarioError(f"pod {name} was not tried within {timeout:g}s")
        return why

    def wait_allocated(self, name: str, timeout: float = 30.0) -> dict[str, dict]:
        """Wait until every ResourceClaim of the pod is allocated and reserved for it (the
        scheduler writes both before it binds); returns them by their name in the pod."""

        def allocated() -> dict[str, dict] | None:
            pod = self.pod(name) or {}
            uid = (pod.get("metadata") or {}).get("uid")
            claims = self.pod_claims(name, pod)
            if all(_allocated_for(claim, uid) for claim in claims.values()):
                return {key: claim for key, claim in claims.items() if claim}
            return None

        claims = self._poll(allocated, timeout)
        if claims is None:
            raise ScenarioError(
                f"the claims of pod {name} were not allocated and reserved for it within "
                f"{timeout:g}s: {self.why_pending(name)}"
            )
        return claims

    def wait_gone(self, name: str, timeout: float = 30.0) -> None:
        if not self._poll(lambda: self.pod(name) is None, timeout):
            raise ScenarioError(f"pod {name} still exists after {timeout:g}s")

    def report(self, names: list[str] | None = None) -> dict[str, str | None]:
        """Print where each pod went and why the others did not fit."""
        placements: dict[str, str | None] = {}
        for name in names or self.created_pods:
            pod = self.pod(name)
            if pod is None:
                self.out(f"  {name:<12} deleted")
                placements[name] = None
                continue
            node = (pod.get("spec") or {}).get("nodeName")
            placements[name] = node
            if node and (pod.get("spec") or {}).get("resourceClaims"):
                devices = [
                    f"{key}: {', '.join(self.allocated_devices(claim)) or 'no devices'}"
                    for key, claim in self.pod_claims(name).items()
                ]
                self.out(f"  {name:<12} -> {node}  ({'; '.join(devices)})")
            elif node:
                self.out(f"  {name:<12} -> {node}")
            else:
                self.out(f"  {name:<12} pending: {self.why_pending(name)}")
        return placements

    def wait_pod_group(self, name: str, status: str, timeout: float = 30.0) -> dict:
        """Wait until the PodGroup's ``PodGroupScheduled`` condition has ``status`` ("True" or
        "False"); returns the condition."""

        def reached() -> dict | None:
            condition = self.pod_group_condition(name)
            return condition if condition and condition.get("status") == status else None

        condition = self._poll(reached, timeout)
        if condition is None:
            raise ScenarioError(
                f"pod group {name}: {POD_GROUP_SCHEDULED} is not {status} after {timeout:g}s: "
                f"{self.pod_group_condition(name)}"
            )
        return condition

    def report_pod_groups(self, names: list[str]) -> dict[str, dict | None]:
        """Print each PodGroup's ``PodGroupScheduled`` condition (status, reason, message)."""
        conditions: dict[str, dict | None] = {}
        for name in names:
            condition = conditions[name] = self.pod_group_condition(name)
            if condition is None:
                self.out(f"  podgroup {name:<8} {POD_GROUP_SCHEDULED}: (not written yet)")
                continue
            said = ", ".join(
                str(condition[key]) for key in ("reason", "message") if condition.get(key)
            )
            self.out(
                f"  podgroup {name:<8} {POD_GROUP_SCHEDULED}={condition.get('status')}"
                + (f" ({said})" if said else "")
            )
        return conditions

    def delete(self, path: str, body: dict | None = None) -> None:
        """DELETE ``path``; an object already gone is fine."""
        try:
            self.request("DELETE", path, body)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def cleanup(self) -> None:
        # Claims generated from templates are owned by their pod, but without the garbage
        # collector (a test control plane runs at most the resource-claim controller) they
        # would outlive it: delete them with the pods.
        claims: list[str] = []
        for name in self.created_pods:
            try:
                owned = list(self.pod_claims(name).values())
            except ApiError:
                owned = []
            claims += [
                f"{self.namespaced(RESOURCE_API, 'resourceclaims')}/{claim['metadata']['name']}"
                for claim in owned
                if claim and _owned_by_pod(claim, name)
            ]
            self.delete_pod(name)
        for path in claims:
            self.delete(path)
        for path in reversed(self.created_objects):
            if path.startswith(f"{SCHEDULING_API}/") and "/podgroups/" in path:
                self._drop_finalizers(path)
            self.delete(path)
        for name in self.created_nodes:
            self.delete_node(name)

    def _drop_finalizers(self, path: str) -> None:
        """kube-apiserver's PodGroupProtection admission gives every PodGroup a finalizer that
        kube-controller-manager's podgroup-protection controller removes once no pod names the
        group; a scenario cluster runs no such controller, and its pods are deleted already."""
        try:
            self.request(
                "PATCH",
                path,
                {"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
        except ApiError as exc:
            if exc.status != 404:
                raise


def _allocated_for(claim: dict | None, pod_uid: str | None) -> bool:
    status = (claim or {}).get("status") or {}
    reserved = status.get("reservedFor") or ()
    return bool(status.get("allocation")) and any(r.get("uid") == pod_uid for r in reserved)


def _owned_by_pod(obj: dict, pod: str) -> bool:
    owners = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "Pod" and o.get("name") == pod for o in owners)
