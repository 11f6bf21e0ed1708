"""The PodGroup manager behind Coscheduling (scheduler-plugins
``pkg/coscheduling/core/core.go``, release v0.34.7): which PodGroup a pod belongs to, the
group's quorum and resource checks, and the members placed so far.

One manager per plugin instance, as upstream builds one per profile. It keeps, under its own
lock:

* the members of each group that reached Permit (``namespace/group`` -> pod name -> uid),
  dropped by Unreserve; together with the group's pods the pod lister shows bound to a node,
  they are the group's *assigned* pods (upstream feeds that set from the pod informer's adds of
  bound pods and from Permit);
* the groups whose ``minResources`` passed PreFilter recently (kept ``permitWaitingTimeSeconds``,
  or 3 s when that is 0, as upstream's ``permittedPG`` cache), so the next members skip the
  cluster-wide sum;
* the groups backed off after a failure (``podGroupBackoffSeconds``);
* when each group last failed, the queue's sort key in place of the group's age.

The clock is ``time.monotonic`` for the expiring entries and ``time.time`` for the failure
timestamps (they are compared with PodGroups' creation timestamps).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from extender.framework.cycle_state import CycleState
from extender.framework.handle import PODS, Handle
from extender.framework.node_info import NodeInfo
from extender.framework.resources import CPU, Resource
from extender.framework.resources import PODS as PODS_RESOURCE

from .podgroup import (
    POD_GROUP_LABEL,
    PODGROUPS,
    creation_timestamp,
    min_member,
    min_resources,
    namespaced_name,
    pod_group_full_name,
    pod_group_label,
)

# Permit's verdicts (upstream ``core.Status``).
POD_GROUP_NOT_SPECIFIED = "PodGroup not specified"
POD_GROUP_NOT_FOUND = "PodGroup not found"
SUCCESS = "Success"
WAIT = "Wait"

# PreFilter's rejections, verbatim upstream.
MSG_FAILED_RECENTLY = "podGroup {group} failed recently"
MSG_NOT_ENOUGH_SIBLINGS = (
    "pre-filter pod {pod} cannot find enough sibling pods, "
    "current pods number: {count}, minMember of group: {min_member}"
)
MSG_GATED_SIBLINGS = "pre-filter pod {pod} cannot proceed due to gated pods in the same PodGroup"
MSG_RESOURCE_GAP = "resource gap: {gap}"

PERMIT_STATE_KEY = "PermitCoscheduling"
"""CycleState key: set at the first member's Permit, asking to activate its siblings."""

# go-cache's default expiration of upstream's permitted-groups cache, used for a 0 TTL.
PERMITTED_DEFAULT_TTL = 3.0


class PreFilterRejection(Exception):
    """A PreFilter check failed; the message is the user-facing reason."""


class _Expiring:
    """Keys that expire after a TTL (upstream uses go-cache)."""

    def __init__(self, default_ttl: float, clock: Callable[[], float]) -> None:
        self._default_ttl = default_ttl
        self._clock = clock
        self._expiry: dict[str, float] = {}

    def add(self, key: str, ttl: float) -> None:
        self._expiry[key] = self._clock() + (ttl if ttl > 0 else self._default_ttl)

    def has(self, key: str) -> bool:
        expiry = self._expiry.get(key)
        if expiry is None:
            return False
        if expiry <= self._clock():
            self._expiry.pop(key, None)
            return False
        return True

    def delete(self, key: str) -> None:
        self._expiry.pop(key, None)


