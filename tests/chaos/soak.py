"""The chaos soak: a real control plane, three schedulers, a seeded churn, faults, invariants.

Three pools of nodes, each with its own scheduler (see workload.py for the isolation):

* ``sa``: two ``kube-extender run`` replicas with leader election and the feature gates
  GenericWorkload and GangScheduling. Profile ``chaos-sa`` enables NodeNumber, so every pod
  waits 1-2 s at Permit (node names end in 1 or 2): binding cycles are always in flight when
  the leader is killed. Gangs (PodGroup + members) use profile ``chaos-sa-gang``, the same
  scheduler without NodeNumber: a pod group cycle needs one member's Permit to answer Success
  (upstream ``podGroupSchedulingDefaultAlgorithm``), and NodeNumber answers Wait on every sa
  node, so no gang would ever be scheduled there.
* ``ign`` / ``strict``: two real kube-schedulers calling one ``kube-extender serve`` with
  ``ignorable: true`` and ``false``.

Three threads: the churn (pods and nodes created, updated, deleted at a steady rate), the
observer (a consistent LIST of nodes and pods every ~1.5 s, checked by invariants.py), and the
main thread injecting faults in turn. Then everything is up again, the cluster settles and the
end-state invariants are checked.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import os
import random
import signal
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extender.controlplane import (
    WORKLOAD_FEATURE_GATES,
    WORKLOAD_RUNTIME_CONFIG,
    ControlPlane,
    apiserver_args,
    free_port,
    kube_extender,
    spawn,
    stop_pid,
)
from extender.kube import ApiError, api_client
from extender.scenario.kube import Kube
from tests.e2e.harness import Standalone, standalone_config

from . import workload
from .invariants import (
    FAILED_RE,
    GANG_FAILED_RE,
    PARTIAL_GRACE,
    Findings,
    Gang,
    Snapshot,
    check_bind,
    check_snapshot,
    fitting_node,
    gangs,
    group_of,
    labels,
    node_of,
    quorum_fits,
)

NAMESPACE = "chaos"
SA, IGN, STRICT = "chaos-sa", "chaos-ign", "chaos-strict"
SA_GANG = "chaos-sa-gang"  # the sa scheduler's profile for gangs (no NodeNumber)
GATES = {"GenericWorkload": True, "GangScheduling": True}  # the sa replicas' feature gates
GATE_PRIORITY = "chaos-gate-high"  # orders the failover gang's members in its cycle
POOLS = {"sa": SA, "ign": IGN, "strict": STRICT}
GATE = "chaos.io/gate"  # the taint and label of the nodes the deterministic faults use
LEASE = "kube-extender-chaos"

EXTENDER_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: {IGN}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: {IGN}
"""

FAILOVER_GANG = "kill -9 standalone leader while a gang waits at Permit"
FAULTS = [
    "kill -9 standalone leader",
    FAILOVER_GANG,
    "delete pod waiting at Permit",
    "kill -9 kube-apiserver",
    "delete node with an assumed pod",
    "kill -9 extender",
    "restart etcd",
    "watch expiry (compaction + apiserver restart)",
]


@dataclass
class Options:
    minutes: float = 1.0
    seed: int = 12
    ops_per_second: float = 3.0
    fault_every: float = 10.0
    settle: float = 60.0
    pods_per_pool: int = 30
    gangs: int = 3  # live gangs in the sa pool at most (0: none)


@dataclass
class Report:
    findings: Findings = field(default_factory=Findings)
    churn: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    fault_seconds: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def table(self) -> str:
        f = self.findings
        rows = ["", "== chaos soak summary =="]
        rows.append(f"{'churn':<48} {'count':>8}")
        for key, n in sorted(self.churn.items()):
            rows.append(f"  {key:<46} {n:>8}")
        rows.append(f"{'faults injected':<48} {'count':>8} {'max s':>7}")
        for key, n in sorted(self.faults.items()):
            rows.append(f"  {key:<46} {n:>8} {self.fault_seconds.get(key, 0):>7.1f}")
        rows.append(f"{'invariant':<48} {'passed':>8} {'failed':>7}")
        for key in sorted(set(f.checks) | set(f.violations)):
            rows.append(f"  {key:<46} {f.checks[key]:>8} {len(f.violations.get(key, [])):>7}")
        for key, n in sorted(f.notes.items()):
            rows.append(f"  note: {key:<40} {n:>8}")
        for key, details in sorted(f.violations.items()):
            for detail in details[:10]:
                rows.append(f"  VIOLATION {key}: {detail}")
        rows.append("timings: " + ", ".join(f"{k} {v:.0f}s" for k, v in self.seconds.items()))
        rows.append(f"RESULT: {'PASS' if not f.failed() else f'FAIL ({f.failed()} violations)'}")
        return "\n".join(rows)


