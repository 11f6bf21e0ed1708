"""The standalone scheduler's loop: one scheduling cycle at a time, binding cycles in a pool
(upstream ``pkg/scheduler/schedule_one.go`` and ``eventhandlers.go``). It is a thin shell over
the same core the webhook uses: the decision for a pod is
:meth:`SchedulingAlgorithm.schedule_pod` over the cache's snapshot.

Flow per pod: pop -> schedule_pod (PreFilter, Filter, [PostFilter], PreScore, Score) ->
assume -> Reserve -> Permit -> (binding pool) PreBindPreFlight [-> nominatedNodeName] ->
WaitOnPermit -> PreBind -> Bind -> PostBind.
Any failure after assume unreserves, forgets the assumed pod and requeues.

Kept in one module (~500 lines), as upstream keeps ``schedule_one.go``: the scheduling cycle,
the binding cycle and the failure handler share one invariant (an assumed pod is either bound,
or forgotten and requeued) that is easiest to check in one place.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from extender.config import DEFAULT_SCHEDULER_NAME
from extender.framework import budget
from extender.framework.cycle_state import CycleState
from extender.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    NODE_ADD,
    NODE_DELETE,
    UNSCHEDULED_POD_ADD,
    ActionType,
    ClusterEvent,
    Resource,
)
from extender.framework.features import DEFAULT_FEATURES, Features
from extender.framework.handle import EventRecorder
from extender.framework.pod_info import PodInfo, QueuedPodInfo, pod_key
from extender.framework.podgroups import (
    POD_GROUP_STATES,
    PodGroupStates,
    pod_group_key,
    pod_group_name,
)
from extender.framework.results import NominatingInfo, NominatingMode
from extender.framework.runtime import Framework
from extender.framework.schedule import (
    FitError,
    SchedulingAlgorithm,
    SchedulingError,
)
from extender.framework.schedule_podgroup import PodGroupAlgorithm, single_node_fit_error
from extender.framework.status import Code, Status

from .decisions import Decisions
from .queue import SchedulingQueue, pod_update_event
from .schedule_one_podgroup import PodGroupScheduling

log = logging.getLogger(__name__)


class Cache(Protocol):
    """What the loop needs of the cluster cache (``extender.cache.Cache``)."""

    def snapshot(self) -> Any: ...

    def assume_pod(self, pod: dict, previous: PodInfo | None = None) -> None: ...

    def forget_pod(self, pod: dict) -> None: ...

    def finish_binding(self, pod: dict) -> None: ...

    def is_assumed(self, uid: str) -> bool: ...


class StatusWriter(Protocol):
    """Writes the scheduler's verdict on a pod back to the API (its PodScheduled condition)."""

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict | None: ...


@dataclass
class Metrics:
    """Hooks for Prometheus metrics (see ``extender.scheduler.metrics``); no-ops by default."""

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        pass

    def pending(self, counts: dict[str, int]) -> None:
        pass

    def budget_exceeded(self, profile: str) -> None:
        pass


