"""Gangs in ``explain`` and ``simulate``: a PodGroup's pending members tried in one pod group
cycle, as the standalone scheduler tries them (feature gate GenericWorkload; the quorum is
GangScheduling's, feature gate GangScheduling).

The cycle is the scheduler's own: :class:`~extender.framework.schedule_podgroup.PodGroupAlgorithm`
(upstream ``pkg/scheduler/schedule_one_podgroup.go``, ``podGroupSchedulingDefaultAlgorithm``)
with the profile's framework, on one snapshot, with a copy of the group's
:class:`~extender.framework.podgroups.PodGroupState` in the cycle's state, so that the
GangScheduling plugin's Permit answers as it does in the scheduler. What differs, on purpose:

* the members are the cluster's pods whose ``spec.schedulingGroup.podGroupName`` names the
  group. A member with a node is **bound**; a pending one with ``status.nominatedNodeName``
  is **waiting** (the scheduler writes it for a pod it assumed and holds at Permit): it is
  counted on that node and as assumed in the group's state, as the scheduler's cache holds
  it; the others are **pending**, and those PreEnqueue lets through (SchedulingGates,
  GangScheduling's "minCount pods exist") are tried, by priority then creation (the
  scheduler's second key, the first attempt, is not in the API);
* PostFilter (preemption) runs on a dry-run twin of the framework (nothing is evicted here;
  :attr:`GangCycle.victims` records what would be), so a member that needs preemption is
  nominated and the group waits on preemption, as in the scheduler.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from extender.framework.cycle_state import CycleState
from extender.framework.pod_info import QueuedPodInfo, pod_key, pod_priority
from extender.framework.podgroups import (
    POD_GROUP_SCHEDULED,
    POD_GROUP_STATES,
    PODGROUPS,
    PodGroupStates,
    gang_min_count,
    pod_group_key,
)
from extender.framework.results import NominatingInfo, NominatingMode
from extender.framework.runtime import Framework
from extender.framework.schedule import FitError, SchedulingAlgorithm
from extender.framework.schedule_podgroup import (
    GroupResult,
    PodGroupAlgorithm,
    PostFilter,
    preempt_for_group,
)
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code

from .engine import DryRunClient, Eviction, Explainer, Explanation, dry_run_twin

# A member's state in the cluster.
BOUND = "bound"
WAITING = "waiting"
PENDING = "pending"

# What the cycle did with a member (``Member.outcome``).
GATED = "gated"  # PreEnqueue kept it out of the queue
PLACED = "placed"  # it fit and its group is schedulable: it would be bound
FITS = "fits"  # it fit, but its group is not schedulable: it waits at Permit, then is rejected
NEEDS_PREEMPTION = "needsPreemption"  # it fits once its PostFilter's victims are gone
UNSCHEDULABLE = "unschedulable"  # no node fits it
ERROR = "error"
NOT_TRIED = "notTried"  # the cycle stopped before it (another member's error)

# The group's verdict.
SCHEDULABLE = "Schedulable"
GROUP_UNSCHEDULABLE = "Unschedulable"
WAITING_ON_PREEMPTION = "WaitingOnPreemption"
GROUP_ERROR = "Error"
ALL_GATED = "Gated"  # no pending member passed PreEnqueue
NOTHING_PENDING = "NothingPending"  # every member is bound or waiting

ERR_NEEDS_GENERIC_WORKLOAD = (
    "pod groups need the feature gate GenericWorkload (--feature-gates "
    "GenericWorkload=true,GangScheduling=true), as kube-scheduler's"
)


def pod_name(pod: dict) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def member_state(pod: dict) -> str:
    """``bound`` (a node), ``waiting`` (pending with a nominatedNodeName) or ``pending``."""
    if (pod.get("spec") or {}).get("nodeName"):
        return BOUND
    if (pod.get("status") or {}).get("nominatedNodeName"):
        return WAITING
    return PENDING


def members_of(pods: Iterable[dict], key: tuple[str, str]) -> list[dict]:
    return [p for p in pods if pod_group_key(p) == key]


def find_pod_group(fwk: Framework, key: tuple[str, str]) -> dict | None:
    pod_group: dict | None = fwk.lister(PODGROUPS).get(*key)
    return pod_group


def as_waiting(pod: dict) -> dict:
    """A waiting member as the scheduler's cache holds it: on its nominated node."""
    node = (pod.get("status") or {}).get("nominatedNodeName") or ""
    return {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}


