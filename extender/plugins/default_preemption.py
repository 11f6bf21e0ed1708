"""DefaultPreemption (PostFilter): evict lower-priority pods so that a pod that fits nowhere
can be nominated to a node (upstream
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``).

Contract:

* The plugin implements :class:`~extender.framework.preemption.PreemptionPlugin` (upstream
  ``preemption.Interface``) and hands PostFilter to the generic
  :class:`~extender.framework.preemption.Evaluator`, which picks the node, evicts and
  nominates. This module decides only which pods are victims on one node
  (:func:`select_victims_on_node`, PodDisruptionBudget-aware), whether a pod may preempt at
  all (:func:`pod_eligible_to_preempt_others`), how many candidates to look for, and validates
  the plugin args (``minCandidateNodesPercentage``, ``minCandidateNodesAbsolute``).
* Victim selection works on clones of the cycle state and NodeInfo; it never mutates the
  snapshot.
* The answer is the evaluator's; a non-success status message gets the ``preemption:``
  prefix (appended by the scheduler to the FitError text).
* With SchedulerAsyncPreemption (on by default, as v1.36) the victims' API calls run on a
  background thread; PreEnqueue keeps the preemptor out of activeQ while they are under way
  (UnschedulableAndUnresolvable, :data:`MSG_WAITING_FOR_PREEMPTION`), and the plugin
  registers Pod/Delete with a hint that always answers Skip: the event only lets the queue
  look at the gated preemptor, whose other rejectors (NodeResourcesFit...) decide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from extender.framework.cycle_state import CycleState
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import POD_DISRUPTION_BUDGETS, PODS, Handle
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo, pod_priority
from extender.framework.podgroup_preemption import PodGroupEvaluator
from extender.framework.podgroups import PODGROUPS, pod_group_key
from extender.framework.preemption import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
    Candidate,
    DisruptionBudgets,
    Evaluator,
    VictimsMap,
    nominated_node_name,
    pod_start_time,
    remove_victims,
)
from extender.framework.results import PostFilterResult
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status

NAME = "DefaultPreemption"

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

MSG_PREEMPTION_PREFIX = "preemption: "
MSG_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
# Gate TopologyAwareWorkloadScheduling: a member of a pod group (with topology constraints).
MSG_POD_GROUP_NOT_FOUND = "preemption: pod group for pod not found"
MSG_WORKLOAD_AWARE = "preemption: not eligible due to workload aware preemption enabled"
MSG_PLACEMENT_LIMITATION = (
    "preemption: not eligible due to placement-based pod group scheduling limitation"
)
MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"


# -- eligibility ------------------------------------------------------------------------------


def pod_terminating_by_preemption(pod: dict) -> bool:
    """Whether ``pod`` is being deleted because a scheduler preempted it."""
    if (pod.get("metadata") or {}).get("deletionTimestamp") is None:
        return False
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


def pod_eligible_to_preempt_others(
    pod: dict, snapshot: Snapshot | None, nominated_status: Status | None
) -> tuple[bool, str]:
    """Whether ``pod`` may preempt at all, and why not.

    ``nominated_status`` is the Filter status of the pod's nominated node (``None`` when the
    node passed or was not evaluated). A pod whose earlier preemption is still terminating
    victims on its nominated node waits for them instead of preempting more pods.
    """
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return False, MSG_NOT_ELIGIBLE_NEVER
    nominated = nominated_node_name(pod)
    if not nominated:
        return True, ""
    # The nominated node no longer fits for a reason preemption cannot fix: try again.
    if (
        nominated_status is not None
        and nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    ):
        return True, ""
    node_info = snapshot.get(nominated) if snapshot is not None else None
    if node_info is not None:
        priority = pod_priority(pod)
        for info in node_info.pods:
            if info.priority < priority and pod_terminating_by_preemption(info.pod):
                return False, MSG_NOT_ELIGIBLE_TERMINATING
    return True, ""


# -- PodDisruptionBudgets ---------------------------------------------------------------------


def filter_pods_with_pdb_violation(
    pods: Iterable[PodInfo], pdbs: list[dict]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (order kept) into (PDB-violating, non-violating) if all were evicted:
    each matching PDB's ``status.disruptionsAllowed`` is spent pod by pod
    (:class:`~extender.framework.preemption.DisruptionBudgets`)."""
    budgets = DisruptionBudgets(pdbs)
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in pods:
        (violating if budgets.spend(info) else non_violating).append(info)
    return violating, non_violating