class PodGroupManager:
    def __init__(
        self,
        handle: Handle,
        schedule_timeout: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.handle = handle
        self.schedule_timeout = schedule_timeout
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._permitted = _Expiring(PERMITTED_DEFAULT_TTL, clock)
        self._backed_off = _Expiring(0.0, clock)
        self._last_failed: dict[str, float] = {}
        # namespace/group -> pod name -> pod uid, for the members that reached Permit.
        self._permitted_members: dict[str, dict[str, str]] = {}

    # -- lookups ------------------------------------------------------------------------

    def get_pod_group(self, pod: dict) -> tuple[str, dict | None]:
        """``(namespace/group, the PodGroup or None)``; ``("", None)`` for a pod without the
        label (upstream ``GetPodGroup``)."""
        name = pod_group_label(pod)
        if not name:
            return "", None
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        return f"{namespace}/{name}", self.handle.lister(PODGROUPS).get(namespace, name)

    def group_pods(self, namespace: str, group: str) -> list[dict]:
        """The pods of the namespace labelled with ``group``, pending or bound (upstream lists
        them from the scheduler's pod informer, which leaves out finished pods)."""
        return [
            pod
            for pod in self.handle.lister(PODS).list(namespace)
            if pod_group_label(pod) == group
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def _assigned(self, full_name: str) -> set[str]:
        """The group's assigned pod names (call with the lock held): members past Permit that
        still exist or still wait, and the group's pods bound to a node."""
        namespace, _, group = full_name.partition("/")
        pods = self.group_pods(namespace, group)
        present = {(p.get("metadata") or {}).get("name", "") for p in pods}
        members = self._permitted_members.get(full_name, {})
        for name, uid in list(members.items()):
            if name not in present and self.handle.get_waiting_pod(uid) is None:
                del members[name]  # deleted since (upstream's informer delete handler)
        bound = {
            (p.get("metadata") or {}).get("name", "")
            for p in pods
            if (p.get("spec") or {}).get("nodeName")
        }
        return set(members) | bound

    def assigned_count(self, full_name: str) -> int:
        with self._lock:
            return len(self._assigned(full_name))

    # -- queue sort ---------------------------------------------------------------------

    def creation_timestamp(self, pod: dict, default: float) -> float:
        """The group's sort time (upstream ``GetCreationTimestamp``): its last failure, else
        the PodGroup's creation time; ``default`` for a pod without a group or whose group is
        not found. POSIX seconds."""
        group = pod_group_label(pod)
        if not group:
            return default
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        with self._lock:
            failed = self._last_failed.get(f"{namespace}/{group}")
        if failed is not None:
            return failed
        pod_group = self.handle.lister(PODGROUPS).get(namespace, group)
        created = creation_timestamp(pod_group) if pod_group is not None else None
        return default if created is None else created

    def mark_failure(self, full_name: str) -> None:
        with self._lock:
            self._last_failed[full_name] = self._wall_clock()

    def clear_failure(self, full_name: str) -> None:
        with self._lock:
            self._last_failed.pop(full_name, None)

    # -- prefilter ----------------------------------------------------------------------

    def pre_filter(self, pod: dict, nodes: Iterable[NodeInfo]) -> None:
        """Raise :class:`PreFilterRejection` when the pod's group failed recently, has fewer
        pods than ``minMember`` (gated pods not counting), or when the cluster lacks its
        ``minResources`` (upstream ``PodGroupManager.PreFilter``). A pod without a group, or
        whose group is not found, passes (Permit rejects the latter)."""
        full_name, pod_group = self.get_pod_group(pod)
        if pod_group is None:
            return
        with self._lock:
            if self._backed_off.has(full_name):
                raise PreFilterRejection(MSG_FAILED_RECENTLY.format(group=full_name))
        meta = pod.get("metadata") or {}
        pods = self.group_pods(meta.get("namespace", ""), pod_group_label(pod))
        minimum = min_member(pod_group)
        gap = minimum - len(pods)
        if gap > 0:
            raise PreFilterRejection(
                MSG_NOT_ENOUGH_SIBLINGS.format(
                    pod=meta.get("name", ""), count=len(pods), min_member=minimum
                )
            )
        # A negative gap (more pods than minMember) tolerates that many gated pods.
        for sibling in pods:
            if (sibling.get("spec") or {}).get("schedulingGates"):
                gap += 1
            if gap > 0:
                raise PreFilterRejection(MSG_GATED_SIBLINGS.format(pod=meta.get("name", "")))
        wanted = min_resources(pod_group)
        if wanted is None:
            return
        with self._lock:
            if self._permitted.has(full_name):
                return
        request = _resource_request(pod_group, wanted, minimum)
        gap_text = check_cluster_resource(nodes, request, full_name, [*wanted, PODS_RESOURCE])
        if gap_text is not None:
            raise PreFilterRejection(MSG_RESOURCE_GAP.format(gap=gap_text))
        with self._lock:
            self._permitted.add(full_name, self.schedule_timeout)

    def delete_permitted(self, full_name: str) -> None:
        with self._lock:
            self._permitted.delete(full_name)

    def backoff(self, full_name: str, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self._backed_off.add(full_name, seconds)

    # -- permit / unreserve -------------------------------------------------------------

    def permit(self, state: CycleState, pod: dict) -> str:
        """Count the pod as placed and say whether its group's quorum is reached (upstream
        ``PodGroupManager.Permit``)."""
        full_name, pod_group = self.get_pod_group(pod)
        if not full_name:
            return POD_GROUP_NOT_SPECIFIED
        if pod_group is None:
            return POD_GROUP_NOT_FOUND
        meta = pod.get("metadata") or {}
        with self._lock:
            members = self._permitted_members.setdefault(full_name, {})
            members[meta.get("name", "")] = meta.get("uid", "")
            assigned = self._assigned(full_name)
            if len(assigned) >= min_member(pod_group):
                return SUCCESS
            if len(assigned) == 1:
                # The first member waits: it alone asks to activate its siblings (upstream
                # scheduler-plugins issue 682).
                state.write(PERMIT_STATE_KEY, True)
            return WAIT

    def unreserve(self, pod: dict) -> None:
        full_name = pod_group_full_name(pod)
        if not full_name:
            return
        with self._lock:
            members = self._permitted_members.get(full_name)
            if members is not None:
                members.pop((pod.get("metadata") or {}).get("name", ""), None)
                if not members:
                    del self._permitted_members[full_name]

    def activate_siblings(self, state: CycleState, pod: dict) -> None:
        """Ask the scheduler to move the pod's siblings to the active queue, when the first
        member's Permit asked for it (upstream ``ActivateSiblings``)."""
        group = pod_group_label(pod)
        if not group or not state.get(PERMIT_STATE_KEY):
            return
        meta = pod.get("metadata") or {}
        for sibling in self.group_pods(meta.get("namespace", ""), group):
            if (sibling.get("metadata") or {}).get("uid") != meta.get("uid"):
                state.pods_to_activate[namespaced_name(sibling)] = sibling


def _resource_request(pod_group: dict, wanted: dict, minimum: int) -> Resource:
    """``minResources`` with ``pods: minMember`` (upstream adds the pod count)."""
    try:
        request = Resource.from_list(wanted)
    except ValueError as exc:
        raise ValueError(
            f"PodGroup {namespaced_name(pod_group)}: spec.minResources: {exc}"
        ) from exc
    request.allowed_pod_number = minimum
    return request


def _node_free(info: NodeInfo, full_name: str) -> Resource:
    """What the node has left, not counting the group's own pods on it (upstream
    ``getNodeResource``)."""
    requested = info.requested.clone()
    pods = 0
    for pod_info in info.pods:
        if pod_group_full_name(pod_info.pod) == full_name:
            requested.sub(pod_info.requests)
        else:
            pods += 1
    free = info.allocatable.clone()
    free.sub(requested)
    free.allowed_pod_number = info.allocatable.allowed_pod_number - pods
    for name in requested.scalar:
        free.scalar.setdefault(name, 0)
    return free


def check_cluster_resource(
    nodes: Iterable[NodeInfo], request: Resource, full_name: str, names: Iterable[str]
) -> str | None:
    """Whether the nodes together have ``request`` (of the resources ``names``) free, the
    group's own pods not counting (upstream ``CheckClusterResource``): ``None`` if so, else
    the gap left after every node, as ``map[name:quantity ...]`` (sorted names, CPU in cores
    or ``m``)."""
    remaining = {name: request.get(name) for name in names}
    for info in nodes:
        if info.node is None:
            continue
        free = _node_free(info, full_name)
        for name in list(remaining):
            left = remaining[name] - free.get(name)
            if left <= 0:
                del remaining[name]
            else:
                remaining[name] = left
        if not remaining:
            return None
    return "map[" + " ".join(f"{n}:{_quantity(n, v)}" for n, v in sorted(remaining.items())) + "]"


def _quantity(name: str, value: int) -> str:
    if name == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    return str(value)


__all__ = [
    "POD_GROUP_LABEL",
    "PodGroupManager",
    "PreFilterRejection",
    "check_cluster_resource",
]
