"""The pod group scheduling cycle (kubernetes ``pkg/scheduler/schedule_one_podgroup.go``; feature
gate GenericWorkload): a popped pod that belongs to a PodGroup brings the group's other pending
pods out of the queue, and all of them are tried in one cycle on one snapshot.

Flow: pop one member -> take the group's other unscheduled members from the queue
(``pop_specific``) -> order them (priority, then first attempt) -> for each, the usual algorithm
on the cycle's snapshot, then assume it *into that snapshot* (and into the cycle's copy of the pod
group states), Reserve and ask Permit -> undo every assume and reservation -> if some pod's Permit
answered Success (the quorum is reached within the cycle), every feasible pod goes on to the
usual assume / Reserve / Permit / binding cycle; otherwise every pod goes back to the queue with
upstream's message, and the PodGroup's ``PodGroupScheduled`` condition says why.

A mixin of :class:`~extender.scheduler.scheduler.Scheduler`, as upstream's file is part of the
same type: it uses the scheduler's failure handler and binding path.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from extender.framework import budget
from extender.framework.cycle_state import CycleState
from extender.framework.pod_info import QueuedPodInfo, pod_key, pod_priority
from extender.framework.podgroups import (
    POD_GROUP_SCHEDULED,
    PODGROUPS,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    PodGroupState,
    PodGroupStateNotFound,
    pod_group_key,
)
from extender.framework.results import NominatingInfo, NominatingMode
from extender.framework.runtime import Framework
from extender.framework.schedule import Diagnosis, FitError, SchedulingError
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)

ERR_POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
ERR_WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"


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


def _group_unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *reasons)


class PodGroupScheduling:
    """The pod group cycle of :class:`~extender.scheduler.scheduler.Scheduler`."""

    def _schedule_pod_group(self: Scheduler, info: QueuedPodInfo) -> None:
        key = pod_group_key(info.pod)
        assert key is not None
        try:
            group_state = self.pod_groups.get(*key)
        except PodGroupStateNotFound as exc:
            fwk = self._framework_of(info.pod)
            if fwk is None:
                self.queue.done(info.pod_info.key)
                return
            status = Status.error(f"error while retrieving pod group state: {exc}")
            self._fail(fwk, info, status, None, None, self.clock())
            return
        infos = [info]
        # Upstream pops them in map order; by creation here, so that runs repeat.
        for pod in sorted(group_state.unscheduled_pods(), key=_creation_order):
            if pod_key(pod) == info.pod_info.key:
                continue
            popped = self.queue.pop_specific(pod)
            if popped is not None:
                infos.append(popped)
        # Deterministic order: priority first, then the first attempt.
        infos.sort(key=lambda i: (-pod_priority(i.pod), i.initial_attempt_timestamp or 0.0))

        fwk, problem = self._framework_for_group(infos)
        if fwk is None:
            for member in infos:
                member_fwk = self._framework_of(member.pod)
                if member_fwk is None:
                    self.queue.done(member.pod_info.key)
                else:
                    self._fail(member_fwk, member, Status.error(problem), None, None, self.clock())
            return
        infos = [member for member in infos if not self._skip_pod(member)]
        if not infos:
            return
        log.debug("attempting to schedule pod group %s/%s (%d pods)", *key, len(infos))
        start = self.clock()
        try:
            states = {key: self.pod_groups.get(*key)}
        except PodGroupStateNotFound as exc:
            states, result = {}, GroupResult(status=Status.error(str(exc)))
        else:
            result = self._pod_group_algorithm(fwk, infos, self.cache.snapshot(), states)
        self._submit_pod_group_result(fwk, key, infos, result, start)

    def _framework_for_group(
        self: Scheduler, infos: list[QueuedPodInfo]
    ) -> tuple[Framework | None, str]:
        names = {(i.pod.get("spec") or {}).get("schedulerName") or "" for i in infos}
        if len(names) > 1:
            a, b = sorted(names)[:2]
            return None, (
                "all pods in a single pod group should have the same .spec.schedulerName set, "
                f'got: "{a}" and "{b}"'
            )
        fwk = self._framework_of(infos[0].pod)
        if fwk is None:
            return None, f'profile not found for scheduler name "{names.pop()}"'
        return fwk, ""

    # -- the algorithm ----------------------------------------------------------------------

    def _pod_group_algorithm(
        self: Scheduler,
        fwk: Framework,
        infos: list[QueuedPodInfo],
        snapshot: Snapshot,
        states: dict[tuple[str, str], PodGroupState],
    ) -> GroupResult:
        """Upstream ``podGroupSchedulingDefaultAlgorithm``: each pod in order; a placed pod is
        assumed into the cycle's snapshot for the ones after it, and every assume is undone at
        the end (last first)."""
        result = GroupResult(status=_group_unschedulable())
        current = [snapshot]
        reverts: list[Callable[[], None]] = []
        requires_preemption = False
        try:
            for info in infos:
                pod_result, revert = self._pod_group_pod_attempt(fwk, info, current, states)
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
                        result.status = _group_unschedulable(ERR_WAITING_ON_PREEMPTION)
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

    def _pod_group_pod_attempt(
        self: Scheduler,
        fwk: Framework,
        info: QueuedPodInfo,
        current: list[Snapshot],
        states: dict[tuple[str, str], PodGroupState],
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
                        fwk, state, pod, current[0]
                    ).suggested_host
                except FitError as err:
                    result.fit = err
                    result.status = Status(Code.UNSCHEDULABLE, str(err))
                    result.nominating = self._post_filter(fwk, state, pod, err)
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
            self.metrics.budget_exceeded(fwk.profile_name)
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
        self.queue.nominator.delete_nominated_pod_if_exists(pod)
        nominated_before = (pod.get("status") or {}).get("nominatedNodeName") or ""

        def revert() -> None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            current[0] = before
            if group is not None:
                group.forget_pod(pod_key(assumed))
            if nominated_before:
                self.queue.nominator.add_nominated_pod(
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

    # -- the outcome ------------------------------------------------------------------------

    def _submit_pod_group_result(
        self: Scheduler,
        fwk: Framework,
        key: tuple[str, str],
        infos: list[QueuedPodInfo],
        group: GroupResult,
        start: float,
    ) -> None:
        """Upstream ``submitPodGroupAlgorithmResult``: feasible pods of a schedulable group go
        on to binding; the others go back to the queue; the PodGroup's condition is written."""
        clear = NominatingInfo("", NominatingMode.OVERRIDE)
        group_error = group.status is not None and group.status.code == Code.ERROR
        for i, info in enumerate(infos):
            pod_result = group.results[i] if i < len(group.results) else None
            if group_error:
                assert group.status is not None
                status = group.status
                if pod_result is not None and pod_result.status is not None:
                    if pod_result.status.code == Code.ERROR:
                        status = pod_result.status
                self._fail(fwk, info, status, None, clear, start)
                continue
            if pod_result is None:
                assert group.status is not None
                self._fail(fwk, info, group.status, None, clear, start)
                continue
            if pod_result.status is None:
                permit_message = pod_result.permit.message if pod_result.permit else ""
                if group.status is None:
                    # Out of the pod group cycle: the binding path reads the live states.
                    pod_result.state.pod_group_states = None
                    self._assume_reserve_permit(fwk, pod_result.state, info, pod_result.host, start)
                elif group.waiting_on_preemption:
                    nominating = NominatingInfo(pod_result.host, NominatingMode.OVERRIDE)
                    self._fail(fwk, info, group.status, None, nominating, start)
                else:
                    status = _group_unschedulable(permit_message)
                    self._fail(fwk, info, status, None, clear, start)
            elif pod_result.requires_preemption and not group.waiting_on_preemption:
                permit_message = pod_result.permit.message if pod_result.permit else ""
                self._fail(fwk, info, _group_unschedulable(permit_message), None, clear, start)
            else:
                self._fail(
                    fwk, info, pod_result.status, pod_result.fit, pod_result.nominating, start
                )
        self._update_pod_group_condition(key, group)

    def _update_pod_group_condition(
        self: Scheduler, key: tuple[str, str], group: GroupResult
    ) -> None:
        """Write ``PodGroupScheduled`` (upstream ``updatePodGroupCondition``): never from True
        back to False (a later cycle for extra pods), and only when it changes."""
        status = group.status
        if status is None:
            condition = {"type": POD_GROUP_SCHEDULED, "status": "True", "reason": "Scheduled"}
            message = ""
        elif status.is_rejected():
            condition = {"type": POD_GROUP_SCHEDULED, "status": "False"}
            condition["reason"] = REASON_UNSCHEDULABLE
            message = status.message
        else:
            condition = {"type": POD_GROUP_SCHEDULED, "status": "False"}
            condition["reason"] = REASON_SCHEDULER_ERROR
            message = status.message
        condition["message"] = message
        lister = self._pod_group_lister()
        pod_group = lister.get(*key) if lister is not None else None
        if pod_group is None:
            log.warning("pod group %s/%s: not found for its status update", *key)
            return
        existing = next(
            (
                c
                for c in (pod_group.get("status") or {}).get("conditions") or ()
                if c.get("type") == POD_GROUP_SCHEDULED
            ),
            None,
        )
        if existing is not None and existing.get("status") == "True":
            if condition["status"] != "True":
                return
        generation = (pod_group.get("metadata") or {}).get("generation") or 0
        condition["observedGeneration"] = generation
        if existing is not None and all(
            existing.get(k) == condition[k]
            for k in ("status", "reason", "message", "observedGeneration")
        ):
            return
        if existing is not None and existing.get("status") == condition["status"]:
            condition["lastTransitionTime"] = existing.get("lastTransitionTime")
        else:
            condition["lastTransitionTime"] = _now()
        writer: Any = self.status_writer
        patch = getattr(writer, "patch_pod_group_status", None)
        if patch is None:
            return
        try:
            patch(*key, {"status": {"conditions": [condition]}})
        except Exception:
            log.warning("updating the status of pod group %s/%s failed", *key, exc_info=True)

    def _pod_group_lister(self: Scheduler) -> Any:
        for fwk in self.frameworks.values():
            return fwk.lister(PODGROUPS)
        return None


def _creation_order(pod: dict) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("name") or "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def single_node_fit_error(pod: dict, host: str, status: Status) -> FitError:
    """A FitError naming ``host`` alone: a rejection after the pod was placed (Permit,
    PreBind, Bind) is charged to its plugin, so that its events wake the pod."""
    diagnosis = Diagnosis()
    diagnosis.add_rejection(host, status)
    return FitError(pod, 1, diagnosis)