# -- importance -------------------------------------------------------------------------------


def importance_key(info: PodInfo) -> tuple[int, float]:
    """Sort key putting the most important pod first: higher priority, then older start."""
    return (-info.priority, pod_start_time(info))


# -- victims on one node ----------------------------------------------------------------------


def select_victims_on_node(
    fwk: Handle,
    state: CycleState,
    pod: dict,
    node_info: NodeInfo,
    pdbs: list[dict],
) -> tuple[list[PodInfo], int, Status | None]:
    """The fewest pods to evict from ``node_info`` for ``pod`` to fit (upstream algorithm).

    Works on clones of ``state`` and ``node_info`` (the arguments are not mutated). Returns
    the victims, most important first, the number of them whose eviction violates a PDB, and
    ``None`` on success or the status explaining why the node is no candidate.
    """
    state = state.clone()
    node_info = node_info.clone()
    node_info.scratch = True  # no filter memo: it would evict the real node's entry
    priority = pod_priority(pod)

    def remove(info: PodInfo) -> Status | None:
        node_info.remove_pod(info.key)
        return fwk.run_pre_filter_extension_remove_pod(state, pod, info, node_info)

    def add(info: PodInfo) -> Status | None:
        node_info.add_pod(info)
        return fwk.run_pre_filter_extension_add_pod(state, pod, info, node_info)

    potential = [info for info in node_info.pods if info.priority < priority]
    status = remove_victims(fwk, state, pod, node_info, potential)
    if status is not None:
        return [], 0, status
    if not potential:
        return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS)

    # Even without every lower-priority pod it does not fit: not a candidate. (Affinity of
    # the preemptor to its own victims is deliberately not considered, as upstream.)
    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)
    if status is not None:
        return [], 0, status

    potential.sort(key=importance_key)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[PodInfo] = []
    num_violating = 0

    def reprieve(info: PodInfo) -> tuple[bool, Status | None]:
        """Put ``info`` back; keep it if the preemptor still fits, else it is a victim."""
        status = add(info)
        if status is not None:
            return False, status
        if fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info) is None:
            return True, None
        status = remove(info)
        if status is not None:
            return False, status
        victims.append(info)
        return False, None

    # PDB-violating pods get the first chance to stay, most important first.
    for info in violating:
        fits, status = reprieve(info)
        if status is not None:
            return [], 0, status
        if not fits:
            num_violating += 1
    for info in non_violating:
        _, status = reprieve(info)
        if status is not None:
            return [], 0, status

    if violating and non_violating:
        victims.sort(key=importance_key)
    return victims, num_violating, None


def _skip(pod: dict, old: dict | None, new: dict | None) -> QueueingHint:
    """Upstream ``isPodSchedulableAfterPodDeletion``: always Skip (see the module doc)."""
    return QueueingHint.QUEUE_SKIP


