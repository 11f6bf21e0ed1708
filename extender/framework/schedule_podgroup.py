"""The pod group scheduling algorithm (kubernetes ``pkg/scheduler/schedule_one_podgroup.go``,
``podGroupSchedulingDefaultAlgorithm`` and ``podGroupPodSchedulingAlgorithm``; feature gate
GenericWorkload): a PodGroup's pending pods tried in one cycle on one snapshot.

Each pod in order gets the usual algorithm (:meth:`SchedulingAlgorithm.schedule_pod`) on the
cycle's snapshot; a placed pod is assumed *into that snapshot* (and into the cycle's copy of
the pod group states, ``CycleState.pod_group_states``), reserved and asked Permit, so the pods
after it see it; at the end every assume and reservation is undone (last first). The group is
schedulable when some pod's Permit answered Success (the quorum is reached in the cycle).

Used by the standalone scheduler's pod group cycle (which then binds the feasible pods) and by
``explain``/``simulate`` (which only report), so that both answer the same.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import budget
from .cycle_state import CycleState
from .handle import Nominator, NoNominator
from .pod_info import QueuedPodInfo, pod_key
from .podgroups import Placement, PodGroupAssignments, PodGroupInfo, PodGroupState, pod_group_key
from .results import NominatingInfo, NominatingMode
from .runtime import Framework
from .schedule import Diagnosis, FitError, SchedulingAlgorithm, SchedulingError
from .snapshot import Snapshot
from .status import Code, Status

log = logging.getLogger(__name__)

ERR_POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
ERR_WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"
ERR_NO_PREEMPTION_PLUGIN = (
    "default preemption plugin is not registered, workload aware preemption is disabled"
)
ERR_CONSTRAINED_GROUP = (
    "workload aware preemption is not supported for pod groups with scheduling constraints"
)

# fn(fwk, state, pod, fit) -> where preemption nominated the pod (PostFilter).
PostFilter = Callable[[Framework, CycleState, dict, FitError], NominatingInfo]


@dataclass
class PodResult:
    """One member's attempt in a pod group cycle (upstream ``algorithmResult``)."""

    info: QueuedPodInfo
    state: CycleState
    host: str = ""
    # None: the algorithm placed the pod (its Permit answered Success or Wait).
    status: Status | None = None
    fit: FitError | None = None
    nominating: NominatingInfo | None = None
    requires_preemption: bool = False
    # Permit's answer on the cycle's snapshot: None (Success) or Wait.
    permit: Status | None = None


@dataclass
class GroupResult:
    """The whole group's outcome (upstream ``podGroupAlgorithmResult``): ``status`` None is
    success (feasible pods go on to binding), rejected is unschedulable, Error is an error."""

    results: list[PodResult] = field(default_factory=list)
    status: Status | None = None
    waiting_on_preemption: bool = False


def group_unschedulable(*reasons: str) -> Status:
    """Upstream's ``NewStatus(Unschedulable, reasons...).WithError(errPodGroupUnschedulable)``,
    whose message puts the error first."""
    return Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *reasons)


def single_node_fit_error(pod: dict, host: str, status: Status) -> FitError:
    """A FitError naming ``host`` alone: a rejection after the pod was placed (Permit,
    PreBind, Bind) is charged to its plugin, so that its events wake the pod."""
    diagnosis = Diagnosis()
    diagnosis.add_rejection(host, status)
    return FitError(pod, 1, diagnosis)


def _no_post_filter(fwk: Framework, state: CycleState, pod: dict, fit: FitError) -> NominatingInfo:
    return NominatingInfo("", NominatingMode.NOOP)


