"""DefaultPreemption (PostFilter): evict lower-priority pods so that a pod that fits nowhere
can be nominated to a node (spec §8, upstream v1.36).

Contract:

* Reads the cycle's snapshot (``state.snapshot``), the per-node statuses of the failed Filter
  run, the PodDisruptionBudgets (``handle.pdb_lister()``, policy/v1 dicts) and the nominator.
* Dry runs never mutate the snapshot or the cycle state: every node is simulated on a
  ``NodeInfo.clone()`` and a ``CycleState.clone()``.
* Only after a node is chosen does it act: victims are deleted through the client (waiting
  pods are rejected in memory instead) and lower-priority pods nominated to that node lose
  their nomination. Victims are deleted synchronously (upstream's AsyncPreemption does the
  same API calls in a goroutine and holds the preemptor in PreEnqueue meanwhile).
* The answer is ``PostFilterResult(NominatingInfo(node, OVERRIDE))`` with Success; when
  preemption cannot help, an Unschedulable status whose message starts with
  ``preemption:`` (appended by the scheduler to the FitError text).

The victim-selection algorithm is made of module-level functions
(:func:`select_victims_on_node`, :func:`dry_run_preemption`, :func:`select_candidate`, ...)
because the extender's HTTP ``preempt`` verb reuses them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from extender.framework.cycle_state import CycleState
from extender.framework.events import ClusterEventWithHint
from extender.framework.handle import POD_DISRUPTION_BUDGETS, PODS, Handle
from extender.framework.labels import LabelSelector
from extender.framework.schedule import Diagnosis, fit_error_message
from extender.framework.status import Code, Status
from extender.framework.types import (
    NodeInfo,
    NominatingInfo,
    NominatingMode,
    PodInfo,
    PostFilterResult,
    Snapshot,
    pod_priority,
)

log = logging.getLogger(__name__)

NAME = "DefaultPreemption"

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

MSG_PREEMPTION_PREFIX = "preemption: "
MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NO_CANDIDATE = "no candidate node for preemption"
MSG_NO_NODES = "no nodes available"

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

# Shift added to every victim priority when summing them, so that negative priorities do not
# make a node with more victims look cheaper (upstream adds MaxInt32 + 1).
_PRIORITY_SHIFT = 2**31


# -- candidates -------------------------------------------------------------------------------


@dataclass
class Candidate:
    """A node the preemptor fits on once ``victims`` (most important first) are evicted."""

    name: str
    victims: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


# -- eligibility ------------------------------------------------------------------------------


def _nominated_node_name(pod: dict) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


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
    nominated = _nominated_node_name(pod)
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


# -- potential nodes --------------------------------------------------------------------------


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


# -- PodDisruptionBudgets ---------------------------------------------------------------------


def _pdb_selector(pdb: dict) -> LabelSelector | None:
    """The PDB's selector, or ``None`` if it selects nothing (missing, empty or invalid)."""
    try:
        selector = LabelSelector((pdb.get("spec") or {}).get("selector"))
    except (ValueError, TypeError, KeyError):
        return None  # an invalid selector matches no pod
    if selector.matches_nothing or selector.empty:
        return None
    return selector


