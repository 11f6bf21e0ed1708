"""The soak's invariants, checked on consistent snapshots (one LIST of nodes, one of pods).

Written independently of the plugin core on purpose: a checker built on the scheduler's own
filters would share its bugs. It understands exactly what the workload creates (requests,
host ports, node selectors and required node affinity with ``In``, NoSchedule taints with
``Equal`` tolerations, cordons, required pod (anti-)affinity with ``matchLabels``, and
DoNotSchedule spread over zones), nothing more.

* At any snapshot: no node over-committed (cpu, memory, pods), no host port used twice on a
  node, no two pods on one host where one's required anti-affinity selects the other.
* Per pod, in the snapshots of the ~6 s before it is first seen bound (the scheduler decided
  in that span: Permit waits up to 2 s, then the bind): taints, cordon, node affinity, pod
  affinity and spread held in at least one of them.
* At the end: every pending pod that fits a node is a violation; every pod that fits nowhere
  has a FailedScheduling event ``0/N nodes are available: ...``; no pod has two Scheduled
  events or a bind refused as already assigned; nothing is left assumed.

Gangs (PodGroups with the Gang policy, see workload.py), by the soak with these helpers:

* At any snapshot: no gang partly bound (0 < bound < minCount) for longer than
  ``PARTIAL_GRACE`` since a member was first seen bound, unless a fault struck while it was
  binding (checked again at the end then).
* At the end: no gang partly bound whose missing members fit the free room (nor any partly
  bound gang no fault explains); no pending gang whose quorum fits the free room alone
  (:func:`place_gang`: a first-fit-decreasing placement is the proof; no deadlock between
  gangs holding room for each other); every pending member has its scheduler's verdict.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .workload import GANG_SIZE, POOL, TAINT, ZONE

FAILED_RE = re.compile(r"^0/\d+ nodes are available: ")
# A pending gang member's verdict: its own FitError, its group's, or GangScheduling's wait.
GANG_FAILED_RE = re.compile(
    r"^(0/\d+ nodes are available: |pod group is unschedulable|waiting for )"
)
# How long a gang may be seen partly bound: once one member is bound, the quorum has passed
# Permit (GangScheduling's 5 min timeout is over for all of them), so the others are only
# waiting for other Permit plugins (NodeNumber: at most 9 s), their binding calls, or a retry
# after a failed one (backoff at most 10 s). A minute is ample.
PARTIAL_GRACE = 60.0


def cpu_milli(value: str) -> int:
    if value.endswith("m"):
        return int(value[:-1])
    return int(float(value) * 1000)


_UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1000, "M": 10**6, "G": 10**9}


def mem_bytes(value: str) -> int:
    for unit, factor in _UNITS.items():
        if value.endswith(unit):
            return int(float(value[: -len(unit)]) * factor)
    return int(value)


def requests(pod: dict) -> tuple[int, int]:
    cpu = mem = 0
    for c in pod["spec"].get("containers") or ():
        r = (c.get("resources") or {}).get("requests") or {}
        cpu += cpu_milli(r.get("cpu", "0"))
        mem += mem_bytes(r.get("memory", "0"))
    return cpu, mem


def host_ports(pod: dict) -> list[int]:
    return [
        p["hostPort"]
        for c in pod["spec"].get("containers") or ()
        for p in c.get("ports") or ()
        if p.get("hostPort")
    ]


def allocatable(node: dict) -> tuple[int, int, int]:
    a = (node.get("status") or {}).get("allocatable") or {}
    return cpu_milli(a.get("cpu", "0")), mem_bytes(a.get("memory", "0")), int(a.get("pods", "0"))


def labels(obj: dict) -> dict:
    return obj["metadata"].get("labels") or {}


def node_of(pod: dict) -> str:
    return pod["spec"].get("nodeName") or ""


def selects(selector: dict, obj_labels: dict) -> bool:
    return all(obj_labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def node_matches(pod: dict, node: dict) -> bool:
    """nodeSelector and required node affinity (``In`` expressions, ORed terms)."""
    nl = labels(node)
    if any(nl.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    required = (
        ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    if not required:
        return True
    return any(
        all(nl.get(e["key"]) in e["values"] for e in term.get("matchExpressions") or ())
        for term in required
    )


def tolerates(pod: dict, node: dict) -> bool:
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(
            t.get("key") == taint["key"]
            and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
            and t.get("effect") in (None, "", taint["effect"])
            for t in pod["spec"].get("tolerations") or ()
        ):
            return False
    return True


def cordoned(node: dict) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def _terms(pod: dict, kind: str) -> list[dict]:
    return ((pod["spec"].get("affinity") or {}).get(kind) or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []


def anti_conflict(a: dict, b: dict) -> bool:
    """Same host, and one's required anti-affinity selects the other."""
    return any(selects(t["labelSelector"], labels(b)) for t in _terms(a, "podAntiAffinity")) or any(
        selects(t["labelSelector"], labels(a)) for t in _terms(b, "podAntiAffinity")
    )


