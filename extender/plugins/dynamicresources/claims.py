"""ResourceClaim helpers of the DynamicResources plugin: how a pod names its claims, whether a
claim is the pod's, whether it is reserved for it (upstream
``staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go``), and the
claim store of one scheduling cycle (upstream
``pkg/scheduler/framework/plugins/dynamicresources/claims.go``).

Claims are the API's JSON dicts, shared with the informer: read them, copy before changing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

# The finalizer the scheduler adds before it writes an allocation (upstream
# ``resourceapi.Finalizer``).
FINALIZER = "resource.kubernetes.io/delete-protection"
# ``resourceapi.FirstAvailableDeviceRequestMaxSize``: Score counts down from it.
FIRST_AVAILABLE_MAX_SIZE = 8

CLAIM_NOT_FOUND = "ResourceClaim not created yet"
API_UNSUPPORTED = "none of the supported fields are set"


class ClaimError(Exception):
    """The pod cannot be scheduled now because of one of its claims (the message is
    upstream's, the reason of an UnschedulableAndUnresolvable status)."""


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def status(obj: dict) -> dict:
    return obj.get("status") or {}


def allocation(claim: dict) -> dict | None:
    return status(claim).get("allocation")


def kobj(obj: dict) -> str:
    """``klog.KObj``: ``namespace/name`` (``name`` for a cluster-scoped object)."""
    m = meta(obj)
    namespace = m.get("namespace") or ""
    return f"{namespace}/{m.get('name', '')}" if namespace else m.get("name", "")


def claim_name(pod: dict, pod_claim: dict) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name and whether its owner must be checked
    (generated from a template). ``None``: no claim was generated, which is valid (the
    controller decided none is needed). Raises :class:`ClaimError`."""
    name = pod_claim.get("resourceClaimName")
    if name is not None:
        return name, False
    if pod_claim.get("resourceClaimTemplateName") is not None:
        for entry in status(pod).get("resourceClaimStatuses") or ():
            if entry.get("name") == pod_claim.get("name"):
                return entry.get("resourceClaimName"), True
        m = meta(pod)
        raise ClaimError(f'pod "{m.get("namespace", "")}/{m.get("name", "")}": {CLAIM_NOT_FOUND}')
    m = meta(pod)
    raise ClaimError(
        f'pod "{m.get("namespace", "")}/{m.get("name", "")}", spec.resourceClaim '
        f'"{pod_claim.get("name", "")}": {API_UNSUPPORTED}'
    )


def is_controlled_by(obj: dict, owner: dict) -> bool:
    """``metav1.IsControlledBy``: the controller owner reference has the owner's UID."""
    uid = meta(owner).get("uid")
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return bool(uid) and ref.get("uid") == uid
    return False


def is_for_pod(pod: dict, claim: dict) -> str | None:
    """``resourceclaim.IsForPod`` (no PodGroup owners: DRAWorkloadResourceClaims is off): the
    reason the claim is not the pod's, or ``None``."""
    pm, cm = meta(pod), meta(claim)
    pod_ref = f"{pm.get('namespace', '')}/{pm.get('name', '')}"
    claim_ref = f"{cm.get('namespace', '')}/{cm.get('name', '')}"
    if cm.get("namespace") != pm.get("namespace"):
        return f"ResourceClaim {claim_ref} is not in the same namespace as Pod {pod_ref}"
    if not is_controlled_by(claim, pod):
        return f"ResourceClaim {claim_ref} was not created for Pod {pod_ref} (Pod is not owner)"
    return None


def is_reserved_for_pod(pod: dict, claim: dict) -> bool:
    """``resourceclaim.IsReservedForPod`` (pods only)."""
    uid = meta(pod).get("uid")
    return any(ref.get("uid") == uid for ref in status(claim).get("reservedFor") or ())


def pod_reference(pod: dict) -> dict:
    """The ``reservedFor`` entry of a pod (``ResourceClaimConsumerReference``)."""
    m = meta(pod)
    return {"resource": "pods", "name": m.get("name", ""), "uid": m.get("uid", "")}


def is_sub_request_ref(ref: str) -> bool:
    return len(ref.split("/")) == 2


@dataclass
class ClaimStore:
    """The pod's claims for one cycle (``claimStore``): the user's claims in
    ``pod.spec.resourceClaims`` order, then the special claim for extended resources backed by
    DRA, if any. Entries are replaced (never mutated) when the plugin writes a claim."""

    claims: list[dict] = field(default_factory=list)
    num_user_owned: int = 0

    @classmethod
    def of(cls, user_claims: list[dict], extended: dict | None = None) -> ClaimStore:
        claims = list(user_claims)
        if extended is not None:
            claims.append(extended)
        return cls(claims, len(user_claims))

    def empty(self) -> bool:
        return not self.claims

    def __len__(self) -> int:
        return len(self.claims)

    def all(self) -> Iterator[tuple[int, dict]]:
        return iter(enumerate(list(self.claims)))

    def all_user_claims(self) -> Iterator[tuple[int, dict]]:
        return iter(enumerate(self.claims[: self.num_user_owned]))

    def to_allocate(self) -> Iterator[tuple[int, dict]]:
        """The claims without an allocation, with their index in the store."""
        return iter([(i, c) for i, c in enumerate(self.claims) if allocation(c) is None])

    def extended_resource_claim(self) -> dict | None:
        if self.num_user_owned == len(self.claims):
            return None
        return self.claims[self.num_user_owned]

    def no_user_claim(self) -> bool:
        return self.num_user_owned == 0

    def get(self, index: int) -> dict:
        return self.claims[index]

    def set(self, index: int, claim: dict) -> None:
        self.claims[index] = claim
