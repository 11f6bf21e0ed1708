"""Coscheduling (QueueSort, PreFilter, PostFilter, Reserve/Unreserve, Permit): the pods of a
PodGroup are bound all together or not at all (scheduler-plugins
``pkg/coscheduling/coscheduling.go``, release v0.34.7, the one built on Kubernetes 1.34; its
main branch on 1.35 has the same semantics).

A pod joins a group with the label ``scheduling.x-k8s.io/pod-group: <name>``; the group is the
``scheduling.x-k8s.io/v1alpha1`` PodGroup ``<name>`` of the pod's namespace (its CRD ships in
``deploy/``). Pods without the label are scheduled as usual.

* QueueSort: higher priority first; then the earlier of the group's sort time (its last
  failure, else the PodGroup's creation time) or, for a pod without a group, its first
  attempt; then ``namespace/name``. Members of one group so come out together, and a group
  that just failed goes behind the others. Upstream compares the first attempt's time, which
  its queue sets when a pod first enters the active queue; here, where it is set when the pod
  is first popped, a pod never tried yet counts by the time it was queued.
* PreFilter (UnschedulableAndUnresolvable, so no preemption is tried): the group failed
  recently (``podGroupBackoffSeconds``); the namespace has fewer pods with the label than
  ``minMember`` (finished pods not counting); too many of them are gated; or the cluster,
  not counting the group's own pods, lacks ``minResources`` plus ``minMember`` pod slots.
  A pod whose PodGroup is not found passes.
* PostFilter: when a member fits nowhere and fewer than ``minMember`` members are placed,
  with more than ``podGroupRejectPercentage`` % of the quorum missing, every waiting member of
  the group is rejected, the group is backed off (when ``podGroupBackoffSeconds`` > 0 and it
  has its ``minMember`` pods) and marked failed for the queue sort. It never makes a pod
  schedulable (no preemption on the group's behalf).
* Permit: a pod whose PodGroup is not found is rejected; a member that makes the placed count
  reach ``minMember`` allows every waiting member and itself; any other member waits, at most
  the group's ``scheduleTimeoutSeconds``, else ``permitWaitingTimeSeconds`` (60), and is
  rejected at the timeout. The first waiting member moves its siblings to the active queue.
* Reserve does nothing; Unreserve (a member rejected, timed out, or failing later) forgets
  the member and rejects every waiting member of its group.
* Events: a pod added, a PodGroup added or updated.

Args (``CoschedulingArgs``): ``permitWaitingTimeSeconds`` (60), ``podGroupBackoffSeconds``
(0), ``podGroupRejectPercentage`` (10, 0..100).

Off unless a profile enables it, as upstream: enable it by name (multiPoint) and make it the
queueSort plugin in place of PrioritySort, in every profile (they share one queue).

PodGroup status: the scheduler side writes none. ``status.phase``, ``running``,
``succeeded``, ``failed``, ``occupiedBy`` and ``scheduleStartTime`` are written by
scheduler-plugins' PodGroup controller (``pkg/controller/podgroup.go``), a separate process
this project does not ship, so this plugin only reads PodGroups (get/list/watch).

Standalone scheduler (``kube-extender run``) only: it needs the pending pods (the pod lister)
and the Permit and binding cycle, which an extender behind kube-scheduler has neither of.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from extender.framework.cycle_state import CycleState
from extender.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from extender.framework.handle import PODS, Handle
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import QueuedPodInfo
from extender.framework.results import PostFilterResult, PreFilterResult
from extender.framework.status import Code, Status

from ..args import invalid, is_int, raise_errors
from .core import (
    POD_GROUP_NOT_FOUND,
    POD_GROUP_NOT_SPECIFIED,
    SUCCESS,
    WAIT,
    PodGroupManager,
    PreFilterRejection,
)
from .podgroup import (
    PODGROUP_EVENT_RESOURCE,
    PODGROUPS,
    PodGroupError,
    min_member,
    namespaced_name,
    pod_group_full_name,
    pod_group_label,
    wait_seconds,
)

log = logging.getLogger(__name__)

NAME = "Coscheduling"

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10

# User-facing reasons, verbatim upstream.
MSG_POD_GROUP_NOT_FOUND = POD_GROUP_NOT_FOUND  # Permit
MSG_CANNOT_FIND_POD_GROUP = "can not find pod group"  # PostFilter
MSG_GROUP_REJECTED = (
    "PodGroup {group} gets rejected due to Pod {pod} is unschedulable even after PostFilter"
)
MSG_REJECTED_IN_POST_FILTER = "optimistic rejection in PostFilter"  # waiting siblings
MSG_REJECTED_IN_UNRESERVE = "rejection in Unreserve"  # waiting siblings


class _WaitingPod(Protocol):
    """What Coscheduling uses of a pod waiting at Permit (``handle.iterate_over_waiting_pods``)."""

    pod: dict

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


def _int_arg(args: dict, key: str, default: int, errors: list[str]) -> int:
    value = args.get(key, default)
    if not is_int(value):
        errors.append(invalid(key, value, "must be an integer"))
        return default
    return value


def _parse_args(args: dict) -> tuple[int, int, int]:
    """Upstream ``ValidateCoschedulingArgs`` (its messages: ``must be greater than 0`` for a
    negative time): ``ValueError`` naming each bad field."""
    errors: list[str] = []
    wait = _int_arg(args, "permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_TIME_SECONDS, errors)
    backoff = _int_arg(args, "podGroupBackoffSeconds", DEFAULT_POD_GROUP_BACKOFF_SECONDS, errors)
    percentage = _int_arg(
        args, "podGroupRejectPercentage", DEFAULT_POD_GROUP_REJECT_PERCENTAGE, errors
    )
    if wait < 0:
        errors.append(invalid("permitWaitingTimeSeconds", wait, "must be greater than 0"))
    if backoff < 0:
        errors.append(invalid("podGroupBackoffSeconds", backoff, "must be greater than 0"))
    if not 0 <= percentage <= 100:
        errors.append(invalid("podGroupRejectPercentage", percentage, "must be between 0 and 100"))
    raise_errors(errors)
    return wait, backoff, percentage


class Coscheduling:
    name = NAME
    reads = (PODS, PODGROUPS)

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateCoschedulingArgs``: ``ValueError`` naming each bad field."""
        _parse_args(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        permit_wait, backoff, reject_percentage = _parse_args(args)
        self.handle = handle
        self.schedule_timeout = float(permit_wait)
        self.backoff_seconds = float(backoff)
        self.reject_threshold = reject_percentage / 100.0
        self.manager = PodGroupManager(handle, self.schedule_timeout)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(PODGROUP_EVENT_RESOURCE, ActionType.ADD | ActionType.UPDATE)
            ),
        ]

    # -- QueueSort ----------------------------------------------------------------------

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        if pa != pb:
            return pa > pb
        ta = self.manager.creation_timestamp(a.pod, _wall_time(a))
        tb = self.manager.creation_timestamp(b.pod, _wall_time(b))
        if ta == tb:
            return namespaced_name(a.pod) < namespaced_name(b.pod)
        return ta < tb

    # -- PreFilter / PostFilter ---------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            self.manager.pre_filter(pod, nodes)
        except PreFilterRejection as rejection:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(rejection))
        except ValueError as exc:  # a PodGroup field we cannot read
            return None, Status.error(str(exc))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def post_filter(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        full_name, pod_group = self.manager.get_pod_group(pod)
        if pod_group is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, MSG_CANNOT_FIND_POD_GROUP)
        try:
            minimum = min_member(pod_group)
        except PodGroupError as exc:
            return None, Status.error(str(exc))
        assigned = self.manager.assigned_count(full_name)
        if assigned >= minimum:
            # Enough members are placed already: the group is not at stake.
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        if (minimum - assigned) / minimum <= self.reject_threshold:
            # A small gap: later members may still make the quorum.
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        self._reject_waiting(pod, MSG_REJECTED_IN_POST_FILTER)
        if self.backoff_seconds > 0:
            namespace = (pod.get("metadata") or {}).get("namespace", "")
            if len(self.manager.group_pods(namespace, pod_group_label(pod))) >= minimum:
                self.manager.backoff(full_name, self.backoff_seconds)
        self.manager.delete_permitted(full_name)
        self.manager.mark_failure(full_name)
        name = (pod.get("metadata") or {}).get("name", "")
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE, MSG_GROUP_REJECTED.format(group=full_name, pod=name)
        )

    # -- Reserve / Permit ---------------------------------------------------------------

    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        full_name, pod_group = self.manager.get_pod_group(pod)
        if pod_group is None:
            return
        self.manager.unreserve(pod)
        self._reject_waiting(pod, MSG_REJECTED_IN_UNRESERVE)
        self.manager.delete_permitted(full_name)
        self.manager.mark_failure(full_name)

    def permit(self, state: CycleState, pod: dict, node_name: str) -> tuple[Status | None, float]:
        try:
            verdict = self.manager.permit(state, pod)
            if verdict == POD_GROUP_NOT_SPECIFIED:
                return None, 0.0
            if verdict == POD_GROUP_NOT_FOUND:
                return Status(Code.UNSCHEDULABLE, MSG_POD_GROUP_NOT_FOUND), 0.0
            if verdict == WAIT:
                wait = self.schedule_timeout
                _, pod_group = self.manager.get_pod_group(pod)
                group_wait = wait_seconds(pod_group, self.schedule_timeout)
                if group_wait != 0:
                    wait = group_wait
                self.manager.activate_siblings(state, pod)
                return Status(Code.WAIT), wait
        except PodGroupError as exc:
            return Status.error(str(exc)), 0.0
        assert verdict == SUCCESS
        full_name = pod_group_full_name(pod)
        self.manager.clear_failure(full_name)

        def allow(waiting: _WaitingPod) -> None:
            if pod_group_full_name(waiting.pod) == full_name:
                waiting.allow(NAME)

        self.handle.iterate_over_waiting_pods(allow)
        return None, 0.0

    def _reject_waiting(self, pod: dict, message: str) -> None:
        """Reject every pod of ``pod``'s group that waits at Permit."""
        group = pod_group_label(pod)
        namespace = (pod.get("metadata") or {}).get("namespace", "")

        def reject(waiting: _WaitingPod) -> None:
            meta = waiting.pod.get("metadata") or {}
            if meta.get("namespace", "") == namespace and pod_group_label(waiting.pod) == group:
                waiting.reject(NAME, message)

        self.handle.iterate_over_waiting_pods(reject)


def _wall_time(info: QueuedPodInfo) -> float:
    """The pod's first attempt (else its enqueue time) on the wall clock, to compare with
    PodGroups' creation timestamps (the queue keeps ``time.monotonic`` times)."""
    when = info.initial_attempt_timestamp
    if when is None:
        when = info.timestamp
    return when + (time.time() - time.monotonic())