def _hard_spread(pod: dict) -> list[dict]:
    return [
        c
        for c in pod["spec"].get("topologySpreadConstraints") or ()
        if c.get("whenUnsatisfiable") == "DoNotSchedule"
    ]


@dataclass
class Snapshot:
    nodes: dict[str, dict]
    pods: dict[str, dict]  # uid -> pod
    groups: dict[str, dict] = field(default_factory=dict)  # name -> PodGroup

    def bound(self) -> dict[str, list[dict]]:
        """node name -> pods bound to it (only nodes that exist)."""
        out: dict[str, list[dict]] = defaultdict(list)
        for pod in self.pods.values():
            name = node_of(pod)
            if name in self.nodes:
                out[name].append(pod)
        return out


@dataclass
class Findings:
    checks: Counter = field(default_factory=Counter)  # invariant -> checks passed
    violations: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    notes: Counter = field(default_factory=Counter)

    def check(self, invariant: str, ok: bool, detail: str) -> None:
        if ok:
            self.checks[invariant] += 1
        elif len(self.violations[invariant]) < 50:
            self.violations[invariant].append(detail)
        else:
            self.violations[invariant].append("...")

    def failed(self) -> int:
        return sum(len(v) for v in self.violations.values())


def check_snapshot(snap: Snapshot, findings: Findings) -> None:
    """The invariants that hold at every instant, whatever changed before."""
    for name, pods in snap.bound().items():
        node = snap.nodes[name]
        cpu, mem, count = allocatable(node)
        used_cpu = sum(requests(p)[0] for p in pods)
        used_mem = sum(requests(p)[1] for p in pods)
        findings.check(
            "no node over-committed",
            used_cpu <= cpu and used_mem <= mem and len(pods) <= count,
            f"{name}: cpu {used_cpu}m/{cpu}m memory {used_mem}/{mem} pods {len(pods)}/{count}: "
            + ", ".join(p["metadata"]["name"] for p in pods),
        )
        ports = Counter(port for p in pods for port in host_ports(p))
        clash = [port for port, n in ports.items() if n > 1]
        findings.check("host ports never collide", not clash, f"{name}: ports {clash} twice")
        for i, a in enumerate(pods):
            for b in pods[i + 1 :]:
                if _terms(a, "podAntiAffinity") or _terms(b, "podAntiAffinity"):
                    findings.check(
                        "required anti-affinity",
                        not anti_conflict(a, b),
                        f"{name}: {a['metadata']['name']} and {b['metadata']['name']}",
                    )


def _spread_skew(pod: dict, snap: Snapshot, others: list[dict], cons: dict) -> int:
    """The skew of ``cons`` with ``pod`` on its node, counting the pods bound in ``snap``
    (plus ``others``) on nodes ``pod`` may use."""
    eligible = {n: nd for n, nd in snap.nodes.items() if node_matches(pod, nd)}
    key = cons["topologyKey"]
    domains = {labels(nd).get(key) for nd in eligible.values()} - {None}
    counts = dict.fromkeys(domains, 0)
    ns = pod["metadata"]["namespace"]
    seen = set()
    for p in [*snap.pods.values(), *others]:
        uid = p["metadata"]["uid"]
        if uid in seen or uid == pod["metadata"]["uid"]:
            continue
        seen.add(uid)
        n = node_of(p)
        if n in eligible and p["metadata"]["namespace"] == ns:
            if selects(cons["labelSelector"], labels(p)):
                counts[labels(eligible[n])[key]] += 1
    mine = labels(snap.nodes[node_of(pod)]).get(key) if node_of(pod) in snap.nodes else None
    if mine is None or mine not in counts:
        return 0
    counts[mine] += 1
    return counts[mine] - min(counts.values())