def load_states(fwk: Framework, pods: Iterable[dict]) -> PodGroupStates:
    """The framework's pod group states (``handle.shared(POD_GROUP_STATES)``, what
    GangScheduling's PreEnqueue reads) filled with every member of ``pods``, waiting members
    assumed."""
    states = fwk.shared(POD_GROUP_STATES)
    for pod in pods:
        if pod_group_key(pod) is None:
            continue
        states.add_pod(pod)
        if member_state(pod) == WAITING:
            states.assume_pod(as_waiting(pod))
    return states


def with_waiting(snapshot: Snapshot, pods: Iterable[dict]) -> Snapshot:
    """``snapshot`` with the waiting members of ``pods`` on their nominated nodes."""
    return with_pods(snapshot, [as_waiting(p) for p in pods if member_state(p) == WAITING])


def with_pods(snapshot: Snapshot, placed: Iterable[dict]) -> Snapshot:
    """An overlay of ``snapshot`` with ``placed`` (pods with ``spec.nodeName``) added; pods
    on nodes the snapshot does not have are left out."""
    clones = {}
    for pod in placed:
        name = (pod.get("spec") or {}).get("nodeName") or ""
        if name not in clones:
            node = snapshot.get(name)
            if node is None:
                continue
            clones[name] = node.clone()
        clones[name].add_pod(pod)
    return snapshot.overlay(clones.values()) if clones else snapshot


def reason_counts(fit: FitError | None) -> dict[str, int]:
    """Reason -> number of nodes, as the FitError message counts them."""
    counts: dict[str, int] = {}
    if fit is None:
        return counts
    diagnosis = fit.diagnosis
    statuses = diagnosis.node_to_status
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = diagnosis.absent_status
    if absent is not None:
        for reason in absent.reasons:
            counts[reason] = counts.get(reason, 0) + max(0, fit.num_all_nodes - len(statuses))
    return dict(sorted(counts.items()))


@dataclass
class Member:
    pod: dict
    state: str  # bound, waiting, pending
    node: str = ""  # its node, its nominated node, or where the cycle put it
    outcome: str = ""  # bound, waiting, or what the cycle did (GATED, PLACED, ...)
    message: str = ""
    plugin: str = ""  # the gating or rejecting plugin, when one
    reasons: dict[str, int] = field(default_factory=dict)
    victims: list[str] = field(default_factory=list)
    index: int = -1  # its place in the cycle (-1: not tried)

    @property
    def key(self) -> str:
        return pod_name(self.pod)