def filter_pods_with_pdb_violation(
    pods: Iterable[PodInfo], pdbs: list[dict]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (order kept) into (PDB-violating, non-violating) if all were evicted.

    Each matching PDB's ``status.disruptionsAllowed`` is spent pod by pod; a pod whose eviction
    drives one below zero violates. Pods the API server already counted
    (``status.disruptedPods``) spend nothing.
    """
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    selectors = [_pdb_selector(pdb) for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in pods:
        violated = False
        if info.labels:  # a pod without labels matches no PDB
            for i, pdb in enumerate(pdbs):
                meta = pdb.get("metadata") or {}
                if (meta.get("namespace") or "default") != info.namespace:
                    continue
                selector = selectors[i]
                if selector is None or not selector.matches(info.labels):
                    continue
                if info.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(info)
    return violating, non_violating


# -- importance -------------------------------------------------------------------------------


def pod_start_time(info: PodInfo) -> float:
    """``status.startTime`` as a POSIX timestamp; a pod not started yet counts as "now",
    i.e. later than any started pod."""
    raw = (info.pod.get("status") or {}).get("startTime")
    if not raw:
        return float("inf")
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")


def importance_key(info: PodInfo) -> tuple[int, float]:
    """Sort key putting the most important pod first: higher priority, then older start."""
    return (-info.priority, pod_start_time(info))


# -- victims on one node ----------------------------------------------------------------------


def select_victims_on_node(
    fwk: Any,
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
    priority = pod_priority(pod)

    def remove(info: PodInfo) -> Status | None:
        node_info.remove_pod(info.key)
        return fwk.run_pre_filter_extension_remove_pod(state, pod, info, node_info)

    def add(info: PodInfo) -> Status | None:
        node_info.add_pod(info)
        return fwk.run_pre_filter_extension_add_pod(state, pod, info, node_info)

    potential = [info for info in node_info.pods if info.priority < priority]
    for info in potential:
        status = remove(info)
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


# -- dry run over nodes -----------------------------------------------------------------------


def dry_run_preemption(
    fwk: Any,
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
        victims, num_pdb, status = select_victims_on_node(fwk, state, pod, info, pdbs)
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


def num_candidates_to_find(num_nodes: int, percentage: int, absolute: int) -> int:
    """``max(num_nodes × percentage // 100, absolute)`` capped at ``num_nodes``."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


# -- picking the node -------------------------------------------------------------------------


# Stands for "no victim" in the priority criteria: lower than any pod priority (int32).
_NO_VICTIM_PRIORITY = -(2**31) - 1


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


def select_candidate(candidates: list[Candidate]) -> Candidate | None:
    """The best node to preempt on (upstream pickOneNodeForPreemption).

    Criteria in order, each keeping only the best ties: fewest PDB violations; lowest
    priority of the most important victim; lowest sum of (shifted) victim priorities; fewest
    victims; latest start among the highest-priority victims; then the first candidate.
    """
    if not candidates:
        return None
    remaining = list(candidates)
    for criterion in _CANDIDATE_CRITERIA:
        if len(remaining) == 1:
            break
        scored = [(criterion(c), c) for c in remaining]
        best = max(score for score, _ in scored)
        remaining = [c for score, c in scored if score == best]
    return remaining[0]


# -- the plugin -------------------------------------------------------------------------------


def _int_arg(args: dict, key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: Invalid value: {value!r}: must be an integer")
    return value


def validate_args(percentage: int, absolute: int) -> None:
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


def _is_not_found(exc: BaseException) -> bool:
    return getattr(exc, "status", None) == 404 or getattr(exc, "code", None) == 404


class DefaultPreemption:
    name = NAME
    reads = (PODS, POD_DISRUPTION_BUDGETS)

    def __init__(self, args: dict, handle: Handle) -> None:
        args = args or {}
        self.min_candidate_nodes_percentage = _int_arg(
            args, "minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
        )
        self.min_candidate_nodes_absolute = _int_arg(
            args, "minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE
        )
        validate_args(self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute)
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Preemption never rejects a pod by itself (no PreEnqueue here), so no event is
        # needed to requeue on its behalf; the filters that failed register theirs.
        return []

    # -- PostFilter ---------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, status = self.preempt(state, pod, filtered_node_status)
        if status is not None and status.message:
            return result, Status(status.code, MSG_PREEMPTION_PREFIX + status.message)
        return result, status

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = self.handle.rng.randrange(num_nodes) if num_nodes > 0 else 0
        return offset, num_candidates_to_find(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        )

    def preempt(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream Evaluator.Preempt, without the ``preemption:`` prefix."""
        snapshot: Snapshot | None = state.snapshot
        nominated = _nominated_node_name(pod)
        nominated_status = filtered_node_status.get(
            nominated, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        )
        eligible, message = pod_eligible_to_preempt_others(pod, snapshot, nominated_status)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, message)

        all_nodes = snapshot.node_info_list if snapshot is not None else []
        if not all_nodes:
            return None, Status.error(MSG_NO_NODES)
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
                Status(Code.UNSCHEDULABLE, fit_error_message(len(all_nodes), diagnosis)),
            )

        candidates, status = self.call_extenders(pod, candidates, snapshot)
        if status is not None:
            return None, status

        best = select_candidate(candidates)
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
        offset, num = self.get_offset_and_num_candidates(len(potential))
        candidates, statuses = dry_run_preemption(
            self.handle, state, pod, potential, pdbs, offset, num
        )
        errors = [s.message for s in statuses.values() if s.code == Code.ERROR]
        error = None
        if errors:
            error = Status.error(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return candidates, statuses, error

    # -- extenders ----------------------------------------------------------------------

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
        victims_map: dict[str, tuple[list[PodInfo], int]] = {
            c.name: (c.victims, c.num_pdb_violations) for c in candidates
        }
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

    # -- acting on the choice -----------------------------------------------------------

    def prepare_candidate(self, candidate: Candidate, pod: dict) -> Status | None:
        """Evict the victims and clear lower-priority nominations on the chosen node."""
        self.handle.metrics.preemption(len(candidate.victims))
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

    def preempt_pod(self, node_name: str, preemptor: dict, victim: PodInfo) -> None:
        """Reject a waiting victim, or mark it DisruptionTarget and delete it."""
        waiting = self.handle.get_waiting_pod(victim.uid) if victim.uid else None
        if waiting is not None:
            waiting.reject(NAME, "preempted")
        else:
            client = self.handle.client
            if client is None:
                raise RuntimeError("no API client to evict preemption victims with")
            scheduler_name = (preemptor.get("spec") or {}).get(
                "schedulerName"
            ) or self.handle.profile_name
            condition = {
                "type": DISRUPTION_TARGET,
                "status": "True",
                "reason": REASON_PREEMPTION_BY_SCHEDULER,
                "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
            }
            if not _has_condition(victim.pod, condition):
                try:
                    client.patch_pod_status(
                        victim.namespace, victim.name, {"status": {"conditions": [condition]}}
                    )
                except Exception as exc:
                    if _is_not_found(exc):
                        return
                    raise
            try:
                client.delete_pod(victim.namespace, victim.name, victim.uid)
            except Exception as exc:
                if _is_not_found(exc):
                    return
                raise
        uid = (preemptor.get("metadata") or {}).get("uid", "")
        self.handle.event_recorder.record_event(
            victim.pod,
            "Normal",
            "Preempted",
            "Preempting",
            f"Preempted by pod {uid} on node {node_name}",
        )

    def clear_lower_priority_nominations(self, pod: dict, node_name: str) -> None:
        """Lower-priority pods nominated to ``node_name`` may no longer fit there."""
        nominator = self.handle.nominator
        priority = pod_priority(pod)
        lower = [p for p in nominator.nominated_pods_for_node(node_name) if p.priority < priority]
        client = self.handle.client
        for info in lower:
            if client is not None and _nominated_node_name(info.pod):
                try:
                    client.patch_pod_status(
                        info.namespace, info.name, {"status": {"nominatedNodeName": None}}
                    )
                except Exception:
                    log.warning("clearing nominatedNodeName of %s failed", info.key, exc_info=True)
            nominator.delete_nominated_pod_if_exists(info.pod)


def _has_condition(pod: dict, condition: dict) -> bool:
    for existing in (pod.get("status") or {}).get("conditions") or ():
        if existing.get("type") == condition["type"]:
            return all(existing.get(k) == v for k, v in condition.items())
    return False


def _resolve_victims(
    extender: Any, reply: dict[str, tuple[list[str], int]], snapshot: Snapshot | None
) -> dict[str, tuple[list[PodInfo], int]]:
    """Map the extender's victim UIDs back to the pods on each node (as upstream)."""
    resolved: dict[str, tuple[list[PodInfo], int]] = {}
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
