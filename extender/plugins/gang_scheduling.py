"""GangScheduling (PreEnqueue, Permit): all-or-nothing for the pods of a PodGroup with the Gang
policy (kubernetes ``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go``;
feature gate GangScheduling, alpha, off by default; the default profile gains it when the gate
is on).

Reads: the pod's ``spec.schedulingGroup.podGroupName``, its PodGroup
(``scheduling.k8s.io/v1alpha2``, ``spec.schedulingPolicy.gang.minCount``) and the pod group
states (``handle.shared(POD_GROUP_STATES)``, or a pod group cycle's own copies in
``state.pod_group_states``). Mutates nothing it reads; it allows the group's pods waiting at
Permit and asks the scheduler to activate the group's unscheduled pods.

- PreEnqueue: a member waits outside the active queue until its PodGroup exists and, for a
  gang, until ``minCount`` members exist. A pod without a scheduling group, or whose group has
  no Gang policy, is not this plugin's business (``None``).
- Permit: a gang member waits (up to 5 minutes, upstream's ``permitTimeoutDuration``) until
  ``minCount`` members are assumed or bound; the pod that completes the quorum allows the
  others.
- Events: a member pod added, its PodGroup added (both immutable, so no update events).
"""

from __future__ import annotations

from extender.framework.cycle_state import CycleState
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import Handle
from extender.framework.podgroups import (
    POD_GROUP_STATES,
    PODGROUPS,
    PodGroupState,
    PodGroupStateNotFound,
    gang_min_count,
    matching_scheduling_group,
    pod_group_key,
)
from extender.framework.status import Code, Status, unresolvable

NAME = "GangScheduling"
# How long gang pods wait at Permit for the quorum before they are rejected.
PERMIT_TIMEOUT_SECONDS = 5 * 60.0

ERR_POD_GROUP_MISSING = 'waiting for pods\'s pod group "{name}" to appear in scheduling queue'
ERR_MIN_COUNT_NOT_CREATED = "waiting for minCount pods from a gang to appear in scheduling queue"
ERR_MIN_COUNT_NOT_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"


class GangScheduling:
    name = NAME
    reads = (PODGROUPS,)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.pod_groups = handle.lister(PODGROUPS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A new pod may complete a gang (schedulingGroup is immutable: no update event).
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD), self._after_pod_added),
            # The PodGroup a waiting gang needs (PodGroups are immutable: no update event).
            ClusterEventWithHint(
                ClusterEvent(Resource.POD_GROUP, ActionType.ADD), self._after_pod_group_added
            ),
        ]

    def _after_pod_added(self, pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
        if new is not None and matching_scheduling_group(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_pod_group_added(self, pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
        key = pod_group_key(pod)
        meta = (new or {}).get("metadata") or {}
        if key is not None and key == (meta.get("namespace"), meta.get("name")):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_enqueue(self, pod: dict) -> Status | None:
        key = pod_group_key(pod)
        if key is None:
            return None
        namespace, name = key
        group = self.pod_groups.get(namespace, name)
        if group is None:
            return unresolvable(ERR_POD_GROUP_MISSING.format(name=name))
        min_count = gang_min_count(group)
        if min_count is None:
            return None
        try:
            state = self.handle.shared(POD_GROUP_STATES).get(namespace, name)
        except PodGroupStateNotFound as exc:
            return Status.error(str(exc))
        if state.all_pods_count() < min_count:
            return unresolvable(ERR_MIN_COUNT_NOT_CREATED)
        return None

    def permit(self, state: CycleState, pod: dict, node_name: str) -> tuple[Status | None, float]:
        key = pod_group_key(pod)
        if key is None:
            return None, 0.0
        namespace, name = key
        group = self.pod_groups.get(namespace, name)
        if group is None:
            # Removed, most likely: an Error retries the pod once the group is back.
            return Status.error(f"failed to get podGroup {namespace}/{name}: not found"), 0.0
        min_count = gang_min_count(group)
        if min_count is None:
            return None, 0.0
        group_state = self._state(state, namespace, name)
        if group_state is None:
            return Status.error(f"pod group state not found for pod group {namespace}/{name}"), 0.0
        if group_state.scheduled_pods_count() < min_count:
            # Its unscheduled siblings may have been waiting for this pod: let them try.
            for sibling in group_state.unscheduled_pods():
                meta = sibling.get("metadata") or {}
                state.pods_to_activate[f"{meta.get('namespace')}/{meta.get('name')}"] = sibling
            return Status(Code.WAIT, ERR_MIN_COUNT_NOT_SCHEDULED), PERMIT_TIMEOUT_SECONDS
        # The quorum is met: this pod goes, and so do the others waiting for it.
        for uid in group_state.assumed_pod_uids():
            waiting = self.handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0

    def _state(self, state: CycleState, namespace: str, name: str) -> PodGroupState | None:
        """The pod group cycle's copy while one runs, else the live state."""
        if state.pod_group_states is not None:
            found: PodGroupState | None = state.pod_group_states.get((namespace, name))
            return found
        try:
            return self.handle.shared(POD_GROUP_STATES).get(namespace, name)
        except PodGroupStateNotFound:
            return None
