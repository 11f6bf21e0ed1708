"""Workload conformance: gang scheduling through the real kube-scheduler and through our
standalone scheduler (``kube-extender run``), both with upstream's workload feature gates
(``extender.controlplane.WORKLOAD_FEATURE_GATES``: GenericWorkload, GangScheduling,
TopologyAwareWorkloadScheduling, WorkloadAwarePreemption) on, compared end to end.

Upstream semantics: kubernetes ``pkg/scheduler/schedule_one_podgroup.go`` (the pod group
scheduling cycle, the ``PodGroupScheduled`` condition) and
``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`` (PreEnqueue waits for the
PodGroup and for ``minCount`` pods; Permit waits for ``minCount`` scheduled pods); the API is
``scheduling.k8s.io/v1alpha2`` PodGroup (``spec.schedulingPolicy.gang.minCount`` or
``.basic``) and the pod's ``spec.schedulingGroup.podGroupName``.

**Cases** (:func:`generate`, seeded): one per family in :data:`FAMILIES` per seed: gangs that
fit, gangs with ``minCount`` below their size and room for only some members, heterogeneous
members, two identical gangs competing for room for one, gangs that cannot fit, a PodGroup
created after its pods, a gang with fewer pods than ``minCount`` (the rest created later), a
Basic-policy PodGroup (no gang), gang members with node affinity and taints; and
(``pkg/scheduler/framework/plugins/topologyaware``, ``schedule_one_podgroup.go``'s placements)
a gang kept to one zone (``spec.schedulingConstraints.topology``) with room in one zone, in
two (which one is a tie: compared are the sizes of the zones used, and node shapes leave the
zone out) or in none; a high-priority gang (PodGroup ``spec.priorityClassName``) that fits only
by preemption (``pkg/scheduler/framework/preemption``, gate WorkloadAwarePreemption) of plain
low-priority pods, of a low-priority PodGroup with ``disruptionMode: PodGroup`` (evicted
whole), or of pods of its own priority (none); running pods are created bound
(``spec.nodeName``) before the barrier, with grace 0 (deleted at once, the gang binds) or 30 s
(they stay Terminating without a kubelet; compared are their ``DisruptionTarget`` condition
and ``Preempted`` events, UIDs and scheduler names neutral); a gang whose members have
different priorities; a gang whose members each claim a device (one ResourceClaim each, one
DeviceClass, a ResourceSlice per node).

**Running a case on a side** (:meth:`WorkloadRunner.run_case`): both schedulers run all the
time, each for its own ``schedulerName`` and namespace; a case runs on one side at a time in a
fresh state: its nodes (named ``<case>-<side>-<node>``) are created, then a *probe* pod that
only the last node takes must be bound (the scheduler has seen every node event before it, and
the pod deletions of the previous case: one watch per resource delivers in order), then the
PodGroups and the pods, one at a time in a fixed order. A case may have several *phases*
(a PodGroup or more pods created later); after each, the runner waits until the state settles
(every pod bound or its ``PodScheduled=False`` condition written, nothing changing for
:data:`STABLE` seconds; pods held by PreEnqueue get no condition: then nothing changing for
:data:`STABLE_NO_CONDITION` seconds) and records per pod the node (and its shape) or the
pending reason and message, and per PodGroup its ``PodGroupScheduled`` condition. Teardown
deletes the pods (grace 0: no kubelet), the PodGroups (their ``podgroup-protection`` finalizer
dropped first: no controller removes it) and the nodes.

**Comparing** (:func:`compare`), per phase and per gang: which pods bind, as the multiset of
the bound members' *shapes* (requests, affinity, tolerations): identical members are
interchangeable, so for a homogeneous gang this compares counts, for a heterogeneous one the
set of members, except where the order members are tried in decides it (``Group.order_decides``:
the heterogeneous family; kube-scheduler's order within a pod group is not fixed): counts;
the pending members' (reason, message) as a multiset the same way; the
placements as the multiset of (member shape, node shape): which of several identical nodes a
pod lands on is a tie and not compared; the PodGroup condition (status, reason, message).
Gangs marked *rivals* (identical gangs competing for the same room: which one wins is decided
by queue order) are compared as a multiset of whole-gang outcomes. Node names in messages are
reduced to the case's own (``n0``); pod group names are the same on both sides.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extender.controlplane import (
    WORKLOAD_FEATURE_GATES,
    ControlPlane,
    feature_gates_value,
    kube_extender,
)
from extender.kube import ApiError

from .generator import CASE_LABEL, HOSTNAME, PAUSE_IMAGE
from .harness import RawApi, force_delete

PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups"
PODGROUP_PROTECTION = "scheduling.k8s.io/podgroup-protection"
RESOURCE_API = "/apis/resource.k8s.io/v1"
PODGROUP_SCHEDULED = "PodGroupScheduled"
SIDE_LABEL = "conformance.io/side"
TIER = "conformance.io/tier"
DEDICATED = "conformance.io/dedicated"
POLL = 0.25
# Seconds nothing may change, once every pod is bound or has its PodScheduled=False condition.
STABLE = 2.5
# Seconds nothing may change while some pod has no condition (held by PreEnqueue: the gang
# plugin's "waiting for ..." statuses are not written to the pod).
STABLE_NO_CONDITION = 5.0
SETTLE_TIMEOUT = 60.0
KUBE_SCHEDULER = "kube-scheduler"
KUBE_EXTENDER = "kube-extender"
# The "reason" recorded for a running pod deleted or being deleted (preempted).
EVICTED = "Evicted"


# -- cases ------------------------------------------------------------------------------------


@dataclass
class Group:
    """One PodGroup and its member pods (pod dicts without namespace and schedulerName)."""

    name: str
    min_count: int | None  # None: the Basic policy
    members: list[dict]
    # Phase (0-based) in which the PodGroup is created, and in which each member is.
    phase: int = 0
    member_phases: list[int] = field(default_factory=list)
    # Groups with the same rival tag are compared as a multiset of whole-gang outcomes.
    rival: str | None = None
    # Which members bind depends on the order they are tried: kube-scheduler sorts a pod
    # group's pods by priority, then by when each passed PreEnqueue into the active queue
    # (the pod completing the quorum first, the others as the queue moves them, in no fixed
    # order). Members are then compared without their shapes (counts, messages, node shapes).
    order_decides: bool = False
    # Running pods: each member is created already bound (``spec.nodeName``: the case-local
    # node at the same index), before the barrier; their PodGroup (if any) too. Preemption
    # victims: compared as running or evicted.
    bound_to: list[str] | None = None
    # False: the members belong to no PodGroup (plain pods, no ``spec.schedulingGroup``).
    has_podgroup: bool = True
    # PodGroup ``spec.priorityClassName``, ``spec.disruptionMode``, and the key of its
    # ``spec.schedulingConstraints.topology``.
    priority_class: str | None = None
    disruption_mode: str | None = None
    topology_key: str | None = None
    # Members left pending once the gang is scheduled are retried at once (v1.36.3: a pod group
    # member goes back "after backoff" and an empty activeQ pops the backoff queue early); the
    # retry's cycle writes PodGroupScheduled=False unless the scheduler's informer already
    # holds the True the previous cycle patched (``updatePodGroupCondition`` reads the lister),
    # which is a race on either side: with pods bound, True and that False compare equal.
    condition_race: bool = False

    def podgroup(self, namespace: str, case_id: str) -> dict:
        policy: dict = (
            {"basic": {}} if self.min_count is None else {"gang": {"minCount": self.min_count}}
        )
        spec: dict[str, Any] = {"schedulingPolicy": policy}
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        if self.disruption_mode:
            spec["disruptionMode"] = self.disruption_mode
        if self.topology_key:
            spec["schedulingConstraints"] = {"topology": [{"key": self.topology_key}]}
        return {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {
                "name": self.name,
                "namespace": namespace,
                "labels": {CASE_LABEL: case_id},
            },
            "spec": spec,
        }


@dataclass
class WorkloadCase:
    case_id: str
    family: str
    description: str
    nodes: list[dict]  # metadata.name is the case-local name (n0, n1, ...)
    groups: list[Group]
    # Topology cases: the zone label. Which of several zones a gang uses is a tie: node shapes
    # leave the label out and the zones a gang used are compared as their sizes (node counts).
    zone_key: str | None = None
    # DRA cases: devices per case-local node (a ResourceSlice each, one DeviceClass); members
    # asking for one name :data:`CLAIM` in ``spec.resourceClaims``, and get a ResourceClaim of
    # their own for one device of the class.
    devices: dict[str, int] | None = None

    def node_shape(self, local: str) -> str:
        node = next(n for n in self.nodes if n["metadata"]["name"] == local)
        return node_shape(node, ignore=(self.zone_key,) if self.zone_key else ())

    def zones_used(self, local_nodes: Iterable[str]) -> tuple[int, ...]:
        """The sizes (node counts) of the zones the given nodes are in, sorted."""
        if not self.zone_key:
            return ()
        zone_of = {
            n["metadata"]["name"]: n["metadata"]["labels"].get(self.zone_key) for n in self.nodes
        }
        size = Counter(zone_of.values())
        return tuple(sorted(size[z] for z in {zone_of[n] for n in local_nodes}))

    @property
    def phases(self) -> int:
        return 1 + max(max([g.phase, *g.member_phases]) for g in self.groups)

    def pods(self) -> Iterator[tuple[Group, dict, int]]:
        for group in self.groups:
            for pod, phase in zip(group.members, group.member_phases, strict=True):
                yield group, pod, phase


def _node(name: str, cpu: str = "2", memory: str = "4Gi", **extra: Any) -> dict:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "50Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(extra.get("labels") or {})},
        "spec": {"taints": extra["taints"]} if extra.get("taints") else {},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def _member(name: str, cpu: str, memory: str = "128Mi", **spec: Any) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }


def _gang(
    name: str,
    cpus: list[str],
    min_count: int | None,
    *,
    phase: int = 0,
    member_phases: list[int] | None = None,
    rival: str | None = None,
    order_decides: bool = False,
    priorities: list[str] | None = None,
    **spec: Any,
) -> Group:
    members = [_member(f"{name}-{i}", cpu, **spec) for i, cpu in enumerate(cpus)]
    for member, priority in zip(members, priorities or (), strict=False):
        member["spec"]["priorityClassName"] = priority
    return Group(
        name,
        min_count,
        members,
        phase=phase,
        member_phases=member_phases or [0] * len(members),
        rival=rival,
        order_decides=order_decides,
    )


def _nodes(count: int, cpu: str = "2", **extra: Any) -> list[dict]:
    return [_node(f"n{i}", cpu, **extra) for i in range(count)]


# Every family: (rng, case_id) -> case. Nodes have 2 CPUs unless said otherwise; a 1500m
# member takes a node alone, 1 CPU members go two to a node.


def fits(rng: random.Random, case_id: str) -> WorkloadCase:
    size = rng.randint(2, 5)
    nodes = rng.randint((size + 1) // 2, size)
    return WorkloadCase(
        case_id,
        "fits",
        f"a gang of {size} (minCount {size}) of 1-CPU pods, room for {2 * nodes}",
        _nodes(nodes),
        [_gang("gang", ["1"] * size, size)],
    )


def partial(rng: random.Random, case_id: str) -> WorkloadCase:
    size = rng.randint(3, 6)
    min_count = rng.randint(2, size - 1)
    room = rng.randint(min_count, size - 1)
    return WorkloadCase(
        case_id,
        "partial",
        f"a gang of {size} with minCount {min_count}, room for {room} of its pods",
        _nodes(room),
        [_gang("gang", ["1500m"] * size, min_count)],
    )


def heterogeneous(rng: random.Random, case_id: str) -> WorkloadCase:
    cpus = ["1500m", "1", "500m", "1", "250m"][: rng.randint(3, 5)]
    rng.shuffle(cpus)
    # 2-CPU nodes: the spreading scores may leave no node free enough for the big member.
    nodes = rng.randint(1, 3)
    min_count = len(cpus) if rng.random() < 0.5 else len(cpus) - 1
    return WorkloadCase(
        case_id,
        "heterogeneous",
        f"a gang of members asking {', '.join(cpus)} CPU (minCount {min_count}) on {nodes} "
        "2-CPU node(s)",
        _nodes(nodes),
        [_gang("gang", cpus, min_count, order_decides=True)],
    )


def compete(rng: random.Random, case_id: str) -> WorkloadCase:
    size = rng.randint(2, 4)
    return WorkloadCase(
        case_id,
        "compete",
        f"two identical gangs of {size} (minCount {size}) of 1500m pods, room for one gang "
        f"({size} nodes)",
        _nodes(size),
        [
            _gang("gang-a", ["1500m"] * size, size, rival="pair"),
            _gang("gang-b", ["1500m"] * size, size, rival="pair"),
        ],
    )


def too_big(rng: random.Random, case_id: str) -> WorkloadCase:
    size = rng.randint(2, 5)
    if rng.random() < 0.5:
        cpus, nodes = ["1500m"] * size, size - 1
        what = f"a gang of {size} (minCount {size}) of 1500m pods, room for {nodes}"
    else:
        cpus, nodes = ["1"] * (size - 1) + ["3"], size
        what = f"a gang of {size} (minCount {size}) with one 3-CPU member, 2-CPU nodes only"
    return WorkloadCase(case_id, "too-big", what, _nodes(nodes), [_gang("gang", cpus, size)])


def late_podgroup(rng: random.Random, case_id: str) -> WorkloadCase:
    size = rng.randint(2, 4)
    room = size if rng.random() < 0.7 else size - 1
    return WorkloadCase(
        case_id,
        "late-podgroup",
        f"{size} gang pods (minCount {size}, room for {room}) created before their PodGroup",
        _nodes(room),
        [_gang("gang", ["1500m"] * size, size, phase=1)],
    )


def short(rng: random.Random, case_id: str) -> WorkloadCase:
    min_count = rng.randint(2, 4)
    created = rng.randint(1, min_count - 1)
    phases = [0] * created + [1] * (min_count - created)
    return WorkloadCase(
        case_id,
        "short",
        f"a gang with minCount {min_count}: {created} pod(s) first, the rest later",
        _nodes(min_count),
        [_gang("gang", ["1500m"] * min_count, min_count, member_phases=phases)],
    )


def basic(rng: random.Random, case_id: str) -> WorkloadCase:
    size = rng.randint(2, 5)
    room = rng.randint(0, size)
    return WorkloadCase(
        case_id,
        "basic",
        f"a Basic-policy PodGroup of {size} 1500m pods, room for {room}",
        _nodes(room) if room else [_node("n0", "1")],
        [_gang("group", ["1500m"] * size, None)],
    )


def affinity_taints(rng: random.Random, case_id: str) -> WorkloadCase:
    """Gold nodes (some tainted dedicated=gang), silver nodes; members must run on gold; with
    or without the toleration."""
    gold = rng.randint(1, 3)
    tainted = rng.randint(0, gold)
    silver = rng.randint(1, 2)
    taint = [{"key": DEDICATED, "value": "gang", "effect": "NoSchedule"}]
    nodes = [
        _node(
            f"n{i}",
            labels={TIER: "gold"},
            taints=taint if i < tainted else None,
        )
        for i in range(gold)
    ] + [_node(f"n{gold + i}", labels={TIER: "silver"}) for i in range(silver)]
    tolerate = rng.random() < 0.5
    size = rng.randint(2, 4)
    min_count = size if rng.random() < 0.5 else size - 1
    spec: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": TIER, "operator": "In", "values": ["gold"]}]}
                    ]
                }
            }
        }
    }
    if tolerate:
        spec["tolerations"] = [
            {"key": DEDICATED, "operator": "Equal", "value": "gang", "effect": "NoSchedule"}
        ]
    return WorkloadCase(
        case_id,
        "affinity-taints",
        f"a gang of {size} (minCount {min_count}) of 1500m pods requiring tier=gold "
        f"({'tolerating' if tolerate else 'not tolerating'} dedicated=gang); {gold} gold "
        f"node(s), {tainted} of them tainted, {silver} silver",
        nodes,
        [_gang("gang", ["1500m"] * size, min_count, **spec)],
    )


ZONE = "topology.kubernetes.io/zone"
LOW = "wl-low"
HIGH = "wl-high"
# The PriorityClasses the preemption families use (created once, cluster-wide).
PRIORITY_CLASSES = {LOW: 100, HIGH: 1000}


def _zoned(sizes: list[int]) -> list[dict]:
    nodes: list[dict] = []
    for zone, size in enumerate(sizes):
        for _ in range(size):
            nodes.append(_node(f"n{len(nodes)}", labels={ZONE: f"zone-{'abc'[zone]}"}))
    return nodes


def topology(rng: random.Random, case_id: str) -> WorkloadCase:
    """A gang with a topology constraint (``schedulingConstraints.topology: [{key: zone}]``)
    on 2-CPU nodes in 2-3 zones, 1500m members (one a node): room in one zone only, in two
    (which one is a tie), or in none though in total."""
    variant = rng.choice(["one", "two", "none"])
    size = rng.randint(2, 3)
    if variant == "one":
        sizes = [size, size - 1] + ([rng.randint(1, size - 1)] if rng.random() < 0.5 else [])
        what = "room in one zone only"
    elif variant == "two":
        sizes = [size, size] + ([size - 1] if rng.random() < 0.5 else [])
        what = "room in two zones"
    else:
        sizes = [size - 1] * rng.randint(2, 3)
        what = "room in no single zone, though in total"
    rng.shuffle(sizes)
    return WorkloadCase(
        case_id,
        "topology",
        f"a gang of {size} (minCount {size}) of 1500m pods kept to one zone, zones of "
        f"{'/'.join(map(str, sizes))} node(s): {what}",
        _zoned(sizes),
        [dataclasses.replace(_gang("gang", ["1500m"] * size, size), topology_key=ZONE)],
        zone_key=ZONE,
    )


def _running(name: str, nodes: list[str], priority: str, **group: Any) -> Group:
    members = [
        _member(f"{name}-{i}", "1500m", priorityClassName=priority) for i in range(len(nodes))
    ]
    return Group(
        name,
        group.pop("min_count", None),
        members,
        member_phases=[0] * len(members),
        bound_to=list(nodes),
        **group,
    )


def preemption(rng: random.Random, case_id: str) -> WorkloadCase:
    """A high-priority gang (PodGroup and pods ``wl-high``) on 2-CPU nodes, each but ``free``
    of them running a 1500m low-priority pod: the gang fits only once some are evicted. The
    running pods are plain pods, or one PodGroup with ``disruptionMode: PodGroup`` (evicted
    whole), or of the gang's own priority (no preemption). Now and then the gang is kept to one
    zone (all nodes in it): upstream's workload-aware preemption refuses gangs with scheduling
    constraints."""
    variant = rng.choice(["pods", "podgroup", "same-priority"])
    # Victims with a grace period stay Terminating (no kubelet): the gang waits for the room.
    grace = rng.choice([0, 0, 30])
    count = rng.randint(2, 4)
    free = rng.randint(0, 1)
    size = rng.randint(max(2, free + 1), count)
    busy = [f"n{i}" for i in range(free, count)]
    if variant == "pods":
        victims = _running("victim", busy, LOW, has_podgroup=False)
    elif variant == "podgroup":
        victims = _running(
            "victims",
            busy,
            LOW,
            min_count=len(busy),
            priority_class=LOW,
            disruption_mode="PodGroup",
        )
    else:
        victims = _running("victim", busy, HIGH, has_podgroup=False)
    for member in victims.members:
        member["spec"]["terminationGracePeriodSeconds"] = grace
    gang = _gang("gang", ["1500m"] * size, size, priorityClassName=HIGH)
    gang.priority_class = HIGH
    constrained = variant != "same-priority" and rng.random() < 0.25
    if constrained:
        gang.topology_key = ZONE
    return WorkloadCase(
        case_id,
        "preemption",
        f"a {HIGH} gang of {size} (minCount {size}{', kept to one zone' if constrained else ''})"
        f" of 1500m pods, {count} 2-CPU node(s), {len(busy)} running a 1500m pod "
        f"(grace {grace}s): {variant}",
        _zoned([count]) if constrained else _nodes(count),
        [victims, gang],
    )


def mixed_priority(rng: random.Random, case_id: str) -> WorkloadCase:
    """A gang whose members have different priorities (``wl-high``, ``wl-low``), room for
    only some of them: the higher ones are tried first."""
    size = rng.randint(3, 5)
    min_count = rng.randint(2, size - 1)
    room = rng.randint(min_count, size - 1)
    priorities = [rng.choice([LOW, HIGH]) for _ in range(size)]
    group_priority = rng.choice([None, LOW, HIGH])
    # A PodGroup created after its pods: every member is there for the first pod group cycle
    # (else the cycle runs once minCount exist, without the later ones).
    late = rng.random() < 0.5
    # Else the members created after the quorum are tried alone or together, by timing:
    # which of them bind is compared as counts.
    gang = _gang(
        "gang",
        ["1500m"] * size,
        min_count,
        priorities=priorities,
        phase=1 if late else 0,
        order_decides=not late,
    )
    gang.priority_class = group_priority
    gang.condition_race = True
    return WorkloadCase(
        case_id,
        "mixed-priority",
        f"a gang of {size} (minCount {min_count}, PodGroup priority "
        f"{group_priority or 'none'}) of 1500m pods with priorities {', '.join(priorities)}, "
        f"room for {room}{', PodGroup created after its pods' if late else ''}",
        _nodes(room),
        [gang],
    )


GPU_DRIVER = "gpu.conformance.io"
CLAIM = "<claim>"


def dra(rng: random.Random, case_id: str) -> WorkloadCase:
    """A gang whose members each need one device (their own ResourceClaim of one DeviceClass),
    250m CPU each: the devices on 1-3 nodes (0-2 a node) make room for all, ``minCount`` or
    fewer."""
    count = rng.randint(1, 3)
    devices = {f"n{i}": rng.randint(0, 2) for i in range(count)}
    size = rng.randint(2, 4)
    min_count = size if rng.random() < 0.5 else size - 1
    claims = [{"name": "gpu", "resourceClaimName": CLAIM}]
    return WorkloadCase(
        case_id,
        "dra",
        f"a gang of {size} (minCount {min_count}) of 250m pods each claiming one device; "
        f"devices per node {'/'.join(str(devices[n]) for n in sorted(devices))}",
        _nodes(count),
        [_gang("gang", ["250m"] * size, min_count, resourceClaims=claims)],
        devices=devices,
    )


FAMILIES: dict[str, Callable[[random.Random, str], WorkloadCase]] = {
    "fits": fits,
    "partial": partial,
    "heterogeneous": heterogeneous,
    "compete": compete,
    "too-big": too_big,
    "late-podgroup": late_podgroup,
    "short": short,
    "basic": basic,
    "affinity-taints": affinity_taints,
    "topology": topology,
    "preemption": preemption,
    "mixed-priority": mixed_priority,
    "dra": dra,
}


def generate(seed: int, families: Iterable[str] | None = None) -> list[WorkloadCase]:
    """One case per family (all of :data:`FAMILIES` by default) for ``seed``; each family's
    case depends on the seed and the family only."""
    return [
        FAMILIES[name](random.Random(f"{seed}/{name}"), f"w{seed}-{name}")
        for name in (families or FAMILIES)
    ]


# -- shapes -----------------------------------------------------------------------------------


def _canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def pod_shape(pod: dict) -> str:
    """What makes two members interchangeable: requests, affinity, selectors, tolerations,
    priority class (when set)."""
    spec = pod.get("spec") or {}
    requests = [(c.get("resources") or {}).get("requests") for c in spec.get("containers") or ()]
    shape = {
        "requests": requests,
        "affinity": spec.get("affinity"),
        "nodeSelector": spec.get("nodeSelector"),
        "tolerations": spec.get("tolerations"),
    }
    if spec.get("priorityClassName"):
        shape["priorityClassName"] = spec["priorityClassName"]
    return _canonical(shape)


def node_shape(node: dict, ignore: Iterable[str] = ()) -> str:
    """A node template without its names (nor the ``ignore`` labels): allocatable, labels,
    taints."""
    labels = dict((node.get("metadata") or {}).get("labels") or {})
    for key in (HOSTNAME, CASE_LABEL, SIDE_LABEL, *ignore):
        labels.pop(key, None)
    return _canonical(
        {
            "allocatable": (node.get("status") or {}).get("allocatable"),
            "labels": labels,
            "taints": (node.get("spec") or {}).get("taints"),
        }
    )


# -- outcomes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodOutcome:
    name: str  # case-local: gang-0
    group: str
    shape: str
    node: str | None = None  # case-local node name when bound
    node_shape: str | None = None
    reason: str | None = None  # of PodScheduled=False
    message: str | None = None

    def describe(self) -> str:
        if self.node:
            return f"bound to {self.node}"
        if self.reason == EVICTED:
            return f"evicted: {self.message}"
        if self.reason is None:
            return "pending, no PodScheduled condition"
        return f"pending {self.reason}: {self.message}"


@dataclass
class PhaseOutcome:
    pods: dict[str, PodOutcome]
    # PodGroup name -> (status, reason, message) of PodGroupScheduled; None: no condition.
    conditions: dict[str, tuple[str, str, str] | None]
    settled: bool = True
    seconds: float = 0.0


@dataclass
class CaseOutcome:
    case: WorkloadCase
    side: str
    phases: list[PhaseOutcome]

    def describe(self) -> str:
        lines = [f"{self.case.case_id} on {self.side}: {self.case.description}"]
        for i, phase in enumerate(self.phases):
            settled = "" if phase.settled else " (NOT SETTLED)"
            lines.append(f"  phase {i} ({phase.seconds:.1f}s){settled}:")
            for name, cond in phase.conditions.items():
                lines.append(f"    PodGroup {name}: {_cond(cond)}")
            for pod in phase.pods.values():
                lines.append(f"    {pod.name}: {pod.describe()}")
        return "\n".join(lines)


def _cond(cond: tuple[str, str, str] | None) -> str:
    if cond is None:
        return "no PodGroupScheduled condition"
    status, reason, message = cond
    return f"PodGroupScheduled={status} reason={reason} message={message!r}"


# -- comparison -------------------------------------------------------------------------------


@dataclass
class Disagreement:
    case_id: str
    phase: int
    unit: str  # a gang name, or the rival tag
    what: str  # "binding", "pending message", "placement", "PodGroup condition"
    theirs: list[str]
    ours: list[str]

    def describe(self) -> str:
        lines = [f"{self.case_id} phase {self.phase} {self.unit}: {self.what} differs"]
        width = max((len(t) for t in self.theirs), default=0)
        for i in range(max(len(self.theirs), len(self.ours))):
            t = self.theirs[i] if i < len(self.theirs) else ""
            o = self.ours[i] if i < len(self.ours) else ""
            lines.append(f"    {KUBE_SCHEDULER}: {t:<{width}}  | {KUBE_EXTENDER}: {o}")
        return "\n".join(lines)


def _gang_signature(group: str, phase: PhaseOutcome) -> tuple:
    pods = [p for p in phase.pods.values() if p.group == group]
    return (
        phase.conditions.get(group),
        tuple(sorted((p.shape, p.node_shape, p.reason, p.message) for p in pods)),
    )


def _aspects(pods: list[PodOutcome], order_decides: bool = False) -> dict[str, Counter]:
    if order_decides:
        pods = [dataclasses.replace(p, shape="") for p in pods]
    return {
        "binding": Counter((p.shape, p.node is not None) for p in pods),
        "pending message": Counter((p.shape, p.reason, p.message) for p in pods if p.node is None),
        "placement": Counter((p.shape, p.node_shape) for p in pods if p.node is not None),
    }


def compare(theirs: CaseOutcome, ours: CaseOutcome) -> list[Disagreement]:
    """Where our outcome differs from kube-scheduler's (see the module docstring)."""
    case = theirs.case
    found: list[Disagreement] = []
    for index, (t, o) in enumerate(zip(theirs.phases, ours.phases, strict=True)):
        units: dict[str, list[str]] = {}
        for group in case.groups:
            units.setdefault(group.rival or group.name, []).append(group.name)
        for unit, names in units.items():
            if len(names) > 1:
                ts = sorted(map(repr, (_gang_signature(n, t) for n in names)))
                os_ = sorted(map(repr, (_gang_signature(n, o) for n in names)))
                if ts != os_:
                    found.append(
                        Disagreement(
                            case.case_id,
                            index,
                            unit,
                            "outcome of rival gangs (compared as a multiset)",
                            _unit_lines(names, t),
                            _unit_lines(names, o),
                        )
                    )
                continue
            name = names[0]
            group = next(g for g in case.groups if g.name == name)
            if _condition(group, t) != _condition(group, o):
                found.append(
                    Disagreement(
                        case.case_id,
                        index,
                        name,
                        "PodGroup condition",
                        [_cond(t.conditions.get(name))],
                        [_cond(o.conditions.get(name))],
                    )
                )
            tp = [p for p in t.pods.values() if p.group == name]
            op = [p for p in o.pods.values() if p.group == name]
            order = next(g.order_decides for g in case.groups if g.name == name)
            ta, oa = _aspects(tp, order), _aspects(op, order)
            if case.zone_key:
                # Which zone is a tie; how many, and of which size, is not.
                ta["zones"] = Counter([case.zones_used(p.node for p in tp if p.node)])
                oa["zones"] = Counter([case.zones_used(p.node for p in op if p.node)])
            for aspect in ta:
                if ta[aspect] != oa[aspect]:
                    if aspect != "binding" and ta["binding"] != oa["binding"]:
                        continue  # a consequence of the binding difference, already shown
                    found.append(
                        Disagreement(
                            case.case_id,
                            index,
                            name,
                            aspect,
                            [f"{p.name}: {p.describe()}" for p in tp],
                            [f"{p.name}: {p.describe()}" for p in op],
                        )
                    )
    return found


