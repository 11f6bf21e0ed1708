"""Pod groups: the runtime state of each ``scheduling.k8s.io/v1alpha2`` PodGroup's member pods,
kept by the scheduler and read by the workload-aware plugins (kubernetes
``pkg/scheduler/backend/cache/podgroupstate.go`` and the cache's ``PodGroupStates()``, the
``PodGroupManager`` of the framework handle).

A pod is a member of the group named by its ``spec.schedulingGroup.podGroupName`` in its own
namespace (feature gate GenericWorkload). Each member is *unscheduled* (pending, not assumed),
*assumed* (the scheduler placed it and is binding it) or *assigned* (it has a node). The
standalone scheduler updates :class:`PodGroupStates` from its informers and its assume/forget
steps; plugins reach the same object with ``handle.shared(POD_GROUP_STATES)``. During a pod
group scheduling cycle the scheduler works on copies (``CycleState.pod_group_states``), which
are assumed into and thrown away, as upstream's snapshot copies are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .handle import Kind, SharedKey

if TYPE_CHECKING:
    from .handle import Handle
    from .node_info import NodeInfo

PODGROUPS = Kind("scheduling.k8s.io", "v1alpha2", "podgroups")

# The PodGroup status condition the scheduler writes (k8s.io/api ``scheduling/v1alpha2``).
POD_GROUP_SCHEDULED = "PodGroupScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


def pod_group_name(pod: dict) -> str | None:
    """The PodGroup ``pod`` belongs to (``spec.schedulingGroup.podGroupName``), or ``None``."""
    group = (pod.get("spec") or {}).get("schedulingGroup")
    if not isinstance(group, dict):
        return None
    name = group.get("podGroupName")
    return name if isinstance(name, str) and name else None


def pod_group_key(pod: dict) -> tuple[str, str] | None:
    """``(namespace, podGroupName)`` of a member pod, or ``None``."""
    name = pod_group_name(pod)
    if name is None:
        return None
    return ((pod.get("metadata") or {}).get("namespace") or "default", name)


def matching_scheduling_group(a: dict, b: dict) -> bool:
    """Both pods belong to the same scheduling group (upstream
    ``helper.MatchingSchedulingGroup``)."""
    key = pod_group_key(a)
    return key is not None and key == pod_group_key(b)


def gang_min_count(pod_group: dict) -> int | None:
    """``spec.schedulingPolicy.gang.minCount``, or ``None`` for a PodGroup without the Gang
    policy (Basic: its pods are scheduled as a group but need no quorum)."""
    policy = (pod_group.get("spec") or {}).get("schedulingPolicy") or {}
    gang = policy.get("gang")
    if not isinstance(gang, dict):
        return None
    count = gang.get("minCount")
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def _uid(pod: dict) -> str:
    meta = pod.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def _assigned(pod: dict) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


class PodGroupState:
    """One PodGroup's members, by uid. Not locked: :class:`PodGroupStates` guards the live
    ones, and a pod group cycle owns its copies."""

    __slots__ = ("all_pods", "unscheduled", "assumed", "assigned")

    def __init__(self) -> None:
        self.all_pods: dict[str, dict] = {}
        self.unscheduled: set[str] = set()
        self.assumed: dict[str, dict] = {}
        self.assigned: set[str] = set()

    def add_pod(self, pod: dict) -> None:
        """An informer add or update: a pod with a node is assigned, one without stays
        unscheduled unless the scheduler assumed it."""
        uid = _uid(pod)
        self.all_pods[uid] = pod
        if _assigned(pod):
            self.assigned.add(uid)
            self.unscheduled.discard(uid)
            self.assumed.pop(uid, None)
        elif uid not in self.assumed and uid not in self.assigned:
            self.unscheduled.add(uid)

    def delete_pod(self, uid: str) -> None:
        self.all_pods.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.pop(uid, None)
        self.assigned.discard(uid)

    def assume_pod(self, pod: dict) -> None:
        """The scheduler placed ``pod`` (its ``spec.nodeName`` set on this copy)."""
        uid = _uid(pod)
        stored = self.all_pods.get(uid)
        if stored is None:
            return
        if _assigned(stored):
            self.assigned.add(uid)
        else:
            self.assumed[uid] = pod
        self.unscheduled.discard(uid)

    def forget_pod(self, uid: str) -> None:
        stored = self.all_pods.get(uid)
        if stored is None:
            return
        self.assumed.pop(uid, None)
        if _assigned(stored):
            self.assigned.add(uid)
        else:
            self.unscheduled.add(uid)

    def copy(self) -> PodGroupState:
        clone = PodGroupState()
        clone.all_pods = dict(self.all_pods)
        clone.unscheduled = set(self.unscheduled)
        clone.assumed = dict(self.assumed)
        clone.assigned = set(self.assigned)
        return clone

    # -- what plugins read (upstream ``fwk.PodGroupState``) ------------------------------

    def all_pods_count(self) -> int:
        return len(self.all_pods)

    def scheduled_pods_count(self) -> int:
        """Assumed plus assigned members."""
        return len(self.assumed) + len(self.assigned)

    def unscheduled_pods(self) -> list[dict]:
        return [self.all_pods[uid] for uid in self.unscheduled if uid in self.all_pods]

    def assumed_pod_uids(self) -> set[str]:
        return set(self.assumed)

    def scheduled_pods(self) -> list[dict]:
        pods = [self.all_pods[uid] for uid in self.assigned if uid in self.all_pods]
        return pods + list(self.assumed.values())


@dataclass(frozen=True)
class PodGroupInfo:
    """The PodGroup a pod group cycle schedules (upstream ``PodGroupInfo``): its key and the
    pending members the cycle tries."""

    namespace: str
    name: str
    pods: tuple[dict, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


@dataclass
class Placement:
    """A set of nodes a pod group is tried on as a whole (upstream ``fwk.Placement``): one
    topology domain, say. ``name`` is the domain; the parent placement has none."""

    name: str
    nodes: list[NodeInfo] = field(default_factory=list)


@dataclass
class PodGroupAssignments:
    """Where a placement's simulation put the group's pods (upstream ``PodGroupAssignments``):
    ``(pod, node name)`` for every pod that fit."""

    placement: Placement
    proposed: list[tuple[dict, str]] = field(default_factory=list)


@dataclass
class PlacementScore:
    """One placement's score from one plugin (upstream ``fwk.PlacementScore``)."""

    placement: Placement
    score: int = 0


