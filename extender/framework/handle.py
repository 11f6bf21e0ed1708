"""The typed Handle: everything a plugin may use besides its args (upstream
``pkg/scheduler/framework/interface.go``, ``Handle``).

A plugin factory is called as ``factory(args, handle)``; the handle is the profile's
:class:`~extender.framework.runtime.Framework`, which implements :class:`Handle`. What the
handle reaches outside the core (API client, listers, event recorder, metrics, extenders,
nominator) arrives in one :class:`Services` value built by the composition root, so nothing is
patched in after construction and no plugin has to probe the handle with ``getattr``.

Listers: a plugin class declares the kinds it reads in ``reads`` (a tuple of :class:`Kind`);
the composition root starts one watch-fed informer per kind declared by an enabled plugin and
``handle.lister(kind)`` answers from its store. Objects are the API's JSON dicts, shared with
the informer: read them, never mutate them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .node_info import NodeInfo
from .pod_info import PodInfo
from .results import NominatingInfo

if TYPE_CHECKING:
    from .cycle_state import CycleState
    from .runtime.waiting_pods import WaitingPod
    from .status import Status


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource a plugin reads: API group, version, plural resource name, scope."""

    group: str
    version: str
    resource: str
    namespaced: bool = True

    @property
    def path(self) -> str:
        """The collection's URL path, e.g. ``/apis/apps/v1/replicasets``."""
        if self.group in ("", "core"):
            return f"/api/{self.version}/{self.resource}"
        return f"/apis/{self.group}/{self.version}/{self.resource}"

    @property
    def name(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def __str__(self) -> str:
        return f"{self.group or 'core'}/{self.version}/{self.resource}"


# Assigned pods: the cache's NodeInfos hold them; a plugin that counts pods on nodes declares
# this so that a process without a pod watch (an offline extender) refuses to run it.
PODS = Kind("", "v1", "pods")
NAMESPACES = Kind("", "v1", "namespaces", namespaced=False)
SERVICES = Kind("", "v1", "services")
REPLICATION_CONTROLLERS = Kind("", "v1", "replicationcontrollers")
CONFIG_MAPS = Kind("", "v1", "configmaps")
REPLICA_SETS = Kind("apps", "v1", "replicasets")
STATEFUL_SETS = Kind("apps", "v1", "statefulsets")
POD_DISRUPTION_BUDGETS = Kind("policy", "v1", "poddisruptionbudgets")
# Storage (the volume plugins: VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits).
PERSISTENT_VOLUMES = Kind("", "v1", "persistentvolumes", namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Kind("", "v1", "persistentvolumeclaims")
STORAGE_CLASSES = Kind("storage.k8s.io", "v1", "storageclasses", namespaced=False)
CSI_NODES = Kind("storage.k8s.io", "v1", "csinodes", namespaced=False)
CSI_DRIVERS = Kind("storage.k8s.io", "v1", "csidrivers", namespaced=False)
CSI_STORAGE_CAPACITIES = Kind("storage.k8s.io", "v1", "csistoragecapacities")
# Dynamic Resource Allocation (the DynamicResources plugin), resource.k8s.io/v1.
DEVICE_CLASSES = Kind("resource.k8s.io", "v1", "deviceclasses", namespaced=False)
RESOURCE_SLICES = Kind("resource.k8s.io", "v1", "resourceslices", namespaced=False)
RESOURCE_CLAIMS = Kind("resource.k8s.io", "v1", "resourceclaims")

# Kinds the cache itself feeds from (not served by ``Handle.lister``).
CACHE_KINDS = frozenset({PODS, NAMESPACES})


@runtime_checkable
class Lister(Protocol):
    """Read access to a watch-fed store of one kind."""

    def list(self, namespace: str | None = None) -> list[dict]: ...

    def get(self, namespace: str, name: str) -> dict | None: ...


class EmptyLister:
    """The lister of a kind nothing watches (offline, or no plugin declared it)."""

    def list(self, namespace: str | None = None) -> list[dict]:
        return []

    def get(self, namespace: str, name: str) -> dict | None:
        return None


class Nominator(Protocol):
    """Pods nominated to nodes by preemption (upstream ``PodNominator``)."""

    def add_nominated_pod(
        self, info: PodInfo, nominating: NominatingInfo | None = None
    ) -> None: ...

    def delete_nominated_pod_if_exists(self, pod: dict) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def has_nominated_pods(self) -> bool: ...


class NoNominator:
    """No nominations (the extender service: kube-scheduler keeps its own)."""

    def add_nominated_pod(self, info: PodInfo, nominating: NominatingInfo | None = None) -> None:
        pass

    def delete_nominated_pod_if_exists(self, pod: dict) -> None:
        pass

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []

    def has_nominated_pods(self) -> bool:
        return False


class EventRecorder(Protocol):
    """Writes ``events.k8s.io/v1`` Events about a pod; never blocks the caller."""

    def record_event(
        self, pod: dict, event_type: str, reason: str, action: str, note: str
    ) -> None: ...


class NoEvents:
    def record_event(self, pod: dict, event_type: str, reason: str, action: str, note: str) -> None:
        pass


class Client(Protocol):
    """The API writes plugins make (upstream ``ClientSet``, as far as plugins use it).

    Each method raises on failure (an ``extender.kube`` error); a plugin turns that into a
    Status.
    """

    def bind(self, pod: dict, node_name: str) -> None: ...

    def delete_pod(
        self,
        namespace: str,
        name: str,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict | None: ...

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict | None: ...

    # ResourceClaims (DynamicResources: Reserve's allocation written in PreBind, PostFilter's
    # deallocation, Unreserve's release). The claim's resourceVersion guards each update.
    def get_resource_claim(self, namespace: str, name: str) -> dict | None: ...

    def create_resource_claim(self, namespace: str, claim: dict) -> dict: ...

    def delete_resource_claim(self, namespace: str, name: str) -> None: ...

    def update_resource_claim(self, claim: dict) -> dict: ...

    def update_resource_claim_status(self, claim: dict) -> dict: ...

    def patch_resource_claim_status(self, namespace: str, name: str, patch: dict) -> dict: ...


class Metrics(Protocol):
    """Per-plugin observations (Prometheus in the shells; no-ops by default)."""

    def preemption(self, victims: int) -> None: ...

    def plugin_error(self, plugin: str, point: str) -> None: ...


class NoMetrics:
    def preemption(self, victims: int) -> None:
        pass

    def plugin_error(self, plugin: str, point: str) -> None:
        pass


# An extender's prioritize scores (``k8s.io/kube-scheduler/extender/v1``, MaxExtenderPriority).
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


class Extender(Protocol):
    """An HTTP extender as the core calls it (upstream ``framework.Extender``).

    ``filter`` returns (kept nodes, failed node -> reason, failed-and-unresolvable node ->
    reason); ``prioritize`` node -> score in ``0..MAX_EXTENDER_PRIORITY``;
    ``process_preemption`` gets node -> (victim pods, PDB violations) and answers the candidates it
    keeps as node -> (victim UIDs, PDB violations). Each raises on failure;
    ``ignorable`` says whether the scheduler may go on without it.
    """

    name: str
    weight: int
    ignorable: bool

    def is_interested(self, pod: dict) -> bool: ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    def filter(
        self, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]: ...

    def prioritize(self, pod: dict, nodes: list[NodeInfo]) -> dict[str, int]: ...

    def process_preemption(
        self, pod: dict, node_to_victims: dict[str, tuple[list[dict], int]]
    ) -> dict[str, tuple[list[str], int]]: ...

    def bind(self, pod: dict, node_name: str) -> None: ...


@dataclass
class Services:
    """What a profile's handle reaches outside the core; every field has a harmless default,
    so tests and the offline extender build a handle with ``Services()``."""

    client: Client | None = None
    event_recorder: EventRecorder = field(default_factory=NoEvents)
    nominator: Nominator = field(default_factory=NoNominator)
    metrics: Metrics = field(default_factory=NoMetrics)
    extenders: Sequence[Extender] = ()
    listers: Callable[[Kind], Lister] = lambda kind: EmptyLister()
    namespace_labels: Callable[[str], dict | None] = lambda namespace: None
    rng: random.Random = field(default_factory=random.Random)


class Handle(Protocol):
    """What a plugin gets at construction (upstream ``framework.Handle``)."""

    profile_name: str
    client: Client | None
    event_recorder: EventRecorder
    nominator: Nominator
    metrics: Metrics
    extenders: Sequence[Extender]
    rng: random.Random

    def lister(self, kind: Kind) -> Lister: ...

    def namespace_labels(self, namespace: str) -> dict | None: ...

    def plugin(self, name: str) -> object | None: ...

    # Waiting pods (Permit).
    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    # Plugins runner (preemption's dry runs).
    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def run_filter_plugins(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None: ...


def reads_of(plugin_class: type) -> tuple[Kind, ...]:
    """The kinds a plugin class declares it reads (``reads``; none by default)."""
    return tuple(getattr(plugin_class, "reads", ()))