class Extender:
    """``kube-extender serve`` on a fixed port, so it can be killed and restarted in place."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.port = free_port()
        self.config = cp.directory / "chaos-extender.yaml"
        self.config.write_text(EXTENDER_CONFIG)
        self.proc: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        args = ["serve", "--config", str(self.config), "--bind", f"127.0.0.1:{self.port}"]
        args += ["--health-bind", f"127.0.0.1:{free_port()}", "--kubeconfig"]
        args += [str(self.cp.kubeconfig), "--workers", "1"]
        self.proc = spawn(kube_extender(*args), self.cp.directory / "logs" / "extender.log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            if _get(f"{self.url}/readyz") is not None:
                return
            time.sleep(0.3)
        raise RuntimeError(f"extender not ready; see {self.cp.directory}/logs/extender.log")

    def kill(self) -> None:
        stop_pid(self.proc.pid, timeout=0)
        self.proc.wait(timeout=10)


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return r.read()
    except OSError:
        return None


def _kube_scheduler_config(name: str, extender: Extender, ignorable: bool) -> dict:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name}],
        "extenders": [
            {
                "urlPrefix": extender.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "nodeCacheCapable": True,
                "httpTimeout": "5s",
                "ignorable": ignorable,
            }
        ],
    }


class Soak:
    def __init__(
        self,
        directory: Path,
        options: Options,
        out: Callable = print,
        progress: Callable[[str, float, str], None] | None = None,
    ) -> None:
        self.dir = Path(directory)
        self.opt = options
        self.out = out
        # progress(phase, seconds of the plan done, counts), about every second (python -m
        # tests.chaos draws it on a terminal); the plan: minutes of churn, then the settle time.
        self.progress = progress
        # The phase: its name, when it began, the plan's seconds before it and its own.
        self.phase = ("starting", 0.0, 0.0, 0.0)
        self.finished = threading.Event()
        self.rng = random.Random(options.seed)
        self.report = Report()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.cp = ControlPlane(self.dir / "cp")
        self.replicas: list[Standalone] = []
        self.identities = itertools.count(1)
        self.names = itertools.count(1)
        self.pods: dict[str, list[str]] = {pool: [] for pool in POOLS}  # live churn pods
        self.nodes: dict[str, list[str]] = {pool: [] for pool in POOLS}  # churnable nodes
        self.expect_bound: list[str] = []  # pods a fault made that must end up bound
        self.history: collections.deque[tuple[float, Snapshot]] = collections.deque()
        self.bound_at: dict[str, str] = {}  # uid -> node, as first seen
        self.gangs: list[str] = []  # live churn gangs (PodGroup names)
        self.gang_members: dict[str, list[str]] = {}  # gang -> its member pods' names
        self.deleting: set[str] = set()  # gangs the churn began to delete
        self.expect_whole: list[str] = []  # gangs a fault made that must end up bound whole
        self.gang_first_bound: dict[str, float] = {}  # gang -> when a member was first seen bound
        self.gangs_at_quorum: set[str] = set()  # gangs seen with minCount members bound
        self.gangs_whole: set[str] = set()  # gangs seen with all their members bound
        self.partial_noted: set[str] = set()
        self.fault_spans: list[tuple[float, float]] = []  # (start, end) of each fault
        self.fault_active: float | None = None  # the start of the fault under way

    # -- set-up -------------------------------------------------------------------------

    def _client(self) -> Kube:
        return Kube(api_client(str(self.cp.kubeconfig)), namespace=NAMESPACE, out=lambda *a: None)

    def start(self) -> None:
        t0 = time.monotonic()
        # The workload API (PodGroups, the pods' schedulingGroup) for the sa pool's gangs.
        self.cp.up(apiserver_args(WORKLOAD_FEATURE_GATES, WORKLOAD_RUNTIME_CONFIG))
        self.kube = self._client()
        self.kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        self.kube.create_priority_class(GATE_PRIORITY, 1000)
        self.extender = Extender(self.cp)
        self.extender.start()
        for name, ignorable in ((IGN, True), (STRICT, False)):
            config = _kube_scheduler_config(name, self.extender, ignorable)
            self.cp.start_scheduler(config, name=f"kube-scheduler-{name}")
        for _ in range(2):
            self._start_replica()
        for pool in POOLS:
            for _ in range(4):
                self._add_node(self.kube, pool)
        self.report.seconds["start"] = time.monotonic() - t0

    def _standalone_config(self) -> dict:
        config = standalone_config(
            SA,
            plugins={"multiPoint": {"enabled": [{"name": "NodeNumber"}]}},
            plugin_config=[{"name": "NodeNumber", "args": {"permitTimeoutSeconds": 30}}],
            leader_elect=True,
            lease=LEASE,
        )
        config["profiles"].append({"schedulerName": SA_GANG})
        return config

    def _start_replica(self) -> Standalone:
        n = next(self.identities)
        proc = Standalone(
            self.cp,
            self._standalone_config(),
            name=f"sa-{n}",
            identity=f"sa-{n}",
            feature_gates=GATES,
        )
        proc.wait_ready(timeout=90)
        self.replicas.append(proc)
        return proc

    def _add_node(self, kube: Kube, pool: str) -> None:
        k = next(self.names)
        # sa nodes end in 1 or 2: NodeNumber holds their pods 1-2 s at Permit.
        name = f"{pool}-n{k}x{self.rng.choice([1, 2])}"
        node_labels, spec = workload.node_body(pool, name, self.rng)
        kube.create_node(
            name, cpu="4", memory="8Gi", pods="12", labels=node_labels, **_taints(spec)
        )
        self.nodes[pool].append(name)
        self.report.churn["node ops: add"] += 1

    # -- churn --------------------------------------------------------------------------

    def churn(self) -> None:
        kube = self._client()
        rng = random.Random(self.opt.seed + 1)
        period = 1.0 / self.opt.ops_per_second
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                self._churn_once(kube, rng)
            except (ApiError, OSError, Exception) as exc:  # the apiserver may be down
                self.report.churn[f"api errors ({type(exc).__name__})"] += 1
                self.stop.wait(0.5)
            self.stop.wait(max(0.0, period - (time.monotonic() - t)))

    def _churn_once(self, kube: Kube, rng: random.Random) -> None:
        pool = rng.choice(list(POOLS))
        roll = rng.random()
        live = self.pods[pool]
        if pool == "sa" and self.opt.gangs and roll > 0.8:
            self._gang_op(kube, rng)
        elif roll < 0.12:
            self._node_op(kube, pool, rng)
        elif roll < 0.35 or len(live) >= self.opt.pods_per_pool:
            if live:
                name = live.pop(rng.randrange(len(live)))
                kube.delete_pod(name)
                self.report.churn["pods deleted"] += 1
        else:
            kind = workload.pick_kind(rng)
            name = f"{pool}-{kind}-{next(self.names)}"
            pod_labels, requests, spec = workload.pod_spec(pool, kind, rng)
            body = workload.pod_object(name, NAMESPACE, POOLS[pool], pod_labels, requests, spec)
            live.append(name)
            kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
            self.report.churn["pods created"] += 1

    def _gang_op(self, kube: Kube, rng: random.Random) -> None:
        """Create a gang, or delete one (its pods with grace 0, then its PodGroup)."""
        if len(self.gangs) >= self.opt.gangs or (self.gangs and rng.random() < 0.35):
            name = self.gangs.pop(rng.randrange(len(self.gangs)))
            self.deleting.add(name)
            for pod in self.gang_members[name]:
                kube.delete_pod(pod)
            kube.delete(f"{workload.PODGROUP_API}/namespaces/{NAMESPACE}/podgroups/{name}")
            self.report.churn["gangs deleted"] += 1
            return
        name = f"gang-{next(self.names)}"
        size, min_count, pod_labels, requests, spec = workload.gang_shape("sa", rng)
        group = workload.pod_group_object(name, NAMESPACE, min_count, size)
        kube.request("POST", f"{workload.PODGROUP_API}/namespaces/{NAMESPACE}/podgroups", group)
        self.gang_members[name] = []
        self.gangs.append(name)
        self.report.churn["gangs created"] += 1
        for i in range(size):
            pod = f"{name}-m{i}"
            self.gang_members[name].append(pod)
            body = workload.gang_member(pod, NAMESPACE, SA_GANG, name, pod_labels, requests, spec)
            kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
            self.report.churn["gang pods created"] += 1

    def _node_op(self, kube: Kube, pool: str, rng: random.Random) -> None:
        nodes = self.nodes[pool]
        op = rng.choice(["taint", "untaint", "cordon", "uncordon", "relabel", "delete", "add"])
        if op == "add" or not nodes or (op == "delete" and len(nodes) <= 3):
            if len(nodes) < 7:
                self._add_node(kube, pool)
            return
        if op == "delete" and len(nodes) > 3:
            name = nodes.pop(rng.randrange(len(nodes)))
            kube.delete_node(name)
            self.report.churn["node ops: delete"] += 1
            return
        name = rng.choice(nodes)
        if op == "taint":
            taint = {"key": workload.TAINT, "value": pool, "effect": "NoSchedule"}
            patch: dict = {"spec": {"taints": [taint]}}
        elif op == "untaint":
            patch = {"spec": {"taints": None}}
        elif op in ("cordon", "uncordon"):
            patch = {"spec": {"unschedulable": op == "cordon"}}
        else:
            patch = {
                "metadata": {
                    "labels": {
                        workload.DISK: rng.choice(["ssd", "hdd"]),
                        workload.ZONE: f"{pool}-z{rng.randrange(workload.ZONES)}",
                    }
                }
            }
        kube.update_node(name, patch)
        self.report.churn[f"node ops: {op}"] += 1

    # -- observer -----------------------------------------------------------------------

    def snapshot(self, kube: Kube) -> Snapshot:
        # PodGroups first: a group is made before its pods and deleted after them.
        groups, _ = kube.client.list(f"{workload.PODGROUP_API}/namespaces/{NAMESPACE}/podgroups")
        nodes, _ = kube.client.list("/api/v1/nodes")
        pods, _ = kube.client.list(f"/api/v1/namespaces/{NAMESPACE}/pods")
        return Snapshot(
            {n["metadata"]["name"]: n for n in nodes},
            {p["metadata"]["uid"]: p for p in pods},
            {g["metadata"]["name"]: g for g in groups},
        )

    def observe(self) -> None:
        kube = self._client()
        while not self.stop.wait(1.5):
            try:
                snap = self.snapshot(kube)
            except Exception:  # the apiserver may be down: next time
                continue
            self.examine(snap)

    def examine(self, snap: Snapshot) -> None:
        f = self.report.findings
        with self.lock:
            check_snapshot(snap, f)
            new = [p for uid, p in snap.pods.items() if node_of(p) and uid not in self.bound_at]
            for uid, p in snap.pods.items():
                if uid in self.bound_at and node_of(p):
                    f.check(
                        "bound exactly once (nodeName stable)",
                        node_of(p) == self.bound_at[uid],
                        f"{p['metadata']['name']}: {self.bound_at[uid]} then {node_of(p)}",
                    )
            now = time.monotonic()
            # The decision preceded the bind by a Permit wait (<= 2 s) and the binding call;
            # keep the snapshots of the last 6 s, and the one just before them.
            while len(self.history) > 1 and self.history[1][0] < now - 6:
                self.history.popleft()
            snaps = [s for _, s in self.history] + [snap]
            for pod in new:
                self.bound_at[pod["metadata"]["uid"]] = node_of(pod)
                window = [p for p in new if p is not pod]
                check_bind(pod, snaps, window, f)
            self.history.append((now, snap))
            self._examine_gangs(snap, now)

    def _examine_gangs(self, snap: Snapshot, now: float) -> None:
        """No gang partly bound for longer than PARTIAL_GRACE, unless a fault struck while it
        was binding (a failed bind or a dead leader leaves the rest to a retry, which needs
        room; upstream never unbinds): then the end checks judge it."""
        f = self.report.findings
        deleting = set(self.deleting)
        for gang in gangs(snap).values():
            if gang.name in deleting or len(gang.members) < gang.size:
                continue  # being made or deleted
            bound = len(gang.bound)
            if bound:
                self.gang_first_bound.setdefault(gang.name, now)
            if bound >= gang.min_count:
                self.gangs_at_quorum.add(gang.name)
            if bound == len(gang.members):
                self.gangs_whole.add(gang.name)
            first = self.gang_first_bound.get(gang.name, now)
            late = gang.partly_bound() and now - first > PARTIAL_GRACE
            if late and self._fault_near(first):
                if gang.name not in self.partial_noted:
                    self.partial_noted.add(gang.name)
                    f.notes["gang partly bound past the grace after a fault (end checks)"] += 1
                continue
            f.check(
                "no gang partly bound past its grace",
                not late,
                f"{gang.name}: {bound}/{gang.min_count} bound for {now - first:.0f}s: "
                + _members(gang),
            )

    def _fault_near(self, t: float | None) -> bool:
        """A fault was under way around ``t`` (from 10 s before it to 30 s after its end)."""
        if t is None:
            return False
        if self.fault_active is not None and t >= self.fault_active - 10:
            return True
        return any(start - 10 <= t <= end + 30 for start, end in self.fault_spans)

    # -- faults -------------------------------------------------------------------------

    def leader(self) -> Standalone | None:
        lease = self.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{LEASE}")
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
        return next((r for r in self.replicas if r.name == holder and r.alive()), None)

    def _kill_apiserver(self) -> None:
        os.killpg(self.cp.state.pids["kube-apiserver"], signal.SIGKILL)
        self.cp.stop_component("kube-apiserver")
        time.sleep(1)
        self.cp.start_apiserver(self.cp.apiserver_extra_args)

    def _compact(self) -> int:
        url = f"http://127.0.0.1:{self.cp.state.etcd_port}/v3/kv/range"
        body = json.dumps({"key": base64.b64encode(b"/").decode()}).encode()
        with urllib.request.urlopen(urllib.request.Request(url, body), timeout=10) as r:
            revision = int(json.loads(r.read())["header"]["revision"])
        url = f"http://127.0.0.1:{self.cp.state.etcd_port}/v3/kv/compaction"
        body = json.dumps({"revision": revision, "physical": True}).encode()
        with urllib.request.urlopen(urllib.request.Request(url, body), timeout=30) as r:
            r.read()
        return revision

    def _gate_node(self, tag: str, digit: int = 9) -> str:
        """A node of the sa pool only the fault's pods tolerate; Permit (NodeNumber) holds
        them ``digit`` seconds."""
        name = f"sa-{tag}x{digit}"
        node_labels = {workload.POOL: "sa", workload.ZONE: "sa-gate", GATE: tag}
        taints = [{"key": GATE, "value": tag, "effect": "NoSchedule"}]
        self.kube.create_node(
            name, cpu="4", memory="8Gi", pods="12", labels=node_labels, taints=taints
        )
        return name

    def _gate_pod(self, name: str, tag: str) -> str:
        spec = {
            "nodeSelector": {workload.POOL: "sa", GATE: tag},
            "tolerations": [{"key": GATE, "operator": "Exists", "effect": "NoSchedule"}],
        }
        pod_labels = {workload.POOL: "sa", "chaos.io/kind": "gate"}
        body = workload.pod_object(name, NAMESPACE, SA, pod_labels, {"cpu": "3"}, spec)
        created = self.kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        self.report.churn["pods created (faults)"] += 1
        return created["metadata"]["uid"]

    def _assumed(self, uid: str) -> bool:
        """The leader's cache holds the pod as assumed (waiting at Permit)."""
        leader = self.leader()
        dump = _get(f"{leader.url}/debug/cache") if leader else None
        return bool(dump) and uid in json.loads(dump or b"{}").get("assumed", {})

    def _wait_assumed(self, uid: str, timeout: float = 20) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._assumed(uid):
                return True
            time.sleep(0.2)
        return False

    def _live_leader(self) -> Standalone:
        deadline = time.monotonic() + 30
        while (leader := self.leader()) is None and time.monotonic() < deadline:
            self._supervise()
            time.sleep(0.5)
        if leader is None:
            raise RuntimeError("no live leader to kill within 30 s")
        return leader

    def _gate_member(self, group: str, name: str, tag: str, priority: bool = False) -> None:
        """A member of the failover gang ``group`` (profile chaos-sa: NodeNumber holds it at
        Permit) for the gate node ``tag``."""
        spec: dict[str, Any] = {
            "nodeSelector": {workload.POOL: "sa", GATE: tag},
            "tolerations": [{"key": GATE, "operator": "Exists", "effect": "NoSchedule"}],
        }
        if priority:
            spec["priorityClassName"] = GATE_PRIORITY
        pod_labels = {workload.POOL: "sa", "chaos.io/kind": "gate-gang"}
        body = workload.gang_member(name, NAMESPACE, SA, group, pod_labels, {"cpu": "1"}, spec)
        self.kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        self.report.churn["pods created (faults)"] += 1

    def _failover_gang(self, k: int) -> None:
        """Kill the leader while a gang is partly bound and its last member waits at Permit.

        Gang ``gate-gangK``, minCount 3 of 4, on two gate nodes: ``a`` (higher priority, so
        first in its pod group cycle) on a node where NodeNumber holds it 6 s, ``b`` and ``c``
        on one where it holds nothing. The cycle ends on ``c``, whose Permit succeeds, so the
        group is schedulable; ``b`` and ``c`` bind at once, ``a`` waits 6 s. The leader dies
        then. The new leader must bind ``a``; but a cycle of ``a`` alone never succeeds (its
        Permit waits for NodeNumber on its only node: upstream needs one Success), so ``d``
        (fast node) is created after the kill: the cycle of ``a`` and ``d`` ends on ``d``.
        The gang must end bound whole."""
        tag = f"gang{k}"
        slow, fast = f"{tag}s", f"{tag}f"
        self._gate_node(slow, digit=6)
        self._gate_node(fast, digit=0)
        group = f"gate-{tag}"
        body = workload.pod_group_object(group, NAMESPACE, 3, 4)
        self.kube.request("POST", f"{workload.PODGROUP_API}/namespaces/{NAMESPACE}/podgroups", body)
        self.expect_whole.append(group)
        leader = self._live_leader()
        self._gate_member(group, f"{group}-a", slow, priority=True)
        self._gate_member(group, f"{group}-b", fast)
        self._gate_member(group, f"{group}-c", fast)
        deadline = time.monotonic() + 20
        caught = False
        while time.monotonic() < deadline and not caught:
            pods, _ = self.kube.client.list(
                f"/api/v1/namespaces/{NAMESPACE}/pods",
                {"labelSelector": f"{workload.GANG}={group}"},
            )
            bound = {p["metadata"]["name"][-1] for p in pods if node_of(p)}
            caught = bound == {"b", "c"}
            if bound - {"b", "c"}:
                break
            time.sleep(0.1)
        if not caught:
            self.report.findings.notes["failover gang not caught partly bound"] += 1
        leader = self.leader() or leader
        leader.kill()
        self.replicas.remove(leader)
        self._gate_member(group, f"{group}-d", fast)
        self._start_replica()
        # The next fault waits for the gang's last bind: a fault that broke it (an apiserver
        # kill during ``a``'s bind) would leave ``a`` alone, whose Permit never succeeds
        # (upstream's rule), and test that, not the failover.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pods, _ = self.kube.client.list(
                f"/api/v1/namespaces/{NAMESPACE}/pods",
                {"labelSelector": f"{workload.GANG}={group}"},
            )
            if len(pods) == 4 and all(node_of(p) for p in pods):
                return
            time.sleep(0.2)
        self.report.findings.notes["failover gang not whole before the next fault"] += 1

    def inject(self, kind: str, k: int) -> None:
        if kind == "kill -9 standalone leader":
            leader = self._live_leader()
            leader.kill()
            self.replicas.remove(leader)
            self._start_replica()
        elif kind == FAILOVER_GANG:
            self._failover_gang(k)
        elif kind == "kill -9 kube-apiserver":
            self._kill_apiserver()
        elif kind == "restart etcd":
            self.cp.stop_component("etcd")
            self.cp.start_etcd()
        elif kind == "watch expiry (compaction + apiserver restart)":
            self._compact()
            self._kill_apiserver()
        elif kind == "kill -9 extender":
            self.extender.kill()
            time.sleep(6)  # kube-scheduler meets a dead extender: ignored, or an error
            self.extender.start()
        elif kind == "delete node with an assumed pod":
            tag = f"hold{k}"
            node = self._gate_node(tag)
            uid = self._gate_pod(f"gate-{tag}", tag)
            if not self._wait_assumed(uid):
                self.report.findings.notes["gate pod never seen assumed"] += 1
            self.kube.delete_node(node)
        elif kind == "delete pod waiting at Permit":
            tag = f"perm{k}"
            self._gate_node(tag)
            uid = self._gate_pod(f"gate-{tag}-a", tag)
            if not self._wait_assumed(uid):
                self.report.findings.notes["gate pod never seen assumed"] += 1
            self.kube.delete_pod(f"gate-{tag}-a")
            # Fits only if the deleted pod's assumed 3 CPUs were given back.
            self._gate_pod(f"gate-{tag}-b", tag)
            self.expect_bound.append(f"gate-{tag}-b")

    def faults(self, until: float) -> None:
        """One fault every ``fault_every`` seconds until ``until``, and each kind at least once."""
        for k in itertools.count(1):
            wait_until = time.monotonic() + self.opt.fault_every
            while time.monotonic() < wait_until:
                if self.stop.wait(1.0):
                    return
                self._supervise()
            if time.monotonic() > until and k > len(FAULTS):
                return
            kind = FAULTS[(k - 1) % len(FAULTS)]
            t = time.monotonic()
            self.out(f"[chaos] {time.strftime('%H:%M:%S')} fault {k}: {kind}")
            self.fault_active = t
            try:
                self.inject(kind, k)
            except Exception as exc:
                self.report.findings.check("fault injected and recovered", False, f"{kind}: {exc}")
                self._heal()
                continue
            finally:
                self.fault_spans.append((t, time.monotonic()))
                self.fault_active = None
            self.report.faults[kind] += 1
            took = time.monotonic() - t
            self.report.fault_seconds[kind] = max(took, self.report.fault_seconds.get(kind, 0))

    def _supervise(self) -> None:
        """Restart the replicas that exited, as the kubelet would: a leader whose renewals
        fail for renewDeadline (apiserver or etcd down) exits, as upstream's does."""
        for replica in [r for r in self.replicas if not r.alive()]:
            self.replicas.remove(replica)
            self.report.churn["standalone replicas exited (lease lost), restarted"] += 1
            self._start_replica()

    def _heal(self) -> None:
        """Everything up again, whatever a fault left down."""
        running = self.cp.running()
        if not running.get("etcd"):
            self.cp.stop_component("etcd")
            self.cp.start_etcd()
        if not running.get("kube-apiserver"):
            self.cp.stop_component("kube-apiserver")
            self.cp.start_apiserver(self.cp.apiserver_extra_args)
        if self.extender.proc.poll() is not None:
            self.extender.start()
        self.replicas = [r for r in self.replicas if r.alive()]
        while len(self.replicas) < 2:
            self._start_replica()

    # -- the end ------------------------------------------------------------------------

    def settle(self) -> Snapshot:
        """Wait until no pending pod fits a node and every pending pod has its scheduler's
        verdict in its PodScheduled condition (or the settle time is over): a pod tried just
        as the last fault took the apiserver away gets it on a retry, after its backoff."""
        deadline = time.monotonic() + self.opt.settle
        while True:
            snap = self.snapshot(self.kube)
            self.examine(snap)
            groups = gangs(snap)
            pending = [p for p in snap.pods.values() if not node_of(p)]
            singles = [p for p in pending if self._judged_alone(p, groups)]
            fitting = [p for p in singles if fitting_node(p, snap)]
            fitting += [
                p
                for gang in groups.values()
                if self._gang_judged(gang) and quorum_fits(gang, snap)
                for p in gang.pending
            ]
            unexplained = [
                p
                for p in pending
                if not (GANG_FAILED_RE if group_of(p) else FAILED_RE).match(_condition(p))
                and self._needs_verdict(p, groups)
            ]
            if (not fitting and not unexplained) or time.monotonic() > deadline:
                return snap
            time.sleep(3)

    def _gang_judged(self, gang: Gang) -> bool:
        """A gang the end checks judge: not being deleted, and with its quorum of members
        (else GangScheduling's PreEnqueue holds them, without a verdict)."""
        return gang.name not in self.deleting and len(gang.members) >= gang.min_count

    def _needs_verdict(self, pod: dict, groups: dict[str, Gang]) -> bool:
        gang = groups.get(group_of(pod))
        return self._judged_alone(pod, groups) or (gang is not None and self._gang_judged(gang))

    def _judged_alone(self, pod: dict, groups: dict[str, Gang]) -> bool:
        """A pod the per-pod end checks judge: not a gang member, or an extra member of a gang
        whose quorum is bound (scheduled alone: its Permit succeeds at once)."""
        name = group_of(pod)
        if not name:
            return True
        gang = groups.get(name)
        return gang is not None and self._gang_judged(gang) and not gang.missing()

    def final_checks(self, snap: Snapshot) -> None:
        f = self.report.findings
        events = self.kube.get(f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events") or {}
        by_uid: dict[str, list[dict]] = {}
        for event in events.get("items", []):
            uid = (event.get("regarding") or {}).get("uid", "")
            by_uid.setdefault(uid, []).append(event)
        scheduled = Counter()
        for uid, evs in by_uid.items():
            # An isomorphic repeat folds into the first event's series (client-go's recorder).
            scheduled[uid] = sum(
                (e.get("series") or {}).get("count", 1)
                for e in evs
                if e.get("reason") == "Scheduled"
            )
            for e in evs:
                note = e.get("note") or ""
                if e.get("reason") == "FailedScheduling" and "already" in note:
                    f.check("bound exactly once (no second bind)", False, f"{uid}: {note}")
        for uid, n in scheduled.items():
            name = (by_uid[uid][0].get("regarding") or {}).get("name")
            f.check("bound exactly once (Scheduled events)", n <= 1, f"{name}: {n} Scheduled")
        groups = gangs(snap)
        for pod in snap.pods.values():
            name = pod["metadata"]["name"]
            if not node_of(pod) and not self._judged_alone(pod, groups):
                gang = groups.get(group_of(pod))
                if gang is None or not self._gang_judged(gang):
                    f.notes["gang members of a gang deleted or never made whole"] += 1
                else:
                    f.check(
                        "pending gang member has its verdict",
                        bool(GANG_FAILED_RE.match(_condition(pod))),
                        f"{name}: condition {_condition(pod)!r}",
                    )
                continue
            if node_of(pod):
                if node_of(pod) not in snap.nodes:
                    gate = labels(pod).get("chaos.io/kind") == "gate"
                    f.notes[
                        "gate pod bound to the node deleted while it waited at Permit"
                        if gate
                        else "pods left on deleted nodes (no pod GC without controller-manager)"
                    ] += 1
                continue
            fit = fitting_node(pod, snap)
            f.check(
                "every fitting pod bound",
                fit is None,
                f"{name} pending but fits {fit}: {_condition(pod)}",
            )
            if fit is None:
                notes = [
                    e.get("note") or ""
                    for e in by_uid.get(pod["metadata"]["uid"], [])
                    if e.get("reason") == "FailedScheduling"
                ]
                last = _condition(pod)
                verdict = GANG_FAILED_RE if group_of(pod) else FAILED_RE
                f.check(
                    "unschedulable pod has FailedScheduling 0/N nodes",
                    any(verdict.match(n) for n in notes) and bool(verdict.match(last)),
                    f"{name}: events {notes[-2:]}, condition {last!r}",
                )
        for name in self.expect_bound:
            pod = next((p for p in snap.pods.values() if p["metadata"]["name"] == name), None)
            f.check(
                "pod after a deleted waiting pod bound (assumed resources freed)",
                pod is not None and bool(node_of(pod)),
                f"{name}: {_condition(pod or {})}",
            )
        self._final_gang_checks(snap, groups)
        for replica in self.replicas:
            dump = _get(f"{replica.url}/debug/cache")
            if dump is None:
                f.notes[f"{replica.name}: no /debug/cache"] += 1
                continue
            assumed = json.loads(dump).get("assumed", {})
            f.check("nothing left assumed", not assumed, f"{replica.name}: {assumed}")
        counts = Counter(labels(p).get("chaos.io/kind") for p in snap.pods.values() if node_of(p))
        self.report.churn["pods bound (ever seen)"] = len(self.bound_at)
        self.report.churn["pods pending at the end"] = sum(
            1 for p in snap.pods.values() if not node_of(p)
        )
        self.report.churn["pods bound at the end"] = sum(counts.values())

    def _final_gang_checks(self, snap: Snapshot, groups: dict[str, Gang]) -> None:
        """Settled: no gang holds nodes without its quorum, no gang below its quorum could
        have it in the free room (a deadlock, or room held for a gang that gave up)."""
        f = self.report.findings
        churn = self.report.churn
        for gang in groups.values():
            if not self._gang_judged(gang):
                continue
            placement = quorum_fits(gang, snap) if gang.missing() else []
            where = ", ".join(f"{pod}->{node}" for pod, node in placement)
            f.check(
                "no gang below its quorum that fits the free room (no deadlock)",
                not placement,
                f"{gang.name}: {len(gang.bound)}/{gang.min_count} bound, fits: {where}; "
                + _members(gang),
            )
            if gang.partly_bound() and not placement:
                first = self.gang_first_bound.get(gang.name)
                if self._fault_near(first):
                    # A bind failed or the leader died mid-binding, and the rest no longer
                    # fits: upstream never unbinds the bound members.
                    f.notes[f"gang left partly bound by a fault: {gang.name}"] += 1
                    continue
            f.check(
                "no gang partly bound at the end (quorum met or nothing bound)",
                not gang.partly_bound(),
                f"{gang.name}: {len(gang.bound)}/{gang.min_count}: " + _members(gang),
            )
            bound = len(gang.bound)
            if bound >= gang.min_count:
                churn["gangs at quorum at the end"] += 1
            if bound == 0:
                churn["gangs pending at the end"] += 1
        for name in self.expect_whole:
            gang = groups.get(name)
            f.check(
                "gang across a leader failover bound whole",
                gang is not None and len(gang.bound) == gang.size,
                f"{name}: " + (_members(gang) if gang else "PodGroup gone"),
            )
        churn["gangs at quorum (ever seen)"] = len(self.gangs_at_quorum)
        churn["gangs bound whole (ever seen)"] = len(self.gangs_whole)

    def watch_expiries(self) -> None:
        """How many times the components saw a watch expire (410 Gone) and relisted."""
        for log in sorted(self.cp.logs.glob("*.log")):
            text = log.read_text(errors="replace")
            n = text.count("too old resource version") + text.count("410")
            if n and log.stem not in ("etcd", "kube-apiserver"):
                self.report.findings.notes[f"watch expiry (410) lines in {log.stem}.log"] = n

    def _show_progress(self) -> None:
        while not self.finished.wait(1.0) and self.progress is not None:
            name, began, before, length = self.phase
            done = before + min(time.monotonic() - began, length)
            counts = (
                f"faults {sum(self.report.faults.values())}, "
                f"pods created {self.report.churn['pods created']}, bound {len(self.bound_at)}"
            )
            self.progress(name, done, counts)

    def run(self) -> Report:
        t0 = time.monotonic()
        if self.progress is not None:
            threading.Thread(target=self._show_progress, daemon=True, name="progress").start()
        try:
            self.start()
            threads = [
                threading.Thread(target=self.churn, daemon=True, name="churn"),
                threading.Thread(target=self.observe, daemon=True, name="observe"),
            ]
            for thread in threads:
                thread.start()
            t1 = time.monotonic()
            self.phase = ("churn and faults", t1, 0.0, self.opt.minutes * 60)
            self.faults(until=t1 + self.opt.minutes * 60)
            remaining = t1 + self.opt.minutes * 60 - time.monotonic()
            if remaining > 0:
                self.stop.wait(remaining)
            self.stop.set()
            for thread in threads:
                thread.join(timeout=30)
            self.report.seconds["churn"] = time.monotonic() - t1
            self.phase = ("settling", time.monotonic(), self.opt.minutes * 60, self.opt.settle)
            self._heal()
            t2 = time.monotonic()
            snap = self.settle()
            self.report.seconds["settle"] = time.monotonic() - t2
            self.final_checks(snap)
            self.watch_expiries()
        finally:
            self.stop.set()
            self.finished.set()
            for replica in self.replicas:
                replica.stop()
            if getattr(self, "extender", None) and self.extender.proc is not None:
                stop_pid(self.extender.proc.pid, timeout=5)
            self.cp.down()
            self.report.seconds["total"] = time.monotonic() - t0
        return self.report


def _taints(spec: dict) -> dict:
    return {"taints": spec["taints"]} if spec.get("taints") else {}


def _members(gang: Gang) -> str:
    return ", ".join(
        f"{p['metadata']['name']}@{node_of(p) or '-'}"
        for p in sorted(gang.members, key=lambda p: p["metadata"]["name"])
    )


def _condition(pod: dict) -> str:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("message") or c.get("reason") or ""
    return ""


def run(
    directory: Path,
    options: Options,
    out: Callable = print,
    progress: Callable[[str, float, str], None] | None = None,
) -> Report:
    soak = Soak(directory, options, out, progress)
    report = soak.run()
    out(report.table())
    out(f"logs: {soak.cp.logs}")
    return report