@dataclass
class GangCycle:
    """A PodGroup's members and what one pod group cycle does with the pending ones."""

    namespace: str
    name: str
    pod_group: dict | None
    members: list[Member]
    base: Snapshot  # what the cycle started from (waiting members on their nodes)
    infos: list[QueuedPodInfo] = field(default_factory=list)
    result: GroupResult | None = None
    problem: str = ""  # why no cycle ran although members are pending
    victims: dict[str, list[Eviction]] = field(default_factory=dict)
    # Workload-aware preemption (gate WorkloadAwarePreemption): whom it would evict.
    group_victims: list[Eviction] = field(default_factory=list)

    @property
    def min_count(self) -> int | None:
        return gang_min_count(self.pod_group) if self.pod_group is not None else None

    @property
    def policy(self) -> str | None:
        if self.pod_group is None:
            return None
        return "Gang" if self.min_count is not None else "Basic"

    def count(self, state: str) -> int:
        return sum(1 for m in self.members if m.state == state)

    @property
    def quorum_met(self) -> bool:
        """Bound and waiting members reach ``minCount`` (a group without the Gang policy
        needs no quorum)."""
        need = self.min_count or 0
        return self.count(BOUND) + self.count(WAITING) >= need

    @property
    def verdict(self) -> str:
        if self.result is None:
            if self.problem:
                return GROUP_ERROR
            if any(m.outcome == GATED for m in self.members):
                return ALL_GATED
            return NOTHING_PENDING
        status = self.result.status
        if status is None:
            return SCHEDULABLE
        if self.result.waiting_on_preemption:
            return WAITING_ON_PREEMPTION
        return GROUP_UNSCHEDULABLE if status.is_rejected() else GROUP_ERROR

    @property
    def message(self) -> str:
        """The PodGroupScheduled message the scheduler would write (or why nothing ran)."""
        if self.problem:
            return self.problem
        if self.result is None:
            gated = [m for m in self.members if m.outcome == GATED]
            return gated[0].message if gated else ""
        status = self.result.status
        return "" if status is None else status.message

    @property
    def placeable_now(self) -> int:
        """Members this cycle would bind (0 unless the group is schedulable)."""
        return sum(1 for m in self.members if m.outcome == PLACED)

    @property
    def fit_in_cycle(self) -> int:
        """Members that found a node in the cycle (whether or not their group goes)."""
        return sum(1 for m in self.members if m.outcome in (PLACED, FITS, NEEDS_PREEMPTION))

    @property
    def short_by(self) -> int:
        """How many more members would have to fit for the quorum: ``minCount`` minus the
        bound, waiting and fitting ones (0: none, or no Gang policy)."""
        have = self.count(BOUND) + self.count(WAITING) + self.fit_in_cycle
        return max(0, (self.min_count or 0) - have)

    @property
    def blocking(self) -> Member | None:
        """The member that keeps the group from its quorum: the first one no node fits (or
        that failed), else the first one PreEnqueue keeps out; ``None`` when the group is
        schedulable or nothing is pending."""
        if self.verdict in (SCHEDULABLE, NOTHING_PENDING):
            return None
        for outcome in (UNSCHEDULABLE, ERROR, GATED):
            for member in self.members:
                if member.outcome == outcome:
                    return member
        return None

    def member(self, key: str) -> Member | None:
        for m in self.members:
            if m.key == key:
                return m
        return None

    def snapshot_at(self, member: Member) -> Snapshot:
        """The cycle's snapshot when ``member`` was tried: the base with every member tried
        before it that stayed assumed (placed, or nominated for preemption)."""
        if member.index < 0 or self.result is None:
            return self.base
        placed = []
        for pod_result in self.result.results[: member.index]:
            if pod_result.host and (pod_result.status is None or pod_result.requires_preemption):
                pod = pod_result.info.pod
                placed.append(
                    {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": pod_result.host}}
                )
        return with_pods(self.base, placed)


def dry_run_post_filter(twin: Framework, victims: dict[str, list[Eviction]]) -> PostFilter:
    """PostFilter (preemption) on ``twin``, a dry-run framework: where it would nominate the
    pod; the evictions it asks for go to ``victims`` (by pod key)."""
    client = twin.client
    assert isinstance(client, DryRunClient)

    def post_filter(fwk: Framework, state: CycleState, pod: dict, fit: FitError) -> NominatingInfo:
        if not twin.has_post_filter_plugins():
            return NominatingInfo("", NominatingMode.NOOP)
        client.evictions.clear()
        snapshot = state.snapshot
        fresh = CycleState()
        fresh.snapshot = snapshot
        nodes = snapshot.node_info_list if snapshot is not None else []
        twin.run_pre_filter_plugins(fresh, pod, nodes)
        diagnosis = fit.diagnosis
        statuses = dict(diagnosis.node_to_status)
        if diagnosis.absent_status is not None:
            for info in nodes:
                statuses.setdefault(info.name, diagnosis.absent_status)
        try:
            res, status = twin.run_post_filter_plugins(fresh, pod, statuses)
        except Exception:  # a dry run must never take the report down
            return NominatingInfo("", NominatingMode.NOOP)
        if status.code != Code.ERROR and status.message:
            diagnosis.post_filter_msg = status.message
        if res is None or res.nominating_info is None:
            return NominatingInfo("", NominatingMode.NOOP)
        if res.nominating_info.nominated_node_name:
            victims[pod_key(pod)] = list(client.evictions)
        return res.nominating_info

    return post_filter


def _creation_order(pod: dict) -> tuple[int, str, str]:
    meta = pod.get("metadata") or {}
    return (-pod_priority(pod), meta.get("creationTimestamp") or "", meta.get("name") or "")


def run_cycle(
    fwk: Framework,
    key: tuple[str, str],
    pods: Iterable[dict],
    snapshot: Snapshot,
    *,
    preemption: bool = True,
    seed: int = 0,
    states: PodGroupStates | None = None,
    order: list[dict] | None = None,
    add_waiting: bool = True,
    placements: bool = False,
) -> GangCycle:
    """The group ``key``'s members among ``pods`` and one pod group cycle of its pending
    ones on ``snapshot`` (which already holds the bound members; the waiting ones are added).

    ``states``: the pod group states already loaded (``load_states``), else they are loaded
    from ``pods``. ``order``: the pending members to try, in this order (simulate: the
    queue's), instead of every pending member by priority and creation. ``add_waiting``
    False: ``snapshot`` already holds the waiting members. ``placements``: feature gate
    TopologyAwareWorkloadScheduling (the group is tried on each placement, as the scheduler's
    :class:`PodGroupAlgorithm` with ``placements``)."""
    namespace, name = key
    all_members = members_of(pods, key)
    if states is None:
        states = load_states(fwk, all_members)
    base = with_waiting(snapshot, all_members) if add_waiting else snapshot
    members = []
    for pod in all_members:
        state = member_state(pod)
        member = Member(pod, state, outcome=state if state != PENDING else "")
        if state == BOUND:
            member.node = (pod.get("spec") or {}).get("nodeName") or ""
        elif state == WAITING:
            member.node = (pod.get("status") or {}).get("nominatedNodeName") or ""
        members.append(member)
    cycle = GangCycle(namespace, name, find_pod_group(fwk, key), members, base)
    by_key = {m.key: m for m in members}
    pending = (
        order
        if order is not None
        else sorted((m.pod for m in members if m.state == PENDING), key=_creation_order)
    )
    tried: list[dict] = []
    for pod in pending:
        member = by_key[pod_name(pod)]
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            member.outcome, member.message = GATED, "the pod is being deleted"
            continue
        gate = fwk.run_pre_enqueue_plugins(pod)
        if gate is not None:
            member.outcome, member.message, member.plugin = GATED, gate.message, gate.plugin
            continue
        tried.append(pod)
    if not tried:
        _sort(cycle)
        return cycle
    names = sorted(
        {(p.get("spec") or {}).get("schedulerName") or "default-scheduler" for p in tried}
    )
    if len(names) > 1:
        cycle.problem = (
            "all pods in a single pod group should have the same .spec.schedulerName set, "
            f'got: "{names[0]}" and "{names[1]}"'
        )
        _sort(cycle)
        return cycle
    cycle.infos = [QueuedPodInfo(p) for p in tried]
    inner = SchedulingAlgorithm(rng=random.Random(seed))
    algorithm = (
        PodGroupAlgorithm(
            inner,
            post_filter=dry_run_post_filter(dry_run_twin(fwk), cycle.victims),
            placements=placements,
        )
        if preemption
        else PodGroupAlgorithm(inner, placements=placements)
    )
    group_states = {key: states.get(*key)}
    cycle.result = algorithm.schedule(fwk, cycle.infos, base, group_states)
    status = cycle.result.status
    if (
        preemption
        and fwk.features.workload_aware_preemption
        and status is not None
        and status.code == Code.UNSCHEDULABLE
    ):
        # As the scheduler's cycle: room for the whole group, on a twin that only records.
        twin = dry_run_twin(fwk)
        fits = PodGroupAlgorithm(inner, placements=placements)
        preempt_for_group(
            fits, twin, key, cycle.pod_group, cycle.infos, base, group_states, cycle.result
        )
        client = twin.client
        if isinstance(client, DryRunClient) and cycle.result.waiting_on_preemption:
            cycle.group_victims = list(client.evictions)
    _outcomes(cycle, by_key)
    _sort(cycle)
    return cycle


def _sort(cycle: GangCycle) -> None:
    """Bound, waiting, then the cycle's order, then the rest (by name)."""
    rank = {BOUND: 0, WAITING: 1, PENDING: 2}
    last = len(cycle.members)
    cycle.members.sort(key=lambda m: (rank[m.state], m.index if m.index >= 0 else last, m.key))


def _outcomes(cycle: GangCycle, by_key: dict[str, Member]) -> None:
    result = cycle.result
    assert result is not None
    schedulable = result.status is None
    for i, info in enumerate(cycle.infos):
        member = by_key[pod_name(info.pod)]
        member.index = i
        if i >= len(result.results):
            member.outcome = NOT_TRIED
            member.message = result.status.message if result.status is not None else ""
            continue
        pod_result = result.results[i]
        member.reasons = reason_counts(pod_result.fit)
        victims = cycle.victims.get(pod_key(info.pod), [])
        if pod_result.status is None:
            member.node = pod_result.host
            member.outcome = PLACED if schedulable else FITS
            member.message = pod_result.permit.message if pod_result.permit is not None else ""
        elif pod_result.requires_preemption:
            member.node = pod_result.host
            member.outcome = NEEDS_PREEMPTION
            member.message = pod_result.status.message
            member.victims = [f"{v.namespace}/{v.name}" for v in victims]
        else:
            status = pod_result.status
            member.outcome = UNSCHEDULABLE if status.is_rejected() else ERROR
            member.message = status.message
            member.plugin = status.plugin or ""
            if pod_result.fit is not None and not member.plugin:
                member.plugin = ", ".join(sorted(pod_result.fit.diagnosis.unschedulable_plugins))
            if pod_result.fit is not None and pod_result.fit.num_all_nodes == 1 and pod_result.host:
                member.node = pod_result.host  # rejected after it was placed (Permit, Reserve)


def pod_group_condition(pod_group: dict | None) -> dict[str, str] | None:
    """The PodGroup's ``PodGroupScheduled`` condition as the scheduler last wrote it."""
    for condition in ((pod_group or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == POD_GROUP_SCHEDULED:
            return {k: str(condition.get(k) or "") for k in ("status", "reason", "message")}
    return None


def explain_group(
    explainer: Explainer,
    key: tuple[str, str],
    pods: list[dict],
    snapshot: Snapshot,
    *,
    focus: str | None = None,
    seed: int = 0,
    placements: bool = False,
) -> tuple[GangCycle, Explanation | None, str]:
    """The group's cycle and one member's per-node explanation, with a title saying which
    snapshot it was explained on. ``focus`` (``ns/name``): that member; default: the member
    that blocks the group, else the first one tried. A bound member is not explained here
    (the one-pod path explains it without itself)."""
    cycle = run_cycle(
        explainer.fwk,
        key,
        pods,
        snapshot,
        preemption=explainer.preemption,
        seed=seed,
        placements=placements,
    )
    member = cycle.member(focus) if focus else None
    if member is None:
        member = cycle.blocking or next((m for m in cycle.members if m.index >= 0), None)
    if member is None or member.state == BOUND:
        return cycle, None, ""
    if member.state == WAITING:
        others = [m.pod for m in cycle.members if m is not member]
        explanation = explainer.explain(member.pod, with_waiting(snapshot, others))
        return (
            cycle,
            explanation,
            f"Member {member.key} waits at Permit on {member.node}; its nodes without it:",
        )
    if member.index < 0:
        explanation = explainer.explain(member.pod, cycle.base)
        why = f"{member.plugin}: {member.message}" if member.plugin else member.message
        return (
            cycle,
            explanation,
            (f"Member {member.key} is not tried ({why}); its nodes as if it were:"),
        )
    explanation = explainer.explain(member.pod, cycle.snapshot_at(member))
    before = member.index
    return (
        cycle,
        explanation,
        (
            f"Member {member.key}, tried {_ordinal(before + 1)} in the cycle"
            + (f" (the {before} before it assumed where they fit)" if before else "")
            + ":"
        ),
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
