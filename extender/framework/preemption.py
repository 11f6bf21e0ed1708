"""The generic preemption evaluator (upstream ``pkg/scheduler/framework/preemption/preemption.go``).

Contract:

* :class:`Evaluator` runs ``Evaluator.Preempt`` for a PostFilter plugin implementing
  :class:`PreemptionPlugin` (upstream ``preemption.Interface``): eligibility, candidates (a dry
  run on the nodes where preemption might help), extenders' preempt verbs, one candidate
  picked, then prepared. The plugin picks the victims on a node; the evaluator picks the node.
* Dry runs never mutate the snapshot or the cycle state: each node is simulated on clones
  (:func:`fits_without_victims` is also the extender's HTTP ``preempt`` verb's dry run).
* Only the chosen node is acted on (:meth:`Evaluator.prepare_candidate`): victims get the
  DisruptionTarget condition and are deleted (waiting pods are rejected in memory), each gets
  a ``Preempted`` event, lower-priority pods nominated there lose their nomination.
* With the feature gate SchedulerAsyncPreemption (beta, on by default as in v1.36; upstream
  ``preemption/executor.go`` ``prepareCandidateAsync``) those API calls run on a background
  thread, so the scheduling thread goes on with the next pod: the preemptor is marked
  *preempting* until they are done (:meth:`Evaluator.is_pod_running_preemption`, which
  DefaultPreemption's PreEnqueue reads to keep it out of activeQ meanwhile). The last victim
  is deleted after the others, and once its deletion reached the informer the preemptor is
  no longer held (its deletion event may arrive before the thread returns). Without the gate
  the calls are made before PostFilter returns.
* The answer is ``PostFilterResult(NominatingInfo(node, OVERRIDE))`` with Success, or a
  non-success status without the ``preemption:`` prefix (the plugin adds it).

One module (~470 lines) like upstream's ``preemption.go``: finding, choosing and preparing a
candidate share the Candidate type and the dry-run helpers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from extender.kube import NotFound

from . import budget
from .cycle_state import CycleState
from .handle import POD_DISRUPTION_BUDGETS, PODS, Extender, Handle
from .labels import LabelSelector
from .node_info import NodeInfo
from .pod_info import PodInfo, pod_priority
from .results import NominatingInfo, NominatingMode, PostFilterResult
from .schedule import Diagnosis, fit_error_message
from .snapshot import Snapshot
from .status import Code, Status

log = logging.getLogger(__name__)

MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_CANDIDATE = "no candidate node for preemption"
MSG_NO_NODES = "no nodes available"

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

# Shift added to every victim priority when summing them, so that negative priorities do not
# make a node with more victims look cheaper (upstream adds MaxInt32 + 1).
_PRIORITY_SHIFT = 2**31
# Stands for "no victim" in the priority criteria: lower than any pod priority (int32).
_NO_VICTIM_PRIORITY = -(2**31) - 1

VictimsMap = dict[str, tuple[list[PodInfo], int]]
SelectVictims = Callable[
    [CycleState, dict, NodeInfo, list[dict]], tuple[list[PodInfo], int, Status | None]
]


@dataclass
class Candidate:
    """A node the preemptor fits on once ``victims`` (most important first) are evicted."""

    name: str
    victims: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


class PreemptionPlugin(Protocol):
    """What a preemption plugin gives the evaluator (upstream ``preemption.Interface``)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> VictimsMap: ...

    def pod_eligible_to_preempt_others(
        self, state: CycleState, pod: dict, nominated_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: dict, node_info: NodeInfo, pdbs: list[dict]
    ) -> tuple[list[PodInfo], int, Status | None]: ...

    def ordered_score_funcs(self, nodes_to_victims: VictimsMap) -> list[Callable[[str], int]]:
        """Criteria for picking the node, best score first; empty: the default order."""
        ...


def nominated_node_name(pod: dict) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


def pod_start_time(info: PodInfo) -> float:
    """``status.startTime`` as a POSIX timestamp; a pod not started yet counts as "now",
    i.e. later than any started pod (upstream ``util.GetPodStartTime``)."""
    raw = (info.pod.get("status") or {}).get("startTime")
    if not raw:
        return float("inf")
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")


# -- PodDisruptionBudgets ---------------------------------------------------------------------


