"""Offline what-if: schedule new pods into a cluster dump, as ``kube-extender run`` would.

Queue order is PrioritySort's (priority, then the order given); each pod goes through
:meth:`SchedulingAlgorithm.schedule_pod` (the loop's own call, with a seeded RNG) on one
snapshot that is updated in place: a placed pod is *assumed* into its NodeInfo (no rebuild),
a preemption (dry run through PostFilter) evicts its victims from the simulated state and the
pod is tried again. A pod that fits nowhere gets an :class:`Explanation` (why not).

With the feature gate GenericWorkload, the pods of a PodGroup (``spec.schedulingGroup``) are
placed **whole**: at the queue position of the group's first pod, the group's pods go through
one pod group cycle (:func:`extender.explain.gang.run_cycle`, the scheduler's
:class:`~extender.framework.schedule_podgroup.PodGroupAlgorithm`); when the group is not
schedulable (GangScheduling: fewer than ``minCount`` fit) none of them is placed.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from extender.framework.cycle_state import CycleState
from extender.framework.features import DEFAULT_FEATURES, Features
from extender.framework.pod_info import pod_key, pod_priority
from extender.framework.podgroups import (
    PODGROUPS,
    PodGroupStates,
    gang_min_count,
    pod_group_key,
)
from extender.framework.runtime import Framework
from extender.framework.schedule import FitError, SchedulingAlgorithm, SchedulingError
from extender.framework.snapshot import Snapshot
from extender.offline import Cluster, apiserver_defaults

from . import gang
from .engine import Explainer, Explanation
from .simulate_dra import ClaimWorld

SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
CONTROLLERS = ("Deployment", "ReplicaSet", "StatefulSet", "Job")


# -- pods from manifests -----------------------------------------------------------------------


def _suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(SUFFIX_ALPHABET) for _ in range(n))


def _owner(obj: dict, kind: str | None = None, name: str | None = None) -> dict:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", "apps/v1"),
        "kind": kind or obj["kind"],
        "name": name or meta.get("name", ""),
        "uid": meta.get("uid") or f"uid-{kind or obj['kind']}-{name or meta.get('name')}",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _from_template(obj: dict, name: str, owner: dict, extra_labels: dict | None = None) -> dict:
    template = (obj.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [owner],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
        "status": {"phase": "Pending"},
    }


def expand(objects: Iterable[dict], seed: int = 0) -> list[dict]:
    """Pods as given, and controllers' pods (replicas x template, named like the controllers
    name them, with owner references), each as the apiserver would store it on create
    (:func:`extender.offline.apiserver_defaults`: requests default to limits)."""
    return [apiserver_defaults(p) for p in _expand(objects, seed)]


def _expand(objects: Iterable[dict], seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    pods: list[dict] = []
    for obj in objects:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        name = meta.get("name", "")
        if kind == "Pod":
            pod = copy.deepcopy(obj)
            pod.setdefault("metadata", {}).setdefault("namespace", "default")
            pod["metadata"].setdefault("uid", f"uid-{pod['metadata']['namespace']}-{name}")
            pod.setdefault("status", {})["phase"] = "Pending"
            pods.append(pod)
        elif kind == "Deployment":
            digest = hashlib.sha256(repr(spec.get("template")).encode()).hexdigest()
            template_hash = "".join(SUFFIX_ALPHABET[int(c, 16)] for c in digest[:10])
            rs_name = f"{name}-{template_hash}"
            owner = _owner(obj, "ReplicaSet", rs_name) | {"apiVersion": "apps/v1"}
            for _ in range(int(spec.get("replicas", 1))):
                pods.append(
                    _from_template(
                        obj,
                        f"{rs_name}-{_suffix(rng)}",
                        owner,
                        {"pod-template-hash": template_hash},
                    )
                )
        elif kind == "ReplicaSet":
            for _ in range(int(spec.get("replicas", 1))):
                pods.append(_from_template(obj, f"{name}-{_suffix(rng)}", _owner(obj)))
        elif kind == "StatefulSet":
            for i in range(int(spec.get("replicas", 1))):
                pods.append(
                    _from_template(
                        obj,
                        f"{name}-{i}",
                        _owner(obj),
                        {"statefulset.kubernetes.io/pod-name": f"{name}-{i}"},
                    )
                )
        elif kind == "Job":
            count = int(spec.get("parallelism", 1) or 1)
            count = min(count, int(spec.get("completions", count) or count))
            for _ in range(count):
                pods.append(_from_template(obj, f"{name}-{_suffix(rng)}", _owner(obj, "Job")))
    return pods


# -- the simulation ----------------------------------------------------------------------------


@dataclass
class Placement:
    pod: dict
    node: str = ""
    feasible: int = 0
    victims: list[str] = field(default_factory=list)
    why_not: Explanation | None = None
    # A member of a pod group: ``ns/name`` of the group, its verdict and message (why a
    # member that fits was not placed: its group's quorum was not met).
    group: str = ""
    group_verdict: str = ""
    group_message: str = ""
    outcome: str = ""

    @property
    def key(self) -> str:
        meta = self.pod["metadata"]
        return f"{meta.get('namespace', 'default')}/{meta['name']}"


RESOURCES = ("cpu", "memory", "pods")


def utilisation(snapshot: Snapshot) -> dict[str, dict[str, float]]:
    """Per resource: requested, allocatable (cluster sums) and the requested percentage."""
    totals = {r: [0, 0] for r in RESOURCES}
    for info in snapshot.node_info_list:
        totals["cpu"][0] += info.requested.milli_cpu
        totals["cpu"][1] += info.allocatable.milli_cpu
        totals["memory"][0] += info.requested.memory
        totals["memory"][1] += info.allocatable.memory
        totals["pods"][0] += len(info.pods)
        totals["pods"][1] += info.allocatable.allowed_pod_number
    return {
        r: {
            "requested": used,
            "allocatable": cap,
            "percent": round(100 * used / cap, 1) if cap else 0,
        }
        for r, (used, cap) in totals.items()
    }


class Simulation:
    def __init__(
        self, fwk: Framework, cluster: Cluster, seed: int = 0, features: Features = DEFAULT_FEATURES
    ) -> None:
        self.fwk = fwk
        self.cluster = cluster
        self.seed = seed
        self.snapshot = cluster.snapshot()
        self.algorithm = SchedulingAlgorithm(rng=random.Random(seed))
        self.explainer = Explainer(fwk)
        # ResourceClaims: created from templates, allocated as pods are placed.
        self.claims = ClaimWorld(cluster, fwk, seed)
        # GenericWorkload: the pod groups' members (what GangScheduling reads); the dump's
        # waiting members (pending with a nominatedNodeName) count on their nodes.
        self.features = features
        self.states: PodGroupStates | None = None
        if features.generic_workload:
            self.states = gang.load_states(fwk, cluster.pods)
            for pod in cluster.pods:
                if pod_group_key(pod) is not None and gang.member_state(pod) == gang.WAITING:
                    waiting = gang.as_waiting(pod)
                    info = self.snapshot.node_info_map.get(waiting["spec"]["nodeName"])
                    if info is not None:
                        info.add_pod(waiting)
                        self.snapshot.refresh(info)

    def assume(self, pod: dict, node: str) -> None:
        """The pod on ``node`` in the snapshot (in place, as the cache assumes it)."""
        placed = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
        info = self.snapshot.node_info_map[node]
        info.add_pod(placed)
        self.snapshot.refresh(info)
        self.cluster.pods.append(placed)
        if self.states is not None:
            self.states.add_pod(placed)

    def evict(self, node: str, namespace: str, name: str, uid: str = "") -> None:
        info = self.snapshot.node_info_map[node]
        info.remove_pod(uid or f"{namespace}/{name}")
        self.snapshot.refresh(info)
        self.claims.release(namespace, name, uid)
        if self.states is not None:
            for pod in self.cluster.pods:
                if pod_key(pod) == (uid or f"{namespace}/{name}"):
                    self.states.remove_pod(pod)
        self.cluster.pods[:] = [
            p
            for p in self.cluster.pods
            if not (
                p["metadata"].get("name") == name
                and (p["metadata"].get("namespace") or "default") == namespace
            )
        ]

    def place(self, pod: dict, *, preempt: bool = True) -> Placement:
        pod = self.claims.with_claims(pod)
        placement = Placement(pod)
        state = CycleState()
        try:
            result = self.algorithm.schedule_pod(self.fwk, state, pod, self.snapshot)
        except FitError:
            why = self.explainer.explain(pod, self.snapshot) if preempt else None
            if why is None:
                why = Explainer(self.fwk, preemption=False).explain(pod, self.snapshot)
            pre = why.preemption
            if preempt and pre is not None and pre.node:
                for victim in pre.victims:
                    self.evict(pre.node, victim.namespace, victim.name, victim.uid)
                placement.victims = [f"{v.namespace}/{v.name}" for v in pre.victims]
                retry = self.place(pod, preempt=False)
                retry.victims = placement.victims
                return retry
            placement.why_not = why
            return placement
        except SchedulingError as exc:
            placement.why_not = Explanation(pod={}, profile=self.fwk.profile_name, num_nodes=0)
            placement.why_not.error = exc.status.message
            return placement
        refused = self.claims.reserve(state, pod, result.suggested_host)
        if refused is not None:
            placement.why_not = Explanation(pod={}, profile=self.fwk.profile_name, num_nodes=0)
            placement.why_not.error = refused
            return placement
        placement.node = result.suggested_host
        placement.feasible = result.feasible_nodes
        self.assume(pod, result.suggested_host)
        return placement

    def run(
        self, pods: list[dict], progress: Callable[[int, int], None] | None = None
    ) -> list[Placement]:
        order = sorted(range(len(pods)), key=lambda i: (-pod_priority(pods[i]), i))
        groups: dict[tuple[str, str], list[dict]] = {}
        if self.states is not None:
            for i in order:
                key = pod_group_key(pods[i])
                if key is not None:
                    groups.setdefault(key, []).append(pods[i])
                    self.states.add_pod(pods[i])  # every member exists before any is tried
        placements: list[Placement] = []
        done = 0
        grouped = bool(groups)
        for i in order:
            key = pod_group_key(pods[i]) if grouped else None
            if key is None:
                placements.append(self.place(pods[i]))
            elif key in groups:
                placements += self.place_group(key, groups.pop(key))
            else:
                continue  # placed with its group
            done = len(placements)
            if progress is not None:
                progress(done, len(order))
        return placements

    def place_group(
        self, key: tuple[str, str], pods: list[dict], *, preempt: bool = True
    ) -> list[Placement]:
        """One pod group cycle for ``pods`` (the group's new pods, in queue order): all of
        them placed when the group is schedulable, none otherwise. Preemption: a member's
        PostFilter victims are evicted (as the scheduler's PostFilter deletes them, whether
        or not the group then goes), and a group waiting on preemption is tried once more."""
        assert self.states is not None
        pods = [self.claims.with_claims(p) for p in pods]
        cycle = gang.run_cycle(
            self.fwk,
            key,
            [*self.cluster.pods, *pods],
            self.snapshot,
            preemption=preempt,
            seed=self.seed,
            states=self.states,
            order=pods,
            add_waiting=False,
            placements=self.features.topology_aware_workload_scheduling,
        )
        evicted: dict[str, list[str]] = {}
        for member_key, evictions in cycle.victims.items():
            member = next((m for m in cycle.members if pod_key(m.pod) == member_key), None)
            node = member.node if member is not None else ""
            for victim in evictions:
                if node:
                    self.evict(node, victim.namespace, victim.name, victim.uid)
            evicted[member_key] = [f"{v.namespace}/{v.name}" for v in evictions]
        if cycle.group_victims:
            # Workload-aware preemption's victims, anywhere in the cluster (only then is the
            # pod list walked): every member lists them.
            nodes = {
                ((p.get("metadata") or {}).get("namespace") or "default", p["metadata"]["name"]): (
                    (p.get("spec") or {}).get("nodeName") or ""
                )
                for p in self.cluster.pods
                if (p.get("metadata") or {}).get("name")
            }
            for victim in cycle.group_victims:
                node = nodes.get((victim.namespace, victim.name), "")
                if node:
                    self.evict(node, victim.namespace, victim.name, victim.uid)
            names = [f"{v.namespace}/{v.name}" for v in cycle.group_victims]
            for pod in pods:
                evicted.setdefault(pod_key(pod), names)
        if preempt and cycle.verdict == gang.WAITING_ON_PREEMPTION:
            placements = self.place_group(key, pods, preempt=False)
            for placement in placements:
                placement.victims = evicted.get(pod_key(placement.pod), [])
            return placements
        placements = []
        schedulable = cycle.verdict == gang.SCHEDULABLE
        results = {pod_key(r.info.pod): r for r in (cycle.result.results if cycle.result else ())}
        group = f"{key[0]}/{key[1]}"
        for pod in pods:
            member = cycle.member(gang.pod_name(pod))
            assert member is not None
            placement = Placement(
                pod,
                group=group,
                group_verdict=cycle.verdict,
                group_message=cycle.message,
                outcome=member.outcome,
                victims=evicted.get(pod_key(pod), []),
            )
            placements.append(placement)
            if schedulable and member.outcome == gang.PLACED:
                pod_result = results[pod_key(pod)]
                refused = self.claims.reserve(pod_result.state, pod, member.node)
                if refused is not None:
                    placement.why_not = Explanation(
                        pod={}, profile=self.fwk.profile_name, num_nodes=0
                    )
                    placement.why_not.error = refused
                    continue
                placement.node = member.node
                self.assume(pod, member.node)
            elif member.outcome in (gang.UNSCHEDULABLE, gang.ERROR):
                if member.outcome == gang.ERROR:
                    placement.why_not = Explanation(
                        pod={}, profile=self.fwk.profile_name, num_nodes=0
                    )
                    placement.why_not.error = member.message
                    continue
                explainer = Explainer(self.fwk, preemption=False)
                placement.why_not = explainer.explain(pod, cycle.snapshot_at(member))
        return placements

    def max_replicas(
        self,
        template: dict,
        limit: int = 100_000,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[int, Explanation | None, dict[str, int]]:
        """How many more copies of ``template`` fit (no preemption), the explanation that
        stops the next one, and the count per node."""
        meta = template.get("metadata") or {}
        base = meta.get("name") or "replica"
        per_node: dict[str, int] = {}
        for i in range(limit):
            pod = copy.deepcopy(template)
            pod.setdefault("metadata", {})["name"] = f"{base}-{i}"
            pod["metadata"]["uid"] = f"uid-max-{base}-{i}"
            pod["metadata"].setdefault("namespace", "default")
            placement = self.place(pod, preempt=False)
            if not placement.node:
                return i, placement.why_not, per_node
            per_node[placement.node] = per_node.get(placement.node, 0) + 1
            if progress is not None:
                progress(i + 1, 0)
        return limit, None, per_node


@dataclass
class GangMax:
    """``--max`` for a gang: how many more copies of a whole PodGroup fit."""

    gangs: int = 0
    pods: int = 0  # members placed (all of each gang's, or at least its quorum)
    size: int = 0
    min_count: int | None = None
    per_node: dict[str, int] = field(default_factory=dict)
    # The next copy, which did not fit: its group's verdict and message, and the
    # explanation of its member no node fits (None: every member fit, the quorum did not).
    stopped_verdict: str = ""
    stopped_message: str = ""
    blocking: str = ""
    why: Explanation | None = None


def gang_copy(pod_group: dict, members: list[dict], i: int) -> tuple[dict, list[dict]]:
    """Copy ``i`` of a PodGroup and its members: ``<group>-<i>`` and ``<group>-<i>-<j>``."""
    group = copy.deepcopy(pod_group)
    meta = group.setdefault("metadata", {})
    base = meta.get("name") or "gang"
    namespace = meta.setdefault("namespace", "default")
    name = f"{base}-{i}"
    meta["name"] = name
    meta["uid"] = f"uid-max-{namespace}-{name}"
    group.pop("status", None)
    pods = []
    for j, member in enumerate(members):
        pod = copy.deepcopy(member)
        pmeta = pod.setdefault("metadata", {})
        pmeta["name"] = f"{name}-{j}"
        pmeta["namespace"] = namespace
        pmeta["uid"] = f"uid-max-{namespace}-{name}-{j}"
        spec = pod.setdefault("spec", {})
        spec["schedulingGroup"] = {**(spec.get("schedulingGroup") or {}), "podGroupName": name}
        pods.append(pod)
    return group, pods


def max_gangs(
    sim: Simulation,
    pod_group: dict,
    members: list[dict],
    limit: int = 100_000,
    progress: Callable[[int, int], None] | None = None,
) -> GangMax:
    """How many more copies of the gang (``pod_group`` and ``members``) fit, whole, without
    preemption: copy after copy goes through the pod group cycle until one is not placed."""
    out = GangMax(size=len(members), min_count=gang_min_count(pod_group))
    for i in range(limit):
        group, pods = gang_copy(pod_group, members, i)
        sim.cluster.add(group)
        placements = sim.run(pods) if sim.states is not None else []
        placed = [p for p in placements if p.node]
        verdict = placements[0].group_verdict if placements else ""
        if verdict != gang.SCHEDULABLE or not placed:
            out.stopped_verdict = verdict
            out.stopped_message = placements[0].group_message if placements else ""
            stuck = next((p for p in placements if p.why_not is not None), None)
            if stuck is not None:
                out.blocking = stuck.key
                out.why = stuck.why_not
            sim.cluster.objects[PODGROUPS.name].remove(group)
            return out
        out.gangs += 1
        out.pods += len(placed)
        for p in placed:
            out.per_node[p.node] = out.per_node.get(p.node, 0) + 1
        if progress is not None:
            progress(i + 1, 0)
    return out


def placements_dict(placements: list[Placement]) -> list[dict[str, Any]]:
    out = []
    for p in placements:
        entry: dict[str, Any] = {
            "pod": p.key,
            "priority": pod_priority(p.pod),
            "node": p.node or None,
            "feasibleNodes": p.feasible,
            "victims": p.victims,
        }
        if p.group:
            entry["podGroup"] = p.group
            entry["outcome"] = p.outcome
            entry["groupVerdict"] = p.group_verdict
            entry["groupMessage"] = p.group_message
        if p.why_not is not None:
            entry["fitError"] = p.why_not.fit_error
            entry["error"] = p.why_not.error
            entry["reasonCounts"] = p.why_not.reason_counts()
        out.append(entry)
    return out