RACED = ("True", "Scheduled", "(or False, a leftover member's retry racing the True)")


def _condition(group: Group, phase: PhaseOutcome) -> tuple[str, str, str] | None:
    """The group's PodGroupScheduled condition as compared (see ``Group.condition_race``)."""
    cond = phase.conditions.get(group.name)
    if group.condition_race and cond is not None:
        bound = any(p.node for p in phase.pods.values() if p.group == group.name)
        if bound and (cond[0] == "True" or cond[1] == "Unschedulable"):
            return RACED
    return cond


def _unit_lines(names: list[str], phase: PhaseOutcome) -> list[str]:
    lines = []
    for name in names:
        lines.append(f"PodGroup {name}: {_cond(phase.conditions.get(name))}")
        lines += [f"{p.name}: {p.describe()}" for p in phase.pods.values() if p.group == name]
    return lines


# -- what must hold on either side -------------------------------------------------------


def violations(outcome: CaseOutcome) -> list[str]:
    """Gang semantics any conforming scheduler shows, whatever the ties: a gang binds none or at
    least ``minCount`` of its pods; a bound pod sits on a node its shape allows; a PodGroup whose
    pods bound is ``PodGroupScheduled=True``; pods held before their PodGroup or quorum exists
    are not bound. Plus what each family's construction decides (e.g. two gangs with room for
    one: exactly one binds)."""
    case = outcome.case
    found: list[str] = []

    def bad(phase: int, what: str) -> None:
        found.append(f"{case.case_id} phase {phase} on {outcome.side}: {what}")

    nodes = {n["metadata"]["name"]: n for n in case.nodes}
    for index, phase in enumerate(outcome.phases):
        for group in case.groups:
            pods = [p for p in phase.pods.values() if p.group == group.name]
            bound = [p for p in pods if p.node]
            created = len(pods)
            if group.bound_to is not None:
                evicted = [p for p in pods if p.reason == EVICTED]
                if group.disruption_mode == "PodGroup" and 0 < len(evicted) < len(pods):
                    bad(
                        index,
                        f"{group.name} (disruptionMode PodGroup): {len(evicted)} of "
                        f"{len(pods)} evicted",
                    )
                if case.family == "preemption" and "same-priority" in case.description and evicted:
                    bad(index, f"{len(evicted)} pod(s) of the gang's own priority evicted")
                continue
            if group.topology_key and len(case.zones_used(p.node or "" for p in bound)) > 1:
                bad(index, f"{group.name}: bound across zones, though kept to one")
            if group.phase > index and bound:
                bad(index, f"{len(bound)} pod(s) of {group.name} bound before its PodGroup exists")
            if group.min_count is not None:
                if created < group.min_count and bound:
                    bad(index, f"{group.name}: bound with {created} < minCount pods created")
                if 0 < len(bound) < group.min_count:
                    bad(
                        index, f"{group.name}: {len(bound)} bound, below minCount {group.min_count}"
                    )
            cond = _condition(group, phase)
            if bound and (cond is None or cond[0] != "True"):
                bad(index, f"{group.name}: pods bound but the PodGroup says {_cond(cond)}")
            if not bound and cond is not None and cond[0] == "True":
                bad(index, f"{group.name}: nothing bound but PodGroupScheduled=True")
            for pod in bound:
                labels = nodes[pod.node or ""]["metadata"]["labels"]
                taints = (nodes[pod.node or ""].get("spec") or {}).get("taints") or []
                shape = json.loads(pod.shape)
                if shape["affinity"] and labels.get(TIER) != "gold":
                    bad(index, f"{pod.name} bound to {pod.node}, not a gold node")
                if taints and not shape["tolerations"]:
                    bad(index, f"{pod.name} bound to tainted {pod.node} without a toleration")
        last = index == len(outcome.phases) - 1
        if case.family in ("fits", "short") and last:
            if not all(p.node for p in phase.pods.values()):
                bad(index, f"not every pod bound in a {case.family} case")
        if case.devices is not None:
            for local, count in case.devices.items():
                on = sum(1 for p in phase.pods.values() if p.node == local)
                if on > count:
                    bad(index, f"{on} pod(s) claiming a device each on {local}, {count} device(s)")
        if case.family == "too-big" and any(p.node for p in phase.pods.values()):
            bad(index, "pods bound though the gang cannot fit")
        if case.family == "compete":
            winners = [
                g.name
                for g in case.groups
                if all(p.node for p in phase.pods.values() if p.group == g.name)
            ]
            if len(winners) != 1:
                bad(index, f"{len(winners)} gangs bound of two with room for one")
        if case.family in ("partial", "basic"):
            # One 1500m pod a 2-CPU node: as many bind as there are such nodes, or pods.
            room = sum(1 for n in case.nodes if n["status"]["allocatable"]["cpu"] == "2")
            want = min(room, len(phase.pods))
            got = sum(1 for p in phase.pods.values() if p.node)
            if got != want:
                bad(index, f"{got} pod(s) bound, {want} expected (room for {room})")
    return found