class PodGroupStateNotFound(LookupError):
    """No member of the pod group is known."""


class PodGroupStates:
    """Every known PodGroup's state (upstream: the scheduler cache's pod group states). Thread
    safe: the informers, the scheduling loop and the binding cycles all update it. ``get``
    returns a copy, so a reader never sees a half-made change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[tuple[str, str], PodGroupState] = {}

    def _update(self, pod: dict, change: Callable[[PodGroupState], None], create: bool) -> None:
        key = pod_group_key(pod)
        if key is None:
            return
        with self._lock:
            state = self._groups.get(key)
            if state is None:
                if not create:
                    return
                state = self._groups[key] = PodGroupState()
            change(state)
            if not state.all_pods:
                del self._groups[key]

    def add_pod(self, pod: dict) -> None:
        """An informer's add (or an update that bound the pod)."""
        self._update(pod, lambda state: state.add_pod(pod), create=True)

    def update_pod(self, pod: dict) -> None:
        self._update(pod, lambda state: state.add_pod(pod), create=False)

    def remove_pod(self, pod: dict) -> None:
        self._update(pod, lambda state: state.delete_pod(_uid(pod)), create=False)

    def assume_pod(self, pod: dict) -> None:
        """The scheduler assumed ``pod``; a group not known yet starts with it (upstream)."""

        def assume(state: PodGroupState) -> None:
            if not state.all_pods:
                state.all_pods[_uid(pod)] = pod
            state.assume_pod(pod)

        self._update(pod, assume, create=True)

    def forget_pod(self, pod: dict) -> None:
        self._update(pod, lambda state: state.forget_pod(_uid(pod)), create=False)

    def get(self, namespace: str, name: str) -> PodGroupState:
        """A copy of the group's state; :class:`PodGroupStateNotFound` when no member is known
        (upstream's message)."""
        with self._lock:
            state = self._groups.get((namespace, name))
            if state is None:
                raise PodGroupStateNotFound(
                    f"pod group state not found for pod group {namespace}/{name}"
                )
            return state.copy()

    def groups(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._groups)


def _build_states(handle: Handle) -> PodGroupStates:
    return PodGroupStates()


POD_GROUP_STATES: SharedKey[PodGroupStates] = SharedKey("PodGroupStates", _build_states)
"""The process's :class:`PodGroupStates` (upstream ``Handle.PodGroupManager()``)."""
