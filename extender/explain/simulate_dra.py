"""What the cluster would do to ResourceClaims while simulate places pods, in the simulation only.

* Before a pod is scheduled, its claims from ResourceClaimTemplates are created as
  kube-controller-manager's resource-claim controller creates them (upstream
  ``pkg/controller/resourceclaim/controller.go``: name ``<pod>-<claim>-<5 random>``, the pod as
  controller owner, the template's labels and annotations plus ``resource.kubernetes.io/
  pod-claim-name``) and named in the pod's ``status.resourceClaimStatuses``.
* When a pod is placed, DynamicResources' Reserve runs (its devices become in-flight
  allocations), then what its PreBind would write is written into the simulated claims
  (``status.allocation``, the finalizer, the pod in ``reservedFor``): the next pod does not get
  those devices.
* When a pod is evicted (preemption), it leaves ``reservedFor``; a claim reserved for nobody is
  deallocated, and one generated for the pod is deleted, as the controller does.

Nothing here reaches the real cluster: the claims are the simulation's lists.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from extender.framework.cycle_state import CycleState
from extender.framework.handle import RESOURCE_CLAIMS

NAME = "DynamicResources"
TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
# The API server's generateName suffix: 5 characters of this alphabet.
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_BASE_LEN = 57


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _key(obj: dict) -> tuple[str, str]:
    m = _meta(obj)
    return (m.get("namespace") or "default", m.get("name") or "")


class ClaimWorld:
    """The simulation's ResourceClaims (the list the framework's claim lister reads)."""

    def __init__(self, cluster: Any, fwk: Any, seed: int = 0) -> None:
        self.fwk = fwk
        # The list must exist before the plugin's claim tracker takes its lister.
        self.claims: list[dict] = cluster.objects.setdefault(RESOURCE_CLAIMS.name, [])
        self.templates: list[dict] = cluster.objects.setdefault(TEMPLATES, [])
        self.rng = random.Random(seed)
        self._rv = 1000

    @property
    def plugin(self) -> Any:
        return self.fwk.plugins.get(NAME)

    # -- the resource-claim controller ------------------------------------------------------------

    def with_claims(self, pod: dict) -> dict:
        """The pod with a claim created for each ``resourceClaimTemplateName`` not yet in its
        status; a template that does not exist creates nothing (the pod then waits with
        upstream's ``ResourceClaim not created yet``)."""
        pod_claims = (pod.get("spec") or {}).get("resourceClaims") or []
        if not any(pc.get("resourceClaimTemplateName") for pc in pod_claims):
            return pod
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        known = {s.get("name") for s in statuses}
        namespace = _meta(pod).get("namespace") or "default"
        created = False
        for pod_claim in pod_claims:
            template_name = pod_claim.get("resourceClaimTemplateName")
            if not template_name or pod_claim.get("name") in known:
                continue
            template = next(
                (t for t in self.templates if _key(t) == (namespace, template_name)), None
            )
            if template is None:
                continue
            claim = self._claim_from(pod, pod_claim.get("name") or "", template)
            self.claims.append(claim)
            statuses.append({"name": pod_claim.get("name"), "resourceClaimName": _key(claim)[1]})
            created = True
        if not created:
            return pod
        status = {**(pod.get("status") or {}), "resourceClaimStatuses": statuses}
        return {**pod, "status": status}

    def _claim_from(self, pod: dict, pod_claim: str, template: dict) -> dict:
        pod_name = _meta(pod).get("name") or ""
        base = f"{pod_name}-{pod_claim}-"
        if len(base) > MAX_BASE_LEN:
            # Both parts shortened in proportion, as the controller does.
            base = (
                pod_name[: len(pod_name) * MAX_BASE_LEN // len(base)]
                + "-"
                + pod_claim[: len(pod_claim) * MAX_BASE_LEN // len(base)]
            )
        taken = {_key(c) for c in self.claims}
        namespace = _meta(pod).get("namespace") or "default"
        while True:
            name = base + "".join(self.rng.choice(SUFFIX_ALPHABET) for _ in range(5))
            if (namespace, name) not in taken:
                break
        spec = template.get("spec") or {}
        tmeta = spec.get("metadata") or {}
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-claim-{namespace}-{name}",
                "resourceVersion": self._next_rv(),
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {
                    **(tmeta.get("annotations") or {}),
                    POD_CLAIM_ANNOTATION: pod_claim,
                },
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod_name,
                        "uid": _meta(pod).get("uid") or "",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": copy.deepcopy(spec.get("spec") or {}),
        }

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    # -- Reserve and PreBind's writes -------------------------------------------------------------

    def reserve(self, state: CycleState, pod: dict, node: str) -> str | None:
        """DynamicResources' Reserve, then its PreBind's claim writes into the simulation;
        a message when Reserve refused."""
        plugin = self.plugin
        if plugin is None:
            return None
        status = plugin.reserve(state, pod, node)
        if status is not None and not status.is_success():
            plugin.unreserve(state, pod, node)
            return status.message
        s = state.get(NAME)
        claims = getattr(s, "claims", None)
        if claims is None or claims.empty():
            return None
        extended = claims.extended_resource_claim()
        ref = {
            "resource": "pods",
            "name": _meta(pod).get("name", ""),
            "uid": _meta(pod).get("uid", ""),
        }
        for index, claim in claims.all():
            if claim is extended:
                continue  # extended resources backed by DRA: not simulated
            result = s.informations[index].allocation
            updated = copy.deepcopy(claim)
            st = updated.setdefault("status", {})
            if result is not None and st.get("allocation") is None:
                finalizers = updated["metadata"].setdefault("finalizers", [])
                if FINALIZER not in finalizers:
                    finalizers.append(FINALIZER)
                st["allocation"] = copy.deepcopy(result)
            reserved = st.setdefault("reservedFor", [])
            if not any(r.get("uid") == ref["uid"] for r in reserved):
                reserved.append(ref)
            updated["metadata"]["resourceVersion"] = self._next_rv()
            self._replace(updated)
            if result is not None:
                plugin.tracker.maybe_remove_claim_pending_allocation(
                    _meta(claim).get("uid", ""), True
                )
        return None

    def _replace(self, claim: dict) -> None:
        key = _key(claim)
        for i, existing in enumerate(self.claims):
            if _key(existing) == key:
                self.claims[i] = claim
                return
        self.claims.append(claim)

    # -- eviction ---------------------------------------------------------------------------------

    def release(self, namespace: str, name: str, uid: str) -> None:
        """The evicted pod leaves ``reservedFor``; unreserved claims are deallocated, and the
        pod's generated ones deleted."""
        kept: list[dict] = []
        for claim in self.claims:
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if not any(r.get("uid") == uid for r in reserved):
                kept.append(claim)
                continue
            if any(
                o.get("controller") and o.get("uid") == uid
                for o in _meta(claim).get("ownerReferences") or ()
            ):
                continue  # generated for the pod: deleted with it
            updated = copy.deepcopy(claim)
            st = updated["status"]
            st["reservedFor"] = [r for r in reserved if r.get("uid") != uid]
            if not st["reservedFor"]:
                for key in ("reservedFor", "allocation", "devices"):
                    st.pop(key, None)
            updated["metadata"]["resourceVersion"] = self._next_rv()
            kept.append(updated)
        self.claims[:] = kept
