"""The VolumeBinding plugin (upstream ``volumebinding/volume_binding.go``): its args, the
cycle state, the extension points and the events that requeue a pod. The binder is mixed in
from :mod:`.binder`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import cast

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
)
from extender.framework.node_info import NodeInfo
from extender.framework.quantity import int_value
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unresolvable

from ..volume_util import (
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
    meta,
    not_found,
    pod_claims,
    spec,
    volume_is_for_pod,
)
from .assume_cache import AssumeCache
from .binder import Binder, PodVolumes, _WriteClient, is_pvc_fully_bound

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600

ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_NO_POD_VOLUME_FOR_NODE = "no pod volume found for node"


@dataclass
class _State:
    bound: list[dict] = field(default_factory=list)
    delayed: list[dict] = field(default_factory=list)
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clone(self) -> _State:
        return self  # shared across clones, as upstream


def _bind_timeout(args: dict) -> int:
    """``bindTimeoutSeconds``, defaulted and validated; a ``shape`` is refused."""
    timeout = (args or {}).get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
    if not isinstance(timeout, int) or timeout < 0:
        raise ValueError(
            "bindTimeoutSeconds: invalid BindTimeoutSeconds, should not be a negative value"
        )
    if (args or {}).get("shape"):
        raise ValueError("shape: Invalid value: feature StorageCapacityScoring is disabled")
    return timeout


class VolumeBinding(Binder):
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

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateVolumeBindingArgs`` (StorageCapacityScoring off): ``ValueError``
        naming the bad field."""
        _bind_timeout(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.bind_timeout = _bind_timeout(args)
        self.cache: AssumeCache | None = None

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

    def unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if data is None:
            return
        volumes = data.by_node.get(node_name)
        if volumes is not None:
            self._revert(volumes.static_bindings, volumes.dynamic_provisions)

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
