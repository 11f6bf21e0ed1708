"""Workload-aware preemption: a pod group preempts across the whole cluster (kubernetes
``pkg/scheduler/framework/preemption/podgrouppreemption.go`` and ``types.go``; feature gate
WorkloadAwarePreemption, alpha, off by default).

Contract of :meth:`PodGroupEvaluator.preempt`, called by DefaultPreemption's
``pod_group_post_filter`` after a pod group cycle found the group unschedulable:

* The preemptor is the PodGroup (priority ``spec.priority``, 0 when unset); none of its pods may
  have ``preemptionPolicy: Never``.
* Victims are units: a pod, or every pod of a PodGroup whose ``spec.disruptionMode`` is
  ``PodGroup`` (evicted together). Only units of lower priority than the preemptor count.
* All of them are removed from a working copy of the snapshot and the group is placed again
  (``fits``: the pod group algorithm without PostFilter); if it still does not fit, nothing is
  evicted. Then units are given back one at a time, most important first (PDB-violating ones
  before the others), and keep their place when the group still fits without them.
* The units left are evicted as single-pod preemption evicts (DisruptionTarget condition,
  delete, ``Preempted`` event naming the PodGroup); the snapshot given is never mutated.
  Eviction is synchronous, as this project's single-pod preemption is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from . import budget
from .handle import POD_DISRUPTION_BUDGETS, Handle
from .node_info import NodeInfo
from .pod_info import PodInfo
from .podgroups import PODGROUPS, pod_group_key
from .preemption import DisruptionBudgets, evict, pod_start_time
from .snapshot import Snapshot
from .status import Code, Status

MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NO_VICTIMS = "No preemption victims found for incoming preemptor"
DISRUPTION_MODE_POD_GROUP = "PodGroup"
# Where a pod group's preemption happens (upstream's candidate name).
CLUSTER_DOMAIN = "cluster"


def pod_group_priority(pod_group: dict) -> int:
    """Upstream ``util.PodGroupPriority``: ``spec.priority``, 0 when unset."""
    priority = (pod_group.get("spec") or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


@dataclass
class Victim:
    """A unit of eviction (upstream ``victim``): one pod, or a PodGroup's pods."""

    pods: list[PodInfo]
    priority: int
    is_pod_group: bool

    @property
    def earliest_start(self) -> float:
        return min(pod_start_time(p) for p in self.pods)


def _more_important(a: Victim, b: Victim) -> bool:
    """Upstream ``moreImportantVictim``: priority; a PodGroup over a pod; pods by start time;
    PodGroups by size, then start time."""
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.is_pod_group != b.is_pod_group:
        return a.is_pod_group
    if not a.is_pod_group:
        return a.earliest_start < b.earliest_start
    if len(a.pods) != len(b.pods):
        return len(a.pods) > len(b.pods)
    return a.earliest_start < b.earliest_start


def _order(a: Victim, b: Victim) -> int:
    return -1 if _more_important(a, b) else 1 if _more_important(b, a) else 0


def split_by_pdb_violation(
    victims: list[Victim], pdbs: list[dict]
) -> tuple[list[Victim], list[Victim]]:
    """Upstream ``filterVictimsWithPDBViolation``: a unit violates when evicting one of its
    pods spends a matching PDB's ``disruptionsAllowed`` below zero (order kept)."""
    budgets = DisruptionBudgets(pdbs)
    violating: list[Victim] = []
    others: list[Victim] = []
    for victim in victims:
        spent = any(budgets.spend(p, stop_at_violation=True) for p in victim.pods)
        (violating if spent else others).append(victim)
    return violating, others


class PodGroupEvaluator:
    """Upstream ``PodGroupEvaluator``: preemption for a pod group, over the whole cluster."""

    def __init__(self, handle: Handle, plugin_name: str) -> None:
        self.handle = handle
        self.plugin_name = plugin_name

    def victims(self, snapshot: Snapshot) -> list[Victim]:
        """Every pod on the nodes as a unit of its own, except the pods of a PodGroup with
        ``disruptionMode: PodGroup``, which make one unit together."""
        groups = self.handle.lister(PODGROUPS)
        units: dict[str, Victim] = {}
        for node in snapshot.node_info_list:
            for info in node.pods:
                key = pod_group_key(info.pod)
                group = groups.get(*key) if key is not None else None
                spec = (group or {}).get("spec") or {}
                if group is None or spec.get("disruptionMode") != DISRUPTION_MODE_POD_GROUP:
                    units[info.key] = Victim([info], info.priority, False)
                    continue
                uid = (group.get("metadata") or {}).get("uid") or "/".join(key or ())
                unit = units.setdefault(f"group:{uid}", Victim([], pod_group_priority(group), True))
                unit.pods.append(info)
        return list(units.values())

    def preempt(
        self,
        pod_group: dict,
        pods: list[dict],
        snapshot: Snapshot,
        fits: Callable[[Snapshot], Status | None],
    ) -> Status | None:
        """Make room for the group (see the module docstring); ``None`` when victims were
        evicted and the group should fit once they are gone."""
        if any((p.get("spec") or {}).get("preemptionPolicy") == "Never" for p in pods):
            return Status(Code.UNSCHEDULABLE, MSG_NOT_ELIGIBLE_NEVER)
        priority = pod_group_priority(pod_group)
        potential = [v for v in self.victims(snapshot) if v.priority < priority]
        if not potential:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS)

        # Working copies of the nodes that hold a potential victim.
        working: dict[str, NodeInfo] = {}
        for victim in potential:
            for info in victim.pods:
                name = info.node_name
                if name not in working and (node := snapshot.get(name)) is not None:
                    working[name] = node.clone()

        def remove(victim: Victim) -> None:
            for info in victim.pods:
                if info.node_name in working:
                    working[info.node_name].remove_pod(info.key)

        def restore(victim: Victim) -> None:
            for info in victim.pods:
                if info.node_name in working:
                    working[info.node_name].add_pod(info)

        def still_fits() -> Status | None:
            return fits(snapshot.overlay([node.clone() for node in working.values()]))

        for victim in potential:
            remove(victim)
        status = still_fits()
        if status is not None:
            return status

        potential.sort(key=functools.cmp_to_key(_order))
        pdbs = self.handle.lister(POD_DISRUPTION_BUDGETS).list()
        violating, others = split_by_pdb_violation(potential, pdbs)
        to_evict: list[Victim] = []
        for victim in (*violating, *others):
            restore(victim)
            if still_fits() is not None:
                remove(victim)
                to_evict.append(victim)
        to_evict.sort(key=functools.cmp_to_key(_order))

        meta = pod_group.get("metadata") or {}
        scheduler_name = ((pods[0].get("spec") or {}).get("schedulerName") if pods else "") or (
            self.handle.profile_name
        )
        victims = [info for victim in to_evict for info in victim.pods]
        self.handle.metrics.preemption(len(victims))
        with budget.suspended():
            for info in victims:
                if info.deleting:
                    continue  # graceful deletion already under way
                try:
                    evict(
                        self.handle,
                        self.plugin_name,
                        info,
                        kind="podgroup",
                        preemptor_uid=meta.get("uid", ""),
                        scheduler_name=scheduler_name,
                        node_name=CLUSTER_DOMAIN,
                    )
                except Exception as exc:
                    return Status.error(exc)
        return None