def _has_peer(pod: dict, term: dict, zones: set, snap: Snapshot) -> bool:
    for p in snap.pods.values():
        n = snap.nodes.get(node_of(p))
        if n is None or p["metadata"]["uid"] == pod["metadata"]["uid"]:
            continue
        key = term["topologyKey"]
        if selects(term["labelSelector"], labels(p)) and labels(n).get(key) in zones:
            return True
    return False


def check_bind(pod: dict, snaps: list[Snapshot], window: list[dict], findings: Findings) -> None:
    """Constraints at decision time: ``pod`` was first seen bound in ``snaps[-1]``; the
    scheduler decided earlier, within the span of ``snaps`` (which must cover its Permit wait
    and binding latency: the soak keeps ~6 s). A constraint counts as violated only if it is
    violated in every snapshot. ``window`` are the other pods first seen bound in the last."""
    name = pod["metadata"]["name"]
    node_name = node_of(pod)
    snaps = [s for s in snaps if node_name in s.nodes]
    versions = [s.nodes[node_name] for s in snaps]
    if not versions:
        findings.notes["bound to a node deleted before it was seen bound"] += 1
        return
    where = f"{name} on {node_name}"
    findings.check(
        "taints tolerated at bind", any(tolerates(pod, n) for n in versions), f"{where}: taints"
    )
    findings.check("no bind to a cordoned node", not all(map(cordoned, versions)), where)
    findings.check(
        "required node affinity at bind", any(node_matches(pod, n) for n in versions), where
    )
    for term in _terms(pod, "podAffinity"):
        zones = {labels(n).get(term["topologyKey"]) for n in versions}
        findings.check(
            "required pod affinity at bind",
            any(_has_peer(pod, term, zones, snap) for snap in snaps),
            where,
        )
    for cons in _hard_spread(pod):
        skews = [_spread_skew(pod, snap, extra, cons) for snap in snaps for extra in ([], window)]
        findings.check(
            "DoNotSchedule spread at bind",
            min(skews) <= cons["maxSkew"],
            f"{where}: skew {skews} > {cons['maxSkew']}",
        )


def fits(pod: dict, node: dict, snap: Snapshot) -> str | None:
    """None if ``pod`` fits ``node`` now, else why not (the checker's own words)."""
    if cordoned(node):
        return "cordoned"
    if not node_matches(pod, node):
        return "node affinity"
    if not tolerates(pod, node):
        return "taint"
    on_node = snap.bound().get(node["metadata"]["name"], [])
    cpu, mem, count = allocatable(node)
    r_cpu, r_mem = requests(pod)
    if sum(requests(p)[0] for p in on_node) + r_cpu > cpu:
        return "cpu"
    if sum(requests(p)[1] for p in on_node) + r_mem > mem:
        return "memory"
    if len(on_node) + 1 > count:
        return "pods"
    used = {port for p in on_node for port in host_ports(p)}
    if used & set(host_ports(pod)):
        return "ports"
    if any(anti_conflict(pod, p) for p in on_node):
        return "anti-affinity"
    for term in _terms(pod, "podAffinity"):
        zone = labels(node).get(term["topologyKey"])
        peers = [
            p
            for ps in snap.bound().values()
            for p in ps
            if selects(term["labelSelector"], labels(p))
            and labels(snap.nodes[node_of(p)]).get(term["topologyKey"]) == zone
        ]
        if not peers:
            return "pod affinity"
    for cons in _hard_spread(pod):
        placed = {**pod, "spec": {**pod["spec"], "nodeName": node["metadata"]["name"]}}
        if _spread_skew(placed, snap, [], cons) > cons["maxSkew"]:
            return "spread"
    return None


def pool_nodes(snap: Snapshot, pod: dict) -> list[dict]:
    pool = labels(pod).get(POOL)
    return [n for n in snap.nodes.values() if labels(n).get(POOL) == pool]