# -- the runner -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    name: str  # KUBE_SCHEDULER or KUBE_EXTENDER
    tag: str  # in node names
    scheduler_name: str
    namespace: str


SIDES = {
    KUBE_SCHEDULER: Side(KUBE_SCHEDULER, "ks", "workloads-kube-scheduler", "wl-kube-scheduler"),
    KUBE_EXTENDER: Side(KUBE_EXTENDER, "ke", "workloads-kube-extender", "wl-kube-extender"),
}


def our_side_missing() -> str | None:
    """Why ``kube-extender run`` cannot take part yet (no ``--feature-gates`` flag), or None."""
    try:
        help_text = subprocess.run(
            kube_extender("run", "--help"), capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`kube-extender run --help` failed: {exc}"
    if "--feature-gates" not in help_text:
        return "`kube-extender run` has no --feature-gates flag yet (gang scheduling not on main)"
    return None


def our_side_gates(
    wanted: Mapping[str, bool] = WORKLOAD_FEATURE_GATES,
) -> tuple[dict[str, bool], list[str]]:
    """The gates of ``wanted`` that ``kube-extender run`` takes, and why the others are left
    out: its config loader names each gate it refuses ("feature gate X: not implemented by
    kube-extender yet"); a gate needing a refused one goes too. Both schedulers then run with
    the same gates, so that they are compared on the same semantics."""
    import re

    import yaml

    from extender.config import ConfigError
    from extender.config.loader import loads
    from extender.framework.features import DEPENDENCIES, FeatureGateError, Features

    gates = {name: on for name, on in wanted.items()}
    dropped: list[str] = []
    text = yaml.safe_dump(_config("probe"))
    for _ in range(len(wanted) + 1):
        try:
            loads(text, "probe", features=Features.parse(feature_gates_value(gates)))
            return gates, dropped
        except (ConfigError, FeatureGateError) as exc:
            refused = set(re.findall(r"feature gate (\w+)", str(exc))) & set(gates)
            if not refused:
                raise
            for name in sorted(refused):
                dropped.append(f"{name}: {kube_extender_says(str(exc), name)}")
                del gates[name]
            for name, needs in DEPENDENCIES.items():
                if name in gates and not set(needs) <= set(gates):
                    dropped.append(f"{name}: needs {', '.join(needs)}, left out")
                    del gates[name]
    raise AssertionError(f"kube-extender refuses every gate of {dict(wanted)}")


def kube_extender_says(error: str, gate: str) -> str:
    """The line of a config error about ``gate``."""
    for line in error.splitlines():
        if f"feature gate {gate}" in line:
            return line.split(f"feature gate {gate}:", 1)[-1].strip()
    return error


class WorkloadRunner(RawApi):
    """Both schedulers against one control plane started with the workload API and gates
    (``ControlPlane.up(apiserver_args(WORKLOAD_FEATURE_GATES, WORKLOAD_RUNTIME_CONFIG))``)."""

    def __init__(
        self,
        cp: ControlPlane,
        *,
        out: Callable[[str], None] = print,
        verbosity: int = 1,
        feature_gates: Mapping[str, bool] = WORKLOAD_FEATURE_GATES,
    ) -> None:
        """``verbosity``: kube-scheduler's ``--v``. Kept at 1 by default: v1.36.3 retries a
        pending pod of a pod group without pause while nothing else is queued (its in-flight
        requeueing answers "after backoff" for pod group members, and an empty activeQ pops the
        backoff queue early), thousands of cycles a second, each logged at v=2 and above: at
        v=4 the log grows by hundreds of MB a minute. ``feature_gates``: both schedulers'
        (:func:`our_side_gates` finds those ours takes)."""
        from extender.kube import api_client
        from extender.scenario.kube import Kube

        self.cp = cp
        self.out = out
        self.verbosity = verbosity
        self.feature_gates = dict(feature_gates)
        self.kube = Kube(api_client(str(cp.kubeconfig)), out=lambda *a: None)
        self.sides: dict[str, Side] = {}
        self.standalone: Any = None
        self._probe = 0
        # The pods of the case running now created so far (full names): one missing was deleted.
        self._created: set[str] = set()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, sides: Iterable[str] = (KUBE_SCHEDULER, KUBE_EXTENDER)) -> WorkloadRunner:
        for name, value in PRIORITY_CLASSES.items():
            self._create(
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
            )
        for name in sides:
            side = SIDES[name]
            self._create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": side.namespace}},
            )
            if name == KUBE_SCHEDULER:
                self.cp.start_scheduler(
                    _config(side.scheduler_name),
                    name="kube-scheduler-workloads",
                    feature_gates=self.feature_gates,
                    extra_args=[f"--v={self.verbosity}"],
                )
            else:
                from tests.e2e.harness import Standalone

                self.standalone = Standalone(
                    self.cp,
                    _config(side.scheduler_name),
                    name="standalone-workloads",
                    feature_gates=self.feature_gates,
                )
                self.standalone.wait_ready(timeout=60)
            self.sides[name] = side
        return self

    def stop(self) -> None:
        if KUBE_SCHEDULER in self.sides:
            self.cp.stop_component("kube-scheduler-workloads")
        if self.standalone is not None:
            self.standalone.stop()
        self.sides.clear()

    def scheduler_log(self, side: str, lines: int = 60) -> str:
        if side == KUBE_SCHEDULER:
            return self.cp.log_tail("kube-scheduler-workloads", lines)
        return self.standalone.log(lines) if self.standalone is not None else ""

    def log_path(self, side: str) -> Path:
        if side == KUBE_SCHEDULER:
            return self.cp.logs / "kube-scheduler-workloads.log"
        return self.standalone.log_path

    # -- one case on one side -------------------------------------------------------------

    def run_case(self, case: WorkloadCase, side_name: str) -> CaseOutcome:
        side = self.sides[side_name]
        prefix = f"{case.case_id}-{side.tag}-"
        self._created = set()
        nodes = {n["metadata"]["name"]: n for n in case.nodes}
        try:
            for node in case.nodes:
                self._create_node(node, prefix, case.case_id, side)
            if case.devices is not None:
                self._create_devices(case, side, prefix)
            # Running pods (and their PodGroups) first: the barrier's probe pod follows them.
            for group in case.groups:
                if group.bound_to is not None:
                    self._create_group(group, side, case.case_id)
                    for pod, node_name in zip(group.members, group.bound_to, strict=True):
                        self._create_pod(pod, group, side, case.case_id, prefix + node_name)
            self._barrier(side, prefix + case.nodes[-1]["metadata"]["name"])
            phases = []
            for phase in range(case.phases):
                started = time.monotonic()
                for group in case.groups:
                    if group.phase == phase and group.bound_to is None:
                        self._create_group(group, side, case.case_id)
                for group, pod, pod_phase in case.pods():
                    if pod_phase == phase and group.bound_to is None:
                        self._create_pod(pod, group, side, case.case_id)
                phases.append(self._settle(case, side, prefix, nodes, started))
            return CaseOutcome(case, side_name, phases)
        finally:
            self._teardown(case, side)

    def _create_node(self, node: dict, prefix: str, case_id: str, side: Side) -> None:
        name = prefix + node["metadata"]["name"]
        labels = {
            **node["metadata"]["labels"],
            HOSTNAME: name,
            CASE_LABEL: case_id,
            SIDE_LABEL: side.tag,
        }
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": node["spec"],
        }
        self.kube.request("POST", "/api/v1/nodes", body)
        # No kubelet: report allocatable and readiness as one would.
        self.kube.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": node["status"]},
            content_type="application/merge-patch+json",
        )

    def _create_group(self, group: Group, side: Side, case_id: str) -> None:
        if group.has_podgroup:
            self.kube.request(
                "POST",
                PODGROUPS.format(ns=side.namespace),
                group.podgroup(side.namespace, case_id),
            )

    def _create_pod(
        self, pod: dict, group: Group, side: Side, case_id: str, node: str | None = None
    ) -> None:
        body = json.loads(json.dumps(pod))
        body["metadata"] = {
            "name": f"{case_id}-{pod['metadata']['name']}",
            "namespace": side.namespace,
            "labels": {CASE_LABEL: case_id},
        }
        body["spec"]["schedulerName"] = side.scheduler_name
        if node is not None:
            body["spec"]["nodeName"] = node
        for ref in body["spec"].get("resourceClaims") or ():
            if ref.get("resourceClaimName") == CLAIM:
                ref["resourceClaimName"] = f"{body['metadata']['name']}-{ref['name']}"
                self._create_claim(ref["resourceClaimName"], side, case_id)
        if group.has_podgroup:
            body["spec"]["schedulingGroup"] = {"podGroupName": group.name}
        created = self.kube.request("POST", f"/api/v1/namespaces/{side.namespace}/pods", body)
        self._created.add(body["metadata"]["name"])
        if group.has_podgroup and not (created.get("spec") or {}).get("schedulingGroup"):
            raise AssertionError(
                "kube-apiserver dropped spec.schedulingGroup: it runs without the "
                "GenericWorkload feature gate (see extender.controlplane.apiserver_args)"
            )

    def _device_class(self, side: Side, case_id: str) -> str:
        return f"{case_id}-{side.tag}-gpu"

    def _create_devices(self, case: WorkloadCase, side: Side, prefix: str) -> None:
        labels = {CASE_LABEL: case.case_id, SIDE_LABEL: side.tag}
        self.kube.request(
            "POST",
            f"{RESOURCE_API}/deviceclasses",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": self._device_class(side, case.case_id), "labels": labels},
                "spec": {
                    "selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]
                },
            },
        )
        for local, count in sorted((case.devices or {}).items()):
            if not count:
                continue
            node = prefix + local
            self.kube.request(
                "POST",
                f"{RESOURCE_API}/resourceslices",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-gpus", "labels": labels},
                    "spec": {
                        "driver": GPU_DRIVER,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "nodeName": node,
                        "devices": [{"name": f"gpu-{i}"} for i in range(count)],
                    },
                },
            )

    def _create_claim(self, name: str, side: Side, case_id: str) -> None:
        self.kube.request(
            "POST",
            f"{RESOURCE_API}/namespaces/{side.namespace}/resourceclaims",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": name,
                    "namespace": side.namespace,
                    "labels": {CASE_LABEL: case_id},
                },
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "exactly": {"deviceClassName": self._device_class(side, case_id)},
                            }
                        ]
                    }
                },
            },
        )

    def _barrier(self, side: Side, node: str, timeout: float = 30.0) -> None:
        """A probe pod only ``node`` takes (no requests, tolerating everything) must be bound:
        the scheduler has seen every node event up to ``node``'s and every pod event before
        the probe (the previous case's deletions)."""
        self._probe += 1
        name = f"probe-{self._probe}"
        path = f"/api/v1/namespaces/{side.namespace}/pods"
        probe = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": side.namespace},
            "spec": {
                "schedulerName": side.scheduler_name,
                "terminationGracePeriodSeconds": 0,
                "nodeSelector": {HOSTNAME: node},
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "c", "image": PAUSE_IMAGE}],
            },
        }
        self.kube.request("POST", path, probe)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                got = self.kube.get(f"{path}/{name}") or {}
                if (got.get("spec") or {}).get("nodeName"):
                    return
                time.sleep(0.1)
            raise AssertionError(
                f"{side.name} did not bind the probe pod to {node} within {timeout:g}s; its "
                f"log:\n{self.scheduler_log(side.name)}"
            )
        finally:
            self._delete_pod(side.namespace, name)

    def _delete_pod(self, ns: str, name: str) -> None:
        try:
            self.kube.request(
                "DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", {"gracePeriodSeconds": 0}
            )
        except ApiError as exc:
            if exc.status != 404:
                raise

    def _observe(
        self, case: WorkloadCase, side: Side, prefix: str, nodes: dict[str, dict]
    ) -> tuple[PhaseOutcome, bool]:
        """The current outcome, and whether every pod is bound or has its condition."""
        selector = f"{CASE_LABEL}={case.case_id}"
        group_of = {
            f"{case.case_id}-{pod['metadata']['name']}": (group.name, pod_shape(pod))
            for group, pod, _ in case.pods()
        }
        events = self._preempted_events(side, prefix)
        pods: dict[str, PodOutcome] = {}
        complete = True
        for pod in self._list(f"/api/v1/namespaces/{side.namespace}/pods", labelSelector=selector):
            full = pod["metadata"]["name"]
            if full not in group_of:
                continue
            local = full.removeprefix(f"{case.case_id}-")
            group, shape = group_of[full]
            node = (pod.get("spec") or {}).get("nodeName")
            if pod["metadata"].get("deletionTimestamp"):
                # A running pod being evicted (a kubelet would stop it): with its
                # DisruptionTarget condition's reason, if any.
                target: dict = next(
                    (
                        c
                        for c in (pod.get("status") or {}).get("conditions") or ()
                        if c.get("type") == "DisruptionTarget"
                    ),
                    {},
                )
                disruption = (
                    f"DisruptionTarget {target.get('reason')}: "
                    + _neutral(target.get("message") or "", prefix)
                    if target
                    else "no DisruptionTarget"
                )
                pods[local] = PodOutcome(
                    local,
                    group,
                    shape,
                    reason=EVICTED,
                    message="; ".join(["terminating", disruption, *events.get(full, ())]),
                )
                continue
            if node:
                local_node = node.removeprefix(prefix)
                pods[local] = PodOutcome(
                    local, group, shape, local_node, case.node_shape(local_node)
                )
                continue
            cond = next(
                (
                    c
                    for c in (pod.get("status") or {}).get("conditions") or ()
                    if c.get("type") == "PodScheduled" and c.get("status") == "False"
                ),
                None,
            )
            if cond is None:
                complete = False
                pods[local] = PodOutcome(local, group, shape)
            else:
                message = (cond.get("message") or "").replace(prefix, "")
                pods[local] = PodOutcome(
                    local, group, shape, None, None, cond.get("reason"), message
                )
        for full, (group, shape) in group_of.items():
            local = full.removeprefix(f"{case.case_id}-")
            if local not in pods and full in self._created:
                pods[local] = PodOutcome(
                    local,
                    group,
                    shape,
                    reason=EVICTED,
                    message="; ".join(["deleted", *events.get(full, ())]),
                )
        conditions: dict[str, tuple[str, str, str] | None] = {
            g.name: None for g in case.groups if g.has_podgroup
        }
        for pg in self._list(PODGROUPS.format(ns=side.namespace), labelSelector=selector):
            for cond in (pg.get("status") or {}).get("conditions") or ():
                if cond.get("type") == PODGROUP_SCHEDULED:
                    conditions[pg["metadata"]["name"]] = (
                        cond.get("status") or "",
                        cond.get("reason") or "",
                        (cond.get("message") or "").replace(prefix, ""),
                    )
        ordered = dict(sorted(pods.items()))
        return PhaseOutcome(ordered, conditions), complete

    def _preempted_events(self, side: Side, prefix: str) -> dict[str, list[str]]:
        """Per pod (full name), the messages of its ``Preempted`` events, UIDs and scheduler
        names neutral."""
        found: dict[str, list[str]] = {}
        for event in self._list(
            f"/api/v1/namespaces/{side.namespace}/events", fieldSelector="reason=Preempted"
        ):
            name = (event.get("involvedObject") or {}).get("name") or ""
            found.setdefault(name, []).append(
                "event Preempted: " + _neutral(event.get("message") or "", prefix)
            )
        return {name: sorted(set(messages)) for name, messages in found.items()}

    def _settle(
        self,
        case: WorkloadCase,
        side: Side,
        prefix: str,
        nodes: dict[str, dict],
        started: float,
    ) -> PhaseOutcome:
        last: PhaseOutcome | None = None
        since = time.monotonic()
        deadline = started + SETTLE_TIMEOUT
        while True:
            outcome, complete = self._observe(case, side, prefix, nodes)
            now = time.monotonic()
            if last is None or (outcome.pods, outcome.conditions) != (
                last.pods,
                last.conditions,
            ):
                last, since = outcome, now
            stable = now - since
            if stable >= (STABLE if complete else STABLE_NO_CONDITION):
                break
            if now > deadline:
                outcome.settled = False
                self.out(f"{case.case_id} on {side.name}: not settled after {SETTLE_TIMEOUT:g}s")
                break
            time.sleep(POLL)
        outcome.seconds = time.monotonic() - started
        return outcome

    def _teardown(self, case: WorkloadCase, side: Side) -> None:
        selector = f"{CASE_LABEL}={case.case_id}"
        self.kube.request(
            "DELETE",
            f"/api/v1/namespaces/{side.namespace}/pods",
            {"gracePeriodSeconds": 0},
            query={"labelSelector": selector},
        )
        path = PODGROUPS.format(ns=side.namespace)
        for pg in self._list(path, labelSelector=selector):
            force_delete(self.kube, path, pg["metadata"]["name"])  # podgroup-protection
        if case.devices is not None:
            claims = f"{RESOURCE_API}/namespaces/{side.namespace}/resourceclaims"
            for claim in self._list(claims, labelSelector=selector):
                force_delete(self.kube, claims, claim["metadata"]["name"])
            for kind in ("resourceslices", "deviceclasses"):
                self.kube.request(
                    "DELETE",
                    f"{RESOURCE_API}/{kind}",
                    query={"labelSelector": f"{selector},{SIDE_LABEL}={side.tag}"},
                )
        self.kube.request(
            "DELETE",
            "/api/v1/nodes",
            query={"labelSelector": f"{selector},{SIDE_LABEL}={side.tag}"},
        )


UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _neutral(message: str, prefix: str) -> str:
    """``message`` without what differs between the sides: UIDs, node prefixes, scheduler
    names."""
    message = UID.sub("<uid>", message.replace(prefix, ""))
    for side in SIDES.values():
        message = message.replace(side.scheduler_name, "<scheduler>")
    return message


def _config(scheduler_name: str) -> dict:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name}],
    }


# -- a run ------------------------------------------------------------------------------------


@dataclass
class WorkloadTally:
    outcomes: list[tuple[CaseOutcome, CaseOutcome | None]] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    # Lines printed under the headline (the gates both sides ran with, ...).
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def report(self) -> str:
        compared = [pair for pair in self.outcomes if pair[1] is not None]
        families = Counter(t.case.family for t, _ in self.outcomes)
        lines = [
            f"workload conformance: {len(self.outcomes)} case(s) "
            f"({', '.join(f'{k} {v}' for k, v in sorted(families.items()))}), "
            f"{len(compared)} compared with {KUBE_EXTENDER}, "
            f"{len(self.disagreements)} disagreement(s), {len(self.violations)} violation(s) of "
            f"gang semantics, {self.seconds:.0f}s"
        ]
        lines += [f"  {note}" for note in self.notes]
        lines += [f"  not settled: {u}" for u in self.unsettled]
        lines += [f"  violation: {v}" for v in self.violations]
        lines += [d.describe() for d in self.disagreements]
        return "\n".join(lines)


def run_cases(
    runner: WorkloadRunner,
    cases: Iterable[WorkloadCase],
    *,
    out: Callable[[str], None] = print,
    verbose: bool = False,
) -> WorkloadTally:
    """Each case on kube-scheduler, then (if started) on ours; compare."""
    tally = WorkloadTally()
    tally.notes.append(f"feature gates: {feature_gates_value(runner.feature_gates)}")
    started = time.monotonic()
    for case in cases:
        theirs = runner.run_case(case, KUBE_SCHEDULER)
        ours = runner.run_case(case, KUBE_EXTENDER) if KUBE_EXTENDER in runner.sides else None
        tally.outcomes.append((theirs, ours))
        for outcome in (theirs, ours):
            if outcome is None:
                continue
            if verbose:
                out(outcome.describe())
            for violation in violations(outcome):
                tally.violations.append(violation)
                out(f"violation: {violation}")
            for i, phase in enumerate(outcome.phases):
                if not phase.settled:
                    tally.unsettled.append(f"{case.case_id} phase {i} on {outcome.side}")
        if ours is not None:
            found = compare(theirs, ours)
            tally.disagreements += found
            for d in found:
                out(d.describe())
    tally.seconds = time.monotonic() - started
    return tally
