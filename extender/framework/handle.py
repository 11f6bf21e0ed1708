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

Shared state: what upstream's handle offers as process-wide managers (``SharedDRAManager()``,
``PodGroupManager()``) is here one slot, ``handle.shared(key)``: a :class:`SharedKey` names an
object and how to build it, and every profile built on the same :class:`Services` gets the same
object (DynamicResources' claim tracker is one).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from .features import DEFAULT_FEATURES, Features
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


_T = TypeVar("_T")


@dataclass(frozen=True, eq=False)
class SharedKey(Generic[_T]):
    """Names one object the profiles of a process share, and how to build it.

    ``build(handle)`` runs once per :class:`Services`, with the handle of the first plugin that
    asks; it must not call back into ``handle.shared``. Keys compare by identity: declare each
    one once, at module level.
    """

    name: str
    build: Callable[[Handle], _T]


class SharedState:
    """The objects built for :class:`SharedKey` s, one per key, shared by every profile of
    one :class:`Services` (upstream's ``SharedDRAManager``, one per scheduler). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[SharedKey[Any], Any] = {}

    def get(self, key: SharedKey[_T], handle: Handle) -> _T:
        """The object for ``key``, built by ``key.build(handle)`` on the first call."""
        with self._lock:
            if key not in self._objects:
                self._objects[key] = key.build(handle)
            return cast(_T, self._objects[key])


@dataclass
class Services:
    """What a profile's handle reaches outside the core; every field has a harmless default,
    so tests and the offline extender build a handle with ``Services()``. The composition root
    builds one per process and gives it to every profile, so ``shared`` is process-wide."""

    client: Client | None = None
    event_recorder: EventRecorder = field(default_factory=NoEvents)
    nominator: Nominator = field(default_factory=NoNominator)
    metrics: Metrics = field(default_factory=NoMetrics)
    extenders: Sequence[Extender] = ()
    listers: Callable[[Kind], Lister] = lambda kind: EmptyLister()
    namespace_labels: Callable[[str], dict | None] = lambda namespace: None
    rng: random.Random = field(default_factory=random.Random)
    shared: SharedState = field(default_factory=SharedState)
    features: Features = DEFAULT_FEATURES


class Handle(Protocol):
    """What a plugin gets at construction (upstream ``framework.Handle``), the second argument
    of its factory; never ``None``. Keep it and use it from the extension points: the
    constructor may store it but should not call it (the profile is still being built, so
    ``plugin(name)`` may not know every plugin yet).
    """

    profile_name: str
    """The scheduler name of the profile this plugin runs in (upstream ``ProfileName``)."""

    client: Client | None
    """The API writes a plugin may make (upstream ``ClientSet``, as far as plugins use it);
    ``None`` when the process has no API client (the offline extender, the testing kit): a
    plugin that writes checks, and answers an Error status then."""

    event_recorder: EventRecorder
    """Writes Events about a pod (upstream ``EventRecorder``); never blocks. A no-op when the
    process records no events."""

    nominator: Nominator
    """Pods nominated to nodes by preemption (upstream ``PodNominator``). Empty behind
    kube-scheduler (the extender service), which keeps its own."""

    metrics: Metrics
    """Per-plugin observations (Prometheus in the shells, no-ops otherwise)."""

    extenders: Sequence[Extender]
    """The HTTP extenders the scheduler calls, in config order (upstream ``Extenders``); empty
    in the extender service."""

    features: Features
    """The process's feature gates (upstream passes ``feature.Features`` to each factory):
    e.g. ``handle.features.topology_aware_workload_scheduling``. Read-only."""

    rng: random.Random
    """The profile's random source (ties, preemption's offset): seeded in tests, so that a
    plugin's random choice is reproducible. Share it; do not reseed it."""

    def lister(self, kind: Kind) -> Lister:
        """The watch-fed store of ``kind`` (upstream ``SharedInformerFactory`` listers). Only
        kinds some enabled plugin declares in ``reads`` are watched; any other kind lists
        empty. Objects are the informer's: read them, never mutate them. May lag the API
        server; PODS and NAMESPACES feed the snapshot instead (use the NodeInfos), except that
        the standalone scheduler also answers PODS here with every pod not finished, pending
        ones included (the extender lists none: it sees pods once they are assigned)."""
        ...

    def namespace_labels(self, namespace: str) -> dict | None:
        """The labels of ``namespace`` (``None``: unknown, or NAMESPACES not watched)."""
        ...

    def plugin(self, name: str) -> object | None:
        """Another plugin of this profile by name (``None``: not enabled in it)."""
        ...

    def shared(self, key: SharedKey[_T]) -> _T:
        """The object ``key`` names, shared by every profile of this process (upstream
        ``SharedDRAManager``, ``PodGroupManager``): built by ``key.build(handle)`` on the
        first call for the key, then the same object for every plugin and profile built on the
        same :class:`Services`. Guard its own state: profiles call it concurrently."""
        ...

    # Waiting pods (Permit).
    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod with ``uid`` waiting at Permit in this profile, or ``None`` (upstream
        ``GetWaitingPod``)."""
        ...

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        """Call ``fn`` for each pod waiting at Permit (upstream ``IterateOverWaitingPods``)."""
        ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the pod with ``uid`` if it waits at Permit; whether it was waiting (upstream
        ``RejectWaitingPod``)."""
        ...

    # Plugins runner (preemption's dry runs; upstream ``PluginsRunner``).
    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Every PreFilter plugin's ``add_pod`` on ``state``, as if ``pod_to_add`` ran on
        ``node_info``; the first failure as an Error status (upstream
        ``RunPreFilterExtensionAddPod``)."""
        ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Every PreFilter plugin's ``remove_pod`` on ``state``, as if ``pod_to_remove`` left
        ``node_info`` (upstream ``RunPreFilterExtensionRemovePod``)."""
        ...

    def run_filter_plugins(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None:
        """The profile's Filter plugins on one node, stopping at the first rejection
        (upstream ``RunFilterPlugins``); ``None``: the pod fits."""
        ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None:
        """As :meth:`run_filter_plugins`, counting the pods nominated to the node with at
        least the pod's priority as if they ran there (upstream
        ``RunFilterPluginsWithNominatedPods``)."""
        ...


def reads_of(plugin_class: type) -> tuple[Kind, ...]:
    """The kinds a plugin class declares it reads (``reads``; none by default)."""
    return tuple(getattr(plugin_class, "reads", ()))