def fitting_node(pod: dict, snap: Snapshot) -> str | None:
    for node in pool_nodes(snap, pod):
        if fits(pod, node, snap) is None:
            return node["metadata"]["name"]
    return None


# -- gangs ------------------------------------------------------------------------------


@dataclass
class Gang:
    """A PodGroup with the Gang policy and its member pods in one snapshot."""

    name: str
    min_count: int
    size: int  # the members the soak made (annotation), 0 if unknown
    members: list[dict]

    @property
    def bound(self) -> list[dict]:
        return [p for p in self.members if node_of(p)]

    @property
    def pending(self) -> list[dict]:
        return [p for p in self.members if not node_of(p)]

    def partly_bound(self) -> bool:
        return 0 < len(self.bound) < self.min_count

    def missing(self) -> int:
        """Members still to bind for the quorum."""
        return max(0, self.min_count - len(self.bound))


def group_of(pod: dict) -> str:
    return (pod["spec"].get("schedulingGroup") or {}).get("podGroupName") or ""


def gangs(snap: Snapshot) -> dict[str, Gang]:
    """The snapshot's PodGroups with the Gang policy, with their members."""
    members: dict[str, list[dict]] = defaultdict(list)
    for pod in snap.pods.values():
        if group_of(pod):
            members[group_of(pod)].append(pod)
    out = {}
    for name, group in snap.groups.items():
        gang = ((group.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
        if not isinstance(gang, dict):
            continue
        size = int(((group["metadata"].get("annotations") or {}).get(GANG_SIZE)) or 0)
        out[name] = Gang(name, int(gang.get("minCount") or 0), size, members.get(name, []))
    return out


def _provable(pod: dict) -> bool:
    """Only node-local filters and resources: what :func:`place_gang` models exactly."""
    return not (
        host_ports(pod)
        or _terms(pod, "podAffinity")
        or _terms(pod, "podAntiAffinity")
        or _hard_spread(pod)
    )


def place_gang(pods: list[dict], snap: Snapshot) -> list[tuple[str, str]]:
    """(pod, node) for as many of ``pods`` as first-fit decreasing (cpu, then memory) places
    on the free room of their pool's nodes (allocatable minus the pods bound there), one after
    the other, so that each sees the ones before: a placement found is a proof that they fit
    together. For identical pods whose filters depend on the node alone (the soak's gangs) it
    is also the most any placement fits: each node holds min(free / request) of them,
    whichever order they come in. Nothing for pods it cannot model (ports, pod affinity,
    spread)."""
    if not pods or not all(_provable(p) for p in pods):
        return []
    bound = snap.bound()
    room: dict[str, list[int]] = {}
    for node in sorted(pool_nodes(snap, pods[0]), key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        cpu, mem, count = allocatable(node)
        on_node = bound.get(name, [])
        used_cpu = sum(requests(p)[0] for p in on_node)
        used_mem = sum(requests(p)[1] for p in on_node)
        room[name] = [cpu - used_cpu, mem - used_mem, count - len(on_node)]
    placed = []
    for pod in sorted(pods, key=requests, reverse=True):
        r_cpu, r_mem = requests(pod)
        for name, free in room.items():
            node = snap.nodes[name]
            if cordoned(node) or not node_matches(pod, node) or not tolerates(pod, node):
                continue
            if free[0] >= r_cpu and free[1] >= r_mem and free[2] >= 1:
                free[0] -= r_cpu
                free[1] -= r_mem
                free[2] -= 1
                placed.append((pod["metadata"]["name"], name))
                break
    return placed


def quorum_fits(gang: Gang, snap: Snapshot) -> list[tuple[str, str]]:
    """A placement of the pending members the gang still needs for its quorum in the free
    room, or nothing if :func:`place_gang` finds none."""
    need = gang.missing()
    placed = place_gang(gang.pending, snap)
    return placed[:need] if need and len(placed) >= need else []


__all__ = [
    "FAILED_RE",
    "TAINT",
    "ZONE",
    "GANG_FAILED_RE",
    "PARTIAL_GRACE",
    "Findings",
    "Gang",
    "Snapshot",
    "check_bind",
    "check_snapshot",
    "fits",
    "fitting_node",
    "gangs",
    "group_of",
    "place_gang",
    "quorum_fits",
]
