"""The volume binder (upstream ``volumebinding/binder.go``): which claims a node can bind or
provision (``FindPodVolumes``), assuming and reverting the chosen bindings, writing them to the
API and checking they took effect. Mixed into :class:`.plugin.VolumeBinding`, whose
cycle state it reads.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from extender.framework.handle import (
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Handle,
)
from extender.framework.labels import LabelSelector
from extender.framework.node_info import NodeInfo
from extender.framework.quantity import int_value, request_int_value

from ..volume_util import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    check_node_affinity,
    claim_class,
    claim_key,
    find_matching_volume,
    is_volume_bound_to_claim,
    local_volume_node_names,
    match_topology_selector_terms,
    meta,
    pod_claims,
    spec,
    storage_request,
)
from .assume_cache import AssumeCache, _rv

if TYPE_CHECKING:
    from .plugin import _State

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)


class _WriteClient(Protocol):
    def request(self, method: str, path: str, body: Any = None) -> Any: ...


@dataclass
class Binding:
    pv: dict
    pvc: dict


@dataclass
class PodVolumes:
    static_bindings: list[Binding] = field(default_factory=list)
    dynamic_provisions: list[dict] = field(default_factory=list)


def is_pvc_fully_bound(pvc: dict) -> bool:
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in (
        meta(pvc).get("annotations") or {}
    )


class Binder:
    """The binder's methods of :class:`.plugin.VolumeBinding`, a mixin: the plugin class
    supplies ``handle`` and ``cache``."""

    handle: Handle
    cache: AssumeCache | None

    def _cache(self) -> AssumeCache:
        if self.cache is None:
            self.cache = AssumeCache(
                self.handle.lister(PERSISTENT_VOLUMES), self.handle.lister(PERSISTENT_VOLUME_CLAIMS)
            )
        return self.cache

    def _eligible_nodes(self, bound: list[dict]) -> set[str] | None:
        """``GetEligibleNodes``: the hostnames local PVs of bound claims are pinned to."""
        eligible: set[str] | None = None
        cache = self._cache()
        for pvc in bound:
            pv = cache.get_pv(spec(pvc).get("volumeName", ""))
            if pv is None:
                continue
            names = local_volume_node_names(pv)
            if names:
                eligible = set(names) if eligible is None else eligible & names
        return eligible

    def find_pod_volumes(self, data: _State, node_info: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the bindings and provisionings for this node, or the reasons
        the node cannot have them. Raises ValueError for upstream's errors."""
        node_name = node_info.name
        labels = node_info.labels
        volumes = PodVolumes()
        bound_ok = unbound_ok = sufficient = pvs_found = True
        cache = self._cache()
        for pvc in data.bound:
            pv = cache.get_pv(spec(pvc).get("volumeName", ""))
            if pv is None:
                pvs_found = False
                break
            if not check_node_affinity(pv, labels):
                bound_ok = False
                break
        if data.delayed:
            to_match, to_provision = [], []
            for pvc in data.delayed:
                selected = (meta(pvc).get("annotations") or {}).get(ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node_name:
                        unbound_ok = False
                        return volumes, _reasons(bound_ok, unbound_ok, sufficient, pvs_found)
                    to_provision.append(pvc)
                else:
                    to_match.append(pvc)
            if to_match:
                chosen: set[str] = set()
                unbound_ok = True
                for pvc in sorted(to_match, key=storage_request):
                    pv = find_matching_volume(pvc, cache.list_pvs(claim_class(pvc)), labels, chosen)
                    if pv is None:
                        to_provision.append(pvc)
                        unbound_ok = False
                        continue
                    chosen.add(meta(pv)["name"])
                    volumes.static_bindings.append(Binding(pv, pvc))
            if to_provision:
                unbound_ok, sufficient, provisions = self._check_provisions(to_provision, labels)
                volumes.dynamic_provisions = provisions
        return volumes, _reasons(bound_ok, unbound_ok, sufficient, pvs_found)

    def _check_provisions(self, claims: list[dict], labels: dict) -> tuple[bool, bool, list[dict]]:
        """``checkVolumeProvisions``: (provisioning possible, storage sufficient, claims)."""
        provisions = []
        classes = self.handle.lister(STORAGE_CLASSES)
        for pvc in claims:
            class_name = claim_class(pvc)
            if not class_name:
                key = claim_key(meta(pvc).get("namespace", ""), meta(pvc).get("name", ""))
                raise ValueError(f'no class for claim "{key}"')
            storage_class = classes.get("", class_name)
            if storage_class is None:
                raise ValueError(f'failed to find storage class "{class_name}"')
            provisioner = storage_class.get("provisioner") or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(storage_class.get("allowedTopologies"), labels):
                return False, True, []
            if not self._has_enough_capacity(provisioner, pvc, storage_class, labels):
                return True, False, []
            provisions.append(pvc)
        return True, True, provisions

    def _has_enough_capacity(
        self, provisioner: str, pvc: dict, storage_class: dict, labels: dict
    ) -> bool:
        requests = (spec(pvc).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return True
        driver = self.handle.lister(CSI_DRIVERS).get("", provisioner)
        if driver is None or not spec(driver).get("storageCapacity"):
            return True
        # A size beyond int64 must not equal a saturated maximumVolumeSize: no capacity has it.
        size = request_int_value(requests["storage"])
        class_name = meta(storage_class).get("name", "")
        for capacity in self.handle.lister(CSI_STORAGE_CAPACITIES).list():
            if capacity.get("storageClassName") != class_name:
                continue
            limit = capacity.get("maximumVolumeSize", capacity.get("capacity"))
            if limit is None or int_value(limit) < size:
                continue
            topology = capacity.get("nodeTopology")
            if topology is None or not LabelSelector(topology).matches(labels):
                continue
            return True
        return False

    def _assume(self, pod: dict, node_name: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: True when every claim is already fully bound."""
        cache = self._cache()
        namespace = meta(pod).get("namespace", "")
        if all(
            (pvc := cache.get_pvc(namespace, name)) is not None and is_pvc_fully_bound(pvc)
            for name, _ in pod_claims(pod)
        ):
            return True
        bindings = []
        for binding in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                cache.assume_pv(new_pv)
            bindings.append(Binding(new_pv, binding.pvc))
        provisions = []
        for pvc in volumes.dynamic_provisions:
            clone = copy.deepcopy(pvc)
            clone["metadata"].setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
            cache.assume_pvc(clone)
            provisions.append(clone)
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def _revert(self, bindings: list[Binding], claims: list[dict]) -> None:
        cache = self._cache()
        for binding in bindings:
            cache.restore_pv(meta(binding.pv)["name"])
        for pvc in claims:
            cache.restore_pvc(claim_key(meta(pvc).get("namespace", ""), meta(pvc)["name"]))

    def _bind_api_update(self, client: _WriteClient, volumes: PodVolumes) -> None:
        """``bindAPIUpdate``: PUT the prebound PVs, then the claims to provision; what was not
        written is reverted in the cache."""
        done_pvs = done_pvcs = 0
        bindings, claims = volumes.static_bindings, volumes.dynamic_provisions
        try:
            for binding in bindings:
                name = meta(binding.pv)["name"]
                binding.pv = client.request("PUT", f"/api/v1/persistentvolumes/{name}", binding.pv)
                done_pvs += 1
            for i, pvc in enumerate(claims):
                m = meta(pvc)
                path = f"/api/v1/namespaces/{m.get('namespace', '')}/persistentvolumeclaims"
                claims[i] = client.request("PUT", f"{path}/{m['name']}", pvc)
                done_pvcs += 1
        finally:
            self._revert(bindings[done_pvs:], claims[done_pvcs:])

    def _check_bindings(
        self, node_labels: dict | None, node_name: str, volumes: PodVolumes
    ) -> bool:
        """``checkBindings`` on the API objects (the informers' stores, not the assumed
        view): True when every claim is fully bound; ValueError when scheduling must retry."""
        pvs = self.handle.lister(PERSISTENT_VOLUMES)
        pvcs = self.handle.lister(PERSISTENT_VOLUME_CLAIMS)
        for binding in volumes.static_bindings:
            name = meta(binding.pv)["name"]
            pv = pvs.get("", name)
            if pv is None:
                raise ValueError(f'failed to check binding: PV "{name}" not found')
            m = meta(binding.pvc)
            pvc = pvcs.get(m.get("namespace", ""), m.get("name", ""))
            if pvc is None:
                raise ValueError(f'failed to check binding: PVC "{m.get("name", "")}" not found')
            if _rv(binding.pv) > _rv(pv):
                return False  # our write has not reached the informer yet
            if node_labels is not None and not check_node_affinity(pv, node_labels):
                raise ValueError(f'pv "{name}" node affinity doesn\'t match node "{node_name}"')
            ref = spec(pv).get("claimRef")
            if not ref or not ref.get("uid"):
                raise ValueError(f'ClaimRef got reset for pv "{name}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for claim in volumes.dynamic_provisions:
            m = meta(claim)
            pvc = pvcs.get(m.get("namespace", ""), m.get("name", ""))
            if pvc is None:
                raise ValueError(
                    f'failed to check provisioning pvc: PVC "{m.get("name")}" not found'
                )
            if _rv(claim) > _rv(pvc):
                return False
            selected = (meta(pvc).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if selected != node_name:
                raise ValueError(f'provisioning failed for PVC "{m.get("name", "")}"')
            volume_name = spec(pvc).get("volumeName")
            if volume_name:
                pv = pvs.get("", volume_name)
                if pv is None:
                    return False  # not propagated yet
                if node_labels is not None and not check_node_affinity(pv, node_labels):
                    raise ValueError(
                        f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}"'
                    )
            if not is_pvc_fully_bound(pvc):
                return False
        return True


def _reasons(bound_ok: bool, unbound_ok: bool, sufficient: bool, pvs_found: bool) -> list[str]:
    reasons = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not sufficient:
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
    if not pvs_found:
        reasons.append(ERR_REASON_PV_NOT_EXIST)
    return reasons


def bind_volume_to_claim(pv: dict, pvc: dict) -> tuple[dict, bool]:
    """``GetBindVolumeToClaim``: a copy of the PV with ``claimRef`` to the claim and the
    bound-by-controller annotation; whether anything changed."""
    dirty = False
    set_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone = copy.deepcopy(pv)
    ref = spec(pv).get("claimRef") or {}
    m = meta(pvc)
    if (
        not ref
        or ref.get("name") != m.get("name")
        or ref.get("namespace") != m.get("namespace")
        or ref.get("uid") != m.get("uid")
    ):
        clone.setdefault("spec", {})["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": m.get("namespace", ""),
            "name": m.get("name", ""),
            "uid": m.get("uid", ""),
            "apiVersion": "v1",
            "resourceVersion": m.get("resourceVersion", ""),
        }
        dirty = True
    annotations = clone.setdefault("metadata", {}).setdefault("annotations", {})
    if set_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return clone, dirty