class DisruptionBudgets:
    """The PDBs' ``status.disruptionsAllowed``, spent pod by pod as victims are picked
    (upstream ``filterPodsWithPDBViolation`` and ``filterVictimsWithPDBViolation``). Pods the
    API server already counted (``status.disruptedPods``) spend nothing; a pod without labels
    matches no PDB; an empty, missing or invalid selector matches nothing."""

    def __init__(self, pdbs: list[dict]) -> None:
        self.pdbs = pdbs
        self.allowed = [int((p.get("status") or {}).get("disruptionsAllowed") or 0) for p in pdbs]
        self.selectors = [_pdb_selector(pdb) for pdb in pdbs]

    def spend(self, info: PodInfo, *, stop_at_violation: bool = False) -> bool:
        """Evict ``info``: whether that drives a matching PDB below zero. Every matching PDB
        is spent, or, with ``stop_at_violation``, those up to the first one violated."""
        if not info.labels:
            return False
        violated = False
        for i, pdb in enumerate(self.pdbs):
            if ((pdb.get("metadata") or {}).get("namespace") or "default") != info.namespace:
                continue
            selector = self.selectors[i]
            if selector is None or not selector.matches(info.labels):
                continue
            if info.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                continue
            self.allowed[i] -= 1
            if self.allowed[i] < 0:
                violated = True
                if stop_at_violation:
                    break
        return violated


def _pdb_selector(pdb: dict) -> LabelSelector | None:
    try:
        selector = LabelSelector((pdb.get("spec") or {}).get("selector"))
    except (ValueError, TypeError, KeyError):
        return None  # an invalid selector matches no pod
    if selector.matches_nothing or selector.empty:
        return None
    return selector


# -- dry run ----------------------------------------------------------------------------------


def remove_victims(
    fwk: Handle, state: CycleState, pod: dict, node_info: NodeInfo, victims: list[PodInfo]
) -> Status | None:
    """Remove ``victims`` from ``node_info`` and tell the PreFilter extensions (RemovePod).

    Mutates ``state`` and ``node_info`` (pass clones); a victim not on the node is skipped.
    """
    for victim in victims:
        if node_info.remove_pod(victim.key) is None:
            continue
        status = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node_info)
        if status is not None:
            return status
    return None


def fits_without_victims(
    fwk: Handle, state: CycleState, pod: dict, node_info: NodeInfo, victims: list[PodInfo]
) -> Status | None:
    """``None`` if ``pod`` passes the filters (with nominated pods) on ``node_info`` once
    ``victims`` are gone; the status otherwise. Works on clones of ``state`` and
    ``node_info``."""
    state = state.clone()
    node_info = node_info.clone()
    node_info.scratch = True
    status = remove_victims(fwk, state, pod, node_info, victims)
    if status is not None:
        return status
    return fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)


def nodes_where_preemption_might_help(
    filtered_node_status: Mapping[str, Status] | Diagnosis, snapshot: Snapshot
) -> list[NodeInfo]:
    """Snapshot nodes whose Filter status is Unschedulable (removing pods may help).

    Accepts the PostFilter node-to-status map or a :class:`Diagnosis` (whose absent status
    covers nodes it does not list). Nodes without a status count as
    UnschedulableAndUnresolvable, as upstream's default NodeToStatus does.
    """
    if isinstance(filtered_node_status, Diagnosis):
        status_of: Callable[[str], Status | None] = filtered_node_status.status_of
    else:
        status_of = filtered_node_status.get
    result = []
    for info in snapshot.node_info_list:
        status = status_of(info.name)
        if status is not None and status.code == Code.UNSCHEDULABLE:
            result.append(info)
    return result


def dry_run_preemption(
    select_victims: SelectVictims,
    state: CycleState,
    pod: dict,
    potential_nodes: list[NodeInfo],
    pdbs: list[dict],
    offset: int = 0,
    num_candidates: int | None = None,
) -> tuple[list[Candidate], dict[str, Status]]:
    """Simulate preemption on ``potential_nodes`` round-robin from ``offset``.

    Stops once at least one candidate without PDB violations exists and ``num_candidates``
    (default: all nodes) were found. Returns the candidates, PDB-respecting ones first (each
    group holds at most ``num_candidates``), and the status of every node that is not one.
    """
    n = len(potential_nodes)
    limit = n if num_candidates is None else num_candidates
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, Status] = {}
    for i in range(n):
        info = potential_nodes[(offset + i) % n]
        victims, num_pdb, status = select_victims(state, pod, info, pdbs)
        if status is None and victims:
            group = non_violating if num_pdb == 0 else violating
            if len(group) < limit:
                group.append(Candidate(info.name, victims, num_pdb))
            if non_violating and len(non_violating) + len(violating) >= limit:
                break
            continue
        if status is None:
            status = Status.error(f'expected at least one victim pod on node "{info.name}"')
        statuses[info.name] = status
    return non_violating + violating, statuses


