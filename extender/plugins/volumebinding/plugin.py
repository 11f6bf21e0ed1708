"""VolumeBinding (PreFilter, Filter, PreScore/Score, Reserve/Unreserve, PreBind): binds a pod's
PersistentVolumeClaims as part of scheduling (upstream
``pkg/scheduler/framework/plugins/volumebinding``, v1.36).

* PreFilter: every claim must exist (``persistentvolumeclaim "x" not found``), not be Lost or
  being deleted, and every unbound claim must be of a WaitForFirstConsumer class (else
  ``pod has unbound immediate PersistentVolumeClaims``); both UnschedulableAndUnresolvable. No
  claim: Skip. Bound claims whose PVs are pinned to hostnames restrict the cycle to those nodes.
* Filter (``FindPodVolumes``): bound PVs' node affinity must match the node; each unbound
  claim needs a matching Available static PV (class, capacity, volume mode, selector, access
  modes, node affinity; the smallest wins, one PV per claim) or else dynamic provisioning:
  a class provisioner (not ``kubernetes.io/no-provisioner``), the class's allowedTopologies,
  and, for a CSIDriver with ``storageCapacity: true``, a CSIStorageCapacity of the class that
  the node can reach and that is large enough.
* Score: only with the StorageCapacityScoring feature, alpha and off in v1.36: PreScore Skips.
* Reserve assumes the chosen bindings in an in-memory cache shared by cycles (so the next pod
  does not take the same PV), Unreserve restores it.
* PreBindPreFlight: Skip when Reserve found every claim bound, else Success (the standalone
  scheduler then sets the pod's ``nominatedNodeName`` before PreBind).
* PreBind (standalone scheduler only: the extender never reserves or binds) writes the PV's
  ``claimRef`` or the claim's ``volume.kubernetes.io/selected-node`` annotation, then polls
  the API objects every second until the claims are bound, failing on a reset claimRef,
  a dropped selected-node (provisioning failed) or after ``bindTimeoutSeconds`` (600).

One module (~710 lines) like every in-tree plugin here; the shared volume helpers are in
``volume_util.py``. Upstream splits the binder (``binder.go``) from the plugin.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Handle,
    Lister,
)
from extender.framework.labels import LabelSelector
from extender.framework.resources import int_value, request_int_value
from extender.framework.status import SKIP, Status, unresolvable
from extender.framework.types import NodeInfo, PreFilterResult

from ..volume_util import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    check_node_affinity,
    claim_class,
    claim_key,
    find_matching_volume,
    is_volume_bound_to_claim,
    local_volume_node_names,
    match_topology_selector_terms,
    meta,
    not_found,
    pod_claims,
    spec,
    storage_request,
    volume_class,
    volume_is_for_pod,
)

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_NO_POD_VOLUME_FOR_NODE = "no pod volume found for node"


class _WriteClient(Protocol):
    def request(self, method: str, path: str, body: Any = None) -> Any: ...


def _rv(obj: dict | None) -> int:
    try:
        return int(meta(obj or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class AssumeCache:
    """Assumed PVs and PVCs over the informers' stores (upstream ``AssumeCache``).

    An assumed object shadows the informer's until the informer holds a newer version of it
    (a higher resourceVersion) or the assumption is restored."""

    def __init__(self, pvs: Lister, pvcs: Lister) -> None:
        self.pvs = pvs
        self.pvcs = pvcs
        self._lock = threading.Lock()
        self._pv: dict[str, dict] = {}
        self._pvc: dict[str, dict] = {}

    def _current(self, store: dict[str, dict], key: str, api: dict | None) -> dict | None:
        assumed = store.get(key)
        if assumed is None:
            return api
        if api is None or _rv(api) > _rv(assumed):
            store.pop(key, None)  # the informer moved on (or the object is gone)
            return api
        return assumed

    def get_pv(self, name: str) -> dict | None:
        with self._lock:
            return self._current(self._pv, name, self.pvs.get("", name))

    def get_pvc(self, namespace: str, name: str) -> dict | None:
        with self._lock:
            key = claim_key(namespace, name)
            return self._current(self._pvc, key, self.pvcs.get(namespace, name))

    def list_pvs(self, class_name: str) -> list[dict]:
        out = []
        with self._lock:
            for pv in self.pvs.list():
                current = self._current(self._pv, meta(pv).get("name", ""), pv)
                if current is not None and volume_class(current) == class_name:
                    out.append(current)
        return out

    def assume_pv(self, pv: dict) -> None:
        with self._lock:
            self._pv[meta(pv)["name"]] = pv

    def assume_pvc(self, pvc: dict) -> None:
        with self._lock:
            self._pvc[claim_key(meta(pvc).get("namespace", ""), meta(pvc)["name"])] = pvc

    def restore_pv(self, name: str) -> None:
        with self._lock:
            self._pv.pop(name, None)

    def restore_pvc(self, key: str) -> None:
        with self._lock:
            self._pvc.pop(key, None)


@dataclass
class Binding:
    pv: dict
    pvc: dict


@dataclass
class PodVolumes:
    static_bindings: list[Binding] = field(default_factory=list)
    dynamic_provisions: list[dict] = field(default_factory=list)


@dataclass
class _State:
    bound: list[dict] = field(default_factory=list)
    delayed: list[dict] = field(default_factory=list)
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clone(self) -> _State:
        return self  # shared across clones, as upstream


def is_pvc_fully_bound(pvc: dict) -> bool:
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in (
        meta(pvc).get("annotations") or {}
    )


class VolumeBinding:
    name = NAME
    reads = (
        PERSISTENT_VOLUMES,
        PERSISTENT_VOLUME_CLAIMS,
        STORAGE_CLASSES,
        CSI_NODES,
        CSI_DRIVERS,
        CSI_STORAGE_CAPACITIES,
    )
    # Seconds between two checks of the claims in PreBind.
    poll_interval = 1.0

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        timeout = (args or {}).get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        if not isinstance(timeout, int) or timeout < 0:
            raise ValueError(
                "bindTimeoutSeconds: invalid BindTimeoutSeconds, should not be a negative value"
            )
        if (args or {}).get("shape"):
            raise ValueError("shape: Invalid value: feature StorageCapacityScoring is disabled")
        self.bind_timeout = timeout
        self.cache: AssumeCache | None = None

    def _cache(self) -> AssumeCache:
        if self.cache is None:
            self.cache = AssumeCache(
                self.handle.lister(PERSISTENT_VOLUMES), self.handle.lister(PERSISTENT_VOLUME_CLAIMS)
            )
        return self.cache

    # -- PreFilter ---------------------------------------------------------------------------

    def _claims(self, pod: dict) -> tuple[list[dict], Status | None]:
        """The pod's claims (assumed view), or the PreFilter rejection (``podHasPVCs``)."""
        cache = self._cache()
        namespace = meta(pod).get("namespace", "")
        claims = []
        for name, ephemeral in pod_claims(pod):
            pvc = cache.get_pvc(namespace, name)
            if pvc is None:
                if ephemeral:
                    return [], unresolvable(
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"'
                    )
                return [], unresolvable(not_found("persistentvolumeclaim", name))
            if (pvc.get("status") or {}).get("phase") == "Lost":
                return [], unresolvable(
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{spec(pvc).get("volumeName", "")}"'
                )
            if meta(pvc).get("deletionTimestamp"):
                return [], unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    return [], unresolvable(problem)
            claims.append(pvc)
        return claims, None

    def _is_delay_binding(self, pvc: dict) -> bool:
        class_name = claim_class(pvc)
        if not class_name:
            return False
        storage_class = self.handle.lister(STORAGE_CLASSES).get("", class_name)
        return (
            storage_class is not None
            and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
        )

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        claims, status = self._claims(pod)
        if status is not None:
            return None, status
        if not any(True for _ in pod_claims(pod)):
            state.write(STATE_KEY, _State(all_bound=True))
            return None, SKIP
        data = _State()
        immediate = False
        for pvc in claims:
            if is_pvc_fully_bound(pvc):
                data.bound.append(pvc)
            elif self._is_delay_binding(pvc) and not spec(pvc).get("volumeName"):
                data.delayed.append(pvc)
            else:
                immediate = True  # prebound claims count as immediate
        if immediate:
            return None, unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, data)
        eligible = self._eligible_nodes(data.bound)
        return (PreFilterResult(eligible) if eligible is not None else None), None

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

    def pre_filter_extensions(self) -> None:
        return None

    # -- Filter ------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            data: _State = state.read(STATE_KEY)
        except StateNotFound:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found', plugin=NAME)
        try:
            volumes, reasons = self.find_pod_volumes(data, node_info)
        except ValueError as exc:
            return Status.error(str(exc), plugin=NAME)
        if reasons:
            return unresolvable(*reasons)
        with data.lock:
            data.by_node[node_info.name] = volumes
        return None

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

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        # The scorer exists only with StorageCapacityScoring (alpha, off in v1.36).
        return SKIP

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    def score_extensions(self) -> None:
        return None

    # -- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        try:
            data: _State = state.read(STATE_KEY)
        except StateNotFound:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found', plugin=NAME)
        volumes = data.by_node.get(node_name)
        if volumes is None:
            data.all_bound = True
            return None
        data.all_bound = self._assume(pod, node_name, volumes)
        return None

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

    def unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if data is None:
            return
        volumes = data.by_node.get(node_name)
        if volumes is not None:
            self._revert(volumes.static_bindings, volumes.dynamic_provisions)

    def _revert(self, bindings: list[Binding], claims: list[dict]) -> None:
        cache = self._cache()
        for binding in bindings:
            cache.restore_pv(meta(binding.pv)["name"])
        for pvc in claims:
            cache.restore_pvc(claim_key(meta(pvc).get("namespace", ""), meta(pvc)["name"]))

    # -- PreBind ---------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """``PreBindPreFlight``: Skip when every claim is bound (Reserve found nothing to
        bind), Success when PreBind will bind or provision claims on ``node_name``."""
        try:
            data: _State = state.read(STATE_KEY)
        except StateNotFound:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found', plugin=NAME)
        if data.all_bound:
            return SKIP
        if node_name not in data.by_node:
            return Status.error(f'{ERR_NO_POD_VOLUME_FOR_NODE} "{node_name}"', plugin=NAME)
        return None

    def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        try:
            data: _State = state.read(STATE_KEY)
        except StateNotFound:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found', plugin=NAME)
        if data.all_bound:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            return Status.error(f'{ERR_NO_POD_VOLUME_FOR_NODE} "{node_name}"', plugin=NAME)
        client = self.handle.client
        if client is None:
            return Status.error("no API client to bind volumes with", plugin=NAME)
        try:
            self._bind_api_update(cast(_WriteClient, client), volumes)
        except Exception as exc:
            return Status.error(str(exc), plugin=NAME)
        deadline = time.monotonic() + self.bind_timeout
        while True:
            try:
                if self._check_bindings(self._node_labels(state, node_name), node_name, volumes):
                    return None
            except ValueError as exc:
                return Status.error(f"binding volumes: {exc}", plugin=NAME)
            if time.monotonic() + self.poll_interval > deadline:
                return Status.error("binding volumes: context deadline exceeded", plugin=NAME)
            time.sleep(self.poll_interval)

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

    @staticmethod
    def _node_labels(state: CycleState, node_name: str) -> dict | None:
        snapshot = state.snapshot
        info = snapshot.get(node_name) if snapshot is not None else None
        return info.labels if info is not None else None

    # -- events ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE),
                is_schedulable_after_csi_driver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_capacity_change,
            ),
        ]


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


def is_schedulable_after_pvc_change(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    if new is None or meta(new).get("namespace") != meta(pod).get("namespace"):
        return QueueingHint.QUEUE_SKIP
    names = {name for name, _ in pod_claims(pod)}
    return QueueingHint.QUEUE if meta(new).get("name") in names else QueueingHint.QUEUE_SKIP


def is_schedulable_after_storage_class_change(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    if old.get("allowedTopologies") != new.get("allowedTopologies"):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


def is_schedulable_after_csi_node_change(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    o = (meta(old).get("annotations") or {}).get(MIGRATED_PLUGINS_ANNOTATION)
    n = (meta(new).get("annotations") or {}).get(MIGRATED_PLUGINS_ANNOTATION)
    return QueueingHint.QUEUE if o != n else QueueingHint.QUEUE_SKIP


def is_schedulable_after_csi_driver_change(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    name = meta(new).get("name")
    for volume in spec(pod).get("volumes") or ():
        csi = volume.get("csi")
        if csi is None or csi.get("driver") != name:
            continue
        if spec(old).get("storageCapacity") and not spec(new).get("storageCapacity"):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _volume_limit(capacity: dict) -> int | None:
    value = capacity.get("maximumVolumeSize", capacity.get("capacity"))
    return int_value(value) if value is not None else None


def is_schedulable_after_capacity_change(
    pod: dict, old: dict | None, new: dict | None
) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    new_limit, old_limit = _volume_limit(new), _volume_limit(old)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
