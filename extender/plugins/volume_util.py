"""Storage helpers shared by the volume plugins (upstream
``k8s.io/component-helpers/storage/volume`` and ``storage/ephemeral``).

Objects are the API's JSON dicts (PersistentVolume, PersistentVolumeClaim, StorageClass) as a
lister serves them: read them, never mutate them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from extender.framework.labels import LabelSelector, NodeSelector
from extender.framework.quantity import int_value, request_int_value

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_class(pvc: dict) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation wins over the field."""
    annotations = meta(pvc).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return spec(pvc).get("storageClassName") or ""


def volume_class(pv: dict) -> str:
    """``GetPersistentVolumeClass``."""
    annotations = meta(pv).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return spec(pv).get("storageClassName") or ""


def ephemeral_claim_name(pod: dict, volume: dict) -> str:
    """``ephemeral.VolumeClaimName``: ``<pod>-<volume>``."""
    return f"{meta(pod).get('name', '')}-{volume.get('name', '')}"


def pod_claims(pod: dict) -> Iterator[tuple[str, bool]]:
    """(claim name, is ephemeral) for every volume backed by a PVC, in volume order."""
    for volume in spec(pod).get("volumes") or ():
        if volume.get("persistentVolumeClaim") is not None:
            yield (volume["persistentVolumeClaim"].get("claimName") or ""), False
        elif volume.get("ephemeral") is not None:
            yield ephemeral_claim_name(pod, volume), True


def volume_is_for_pod(pod: dict, pvc: dict) -> str | None:
    """``ephemeral.VolumeIsForPod``: an error message when the claim is not owned by the pod."""
    uid = meta(pod).get("uid", "")
    for ref in meta(pvc).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid") == uid:
            return None
    return (
        f"PVC {meta(pvc).get('namespace', '')}/{meta(pvc).get('name', '')} was not created "
        f"for pod {meta(pod).get('namespace', '')}/{meta(pod).get('name', '')} "
        "(pod is not owner)"
    )


def not_found(resource: str, name: str) -> str:
    """An apiserver NotFound error's text, as upstream listers word it."""
    return f'{resource} "{name}" not found'


def storage_request(pvc: dict) -> int:
    """The claim's storage request; one beyond int64 is more than any (saturated) capacity."""
    value = ((spec(pvc).get("resources") or {}).get("requests") or {}).get("storage")
    return request_int_value(value) if value is not None else 0


def storage_capacity(pv: dict) -> int:
    value = (spec(pv).get("capacity") or {}).get("storage")
    return int_value(value) if value is not None else 0


def check_node_affinity(pv: dict, node_labels: dict) -> bool:
    """``CheckNodeAffinity``: the PV's required node affinity against the node's labels only
    (a node built from labels: ``matchFields`` on the name never match)."""
    affinity = spec(pv).get("nodeAffinity")
    if not affinity or affinity.get("required") is None:
        return True
    return NodeSelector(affinity["required"]).matches("", node_labels)


def is_volume_bound_to_claim(pv: dict, pvc: dict) -> bool:
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    m = meta(pvc)
    if ref.get("name") != m.get("name") or ref.get("namespace") != m.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == m.get("uid")


def _volume_mode(obj: dict) -> str:
    return spec(obj).get("volumeMode") or "Filesystem"


def check_access_modes(pvc: dict, pv: dict) -> bool:
    offered = set(spec(pv).get("accessModes") or ())
    return all(mode in offered for mode in spec(pvc).get("accessModes") or ())


def find_matching_volume(
    pvc: dict, volumes: Iterable[dict], node_labels: dict | None, excluded: set[str]
) -> dict | None:
    """``FindMatchingVolume`` on the scheduler path (a node, delayed binding): a PV pre-bound
    to the claim if its node affinity fits, else the smallest Available PV of the claim's class
    with the capacity, volume mode, selector, access modes and node affinity it asks for."""
    requested = storage_request(pvc)
    requested_class = claim_class(pvc)
    selector_spec = spec(pvc).get("selector")
    selector = LabelSelector(selector_spec) if selector_spec is not None else None
    smallest: dict | None = None
    smallest_size = 0
    for pv in volumes:
        name = meta(pv).get("name", "")
        if name in excluded:
            continue
        bound_here = is_volume_bound_to_claim(pv, pvc)
        if spec(pv).get("claimRef") and not bound_here:
            continue
        size = storage_capacity(pv)
        if size < requested:
            continue
        if _volume_mode(pv) != _volume_mode(pvc):
            continue
        if meta(pv).get("deletionTimestamp"):
            continue
        affinity_ok = node_labels is None or check_node_affinity(pv, node_labels)
        if bound_here:
            return pv if affinity_ok else None
        if (pv.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
            continue
        if volume_class(pv) != requested_class:
            continue
        if not affinity_ok:
            continue
        if node_labels is not None and not check_access_modes(pvc, pv):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = pv, size
    return smallest


def local_volume_node_names(pv: dict) -> set[str]:
    """``GetLocalPersistentVolumeNodeNames``: hostnames a PV's required affinity pins it to
    (``kubernetes.io/hostname In`` per term, intersected within a term, united over terms)."""
    affinity = spec(pv).get("nodeAffinity") or {}
    required = affinity.get("required")
    if not required:
        return set()
    result: set[str] = set()
    for term in required.get("nodeSelectorTerms") or ():
        nodes: set[str] | None = None
        for expr in term.get("matchExpressions") or ():
            if expr.get("key") == HOSTNAME_LABEL and expr.get("operator") == "In":
                values = set(expr.get("values") or ())
                nodes = values if nodes is None else nodes & values
        if nodes:
            result |= nodes
    return result


def match_topology_selector_terms(terms: list[dict] | None, labels: dict) -> bool:
    """``MatchTopologySelectorTerms``: no terms match everything; terms are ORed, a term's
    ``matchLabelExpressions`` ANDed, each ``key In values``."""
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if not expressions:
            continue  # an empty term selects nothing
        if all(labels.get(e.get("key")) in set(e.get("values") or ()) for e in expressions):
            return True
    return False