# -- picking the node -------------------------------------------------------------------------


def _highest_victim_priority(candidate: Candidate) -> int:
    # Victims are sorted most important first, so the first has the highest priority.
    return candidate.victims[0].priority if candidate.victims else _NO_VICTIM_PRIORITY


def _earliest_start_of_highest_priority(candidate: Candidate) -> float:
    victims = candidate.victims
    if not victims:
        return float("inf")
    top = max(v.priority for v in victims)
    return min(pod_start_time(v) for v in victims if v.priority == top)


# Each criterion scores a candidate; higher is better.
_CANDIDATE_CRITERIA: tuple[Callable[[Candidate], float], ...] = (
    lambda c: -c.num_pdb_violations,
    lambda c: -_highest_victim_priority(c),
    lambda c: -sum(v.priority + _PRIORITY_SHIFT for v in c.victims),
    lambda c: -len(c.victims),
    # Prefer evicting pods that started most recently.
    _earliest_start_of_highest_priority,
)


def _by_node_name(score: Callable[[str], int]) -> Callable[[Candidate], float]:
    return lambda candidate: score(candidate.name)


def select_candidate(
    candidates: list[Candidate], score_funcs: list[Callable[[str], int]] | None = None
) -> Candidate | None:
    """The best node to preempt on (upstream ``pickOneNodeForPreemption``).

    Each criterion keeps only the best ties. ``score_funcs`` (node name -> score) replace the
    default criteria, which are in order: fewest PDB violations; lowest priority of the most
    important victim; lowest sum of (shifted) victim priorities; fewest victims; latest
    start among the highest-priority victims. Then the first remaining candidate.
    """
    if not candidates:
        return None
    criteria: list[Callable[[Candidate], float]] = list(_CANDIDATE_CRITERIA)
    if score_funcs:
        criteria = [_by_node_name(f) for f in score_funcs]
    remaining = list(candidates)
    for criterion in criteria:
        if len(remaining) == 1:
            break
        scored = [(criterion(c), c) for c in remaining]
        best = max(score for score, _ in scored)
        remaining = [c for score, c in scored if score == best]
    return remaining[0]


# -- the evaluator ----------------------------------------------------------------------------


