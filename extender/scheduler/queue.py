"""The scheduling queue (upstream ``pkg/scheduler/backend/queue/scheduling_queue.go``):
activeQ, backoffQ, the unschedulable pool and pods in flight; the nominator is
:mod:`extender.scheduler.nominator`.

* activeQ is a heap ordered by the profile's QueueSort plugin (PrioritySort).
* backoffQ holds rejected pods until their backoff (1 s doubling to 10 s) expires. It is two
  heaps (upstream ``backoff_queue.go``): pods some plugin rejected, and pods that failed with an
  error (no rejecting plugin), each ordered by backoff expiry.
* Feature gate SchedulerPopFromBackoffQ (beta, on by default since v1.33): when activeQ is
  empty, pop takes the head of the rejected pods' backoffQ even though its backoff has not
  expired (upstream ``active_queue.go`` ``unlockedPop``; never an errored pod). Backoff
  expiries are then aligned down to whole seconds (the ordering window), pods in one window are
  ordered as activeQ orders them, the flush runs at every whole second of the clock, and
  PreEnqueue runs when a pod enters backoffQ instead of when it leaves it.
* The unschedulable pool holds rejected pods until a cluster event that one of their
  rejecting plugins registered for says it may help (a queueing hint), or 5 minutes pass.
* Events that arrive while a pod is in flight are recorded and replayed when it comes back,
  so nothing that happened during its attempt is lost.

Time comes from an injectable clock, so tests drive backoff and flushes without sleeping.

One module (~500 lines) like upstream's ``scheduling_queue.go``: the three queues and the
in-flight record share one lock and move pods between each other.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from extender.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.pod_info import PodInfo, QueuedPodInfo, pod_key
from extender.framework.podgroups import pod_group_name
from extender.framework.status import Status

from .nominator import Nominator

log = logging.getLogger(__name__)

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 5 * 60.0
BACKOFF_FLUSH_INTERVAL = 1.0
# Upstream backoffQOrderingWindowDuration (KEP-5142): with SchedulerPopFromBackoffQ, backoff
# expiries are aligned down to it, pods of one window are ordered by priority, and the flush
# runs at its multiples, so that a whole window moves to activeQ at once.
BACKOFF_ORDERING_WINDOW = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

ACTIVE_Q = "active"
BACKOFF_Q = "backoff"
UNSCHEDULABLE_Q = "unschedulable"
GATED = "gated"


class QueueStrategy(Enum):
    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class _Less:
    """Heap entry ordered by a QueueSort ``less`` function."""

    __slots__ = ("info", "less", "valid")

    def __init__(self, info: QueuedPodInfo, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]):
        self.info = info
        self.less = less
        self.valid = True

    def __lt__(self, other: _Less) -> bool:
        return self.less(self.info, other.info)


class _BackoffEntry:
    """backoffQ heap entry: by backoff expiry; with ``less`` (SchedulerPopFromBackoffQ, the
    rejected pods' heap), pods of one ordering window as activeQ orders them (upstream
    ``lessBackoffCompletedWithPriority``), else by arrival."""

    __slots__ = ("info", "expiry", "less", "seq", "valid")

    def __init__(
        self,
        info: QueuedPodInfo,
        expiry: float,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None,
        seq: int,
    ) -> None:
        self.info = info
        self.expiry = expiry
        self.less = less
        self.seq = seq
        self.valid = True

    def __lt__(self, other: _BackoffEntry) -> bool:
        if self.expiry != other.expiry:
            return self.expiry < other.expiry
        if self.less is not None:
            if self.less(self.info, other.info):
                return True
            if self.less(other.info, self.info):
                return False
        return self.seq < other.seq


@dataclass(slots=True)
class _InFlight:
    info: QueuedPodInfo
    first_event: int  # index into the in-flight event log when the pod was popped


@dataclass(slots=True)
class _RecordedEvent:
    event: ClusterEvent
    old: dict | None
    new: dict | None


class SchedulingQueue:
    """One queue for every profile of the scheduler (profiles share the QueueSort plugin).

    ``pre_enqueue(pod)`` runs the pod's profile PreEnqueue plugins (``None``: may enter
    activeQ, else the gating Status). ``plugin_events(pod)`` returns, for the pod's profile,
    plugin name -> registered events with hints. ``pop_from_backoff``: feature gate
    SchedulerPopFromBackoffQ (on by default, as in v1.36).
    """

    def __init__(
        self,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        *,
        nominator: Nominator | None = None,
        pre_enqueue: Callable[[dict], Status | None] = lambda pod: None,
        plugin_events: Callable[[dict], dict[str, list[ClusterEventWithHint]]] = lambda pod: {},
        clock: Callable[[], float] = time.monotonic,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        generic_workload: bool = False,
        pop_from_backoff: bool = True,
    ) -> None:
        self._less = less
        self.pop_from_backoff = pop_from_backoff
        # Feature gate GenericWorkload: a pod group's member retries on backoff alone.
        self.generic_workload = generic_workload
        self._pre_enqueue = pre_enqueue
        self._plugin_events = plugin_events
        self._clock = clock
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.max_in_unschedulable = max_in_unschedulable

        self._cond = threading.Condition(threading.Lock())
        self._active: list[_Less] = []
        self._active_index: dict[str, _Less] = {}
        # Rejected pods (upstream podBackoffQ) and errored ones (podErrorBackoffQ); one index.
        self._backoff: list[_BackoffEntry] = []
        self._error_backoff: list[_BackoffEntry] = []
        self._backoff_index: dict[str, _BackoffEntry] = {}
        # Pods popped from backoffQ because activeQ was empty (upstream counts them in
        # scheduler_queue_incoming_pods_total{queue="active",event="PopFromBackoffQ"}).
        self.popped_from_backoff = 0
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, _InFlight] = {}
        self._events: list[_RecordedEvent] = []
        self._events_base = 0  # index of self._events[0] in the global event sequence
        self._seq = itertools.count()
        self._closed = False
        self.scheduling_cycle = 0
        self.nominator = nominator or Nominator()

    # -- introspection ------------------------------------------------------------------

    def pending_pods(self) -> dict[str, int]:
        with self._cond:
            gated = sum(1 for i in self._unschedulable.values() if i.gating_plugin)
            return {
                ACTIVE_Q: len(self._active_index),
                BACKOFF_Q: len(self._backoff_index),
                UNSCHEDULABLE_Q: len(self._unschedulable) - gated,
                GATED: gated,
            }

    def where(self, pod: dict) -> str | None:
        """Which sub-queue holds the pod (for tests and debugging)."""
        key = pod_key(pod)
        with self._cond:
            if key in self._active_index:
                return ACTIVE_Q
            if key in self._backoff_index:
                return BACKOFF_Q
            if key in self._unschedulable:
                return GATED if self._unschedulable[key].gating_plugin else UNSCHEDULABLE_Q
            if key in self._in_flight:
                return "in-flight"
        return None

    # -- add / pop / done -----------------------------------------------------------------

    def add(self, pod: dict) -> None:
        """A new pending pod from the informer."""
        info = QueuedPodInfo(pod, self._clock())
        with self._cond:
            key = info.pod_info.key
            if self._known(key):
                return
            self.nominator.add_nominated_pod(info.pod_info)
            self._add_to_active_or_gate(info)

    def _known(self, key: str) -> bool:
        return (
            key in self._active_index
            or key in self._backoff_index
            or key in self._unschedulable
            or key in self._in_flight
        )

    def _gate(self, info: QueuedPodInfo) -> bool:
        """Run PreEnqueue; a gated pod goes to the unschedulable pool (``True``)."""
        status = self._pre_enqueue(info.pod)
        if status is not None:
            info.gating_plugin = status.plugin or "PreEnqueue"
            self._unschedulable[info.pod_info.key] = info
            return True
        info.gating_plugin = ""
        return False

    def _add_to_active_or_gate(self, info: QueuedPodInfo, from_backoff: bool = False) -> bool:
        """Upstream ``moveToActiveQ``: with SchedulerPopFromBackoffQ, a pod coming straight
        from backoffQ passed PreEnqueue on entering it and does not run it again."""
        if not (self.pop_from_backoff and from_backoff) and self._gate(info):
            return False
        self._push_active(info)
        return True

    def _push_backoff(self, info: QueuedPodInfo) -> bool:
        """Upstream ``moveToBackoffQ``: with SchedulerPopFromBackoffQ, PreEnqueue runs here
        (a gated pod goes to the unschedulable pool, ``False``) and a waiting pop is woken,
        since it may take the pod. Pods no plugin rejected (errors) go to the error heap."""
        rejected = bool(info.unschedulable_plugins or info.pending_plugins or info.gating_plugin)
        if self.pop_from_backoff and self._gate(info):
            return False
        key = info.pod_info.key
        old = self._backoff_index.pop(key, None)
        if old is not None:
            old.valid = False
        less = self._less if self.pop_from_backoff and rejected else None
        entry = _BackoffEntry(info, self._backoff_expiry(info), less, next(self._seq))
        self._backoff_index[key] = entry
        heapq.heappush(self._backoff if rejected else self._error_backoff, entry)
        if self.pop_from_backoff and rejected:
            self._cond.notify()
        return True

    def _take_backoff(self, key: str) -> QueuedPodInfo | None:
        """Remove the pod from backoffQ (for activate, pop_specific, delete)."""
        entry = self._backoff_index.pop(key, None)
        if entry is None:
            return None
        entry.valid = False
        return entry.info

    def _pop_backoff(self) -> QueuedPodInfo | None:
        """Upstream ``popBackoff``: the head of the rejected pods' heap, backing off or not;
        errored pods wait out their backoff."""
        while self._backoff:
            entry = heapq.heappop(self._backoff)
            if entry.valid:
                del self._backoff_index[entry.info.pod_info.key]
                return entry.info
        return None

    def _push_active(self, info: QueuedPodInfo) -> None:
        # Upstream moveToActiveQ: the first time a pod enters activeQ (a pod group cycle
        # orders its members by it, so the member that completed a gang's quorum goes first).
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._clock()
        entry = _Less(info, self._less)
        self._active_index[info.pod_info.key] = entry
        heapq.heappush(self._active, entry)
        self._cond.notify()

    def _pop_active(self) -> QueuedPodInfo | None:
        while self._active:
            entry = heapq.heappop(self._active)
            if entry.valid:
                del self._active_index[entry.info.pod_info.key]
                return entry.info
        return None

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """Block until a pod is ready (or ``timeout``/close); mark it in flight."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                info = self._pop_active()
                if info is not None:
                    break
                if self.pop_from_backoff:
                    info = self._pop_backoff()
                    if info is not None:
                        self.popped_from_backoff += 1
                        log.debug("popped %s from backoffQ: activeQ is empty", info.pod_info.key)
                        break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining if remaining is not None else 1.0)
            info.attempts += 1
            if info.initial_attempt_timestamp is None:
                info.initial_attempt_timestamp = self._clock()
            self.scheduling_cycle += 1
            self._in_flight[info.pod_info.key] = _InFlight(
                info, self._events_base + len(self._events)
            )
            return info

    def pop_specific(self, pod: dict) -> QueuedPodInfo | None:
        """Take ``pod`` out of the queue as :meth:`pop` would (upstream ``PopSpecificPod``,
        for a pod group cycle, which schedules all the group's pending pods together): it is
        activated first (so it passes PreEnqueue again), then taken from activeQ and marked
        in flight. ``None``: not queued, or gated."""
        key = pod_key(pod)
        with self._cond:
            self._activate(key)
            entry = self._active_index.pop(key, None)
            if entry is None:
                return None
            entry.valid = False
            info = entry.info
            info.attempts += 1
            if info.initial_attempt_timestamp is None:
                info.initial_attempt_timestamp = self._clock()
            self._in_flight[key] = _InFlight(info, self._events_base + len(self._events))
            return info

    def done(self, key: str) -> None:
        """The pod's attempt is over; drop events no in-flight pod needs any more."""
        with self._cond:
            self._in_flight.pop(key, None)
            self._trim_events()

    def _trim_events(self) -> None:
        if not self._in_flight:
            self._events_base += len(self._events)
            self._events.clear()
            return
        oldest = min(f.first_event for f in self._in_flight.values())
        drop = oldest - self._events_base
        if drop > 0:
            del self._events[:drop]
            self._events_base = oldest

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- failures -----------------------------------------------------------------------

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        """Upstream ``calculateBackoffDuration``: the initial backoff doubled per attempt, up
        to the maximum (checked before doubling: a pending gang popped from backoffQ runs up
        thousands of attempts)."""
        count = info.consecutive_errors_count or info.unschedulable_count
        if count <= 0 or self.pod_max_backoff <= 0:
            return 0.0
        shift = count - 1
        if shift >= 64 or self.pod_initial_backoff > self.pod_max_backoff / 2**shift:
            return self.pod_max_backoff
        return self.pod_initial_backoff * 2**shift

    def _align(self, t: float) -> float:
        """Upstream ``alignToWindow``: down to the ordering window with
        SchedulerPopFromBackoffQ, else unchanged."""
        if not self.pop_from_backoff:
            return t
        return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW

    def _backoff_expiry(self, info: QueuedPodInfo) -> float:
        """Upstream ``getBackoffTime``: when the pod's backoff ends (``-inf``: no backoff)."""
        duration = self.backoff_duration(info)
        if duration <= 0:
            return -math.inf
        return self._align(info.timestamp + duration)

    def _is_backing_off(self, info: QueuedPodInfo) -> bool:
        """Upstream ``isPodBackingoff``: a pod whose expiry falls in the current ordering
        window is still backing off."""
        return self._backoff_expiry(info) >= self._align(self._clock())

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, rejected: bool) -> None:
        """Requeue a pod whose attempt failed (upstream
        ``pkg/scheduler/backend/queue/scheduling_queue.go``).

        ``rejected``: the attempt was rejected (Unschedulable...) rather than an Error; the
        pod's ``unschedulable_plugins``/``pending_plugins`` say by whom.
        """
        key = info.pod_info.key
        with self._cond:
            in_flight = self._in_flight.pop(key, None)
            if (
                key in self._active_index
                or key in self._backoff_index
                or key in self._unschedulable
            ):
                self._trim_events()
                return
            if not rejected:
                info.unschedulable_plugins.clear()
                info.pending_plugins.clear()
            # Upstream counts an attempt no plugin rejected (an error, or a pod group that
            # did not fit as a whole) as an error: its backoff heap is the error one.
            if info.unschedulable_plugins or info.pending_plugins:
                info.unschedulable_count += 1
                info.consecutive_errors_count = 0
            else:
                info.consecutive_errors_count += 1
            info.timestamp = self._clock()
            self.nominator.add_nominated_pod(info.pod_info)
            strategy = QueueStrategy.AFTER_BACKOFF
            # A pod group's member is retried on backoff alone: upstream has no event-based
            # requeueing at the pod group level yet.
            member = self.generic_workload and pod_group_name(info.pod) is not None
            if rejected and not member and (info.unschedulable_plugins or info.pending_plugins):
                strategy = QueueStrategy.SKIP
                if in_flight is not None:
                    start = in_flight.first_event - self._events_base
                    for recorded in self._events[max(start, 0) :]:
                        found = self._strategy(info, recorded.event, recorded.old, recorded.new)
                        if found.value > strategy.value:
                            strategy = found
            self._trim_events()
            self._requeue(info, strategy)

    def _requeue(self, info: QueuedPodInfo, strategy: QueueStrategy) -> str:
        key = info.pod_info.key
        if strategy == QueueStrategy.SKIP:
            self._unschedulable[key] = info
            return UNSCHEDULABLE_Q
        if strategy == QueueStrategy.AFTER_BACKOFF and self._is_backing_off(info):
            return BACKOFF_Q if self._push_backoff(info) else GATED
        if self._add_to_active_or_gate(info):
            return ACTIVE_Q
        return GATED

    # -- events -------------------------------------------------------------------------

    def _strategy(
        self,
        info: QueuedPodInfo,
        event: ClusterEvent,
        old: dict | None,
        new: dict | None,
        matching: dict[tuple[int, str], tuple[dict, list[ClusterEventWithHint] | None]]
        | None = None,
    ) -> QueueStrategy:
        """Whether ``event`` may make the pod schedulable (upstream
        ``pkg/scheduler/backend/queue/scheduling_queue.go``). ``matching``: a memo for one
        event, (id of the profile's registrations, plugin) -> (those registrations, the
        plugin's registrations that match ``event``, ``None`` if it registered none), so that
        an event over many unschedulable pods matches each plugin's registrations once."""
        if event.resource == Resource.WILDCARD and event in (UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE):
            return QueueStrategy.AFTER_BACKOFF
        events = self._plugin_events(info.pod)
        relevant = info.unschedulable_plugins | info.pending_plugins
        pending = info.pending_plugins
        if info.gating_plugin:
            # An event the gating plugin did not register never moves a gated pod; one it
            # did is judged by every rejector of the pod, the gating plugin included (upstream
            # GatingPluginEvents, then isPodWorthRequeuing over UnschedulablePlugins, which
            # the gating plugin was added to): DefaultPreemption's Pod/Delete hint is Skip,
            # and a preemptor it held moves on NodeResourcesFit's hint.
            gating_events = events.get(info.gating_plugin)
            if gating_events is not None and not any(
                reg.event.matches(event) for reg in gating_events
            ):
                return QueueStrategy.SKIP
            relevant = relevant | {info.gating_plugin}
        if not relevant:
            return QueueStrategy.AFTER_BACKOFF
        queue_after_backoff = False
        for plugin in relevant:
            if matching is None:
                registered = events.get(plugin)
                if registered is not None:
                    registered = [reg for reg in registered if reg.event.matches(event)]
            else:
                entry = matching.get((id(events), plugin))
                if entry is None or entry[0] is not events:  # (the dict kept: id not reused)
                    found = events.get(plugin)
                    if found is not None:
                        found = [reg for reg in found if reg.event.matches(event)]
                    entry = matching[(id(events), plugin)] = (events, found)
                registered = entry[1]
            if registered is None:
                # Unknown plugin (e.g. the "Extender" pseudo plugin): any event may help.
                queue_after_backoff = True
                continue
            for reg in registered:
                hint = QueueingHint.QUEUE
                if reg.hint is not None:
                    try:
                        hint = reg.hint(info.pod, old, new)
                    except Exception:
                        log.exception("queueing hint of %s failed; queueing", plugin)
                        hint = QueueingHint.QUEUE
                if hint == QueueingHint.QUEUE:
                    if plugin in pending:
                        return QueueStrategy.IMMEDIATELY
                    queue_after_backoff = True
                    break
        return QueueStrategy.AFTER_BACKOFF if queue_after_backoff else QueueStrategy.SKIP

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: dict | None = None,
        new: dict | None = None,
        pre_check: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> int:
        """A cluster event happened: requeue the unschedulable pods it may help."""
        moved = 0
        with self._cond:
            if self._in_flight:
                self._events.append(_RecordedEvent(event, old, new))
            matching: dict[tuple[int, str], tuple[dict, list[ClusterEventWithHint] | None]] = {}
            for key, info in list(self._unschedulable.items()):
                if pre_check is not None and not pre_check(info):
                    continue
                strategy = self._strategy(info, event, old, new, matching)
                if strategy == QueueStrategy.SKIP:
                    continue
                if info.gating_plugin and event not in (UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE):
                    strategy = QueueStrategy.IMMEDIATELY  # gated pods re-run PreEnqueue
                del self._unschedulable[key]
                if self._requeue(info, strategy) != UNSCHEDULABLE_Q:
                    moved += 1
        return moved

    def activate(self, pods: Iterable[dict]) -> None:
        """Move the pods to activeQ now (no backoff); in-flight ones get ForceActivate."""
        with self._cond:
            for pod in pods:
                key = pod_key(pod)
                if not self._activate(key) and key in self._in_flight:
                    self._events.append(_RecordedEvent(FORCE_ACTIVATE, None, pod))

    def _activate(self, key: str) -> bool:
        """Upstream ``activate``: a pod of the unschedulable pool or backoffQ to activeQ
        (``False``: in neither)."""
        info = self._unschedulable.pop(key, None)
        if info is not None:
            self._add_to_active_or_gate(info)
            return True
        info = self._take_backoff(key)
        if info is not None:
            self._add_to_active_or_gate(info, from_backoff=True)
            return True
        return False

    # -- updates and deletes of queued pods -------------------------------------------------

    def update(self, old: dict | None, new: dict) -> None:
        """A pending pod changed (upstream ``pkg/scheduler/backend/queue/scheduling_queue.go``
        update)."""
        key = pod_key(new)
        with self._cond:
            if key in self._in_flight:
                self._events.append(
                    _RecordedEvent(
                        ClusterEvent(Resource.UNSCHEDULABLE_POD, ActionType.UPDATE, "PodUpdate"),
                        old,
                        new,
                    )
                )
                self._in_flight[key].info.pod_info = PodInfo(new)
                return
            entry = self._active_index.get(key)
            if entry is not None:
                entry.info.pod_info = PodInfo(new)
                self.nominator.add_nominated_pod(entry.info.pod_info)
                # priority may have changed: re-heapify
                heapq.heapify(self._active)
                return
            backoff = self._backoff_index.get(key)
            if backoff is not None:
                backoff.info.pod_info = PodInfo(new)
                self.nominator.add_nominated_pod(backoff.info.pod_info)
                # priority may have changed (it orders a window): re-heapify
                heapq.heapify(self._backoff)
                return
            info = self._unschedulable.get(key)
            if info is not None:
                info.pod_info = PodInfo(new)
                self.nominator.add_nominated_pod(info.pod_info)
                event = pod_update_event(old, new)
                strategy = self._strategy(info, event, old, new)
                if info.gating_plugin:
                    # A gated pod re-runs PreEnqueue on any update of its own.
                    strategy = QueueStrategy.IMMEDIATELY
                if strategy != QueueStrategy.SKIP:
                    del self._unschedulable[key]
                    self._requeue(info, strategy)
                return
        self.add(new)

    def delete(self, pod: dict) -> None:
        key = pod_key(pod)
        with self._cond:
            self.nominator.delete_nominated_pod_if_exists(pod)
            entry = self._active_index.pop(key, None)
            if entry is not None:
                entry.valid = False
            self._take_backoff(key)
            self._unschedulable.pop(key, None)

    # -- flushes ------------------------------------------------------------------------

    def flush_backoff_completed(self) -> int:
        """Move pods whose backoff expired to activeQ, from both heaps (upstream
        ``flushBackoffQCompleted``, every second)."""
        moved = 0
        with self._cond:
            now = self._align(self._clock())
            for heap in (self._backoff, self._error_backoff):
                while heap and (not heap[0].valid or heap[0].expiry < now):
                    entry = heapq.heappop(heap)
                    if not entry.valid:
                        continue  # deleted or moved meanwhile
                    del self._backoff_index[entry.info.pod_info.key]
                    if self._add_to_active_or_gate(entry.info, from_backoff=True):
                        moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Pods in the unschedulable pool for longer than 5 minutes go back (every 30 s)."""
        now = self._clock()
        with self._cond:
            stale = [
                info
                for info in self._unschedulable.values()
                if not info.gating_plugin and now - info.timestamp >= self.max_in_unschedulable
            ]
        if not stale:
            return 0
        keys = {info.pod_info.key for info in stale}
        return self.move_all_to_active_or_backoff(
            UNSCHEDULABLE_TIMEOUT, pre_check=lambda info: info.pod_info.key in keys
        )

    def next_wakeup(self) -> float | None:
        """The earliest clock time at which a flush moves a pod by time alone: a backoff
        expiry (with SchedulerPopFromBackoffQ the flush takes it once the ordering window
        after it begins), or an unschedulable pod's timeout (``max_in_unschedulable``).
        ``None``: nothing waits on time. For a driver that jumps a virtual clock from event
        to event (``extender.replay``) and calls the flushes itself."""
        after = BACKOFF_ORDERING_WINDOW if self.pop_from_backoff else 1e-6
        with self._cond:
            # Entries of moved or deleted pods stay in the heaps, marked invalid.
            times = [
                entry.expiry + after
                for heap in (self._backoff, self._error_backoff)
                for entry in heap
                if entry.valid
            ]
            times += [
                info.timestamp + self.max_in_unschedulable
                for info in self._unschedulable.values()
                if not info.gating_plugin
            ]
        soonest = min(times, default=math.inf)
        return None if soonest == math.inf else soonest

    def run_flushers(self, stop: threading.Event) -> None:
        """Run both flush loops until ``stop`` is set (call in a daemon thread). With
        SchedulerPopFromBackoffQ the backoff flush runs at the clock's whole seconds (upstream
        ``waitUntilAlignedWithOrderingWindow``), when a window's pods complete together."""
        last_unschedulable = time.monotonic()
        while not stop.wait(self._until_next_flush()):
            self.flush_backoff_completed()
            if time.monotonic() - last_unschedulable >= UNSCHEDULABLE_FLUSH_INTERVAL:
                last_unschedulable = time.monotonic()
                self.flush_unschedulable_leftover()

    def _until_next_flush(self) -> float:
        if not self.pop_from_backoff:
            return BACKOFF_FLUSH_INTERVAL
        now = self._clock()
        delay = self._align(now) + BACKOFF_ORDERING_WINDOW - now
        # An injected clock need not run with real time: never wait past one window.
        return min(max(delay, 0.0), BACKOFF_ORDERING_WINDOW)


def pod_update_event(old: dict | None, new: dict) -> ClusterEvent:
    """The update event of a pending pod's own change (label, toleration, gates, requests)."""
    action = ActionType(0)
    old = old or {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_meta.get("labels") != new_meta.get("labels"):
        action |= ActionType.UPDATE_POD_LABEL
    if old_spec.get("tolerations") != new_spec.get("tolerations"):
        action |= ActionType.UPDATE_POD_TOLERATION
    if old_spec.get("schedulingGates") and not new_spec.get("schedulingGates"):
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if old_spec.get("containers") != new_spec.get("containers"):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    # The resource-claim controller named the claims it generated for the pod.
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if old_status.get("resourceClaimStatuses") != new_status.get(
        "resourceClaimStatuses"
    ) or old_status.get("extendedResourceClaimStatus") != new_status.get(
        "extendedResourceClaimStatus"
    ):
        action |= ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    if not action:
        action = ActionType.UPDATE
    return ClusterEvent(Resource.UNSCHEDULABLE_POD, action, "UnschedulablePodUpdate")