def num_candidates_to_find(num_nodes: int, percentage: int, absolute: int) -> int:
    """``max(num_nodes × percentage // 100, absolute)`` capped at ``num_nodes``."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


# -- the plugin -------------------------------------------------------------------------------


def _int_arg(args: dict, key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: Invalid value: {value!r}: must be an integer")
    return value


def _check_counts(percentage: int, absolute: int) -> None:
    """Upstream ValidateDefaultPreemptionArgs; raises ValueError naming the field(s)."""
    errors = []
    if not 0 <= percentage <= 100:
        errors.append(
            f"minCandidateNodesPercentage: Invalid value: {percentage}: not in valid range [0, 100]"
        )
    if absolute < 0:
        errors.append(
            f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
        )
    if percentage == 0 and absolute == 0:
        errors.append(
            "minCandidateNodesPercentage: Invalid value: 0: "
            "cannot be zero at the same time as minCandidateNodesAbsolute"
        )
        errors.append(
            "minCandidateNodesAbsolute: Invalid value: 0: "
            "cannot be zero at the same time as minCandidateNodesPercentage"
        )
    if len(errors) == 1:
        raise ValueError(errors[0])
    if errors:
        raise ValueError("[" + ", ".join(errors) + "]")


def _parse_args(args: dict) -> tuple[int, int]:
    """(minCandidateNodesPercentage, minCandidateNodesAbsolute), defaulted and validated."""
    args = args or {}
    percentage = _int_arg(
        args, "minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    )
    absolute = _int_arg(args, "minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE)
    _check_counts(percentage, absolute)
    return percentage, absolute


class DefaultPreemption:
    """The PostFilter plugin; also the evaluator's :class:`PreemptionPlugin`."""

    name = NAME
    reads = (PODS, POD_DISRUPTION_BUDGETS)

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateDefaultPreemptionArgs``: ``ValueError`` naming each bad field."""
        _parse_args(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute = _parse_args(args)
        self.handle = handle
        self.evaluator = Evaluator(NAME, handle, self)

    def pre_enqueue(self, pod: dict) -> Status | None:
        """Upstream ``PreEnqueue``: hold a preemptor whose async preemption is under way."""
        if not self.handle.features.scheduler_async_preemption:
            return None
        # (WorkloadAwarePreemption's pod group preemption makes its calls synchronously
        # here, so only a pod is ever held.)
        uid = (pod.get("metadata") or {}).get("uid", "")
        if uid and self.evaluator.is_pod_running_preemption(uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_WAITING_FOR_PREEMPTION)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.handle.features.scheduler_async_preemption:
            # PreEnqueue never rejects then: no event is needed on the plugin's behalf.
            return []
        # Lets a pod deletion reach a preemptor this plugin gated; the pod's other
        # rejectors' hints decide whether it moves.
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _skip),
        ]

    def post_filter(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        group_key = pod_group_key(pod)
        if group_key is not None and self.handle.features.topology_aware_workload_scheduling:
            group = self.handle.lister(PODGROUPS).get(*group_key)
            if group is None:
                return None, Status(Code.UNSCHEDULABLE, MSG_POD_GROUP_NOT_FOUND)
            if (group.get("spec") or {}).get("schedulingConstraints") is not None:
                # Upstream: preempting once per topology option would evict for nothing;
                # placement-aware preemption is future work (KEPs 4671, 5710).
                return None, Status(Code.UNSCHEDULABLE, MSG_PLACEMENT_LIMITATION)
        if group_key is not None and self.handle.features.workload_aware_preemption:
            # The pod group cycle preempts for the whole group instead (pod_group_post_filter).
            return None, Status(Code.UNSCHEDULABLE, MSG_WORKLOAD_AWARE)
        result, status = self.evaluator.preempt(state, pod, filtered_node_status)
        if status is not None and status.message:
            return result, Status(status.code, MSG_PREEMPTION_PREFIX + status.message)
        return result, status

    def pod_group_post_filter(
        self,
        pod_group: dict,
        pods: list[dict],
        snapshot: Snapshot,
        fits: Callable[[Snapshot], Status | None],
    ) -> Status | None:
        """Workload-aware preemption for a pod group (upstream ``PodGroupPostFilter``, gate
        WorkloadAwarePreemption): evict the least important lower-priority units that keep
        the group from fitting; ``fits(snapshot)`` places the group without PostFilter."""
        return PodGroupEvaluator(self.handle, NAME).preempt(pod_group, pods, snapshot, fits)

    # -- preemption.Interface -------------------------------------------------------------

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = self.handle.rng.randrange(num_nodes) if num_nodes > 0 else 0
        return offset, num_candidates_to_find(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        )

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> VictimsMap:
        return {c.name: (c.victims, c.num_pdb_violations) for c in candidates}

    def pod_eligible_to_preempt_others(
        self, state: CycleState, pod: dict, nominated_status: Status | None
    ) -> tuple[bool, str]:
        return pod_eligible_to_preempt_others(pod, state.snapshot, nominated_status)

    def select_victims_on_node(
        self, state: CycleState, pod: dict, node_info: NodeInfo, pdbs: list[dict]
    ) -> tuple[list[PodInfo], int, Status | None]:
        return select_victims_on_node(self.handle, state, pod, node_info, pdbs)

    def ordered_score_funcs(self, nodes_to_victims: VictimsMap) -> list[Callable[[str], int]]:
        return []  # upstream DefaultPreemption has none: the evaluator's default order