class Evaluator:
    """Upstream ``preemption.Evaluator``: the node-level algorithm over a plugin's victims."""

    def __init__(self, plugin_name: str, handle: Handle, plugin: PreemptionPlugin) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.plugin = plugin
        # SchedulerAsyncPreemption (upstream Executor): preemptor UIDs whose API calls are
        # under way, and for each the last victim (namespace, name) once only it is left.
        self._lock = threading.Lock()
        self._preempting: set[str] = set()
        self._last_victim: dict[str, tuple[str, str]] = {}

    @property
    def async_preemption(self) -> bool:
        return self.handle.features.scheduler_async_preemption

    def preempt(
        self, state: CycleState, pod: dict, filtered_node_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``Evaluator.Preempt``."""
        snapshot: Snapshot | None = state.snapshot
        nominated_status = filtered_node_status.get(
            nominated_node_name(pod), Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        )
        eligible, message = self.plugin.pod_eligible_to_preempt_others(state, pod, nominated_status)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, message)

        if snapshot is None or not snapshot.node_info_list:
            return None, Status.error(MSG_NO_NODES)
        num_nodes = len(snapshot.node_info_list)
        candidates, statuses, error = self.find_candidates(
            state, pod, snapshot, filtered_node_status
        )
        if error is not None and not candidates:
            return None, error
        if not candidates:
            diagnosis = Diagnosis(
                node_to_status=statuses,
                absent_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NOT_HELPFUL),
            )
            # Clear the pod's nomination: nothing it could preempt would make it fit.
            return (
                PostFilterResult(NominatingInfo("", NominatingMode.OVERRIDE)),
                Status(Code.UNSCHEDULABLE, fit_error_message(num_nodes, diagnosis)),
            )

        candidates, status = self.call_extenders(pod, candidates, snapshot)
        if status is not None:
            return None, status

        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, MSG_NO_CANDIDATE)

        status = self.prepare_candidate(best, pod)
        if status is not None:
            return None, status
        return PostFilterResult(NominatingInfo(best.name, NominatingMode.OVERRIDE)), None

    def find_candidates(
        self,
        state: CycleState,
        pod: dict,
        snapshot: Snapshot,
        filtered_node_status: Mapping[str, Status] | Diagnosis,
    ) -> tuple[list[Candidate], dict[str, Status], Status | None]:
        """Dry-run candidates; also returns node statuses and an Error status if any node
        failed with an error."""
        potential = nodes_where_preemption_might_help(filtered_node_status, snapshot)
        if not potential:
            return [], {}, None
        pdbs = self.handle.lister(POD_DISRUPTION_BUDGETS).list()
        offset, num = self.plugin.get_offset_and_num_candidates(len(potential))
        candidates, statuses = dry_run_preemption(
            self.plugin.select_victims_on_node, state, pod, potential, pdbs, offset, num
        )
        errors = [s.message for s in statuses.values() if s.code == Code.ERROR]
        error = None
        if errors:
            error = Status.error(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return candidates, statuses, error

    def call_extenders(
        self, pod: dict, candidates: list[Candidate], snapshot: Snapshot | None
    ) -> tuple[list[Candidate], Status | None]:
        """Let extenders with a preemptVerb shrink the candidates or their victim lists.

        Each extender gets ``{node: (victim pod dicts, PDB violations)}`` and answers
        ``{node: (victim UIDs, PDB violations)}`` (``HTTPExtender.process_preemption``);
        UIDs are resolved against the pods on the node in the snapshot.
        """
        extenders = self.handle.extenders
        if not extenders or not candidates:
            return candidates, None
        victims_map = self.plugin.candidates_to_victims_map(candidates)
        for extender in extenders:
            if not extender.supports_preemption() or not extender.is_interested(pod):
                continue
            request = {node: ([v.pod for v in vs], n) for node, (vs, n) in victims_map.items()}
            try:
                reply = extender.process_preemption(pod, request)
                resolved = _resolve_victims(extender, reply, snapshot)
            except Exception as exc:
                if extender.ignorable:
                    log.info("skipping ignorable extender %s: %s", extender.name, exc)
                    continue
                return [], Status.error(exc)
            for node in list(resolved):
                if not resolved[node][0]:
                    if extender.ignorable:
                        del resolved[node]
                        continue
                    return [], Status.error(f'expected at least one victim pod on node "{node}"')
            victims_map = resolved
            if not victims_map:
                break
        return [Candidate(node, vs, n) for node, (vs, n) in victims_map.items()], None

    def select_candidate(self, candidates: list[Candidate]) -> Candidate | None:
        """Upstream ``Evaluator.SelectCandidate``: the plugin's criteria, or the default."""
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        victims_map = self.plugin.candidates_to_victims_map(candidates)
        return select_candidate(candidates, self.plugin.ordered_score_funcs(victims_map))

    # -- acting on the choice -----------------------------------------------------------

    def prepare_candidate(self, candidate: Candidate, pod: dict) -> Status | None:
        """Evict the victims and clear lower-priority nominations on the chosen node (on a
        background thread with SchedulerAsyncPreemption: then always ``None``)."""
        if self.async_preemption:
            self.prepare_candidate_async(candidate, pod)
            return None
        self.handle.metrics.preemption(len(candidate.victims))
        with budget.suspended():
            for victim in candidate.victims:
                if victim.deleting:
                    continue  # graceful deletion already under way
                try:
                    self.preempt_pod(candidate.name, pod, victim)
                except Exception as exc:
                    log.warning("preempting %s/%s failed: %s", victim.namespace, victim.name, exc)
                    return Status.error(exc)
            self.clear_lower_priority_nominations(pod, candidate.name)
        return None

    def prepare_candidate_async(self, candidate: Candidate, pod: dict) -> None:
        """Upstream ``prepareCandidateAsync``: the preemptor is marked preempting, then a
        thread clears the lower-priority nominations, evicts every victim but the last,
        records the last, evicts it, and unmarks the preemptor. Victims already being
        deleted get no call; if none is left, nothing happens (nor are nominations cleared,
        as upstream). A failed eviction skips the last victim and is logged."""
        victims = [v for v in candidate.victims if not v.deleting]
        if not victims:
            return
        self.handle.metrics.preemption(len(candidate.victims))
        uid = (pod.get("metadata") or {}).get("uid", "")
        with self._lock:
            self._preempting.add(uid)
        thread = threading.Thread(
            target=self._run_async,
            args=(candidate.name, pod, victims, uid),
            name=f"preemption-{uid[:8]}",
            daemon=True,
        )
        thread.start()

    def _run_async(self, node_name: str, pod: dict, victims: list[PodInfo], uid: str) -> None:
        try:
            try:
                self.clear_lower_priority_nominations(pod, node_name)
            except Exception:  # not critical, as upstream
                log.warning("clearing lower-priority nominations failed", exc_info=True)
            *first, last = victims
            for victim in first:
                self.preempt_pod(node_name, pod, victim)
            with self._lock:
                self._last_victim[uid] = (last.namespace, last.name)
            self.preempt_pod(node_name, pod, last)
        except Exception as exc:
            key = f"{(pod.get('metadata') or {}).get('namespace')}/"
            key += str((pod.get("metadata") or {}).get("name"))
            log.warning("async preemption for %s on %s failed: %s", key, node_name, exc)
        finally:
            with self._lock:
                self._preempting.discard(uid)
                self._last_victim.pop(uid, None)

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption``: the preemptor's API calls are under way, and
        when only the last victim is left, the informer has not yet seen it deleted or
        terminating."""
        with self._lock:
            if uid not in self._preempting:
                return False
            last = self._last_victim.get(uid)
        if last is None:
            return True
        victim = self.handle.lister(PODS).get(*last)
        if victim is None:
            return False
        return (victim.get("metadata") or {}).get("deletionTimestamp") is None

    def preempt_pod(self, node_name: str, preemptor: dict, victim: PodInfo) -> None:
        """Reject a waiting victim, or mark it DisruptionTarget and delete it."""
        spec = preemptor.get("spec") or {}
        evict(
            self.handle,
            self.plugin_name,
            victim,
            kind="pod",
            preemptor_uid=(preemptor.get("metadata") or {}).get("uid", ""),
            scheduler_name=spec.get("schedulerName") or self.handle.profile_name,
            node_name=node_name,
        )

    def clear_lower_priority_nominations(self, pod: dict, node_name: str) -> None:
        """Lower-priority pods nominated to ``node_name`` may no longer fit there."""
        nominator = self.handle.nominator
        priority = pod_priority(pod)
        lower = [p for p in nominator.nominated_pods_for_node(node_name) if p.priority < priority]
        client = self.handle.client
        for info in lower:
            if client is not None and nominated_node_name(info.pod):
                try:
                    client.patch_pod_status(
                        info.namespace, info.name, {"status": {"nominatedNodeName": None}}
                    )
                except Exception:
                    log.warning("clearing nominatedNodeName of %s failed", info.key, exc_info=True)
            nominator.delete_nominated_pod_if_exists(info.pod)


def evict(
    handle: Handle,
    plugin_name: str,
    victim: PodInfo,
    *,
    kind: str,
    preemptor_uid: str,
    scheduler_name: str,
    node_name: str,
) -> None:
    """Upstream ``Executor.PreemptPod``: reject a victim waiting at Permit, or give it the
    DisruptionTarget condition and delete it; then its ``Preempted`` event. ``kind``: what
    preempts, ``pod`` or ``podgroup``; ``node_name``: the candidate (``cluster`` for a pod
    group)."""
    waiting = handle.get_waiting_pod(victim.uid) if victim.uid else None
    if waiting is not None:
        waiting.reject(plugin_name, "preempted")
    else:
        client = handle.client
        if client is None:
            raise RuntimeError("no API client to evict preemption victims with")
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": REASON_PREEMPTION_BY_SCHEDULER,
            "message": f"{scheduler_name}: preempting to accommodate a higher priority {kind}",
        }
        try:
            if not _has_condition(victim.pod, condition):
                client.patch_pod_status(
                    victim.namespace, victim.name, {"status": {"conditions": [condition]}}
                )
            client.delete_pod(victim.namespace, victim.name, victim.uid)
        except NotFound:
            return  # already gone
    handle.event_recorder.record_event(
        victim.pod,
        "Normal",
        "Preempted",
        "Preempting",
        f"Preempted by {kind} {preemptor_uid} on node {node_name}",
    )


def _has_condition(pod: dict, condition: dict) -> bool:
    for existing in (pod.get("status") or {}).get("conditions") or ():
        if existing.get("type") == condition["type"]:
            return all(existing.get(k) == v for k, v in condition.items())
    return False


def _resolve_victims(
    extender: Extender, reply: dict[str, tuple[list[str], int]], snapshot: Snapshot | None
) -> VictimsMap:
    """Map the extender's victim UIDs back to the pods on each node (as upstream)."""
    resolved: VictimsMap = {}
    for node, (uids, violations) in (reply or {}).items():
        info = snapshot.get(node) if snapshot is not None else None
        if info is None:
            raise ValueError(f'nodeinfo not found for node name "{node}"')
        by_uid = {p.uid: p for p in info.pods}
        victims = []
        for uid in uids:
            if uid not in by_uid:
                raise ValueError(
                    f"extender: {extender.name} claims to preempt pod (UID: {uid}) on node: "
                    f"{node}, but the pod is not found on the node"
                )
            victims.append(by_uid[uid])
        resolved[node] = (victims, violations)
    return resolved