class PodGroupAlgorithm:
    """Places a pod group on a snapshot. ``post_filter``: what a pod that fits nowhere gets
    (the scheduler runs PostFilter, i.e. preemption; a report runs none); ``nominator``: whose
    nominations an assumed pod leaves while it is assumed; ``budget_exceeded(profile)``: called
    when a pod's attempt runs out of its budget; ``placements``: gate
    TopologyAwareWorkloadScheduling (the group is tried on each placement)."""

    def __init__(
        self,
        algorithm: SchedulingAlgorithm,
        *,
        post_filter: PostFilter = _no_post_filter,
        nominator: Nominator | None = None,
        budget_exceeded: Callable[[str], None] = lambda profile: None,
        placements: bool = False,
    ) -> None:
        self.algorithm = algorithm
        # Feature gate TopologyAwareWorkloadScheduling: the placement algorithm.
        self.placements = placements
        self.post_filter = post_filter
        self.nominator: Nominator = nominator or NoNominator()
        self.budget_exceeded = budget_exceeded

    def schedule(
        self,
        fwk: Framework,
        infos: list[QueuedPodInfo],
        snapshot: Snapshot,
        states: dict[tuple[str, str], PodGroupState],
    ) -> GroupResult:
        """Place the group (upstream ``podGroupSchedulingAlgorithm``): on every node, or, with
        placements on (TopologyAwareWorkloadScheduling), on each placement in turn."""
        if self.placements:
            return self._schedule_placements(fwk, infos, snapshot, states)
        return self._schedule_on(fwk, infos, snapshot, states, None)

    def _schedule_placements(
        self,
        fwk: Framework,
        infos: list[QueuedPodInfo],
        snapshot: Snapshot,
        states: dict[tuple[str, str], PodGroupState],
    ) -> GroupResult:
        """Upstream ``podGroupSchedulingPlacementAlgorithm``: the group tried on each placement
        the PlacementGenerate plugin proposes; of those where it is schedulable, the one the
        PlacementScore plugins rank first (ties at random)."""
        key = pod_group_key(infos[0].pod) or ("", "")
        group = PodGroupInfo(key[0], key[1], tuple(info.pod for info in infos))
        state = CycleState()
        state.snapshot = snapshot
        state.pod_group_states = states
        placements, status = fwk.run_placement_generate_plugins(
            state, group, snapshot.node_info_list
        )
        if status is not None:
            return GroupResult(status=status)
        first: GroupResult | None = None
        schedulable: list[tuple[Placement, GroupResult]] = []
        for placement in placements:
            names = None
            if len(placement.nodes) != len(snapshot):
                names = [node.name for node in placement.nodes]
            result = self._schedule_on(fwk, infos, snapshot, states, names)
            if result.status is not None and result.status.code == Code.ERROR:
                return result
            first = first or result
            if result.status is None or result.waiting_on_preemption:
                schedulable.append((placement, result))
        if not schedulable:
            assert first is not None
            first.status = Status(
                Code.UNSCHEDULABLE,
                f"0/{len(placements)} placements are available, first placement status: "
                f"{ERR_POD_GROUP_UNSCHEDULABLE}",
            )
            return first
        if len(schedulable) == 1:
            return schedulable[0][1]
        assignments = [
            PodGroupAssignments(placement, [(r.info.pod, r.host) for r in result.results if r.host])
            for placement, result in schedulable
        ]
        totals, status = fwk.run_placement_score_plugins(state, group, assignments)
        if status is not None:
            return GroupResult(status=status)
        best = max(range(len(totals)), key=lambda i: (totals[i], fwk.rng.random()))
        return schedulable[best][1]

    def _schedule_on(
        self,
        fwk: Framework,
        infos: list[QueuedPodInfo],
        snapshot: Snapshot,
        states: dict[tuple[str, str], PodGroupState],
        placement: list[str] | None,
    ) -> GroupResult:
        """Upstream ``podGroupSchedulingDefaultAlgorithm``: each pod in order; a placed pod is
        assumed into the cycle's snapshot for the ones after it, and every assume is undone at
        the end (last first). ``placement``: the only nodes the pods may go to."""
        result = GroupResult(status=group_unschedulable())
        current = [snapshot]
        reverts: list[Callable[[], None]] = []
        requires_preemption = False
        try:
            for info in infos:
                pod_result, revert = self._attempt(fwk, info, current, states, placement)
                result.results.append(pod_result)
                if pod_result.status is not None and not pod_result.requires_preemption:
                    if pod_result.status.is_rejected():
                        # The group may still be schedulable if Permit succeeds for others.
                        continue
                    result.status = Status.error(
                        "failed to schedule other pod from a pod group: "
                        f"{pod_result.status.message}"
                    )
                    result.waiting_on_preemption = False
                    break
                if revert is not None:
                    reverts.append(revert)
                requires_preemption = requires_preemption or pod_result.requires_preemption
                if pod_result.permit is None:
                    if requires_preemption:
                        result.status = group_unschedulable(ERR_WAITING_ON_PREEMPTION)
                        result.waiting_on_preemption = True
                    else:
                        result.status = None
        finally:
            for revert in reversed(reverts):
                try:
                    revert()
                except Exception:
                    log.exception("undoing a pod group cycle's assume failed")
        return result

    def _attempt(
        self,
        fwk: Framework,
        info: QueuedPodInfo,
        current: list[Snapshot],
        states: dict[tuple[str, str], PodGroupState],
        placement: list[str] | None = None,
    ) -> tuple[PodResult, Callable[[], None] | None]:
        """One member: the algorithm, then assume into the cycle's snapshot, Reserve and Permit
        (upstream ``podGroupPodSchedulingAlgorithm``). The revert is returned when the pod was
        placed (or needs preemption) and Permit did not reject it."""
        pod = info.pod
        state = CycleState()
        state.pod_group_states = states
        result = PodResult(info, state)
        try:
            with budget.enforced(state, fwk.profile.pod_budget):
                try:
                    result.host = self.algorithm.schedule_pod(
                        fwk, state, pod, current[0], placement
                    ).suggested_host
                except FitError as err:
                    result.fit = err
                    result.status = Status(Code.UNSCHEDULABLE, str(err))
                    result.nominating = self.post_filter(fwk, state, pod, err)
                    nominated = result.nominating.nominated_node_name
                    if not nominated:
                        return result, None
                    # Preemption is needed: the pods after this one see it on its nominated
                    # node.
                    result.host = nominated
                    result.requires_preemption = True
        except SchedulingError as err:
            result.status = err.status
            return result, None
        except budget.OVER as exc:
            result.status = Status(Code.ERROR, str(exc), err=exc)
            self.budget_exceeded(fwk.profile_name)
            return result, None

        host = result.host
        before = current[0]
        node = before.get(host)
        if node is None:
            result.status = Status.error(f"node {host} is not in the snapshot")
            result.requires_preemption = False
            return result, None
        assumed = copy.copy(pod)
        assumed["spec"] = {**(pod.get("spec") or {}), "nodeName": host}
        clone = node.clone()
        clone.add_pod(assumed)
        current[0] = before.overlay([clone])
        group = states.get(pod_group_key(pod) or ("", ""))
        if group is not None:
            group.assume_pod(assumed)
        self.nominator.delete_nominated_pod_if_exists(pod)
        nominated_before = (pod.get("status") or {}).get("nominatedNodeName") or ""

        def revert() -> None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            current[0] = before
            if group is not None:
                group.forget_pod(pod_key(assumed))
            if nominated_before:
                self.nominator.add_nominated_pod(
                    info.pod_info, NominatingInfo(nominated_before, NominatingMode.OVERRIDE)
                )

        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if status is None:
            status = fwk.run_permit_plugins(state, assumed, host, add_waiting=False)
            if status is not None and status.code == Code.WAIT:
                result.permit = status
                return result, revert
        if status is not None:
            revert()
            result.status = status
            result.requires_preemption = False
            result.nominating = NominatingInfo("", NominatingMode.OVERRIDE)
            if status.is_rejected():
                result.fit = single_node_fit_error(pod, host, status)
            return result, None
        return result, revert