class Scheduler(PodGroupScheduling):
    def __init__(
        self,
        frameworks: dict[str, Framework],
        cache: Cache,
        queue: SchedulingQueue,
        events: EventRecorder,
        status_writer: StatusWriter,
        *,
        algorithm: SchedulingAlgorithm | None = None,
        get_pod: Callable[[str, str], dict | None] = lambda namespace, name: None,
        bind_workers: int = 16,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        decisions: Decisions | None = None,
        features: Features = DEFAULT_FEATURES,
        executor: Executor | None = None,
    ) -> None:
        """``executor``: runs the binding cycles and the PodGroup status writes (default:
        thread pools, ``bind_workers`` for binding); the replay passes one that runs them in
        submission order on its own thread, so that a run is reproducible."""
        self.frameworks = frameworks
        self.features = features
        self.cache = cache
        self.queue = queue
        self.events = events
        self.status_writer = status_writer
        self.algorithm = algorithm or SchedulingAlgorithm()
        self.get_pod = get_pod
        self.metrics = metrics or Metrics()
        self.clock = clock
        self._binders = executor or ThreadPoolExecutor(bind_workers, thread_name_prefix="bind")
        # PodGroup status writes, in order, off the scheduling thread.
        self._status_writes = executor or ThreadPoolExecutor(
            1, thread_name_prefix="podgroup-status"
        )
        # PodGroup (namespace, name) -> (its UID, the PodGroupScheduled condition this process
        # last queued for it): the writes are asynchronous, the lister may not show it yet.
        self._pod_group_conditions: dict[tuple[str, str], tuple[str, dict]] = {}
        self._stop = threading.Event()
        # The last diagnosis of each pending pod; written to the pod with --record-decisions.
        self.decisions = decisions or Decisions()
        self.pod_group_algorithm = PodGroupAlgorithm(
            self.algorithm,
            post_filter=self._post_filter,
            nominator=self.queue.nominator,
            budget_exceeded=self.metrics.budget_exceeded,
            placements=features.topology_aware_workload_scheduling,
        )
        # Workload-aware preemption's dry runs: the same algorithm without PostFilter.
        self.pod_group_fits = PodGroupAlgorithm(
            self.algorithm,
            nominator=self.queue.nominator,
            placements=features.topology_aware_workload_scheduling,
        )
        # Feature gate GenericWorkload: the members of each PodGroup, shared with the
        # workload-aware plugins (``handle.shared(POD_GROUP_STATES)``).
        self.pod_groups: PodGroupStates = (
            next(iter(frameworks.values())).shared(POD_GROUP_STATES)
            if frameworks
            else PodGroupStates()
        )

    # -- the loop -----------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        stop = stop or self._stop
        flusher = threading.Thread(
            target=self.queue.run_flushers, args=(stop,), daemon=True, name="queue-flush"
        )
        flusher.start()
        while not stop.is_set():
            self.schedule_one(timeout=0.5)
        self.queue.close()

    def stop(self) -> None:
        self._stop.set()
        self.queue.close()
        self._binders.shutdown(wait=True, cancel_futures=False)
        self._status_writes.shutdown(wait=True, cancel_futures=False)

    def wait_for_status_writes(self) -> None:
        """Block until the PodGroup status writes queued so far are done (tests)."""
        self._status_writes.submit(lambda: None).result()

    def schedule_one(self, timeout: float | None = None) -> bool:
        """Run one scheduling cycle; ``False`` if no pod was ready within ``timeout``."""
        info = self.queue.pop(timeout)
        if info is None:
            return False
        try:
            if self.features.generic_workload and pod_group_name(info.pod) is not None:
                self._schedule_pod_group(info)
            else:
                self._scheduling_cycle(info)
        except Exception as exc:  # the last resort: a bug must neither stop the loop nor lose
            log.exception("scheduling cycle of %s failed", info.pod_info.key)
            self._cycle_crashed(info, exc)
        return True

    def _cycle_crashed(self, info: QueuedPodInfo, exc: Exception) -> None:
        """Requeue a pod whose cycle raised past every plugin guard, with backoff."""
        status = Status.error(f"scheduling cycle failed: {type(exc).__name__}: {exc}")
        fwk = self._framework_of(info.pod)
        if self.cache.is_assumed(info.pod_info.uid):
            try:
                self._forget(info.pod)
            except Exception:
                log.exception("forgetting the assumed %s failed", info.pod_info.key)
        try:
            if fwk is None:
                self.queue.done(info.pod_info.key)
            else:
                self._fail(fwk, info, status, None, _clear_nomination(), self.clock())
        except Exception:
            log.exception("failure handler of %s failed", info.pod_info.key)

    def _framework_of(self, pod: dict) -> Framework | None:
        name = (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME
        return self.frameworks.get(name)

    def _scheduling_cycle(self, info: QueuedPodInfo) -> None:
        pod = info.pod
        start = self.clock()
        spec = pod.get("spec") or {}
        fwk = self._framework_of(pod)
        if fwk is None:
            log.error("no profile for scheduler name %r", spec.get("schedulerName"))
            self.queue.done(info.pod_info.key)
            return
        if self._skip_pod(info):
            return

        state = CycleState()
        state.pod_info = info.pod_info
        fit: FitError | None = None
        nominating = NominatingInfo("", NominatingMode.OVERRIDE)
        failure: Status | None = None
        try:
            # The computing part of the attempt, within the pod budget (a slow plugin ends it
            # with an Error and the pod is retried with backoff); the writes below are not.
            with budget.enforced(state, fwk.profile.pod_budget):
                try:
                    result = self.algorithm.schedule_pod(fwk, state, pod, self.cache.snapshot())
                except FitError as err:
                    fit = err
                    nominating = self._post_filter(fwk, state, pod, fit)
                    # The FitError's text, built once for the attempt (status, event, log).
                    failure = Status(Code.UNSCHEDULABLE, str(fit))
        except SchedulingError as err:
            failure, fit = err.status, None
        except budget.OVER as exc:
            failure, fit = Status(Code.ERROR, str(exc), err=exc), None
            nominating = NominatingInfo("", NominatingMode.OVERRIDE)
        if failure is not None:
            if isinstance(failure.err, budget.OVER):
                self.metrics.budget_exceeded(fwk.profile_name)
            message = failure.message if fit is not None else None
            self._fail(fwk, info, failure, fit, nominating, start, message)
            return

        self._assume_reserve_permit(fwk, state, info, result.suggested_host, start)

    def _skip_pod(self, info: QueuedPodInfo) -> bool:
        """Upstream ``skipPodSchedule``: a pod being deleted, or already assumed, is not
        tried (and leaves the queue's in-flight set)."""
        if info.pod_info.deleting:
            self.events.record_event(
                info.pod,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {info.pod_info.namespace}/{info.pod_info.name}",
            )
            self.queue.done(info.pod_info.key)
            return True
        if self.cache.is_assumed(info.pod_info.uid):
            self.queue.done(info.pod_info.key)
            return True
        return False

    def _assume(self, assumed: dict, previous: PodInfo | None = None) -> None:
        self.cache.assume_pod(assumed, previous)
        if self.features.generic_workload:
            self.pod_groups.assume_pod(assumed)

    def _forget(self, assumed: dict) -> None:
        if self.features.generic_workload:
            self.pod_groups.forget_pod(assumed)
        self.cache.forget_pod(assumed)

    def _assume_reserve_permit(
        self, fwk: Framework, state: CycleState, info: QueuedPodInfo, host: str, start: float
    ) -> None:
        """The end of a successful scheduling cycle (upstream ``prepareForBindingCycle``):
        assume the pod on ``host``, Reserve, Permit, then hand it to a binding cycle."""
        pod = info.pod
        assumed = copy.copy(pod)
        assumed["spec"] = {**(pod.get("spec") or {}), "nodeName": host}
        try:
            self._assume(assumed, info.pod_info)
        except Exception as exc:
            self._fail(fwk, info, Status.error(exc), None, None, start)
            return
        self.queue.nominator.delete_nominated_pod_if_exists(pod)

        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if status is None:
            status = fwk.run_permit_plugins(state, assumed, host)
            if status is not None and status.code == Code.WAIT:
                status = None
        if status is not None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self._forget(assumed)
            fit = None
            if status.is_rejected():
                fit = single_node_fit_error(pod, host, status)
            self._fail(fwk, info, status, fit, _clear_nomination(), start)
            return

        if state.pods_to_activate:
            self.queue.activate(state.pods_to_activate.values())
        self._binders.submit(self._binding_cycle, fwk, state, info, assumed, host, start)

    def _post_filter(
        self, fwk: Framework, state: CycleState, pod: dict, fit: FitError
    ) -> NominatingInfo:
        if not fwk.has_post_filter_plugins():
            return _clear_nomination()
        diagnosis = fit.diagnosis
        statuses = dict(diagnosis.node_to_status)
        absent = diagnosis.absent_status
        if absent is not None:
            snapshot = state.snapshot
            for info in snapshot.node_info_list if snapshot is not None else ():
                statuses.setdefault(info.name, absent)
        result, status = fwk.run_post_filter_plugins(state, pod, statuses)
        if status.code != Code.ERROR and status.message:
            diagnosis.post_filter_msg = status.message
        if result is not None and result.nominating_info is not None:
            return result.nominating_info
        return NominatingInfo("", NominatingMode.NOOP)

    # -- binding cycle ------------------------------------------------------------------

    def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        info: QueuedPodInfo,
        assumed: dict,
        host: str,
        start: float,
    ) -> None:
        try:
            status = self._nominate(fwk, state, assumed, host)
            if status is None:
                status = fwk.wait_on_permit(assumed)
            if status is not None:
                fit = (
                    single_node_fit_error(info.pod, host, status) if status.is_rejected() else None
                )
                self._binding_failed(fwk, state, info, assumed, host, status, fit, start)
                return
            self.queue.done(info.pod_info.key)
            status = fwk.run_pre_bind_plugins(state, assumed, host)
            if status is None:
                status = self._bind(fwk, state, assumed, host)
            self.cache.finish_binding(assumed)
            if status is not None:
                # As for Permit: a rejection is charged to its plugin, not to the plugins of
                # an earlier attempt, so the events that plugin registered wake the pod.
                fit = (
                    single_node_fit_error(info.pod, host, status) if status.is_rejected() else None
                )
                self._binding_failed(fwk, state, info, assumed, host, status, fit, start)
                return
            meta = assumed.get("metadata") or {}
            self.events.record_event(
                assumed,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {host}",
            )
            self.metrics.attempt("scheduled", fwk.profile_name, self.clock() - start)
            fwk.run_post_bind_plugins(state, assumed, host)
            if state.pods_to_activate:
                self.queue.activate(state.pods_to_activate.values())
        except Exception as exc:  # the last resort: never lose a pod to a bug in binding
            log.exception("binding cycle of %s failed", info.pod_info.key)
            try:
                self._binding_failed(
                    fwk, state, info, assumed, host, Status.error(exc), None, start
                )
            except Exception:
                log.exception("failure handler of %s failed", info.pod_info.key)

    def _nominate(
        self, fwk: Framework, state: CycleState, assumed: dict, host: str
    ) -> Status | None:
        """Upstream NominatedNodeNameForExpectation (beta, on since v1.35): when PreBind has
        work (a PreBindPreFlight answered Success) or Permit parked the pod, write
        ``status.nominatedNodeName`` first, so that other components (the cluster autoscaler,
        this scheduler after a restart) see where the pod is going during a slow PreBind. A
        failed write is only logged; a failed PreBindPreFlight fails the binding cycle. The
        apiserver clears the field when the binding lands (ClearingNominatedNodeNameAfterBinding)
        and the failure handler when binding fails."""
        status = fwk.run_pre_bind_pre_flights(state, assumed, host)
        if status is not None and status.code != Code.SKIP:
            # Its Permit wait would never be collected: drop it (and its timers) now.
            uid = (assumed.get("metadata") or {}).get("uid", "")
            fwk.reject_waiting_pod(uid)
            fwk.waiting_pods.remove(uid)
            return status
        if status is not None and not fwk.will_wait_on_permit(assumed):
            return None  # the pod is bound soon anyway
        if ((assumed.get("status") or {}).get("nominatedNodeName") or "") == host:
            return None
        meta = assumed.get("metadata") or {}
        namespace, name = meta.get("namespace", "default"), meta.get("name", "")
        try:
            self.status_writer.patch_pod_status(
                namespace, name, {"status": {"nominatedNodeName": host}}
            )
        except Exception:
            # Not critical enough to stop the binding cycle (as upstream).
            log.warning(
                "setting nominatedNodeName %s on %s/%s failed", host, namespace, name, exc_info=True
            )
        return None

    def _bind(self, fwk: Framework, state: CycleState, pod: dict, host: str) -> Status | None:
        """Extenders with a bindVerb first (the first interested one decides, ignorable ones
        fall through on error), then the Bind plugins."""
        for extender in self.algorithm.extenders:
            if not extender.is_binder() or not extender.is_interested(pod):
                continue
            try:
                extender.bind(pod, host)
                return None
            except Exception as exc:
                if extender.ignorable:
                    continue
                return Status.error(exc)
        status = fwk.run_bind_plugins(state, pod, host)
        if status is not None and status.code == Code.SKIP:
            return Status.error("no bind plugin bound the pod")
        return status

    def _binding_failed(
        self,
        fwk: Framework,
        state: CycleState,
        info: QueuedPodInfo,
        assumed: dict,
        host: str,
        status: Status,
        fit: FitError | None,
        start: float,
    ) -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        try:
            self._forget(assumed)
        except Exception:
            log.debug("forget_pod after failed binding", exc_info=True)
        self._fail(fwk, info, status, fit, _clear_nomination(), start)
        # The forgotten reservation freed room: other pods may fit now.
        self.queue.move_all_to_active_or_backoff(
            ASSIGNED_POD_DELETE,
            assumed,
            None,
            pre_check=lambda other: other.pod_info.key != info.pod_info.key,
        )

    # -- failure ------------------------------------------------------------------------

    def _fail(
        self,
        fwk: Framework,
        info: QueuedPodInfo,
        status: Status,
        fit: FitError | None,
        nominating: NominatingInfo | None,
        start: float,
        message: str | None = None,
    ) -> None:
        """The failure handler (upstream ``pkg/scheduler/schedule_one.go``). ``message``:
        ``str(fit)`` when the caller has it already (it walks every node's status)."""
        rejected = status.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        self.metrics.attempt(
            "unschedulable" if rejected else "error", fwk.profile_name, self.clock() - start
        )
        # Upstream ClearRejectorPlugins: only this attempt's FitError names the rejectors (a
        # pod group that did not fit as a whole names none, so the queue counts an error).
        info.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins) if fit else set()
        info.pending_plugins = set(fit.diagnosis.pending_plugins) if fit else set()
        info.gating_plugin = ""
        if message is None:
            message = str(fit) if fit is not None else status.message
        pod = info.pod
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace", "default"), meta.get("name", "")
        try:
            current = self.get_pod(namespace, name)
        except Exception:  # the apiserver may be down: never lose the pod, requeue it
            log.warning("looking up %s/%s failed; requeueing it", namespace, name, exc_info=True)
            current = pod
        if current is None or (current.get("spec") or {}).get("nodeName"):
            self.queue.done(info.pod_info.key)
        else:
            info.pod_info = PodInfo(current)
            self.queue.add_unschedulable_if_not_present(info, rejected)
            if nominating is not None:
                self.queue.nominator.add_nominated_pod(info.pod_info, nominating)
        # As upstream, the patch is computed against the informer's copy when there is one:
        # it carries a nominatedNodeName the binding cycle wrote, which must be cleared.
        latest = info.pod
        log.info("pod %s/%s: %s", namespace, name, message)
        note = self.decisions.failed(pod, fit, message) if fit is not None else message
        self.events.record_event(pod, "Warning", "FailedScheduling", "Scheduling", note)
        patch: dict[str, Any] = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": reason,
                        "message": message,
                    }
                ]
            }
        }
        if nominating is not None and nominating.mode == NominatingMode.OVERRIDE:
            old = (latest.get("status") or {}).get("nominatedNodeName") or ""
            if nominating.nominated_node_name != old:
                patch["status"]["nominatedNodeName"] = nominating.nominated_node_name or None
        if _condition_changed(latest, patch["status"]["conditions"][0]) or (
            "nominatedNodeName" in patch["status"]
        ):
            try:
                self.status_writer.patch_pod_status(namespace, name, patch)
            except Exception:
                log.warning("patching status of %s/%s failed", namespace, name, exc_info=True)

    # -- informer handlers (upstream ``pkg/scheduler/eventhandlers.go``) ---------------------------

    def responsible_for(self, pod: dict) -> bool:
        return self._framework_of(pod) is not None

    def on_unassigned_pod_add(self, pod: dict) -> None:
        if self.responsible_for(pod):
            if self.features.generic_workload:
                self.pod_groups.add_pod(pod)
            self.queue.add(pod)
            if self.features.gang_scheduling:
                # The new pod may complete a gang waiting at PreEnqueue. A pod GangScheduling
                # holds for another group would get its hint's Skip: not asked (exact, and
                # linear rather than quadratic when the pods of many gangs arrive together).
                key = pod_group_key(pod)

                def may_help(info: QueuedPodInfo) -> bool:
                    held_by_gang = info.gating_plugin == "GangScheduling"
                    return not held_by_gang or pod_group_key(info.pod) == key

                self.queue.move_all_to_active_or_backoff(
                    UNSCHEDULED_POD_ADD, None, pod, pre_check=may_help
                )

    def on_unassigned_pod_update(self, old: dict | None, new: dict) -> None:
        if not self.responsible_for(new):
            return
        if old is not None and _resource_version(old) == _resource_version(new):
            return
        # An assumed pod's own updates (the nominatedNodeName its binding cycle writes) are no
        # queue event: queueing it again would nominate it on top of its assumed copy
        # (upstream ``updatePodInSchedulingQueue``).
        if self.features.generic_workload:
            self.pod_groups.update_pod(new)
        if self.cache.is_assumed(pod_key(new)):
            return
        self.queue.update(old, new)

    def on_unassigned_pod_delete(self, pod: dict) -> None:
        self.queue.delete(pod)
        if self.features.generic_workload:
            self.pod_groups.remove_pod(pod)
        uid = (pod.get("metadata") or {}).get("uid", "")
        for fwk in self.frameworks.values():
            fwk.reject_waiting_pod(uid)
        if self.cache.is_assumed(uid):
            try:
                self._forget(pod)
            except Exception:
                log.debug("forget on delete", exc_info=True)
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)

    def on_assigned_pod_add(self, pod: dict) -> None:
        # The pod got bound (by us or anyone): it leaves the queue, and may help others.
        if self.features.generic_workload:
            self.pod_groups.add_pod(pod)
        self.queue.delete(pod)
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)

    def on_assigned_pod_update(self, old: dict | None, new: dict) -> None:
        if self.features.generic_workload:
            self.pod_groups.update_pod(new)
        event = pod_update_event(old, new)
        self.queue.move_all_to_active_or_backoff(
            ClusterEvent(Resource.ASSIGNED_POD, event.action, ASSIGNED_POD_UPDATE.label), old, new
        )

    def on_assigned_pod_delete(self, pod: dict) -> None:
        if self.features.generic_workload:
            self.pod_groups.remove_pod(pod)
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)

    def on_node_add(self, node: dict) -> None:
        self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)

    def on_node_update(self, old: dict, new: dict) -> None:
        action = node_update_action(old, new)
        if action:
            self.queue.move_all_to_active_or_backoff(
                ClusterEvent(Resource.NODE, action, "NodeUpdate"), old, new
            )

    def on_node_delete(self, node: dict) -> None:
        self.queue.move_all_to_active_or_backoff(NODE_DELETE, node, None)


