"""The pod group scheduling cycle (kubernetes ``pkg/scheduler/schedule_one_podgroup.go``; feature
gate GenericWorkload): a popped pod that belongs to a PodGroup brings the group's other pending
pods out of the queue, and all of them are tried in one cycle on one snapshot.

Flow: pop one member -> take the group's other unscheduled members from the queue
(``pop_specific``) -> order them (priority, then first attempt) -> place the group on the cycle's
snapshot (:class:`~extender.framework.schedule_podgroup.PodGroupAlgorithm`, shared with explain
and simulate) -> if the group is schedulable, every feasible pod goes on to the usual assume /
Reserve / Permit / binding cycle; otherwise every pod goes back to the queue with upstream's
message, and the PodGroup's ``PodGroupScheduled`` condition says why.

A mixin of :class:`~extender.scheduler.scheduler.Scheduler`, as upstream's file is part of the
same type: it uses the scheduler's failure handler and binding path.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

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
from extender.framework.schedule_podgroup import (
    GroupResult,
    PodResult,
    group_unschedulable,
    preempt_for_group,
)
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)


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
        # Upstream's order: priority, then when each first entered activeQ (stable: ties keep
        # the popped pod first, then creation order).
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
            snapshot = self.cache.snapshot()
            result = self.pod_group_algorithm.schedule(fwk, infos, snapshot, states)
            if (
                self.features.workload_aware_preemption
                and result.status is not None
                and result.status.code == Code.UNSCHEDULABLE
            ):
                self._workload_aware_preemption(fwk, key, infos, snapshot, states, result)
        except PodGroupStateNotFound as exc:
            result = GroupResult(status=Status.error(str(exc)))
        except Exception as exc:  # as for one pod: a bug must not strand the popped members
            log.exception("pod group cycle of %s/%s failed", *key)
            for member in infos:
                self._cycle_crashed(member, exc)
            return
        self._submit_pod_group_result(fwk, key, infos, result, start)

    def _workload_aware_preemption(
        self: Scheduler,
        fwk: Framework,
        key: tuple[str, str],
        infos: list[QueuedPodInfo],
        snapshot: Snapshot,
        states: dict[tuple[str, str], PodGroupState],
        result: GroupResult,
    ) -> None:
        lister = self._pod_group_lister()
        pod_group = lister.get(*key) if lister is not None else None
        preempt_for_group(self.pod_group_fits, fwk, key, pod_group, infos, snapshot, states, result)

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
        for i, info in enumerate(infos):
            pod_result = group.results[i] if i < len(group.results) else None
            try:
                self._submit_pod_result(fwk, info, pod_result, group, start)
            except Exception as exc:
                log.exception("handing on %s after its pod group cycle failed", info.pod_info.key)
                self._cycle_crashed(info, exc)
        self._update_pod_group_condition(key, group)

    def _submit_pod_result(
        self: Scheduler,
        fwk: Framework,
        info: QueuedPodInfo,
        pod_result: PodResult | None,
        group: GroupResult,
        start: float,
    ) -> None:
        clear = NominatingInfo("", NominatingMode.OVERRIDE)
        group_error = group.status is not None and group.status.code == Code.ERROR
        if group_error:
            assert group.status is not None
            status = group.status
            if pod_result is not None and pod_result.status is not None:
                if pod_result.status.code == Code.ERROR:
                    status = pod_result.status  # this pod's own error
            self._fail(fwk, info, status, None, clear, start)
            return
        if pod_result is None:
            assert group.status is not None
            self._fail(fwk, info, group.status, None, clear, start)
            return
        permit_message = pod_result.permit.message if pod_result.permit else ""
        if pod_result.status is None:
            if group.status is None:
                # Out of the pod group cycle: the binding path reads the live states.
                pod_result.state.pod_group_states = None
                self._assume_reserve_permit(fwk, pod_result.state, info, pod_result.host, start)
            elif group.waiting_on_preemption:
                nominating = NominatingInfo(pod_result.host, NominatingMode.OVERRIDE)
                self._fail(fwk, info, group.status, None, nominating, start)
            else:
                # It fit, but its group did not: Permit's message says what it waited for.
                self._fail(fwk, info, group_unschedulable(permit_message), None, clear, start)
        elif pod_result.requires_preemption and not group.waiting_on_preemption:
            self._fail(fwk, info, group_unschedulable(permit_message), None, clear, start)
        else:
            self._fail(fwk, info, pod_result.status, pod_result.fit, pod_result.nominating, start)

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
        # What the PodGroup says once this process's writes land: they are asynchronous, and a
        # member popped from backoffQ is retried at once, before the lister shows the last one
        # (a pending gang runs cycles back to back: one write per change, not per cycle).
        uid = (pod_group.get("metadata") or {}).get("uid") or ""
        queued = self._pod_group_conditions.get(key)
        latest = queued[1] if queued is not None and queued[0] == uid else existing
        was_true = any(c is not None and c.get("status") == "True" for c in (existing, latest))
        if was_true and condition["status"] != "True":
            return
        generation = (pod_group.get("metadata") or {}).get("generation") or 0
        condition["observedGeneration"] = generation
        if latest is not None and all(
            latest.get(k) == condition[k]
            for k in ("status", "reason", "message", "observedGeneration")
        ):
            return
        if latest is not None and latest.get("status") == condition["status"]:
            condition["lastTransitionTime"] = latest.get("lastTransitionTime")
        else:
            condition["lastTransitionTime"] = _now()
        self._pod_group_conditions[key] = (uid, condition)
        writer: Any = self.status_writer
        patch = getattr(writer, "patch_pod_group_status", None)
        if patch is None:
            return

        # The UID as a precondition: a write still queued when its PodGroup was replaced by
        # another of the same name fails instead of landing on the new one.
        body: dict[str, Any] = {"status": {"conditions": [condition]}}
        if uid:
            body["metadata"] = {"uid": uid}

        def write() -> None:
            try:
                patch(*key, body)
            except Exception:
                log.warning("updating the status of pod group %s/%s failed", *key, exc_info=True)
                if self._pod_group_conditions.get(key) == (uid, condition):
                    del self._pod_group_conditions[key]  # the next cycle writes it again

        # Off the scheduling thread (a round trip per cycle): one writer keeps them in order.
        self._status_writes.submit(write)

    def _pod_group_lister(self: Scheduler) -> Any:
        for fwk in self.frameworks.values():
            return fwk.lister(PODGROUPS)
        return None


def _creation_order(pod: dict) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("name") or "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