def preempt_for_group(
    fits_algorithm: PodGroupAlgorithm,
    fwk: Framework,
    key: tuple[str, str],
    pod_group: dict | None,
    infos: list[QueuedPodInfo],
    snapshot: Snapshot,
    states: dict[tuple[str, str], PodGroupState],
    result: GroupResult,
) -> None:
    """Upstream ``runWorkloadAwarePreemption`` (gate WorkloadAwarePreemption), after a cycle
    left the group Unschedulable: the profile's DefaultPreemption makes room for the whole
    group (``pod_group_post_filter``, its dry runs by ``fits_algorithm``, which has no
    PostFilter). On success ``result`` waits on preemption; otherwise its status gains the
    reason (or becomes the Error)."""
    plugin: Any = fwk.plugin("DefaultPreemption")
    status: Status | None
    if plugin is None or "DefaultPreemption" not in fwk.profile.enabled("postFilter"):
        status = Status(Code.UNSCHEDULABLE, ERR_NO_PREEMPTION_PLUGIN)
    elif pod_group is None:
        status = Status.error(
            f'failed to get pod group object: podgroups.scheduling.k8s.io "{key[1]}" not found'
        )
    elif (((pod_group.get("spec") or {}).get("schedulingConstraints")) or {}).get("topology"):
        status = Status(Code.UNSCHEDULABLE, ERR_CONSTRAINED_GROUP)
    else:

        def fits(view: Snapshot) -> Status | None:
            return fits_algorithm.schedule(fwk, infos, view, states).status

        status = plugin.pod_group_post_filter(pod_group, [i.pod for i in infos], snapshot, fits)
    if status is None:
        result.waiting_on_preemption = True
    elif status.code == Code.ERROR:
        result.status = status
    else:
        assert result.status is not None
        result.status = Status(
            result.status.code, *result.status.reasons, status.message, plugin=status.plugin
        )