def node_update_action(old: dict, new: dict) -> ActionType:
    """Which parts of a node changed, as event action bits (upstream
    ``pkg/scheduler/eventhandlers.go``)."""
    action = ActionType(0)
    o_meta, n_meta = old.get("metadata") or {}, new.get("metadata") or {}
    o_spec, n_spec = old.get("spec") or {}, new.get("spec") or {}
    o_status, n_status = old.get("status") or {}, new.get("status") or {}
    if o_status.get("allocatable") != n_status.get("allocatable"):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if o_meta.get("labels") != n_meta.get("labels"):
        action |= ActionType.UPDATE_NODE_LABEL
    if o_spec.get("taints") != n_spec.get("taints") or bool(o_spec.get("unschedulable")) != bool(
        n_spec.get("unschedulable")
    ):
        action |= ActionType.UPDATE_NODE_TAINT
    if _conditions(o_status) != _conditions(n_status):
        action |= ActionType.UPDATE_NODE_CONDITION
    if o_meta.get("annotations") != n_meta.get("annotations"):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    # Upstream extractNodeFeaturesChange (gate NodeDeclaredFeatures, on): the list is sorted.
    if (o_status.get("declaredFeatures") or []) != (n_status.get("declaredFeatures") or []):
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action


def _conditions(status: dict) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or ()}


def _resource_version(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion", "")


def _clear_nomination() -> NominatingInfo:
    return NominatingInfo("", NominatingMode.OVERRIDE)


def _condition_changed(pod: dict, condition: dict) -> bool:
    for existing in (pod.get("status") or {}).get("conditions") or ():
        if existing.get("type") == "PodScheduled":
            return any(existing.get(k) != condition[k] for k in ("status", "reason", "message"))
    return True


__all__ = ["Scheduler", "pod_key", "node_update_action"]
