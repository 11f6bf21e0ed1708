"""Path-differential conformance: one core, one answer, on every path.

The conformance harness (:mod:`tests.conformance.harness`) proves the core against the real
kube-scheduler. This module proves that every *path* to the core answers what the core
answers: for each pending pod of a generated case, the standalone algorithm in process (the
code ``kube-extender run`` schedules with) against

* the **served extender** (``kube-extender serve`` under gunicorn, watch-fed cache, default
  profile) over HTTP, in both node modes (``NodeNames`` with its cache, full ``Nodes``):
  ``filter`` (feasible set and every rejected node's reason, resolvable or not), ``prioritize``
  (every feasible node's score: the standalone weighted total mapped to 0..10), ``preempt``
  (the candidates of the standalone preemption dry run, with their victims, all kept),
  ``/explain`` (the node or tied nodes it would choose) and ``bind`` (refused onto a node the
  standalone path rejects, the Binding written onto its pick; served with mTLS and an
  allow-list, as bind must be);
* **explain** and **simulate** on the cluster as ``kube-extender explain`` reads it (one
  read-only LIST per kind): the node explain would choose, simulate's placement;
* a **real kube-scheduler with the served extender registered for prioritize and bind**
  (weight as in ``scheduler-config/extender-node-cache.yaml``): per case, up to ``binds`` pods
  bound by it must land on a node our standalone path picks (ties compared as sets), through
  our prioritize and our bind; for pods with ResourceClaims, the devices its DynamicResources
  PreBind allocated (kube-scheduler runs PreBind before an extender's bind) must be the ones
  our allocator picks on that node. Our answer is a non-decreasing function of the standalone
  totals, so when kube-scheduler's in-tree totals are ours the sum has our best nodes: a miss
  is either a path or a core score that differs from kube-scheduler's (one such,
  NodeResourcesFit reading pod-level requests, was found this way).

Pending pods are created for a scheduler name no scheduler serves, so nothing binds them while
they are compared. The served extender's cache is a watch behind the apiserver: an HTTP answer
that differs is asked again until it agrees or :data:`SETTLE_SECONDS` pass (a lagging cache
converges; a wrong plugin does not). Every disagreement is printed with the case, pod, node,
both answers and the plugin that decided ours.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extender.config import default_profile
from extender.config.loader import default_config
from extender.explain.cluster import dry_run_framework, kinds_read, list_cluster
from extender.explain.engine import Explainer
from extender.explain.simulate import Simulation
from extender.framework.cycle_state import CycleState
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.preemption import nominated_node_name
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm, SchedulingError
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.webhook.service import extender_score
from tests.e2e.harness import Extender

from . import generator as gen
from .dra import may_wait_for_binding
from .generator import Case
from .harness import (
    EXTENDED_CLAIM,
    RESOURCE_CLAIMS,
    Conformance,
    _asks_extended,
    allocation_summary,
    namespaced_path,
    our_allocations,
    pod_claim_names,
    registry,
)

SERVED_PROFILE = "path-differential"  # pods of this scheduler name are never bound
PRIORITIZE_SCHEDULER = "kube-scheduler-paths"
PRIORITIZE_PROFILE = "path-prioritize"
KUBE_SCHEDULER_PATH = "kube-scheduler+prioritize+bind"
EXTENDER_WEIGHT = 5  # scheduler-config/extender-node-cache.yaml
SETTLE_SECONDS = 10.0
MODES = ("NodeNames", "Nodes")

CLIENT_NAME = "kube-scheduler-paths"  # the client certificate allowed to call every verb
SERVE_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: {SERVED_PROFILE}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: {SERVED_PROFILE}
allowedClients: [{CLIENT_NAME}]
bind: {{enabled: true}}
"""


def prioritize_scheduler_config(extender_url: str, tls: dict) -> dict:
    """kube-scheduler with the default profile and our served extender as a prioritizer."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": 1000, "burst": 2000},
        "percentageOfNodesToScore": 100,
        # No preemption: it would evict the case's pods.
        "profiles": [
            {
                "schedulerName": PRIORITIZE_PROFILE,
                "plugins": {"postFilter": {"disabled": [{"name": "*"}]}},
            }
        ],
        "extenders": [
            {
                "urlPrefix": extender_url,
                "prioritizeVerb": "prioritize",
                "bindVerb": "bind",
                "weight": EXTENDER_WEIGHT,
                "nodeCacheCapable": True,
                "httpTimeout": "10s",
                "enableHTTPS": True,
                "tlsConfig": tls,
            }
        ],
    }


# -- the standalone answer -------------------------------------------------------------------


@dataclass
class Standalone:
    """The standalone algorithm's answers for one pod: what each verb must answer."""

    error: str = ""
    errors: frozenset[str] = frozenset()  # with ``error``: every node's Error filtered alone
    feasible: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)
    deciders: dict[str, str] = field(default_factory=dict)  # node -> our rejecting plugin
    scores: dict[str, int] = field(default_factory=dict)  # node -> 0..10
    totals: dict[str, int] = field(default_factory=dict)  # node -> weighted total
    best: frozenset[str] = frozenset()
    # node -> plugin -> weighted score
    per_plugin: dict[str, dict[str, int]] = field(default_factory=dict)
    # the cycle's state (DynamicResources: the allocations its Filter made on each node)
    state: CycleState | None = field(default=None, repr=False)
    # node -> ([victim UIDs], PDB violations, [victim pod dicts]); None: no preempt call
    candidates: dict[str, tuple[list[str], int, list[dict]]] | None = None


def _node_errors(fwk: Framework, snapshot: Snapshot, pod: dict) -> frozenset[str]:
    """The Error each node gives filtered alone: a path that filters the nodes in another
    order (the extender: the order sent) reports the first it meets, as kube-scheduler's
    parallel filter reports whichever comes first."""
    errors = set()
    for info in snapshot.node_info_list:
        try:
            SchedulingAlgorithm().find_nodes_that_fit(
                fwk, CycleState(), pod, snapshot, [info], evaluate_all=True
            )
        except SchedulingError as exc:
            errors.add(exc.status.message)
    return frozenset(errors)


def standalone(fwk: Framework, nodes: list[dict], bound: list[dict], pod: dict) -> Standalone:
    """Filter every node, score the feasible ones, and when none is feasible the preemption dry
    run's candidates (kube-scheduler's preempt request), as the standalone scheduler would."""
    snapshot = Snapshot.from_objects(copy.deepcopy(nodes), copy.deepcopy(bound))
    pod = copy.deepcopy(pod)
    algorithm = SchedulingAlgorithm()
    state = CycleState()
    try:
        feasible, diagnosis = algorithm.find_nodes_that_fit(
            fwk, state, pod, snapshot, evaluate_all=True
        )
    except SchedulingError as exc:
        return Standalone(error=exc.status.message, errors=_node_errors(fwk, snapshot, pod))
    out = Standalone(feasible=[info.name for info in feasible], state=state)
    for info in snapshot.node_info_list:
        if info.name in out.feasible:
            continue
        status = diagnosis.status_of(info.name) or Status(Code.UNSCHEDULABLE)
        message = status.message or "node(s) were rejected"
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            out.unresolvable[info.name] = message
        else:
            out.failed[info.name] = message
        out.deciders[info.name] = status.plugin or "?"
    if feasible:
        scores = algorithm.prioritize_nodes(fwk, state, pod, feasible)
        out.totals = {entry.name: entry.total_score for entry in scores}
        out.per_plugin = {entry.name: dict(entry.scores) for entry in scores}
        scale = MAX_NODE_SCORE * (sum(fwk.score_weights.values()) or 1)
        out.scores = {name: extender_score(total, scale) for name, total in out.totals.items()}
        top = max(out.totals.values())
        out.best = frozenset(n for n, t in out.totals.items() if t == top)
        return out
    preemption = fwk.plugin("DefaultPreemption")
    if preemption is None:
        return out
    nominated = diagnosis.status_of(nominated_node_name(pod)) or Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
    eligible, _ = preemption.pod_eligible_to_preempt_others(state, pod, nominated)
    if not eligible:
        return out
    candidates, _, _ = preemption.evaluator.find_candidates(state, pod, snapshot, diagnosis)
    out.candidates = {
        c.name: ([v.uid for v in c.victims], c.num_pdb_violations, [v.pod for v in c.victims])
        for c in candidates
    }
    return out


# -- results ---------------------------------------------------------------------------------


@dataclass
class Mismatch:
    """One disagreement: which path, verb and mode, the pod, the node (if one), both answers
    and the plugin that decided ours."""

    case_id: str
    pod: str
    path: str  # "extender/filter/NodeNames", "explain", KUBE_SCHEDULER_PATH...
    node: str
    ours: Any
    theirs: Any
    plugin: str = ""

    def describe(self) -> str:
        where = f" node {self.node}" if self.node else ""
        by = f" (ours decided by {self.plugin})" if self.plugin else ""
        return (
            f"  DISAGREE {self.path} {self.case_id}/{self.pod}{where}{by}\n"
            f"    standalone: {self.ours}\n"
            f"    {self.path.split('/')[0]}: {self.theirs}"
        )


@dataclass
class PathTally:
    """Per path (verb and node mode, explain, simulate, kube-scheduler binds): pods compared and
    pods agreed; node-level answers compared; every disagreement."""

    pods: int = 0
    cases: int = 0
    compared: Counter = field(default_factory=Counter)
    agreed: Counter = field(default_factory=Counter)
    node_answers: Counter = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0

    def check(self, path: str, mismatches: list[Mismatch], nodes: int = 0) -> None:
        self.compared[path] += 1
        self.node_answers[path] += nodes
        if mismatches:
            self.mismatches.extend(mismatches)
        else:
            self.agreed[path] += 1

    def merge(self, other: PathTally) -> None:
        self.pods += other.pods
        self.cases += other.cases
        self.compared.update(other.compared)
        self.agreed.update(other.agreed)
        self.node_answers.update(other.node_answers)
        self.mismatches.extend(other.mismatches)
        self.seconds += other.seconds

    def report(self) -> str:
        lines = [
            f"path differential: {self.cases} cases, {self.pods} pods, {self.seconds:.1f}s",
            "  per path, pods agreed/compared (node answers compared):",
        ]
        for path in sorted(self.compared):
            lines.append(
                f"    {path:<34} {self.agreed[path]}/{self.compared[path]}"
                + (f" ({self.node_answers[path]})" if self.node_answers[path] else "")
            )
        lines += [m.describe() for m in self.mismatches]
        return "\n".join(lines)


# -- comparisons -----------------------------------------------------------------------------


def compare_filter(
    case_id: str, pod: str, mode: str, ours: Standalone, reply: Any
) -> list[Mismatch]:
    path = f"extender/filter/{mode}"
    if not isinstance(reply, dict):
        return [Mismatch(case_id, pod, path, "", "a FilterResult", reply)]
    if ours.error:
        if reply.get("Error") != ours.error and reply.get("Error") not in ours.errors:
            return [Mismatch(case_id, pod, path, "", f"Error {ours.error!r}", reply.get("Error"))]
        return []
    if reply.get("Error"):
        return [Mismatch(case_id, pod, path, "", "no Error", reply["Error"])]
    if mode == "NodeNames":
        passed = list(reply.get("NodeNames") or ())
    else:
        passed = [n["metadata"]["name"] for n in (reply.get("Nodes") or {}).get("items") or ()]
    theirs_failed = reply.get("FailedNodes") or {}
    theirs_unresolvable = reply.get("FailedAndUnresolvableNodes") or {}
    out = []
    nodes = set(ours.feasible) | set(ours.failed) | set(ours.unresolvable)
    nodes |= set(passed) | set(theirs_failed) | set(theirs_unresolvable)
    for node in sorted(nodes):
        mine = _node_verdict(node, set(ours.feasible), ours.failed, ours.unresolvable)
        theirs = _node_verdict(node, set(passed), theirs_failed, theirs_unresolvable)
        if mine != theirs:
            out.append(
                Mismatch(case_id, pod, path, node, mine, theirs, ours.deciders.get(node, ""))
            )
    return out


def _node_verdict(
    node: str, passed: set[str], failed: dict[str, str], unresolvable: dict[str, str]
) -> str:
    if node in passed:
        return "feasible"
    if node in unresolvable:
        return f"unresolvable: {unresolvable[node]}"
    if node in failed:
        return f"failed: {failed[node]}"
    return "(not answered)"


def compare_prioritize(
    case_id: str, pod: str, mode: str, ours: Standalone, reply: Any
) -> list[Mismatch]:
    path = f"extender/prioritize/{mode}"
    if not isinstance(reply, list):
        return [Mismatch(case_id, pod, path, "", "a HostPriorityList", reply)]
    theirs: dict[str, Any] = {}
    for entry in reply:
        theirs[entry.get("Host")] = entry.get("Score")
    out = []
    for node in sorted(set(ours.scores) | set(theirs)):
        if ours.scores.get(node) != theirs.get(node):
            mine = (
                f"{ours.scores.get(node)} (weighted total {ours.totals.get(node)}: "
                f"{ours.per_plugin.get(node)})"
            )
            out.append(Mismatch(case_id, pod, path, node, mine, theirs.get(node)))
    return out


def compare_preempt(
    case_id: str, pod: str, mode: str, ours: Standalone, reply: Any
) -> list[Mismatch]:
    path = f"extender/preempt/{mode}"
    assert ours.candidates is not None
    if not isinstance(reply, dict):
        return [Mismatch(case_id, pod, path, "", "an ExtenderPreemptionResult", reply)]
    theirs = reply.get("NodeNameToMetaVictims") or {}
    out = []
    for node in sorted(set(ours.candidates) | set(theirs)):
        mine = ours.candidates.get(node)
        got = theirs.get(node)
        mine_view = None if mine is None else {"victims": mine[0], "pdb": mine[1]}
        got_view = (
            None
            if got is None
            else {
                "victims": [p.get("UID") for p in got.get("Pods") or ()],
                "pdb": got.get("NumPDBViolations"),
            }
        )
        if mine_view != got_view:
            out.append(Mismatch(case_id, pod, path, node, mine_view, got_view))
    return out


def compare_choice(
    case_id: str, pod: str, path: str, ours: Standalone, chosen: Any
) -> list[Mismatch]:
    """``chosen``: the node(s) a path would pick (a set for ties, ``""``/empty: none)."""
    got = frozenset([chosen] if isinstance(chosen, str) and chosen else chosen or ())
    if isinstance(chosen, str):
        # One node picked (ties broken at random): it must be one of our best.
        if (chosen or "") == "" and not ours.best:
            return []
        if chosen in ours.best:
            return []
    elif got == ours.best:
        return []
    return [
        Mismatch(
            case_id, pod, path, "", sorted(ours.best) or "(no node)", sorted(got) or "(no node)"
        )
    ]


# -- the runner ------------------------------------------------------------------------------


class PathDifferential:
    """The served extender (and a kube-scheduler using it for prioritize) beside a
    :class:`Conformance` runner, whose case setup, barrier and teardown it reuses."""

    def __init__(self, conformance: Conformance, log_dir: Path) -> None:
        self.conformance = conformance
        self.cp = conformance.cp
        self.kube = conformance.kube
        self.log_dir = log_dir
        self.extender: Extender | None = None
        self.profile = default_profile()

    def start(self) -> PathDifferential:
        import ssl

        from extender.controlplane.certs import generate, issue_serving_cert

        self.conformance._create("/apis/scheduling.k8s.io/v1/priorityclasses", preempting_class())
        # HTTPS with client certificates: the bind verb is served only to an allow-list.
        pki_dir = self.log_dir / "pki"
        pki = generate(pki_dir)
        cert, key = issue_serving_cert(pki, pki_dir, "path-extender", ["127.0.0.1"])
        client = issue_serving_cert(pki, pki_dir, CLIENT_NAME, [CLIENT_NAME])
        self.extender = Extender(
            self.cp,
            SERVE_CONFIG,
            name="path-extender",
            scheme="https",
            extra=["--certfile", str(cert), "--keyfile", str(key), "--ca-certs", str(pki.ca_cert)],
        )
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(client[0]), str(client[1]))
        self.extender.context = context
        self.extender.wait_ready(timeout=60)
        tls = {"caFile": str(pki.ca_cert), "certFile": str(client[0]), "keyFile": str(client[1])}
        self.cp.start_scheduler(
            prioritize_scheduler_config(self.extender.url, tls), name=PRIORITIZE_SCHEDULER
        )
        return self

    def stop(self) -> None:
        self.cp.stop_component(PRIORITIZE_SCHEDULER)
        if self.extender is not None:
            self.extender.stop()

    # -- HTTP ---------------------------------------------------------------------------------

    def _settled(
        self, verb: str, body: dict, compare: Callable[[Any], list[Mismatch]]
    ) -> list[Mismatch]:
        """Ask until the answer agrees or the cache had :data:`SETTLE_SECONDS` to catch up."""
        assert self.extender is not None
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            status, reply = self.extender.post(verb, body)
            found = compare(reply if status == 200 else {"HTTP": status, "body": reply})
            if not found or time.monotonic() >= deadline:
                return found
            time.sleep(0.25)

    # -- one case -----------------------------------------------------------------------------

    def run_case(self, case: Case, binds: int = 0) -> PathTally:
        started = time.monotonic()
        tally = PathTally(cases=1)
        conf = self.conformance
        conf.setup(case)
        try:
            created = conf.submit(case.pending_pods, SERVED_PROFILE)
            if case.dra:
                created = self._with_claims(created)
            nodes, bound, objects = conf.state(case)
            fwk = Framework(self.profile, registry(), objects.services())
            local = self._local_paths()
            for pod in created:
                tally.pods += 1
                ours = standalone(fwk, nodes, bound, pod)
                self.compare_pod(case, pod, ours, nodes, tally)
                self.compare_local(case, pod, ours, local, tally)
            if binds:
                self.kube_scheduler_binds(case, created, binds, tally)
                self.extender_binds(case, created, binds, tally)
        finally:
            conf.teardown(case)
        tally.seconds = time.monotonic() - started
        return tally

    def _with_claims(self, pods: list[dict]) -> list[dict]:
        """DRA: wait until the resourceclaim-controller generated each pod's claims."""
        deadline = time.monotonic() + 30
        while True:
            fresh = self.conformance.refreshed(pods)
            waiting = [
                p
                for p in fresh
                if len((p.get("status") or {}).get("resourceClaimStatuses") or ())
                < sum(
                    1
                    for r in p["spec"].get("resourceClaims") or ()
                    if r.get("resourceClaimTemplateName")
                )
            ]
            if not waiting or time.monotonic() >= deadline:
                return fresh
            time.sleep(0.2)

    def compare_pod(
        self, case: Case, pod: dict, ours: Standalone, nodes: list[dict], tally: PathTally
    ) -> None:
        name = pod["metadata"]["name"]
        names = [n["metadata"]["name"] for n in nodes]
        bodies = {
            "NodeNames": {"Pod": pod, "NodeNames": names, "Nodes": None},
            "Nodes": {"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}},
        }
        feasible = [n for n in nodes if n["metadata"]["name"] in set(ours.feasible)]
        for mode in MODES:
            found = self._settled(
                "filter",
                bodies[mode],
                lambda r, m=mode: compare_filter(case.case_id, name, m, ours, r),
            )
            tally.check(f"extender/filter/{mode}", found, len(names))
            if ours.feasible:
                body = (
                    {"Pod": pod, "NodeNames": ours.feasible, "Nodes": None}
                    if mode == "NodeNames"
                    else {"Pod": pod, "Nodes": {"metadata": {}, "items": feasible}}
                )
                found = self._settled(
                    "prioritize",
                    body,
                    lambda r, m=mode: compare_prioritize(case.case_id, name, m, ours, r),
                )
                tally.check(f"extender/prioritize/{mode}", found, len(feasible))
            if ours.candidates:
                body = {"Pod": pod, **self._victims(mode, ours)}
                found = self._settled(
                    "preempt",
                    body,
                    lambda r, m=mode: compare_preempt(case.case_id, name, m, ours, r),
                )
                tally.check(f"extender/preempt/{mode}", found, len(ours.candidates))
        if not ours.error:
            found = self._settled(
                "explain",
                bodies["NodeNames"],
                lambda r: compare_choice(
                    case.case_id, name, "extender/explain", ours, (r or {}).get("chosen")
                ),
            )
            tally.check("extender/explain/NodeNames", found)

    @staticmethod
    def _victims(mode: str, ours: Standalone) -> dict:
        assert ours.candidates is not None
        if mode == "NodeNames":
            return {
                "NodeNameToMetaVictims": {
                    node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": pdb}
                    for node, (uids, pdb, _) in ours.candidates.items()
                }
            }
        return {
            "NodeNameToVictims": {
                node: {"Pods": pods, "NumPDBViolations": pdb}
                for node, (_, pdb, pods) in ours.candidates.items()
            }
        }

    # -- explain and simulate, on the cluster as `kube-extender explain` reads it --------------

    def _local_paths(self) -> tuple[Any, Any, Any]:
        from extender.kube import KubeClient, api_client

        config = default_config()
        profile = config.profiles[0]
        kinds = kinds_read([profile], config.registry)
        cluster, _ = list_cluster(KubeClient(api_client(str(self.cp.kubeconfig))), kinds)
        return config, profile, cluster

    def compare_local(
        self, case: Case, pod: dict, ours: Standalone, local: tuple, tally: PathTally
    ) -> None:
        if ours.error:
            return
        config, profile, cluster = local
        name = pod["metadata"]["name"]
        fwk = dry_run_framework(config, profile, cluster)
        snapshot = _case_snapshot(cluster, case)
        explanation = Explainer(fwk, preemption=False).explain(copy.deepcopy(pod), snapshot)
        found = compare_choice(case.case_id, name, "explain", ours, explanation.chosen)
        for mismatch in found:
            # Which plugin scored differently: both sides' per-plugin weighted scores.
            mismatch.ours = ours.per_plugin
            mismatch.theirs = {
                v.name: {p: s.weighted for p, s in v.scores.items()}
                for v in explanation.nodes
                if v.fits
            }
        tally.check("explain", found)
        # A copy: a placement assumes the pod into the simulation's cluster and claims.
        alone = copy.deepcopy(cluster)
        simulation = Simulation(dry_run_framework(config, profile, alone), alone)
        simulation.snapshot = _case_snapshot(alone, case)
        placement = simulation.place(copy.deepcopy(pod), preempt=False)
        tally.check(
            "simulate", compare_choice(case.case_id, name, "simulate", ours, placement.node)
        )

    # -- a real kube-scheduler with our extender as a prioritizer ------------------------------

    def kube_scheduler_binds(
        self, case: Case, created: list[dict], limit: int, tally: PathTally
    ) -> None:
        """Up to ``limit`` pods bound in turn by kube-scheduler with our extender prioritizing
        and binding, each against the standalone path in the state kube-scheduler saw: the node
        among our best (ties as sets), our prioritize asked when two nodes or more were
        feasible, our bind used, and (pods with claims) the devices kube-scheduler's PreBind
        allocated the ones our allocator picks on that node."""
        assert self.extender is not None
        conf = self.conformance
        done = 0
        for pod in created:
            if done >= limit:
                break
            if _needs_volume_binding(pod) or (case.dra and may_wait_for_binding(case, pod)):
                continue
            nodes, bound, objects = conf.state(case)
            fwk = Framework(self.profile, registry(), objects.services())
            ours = standalone(fwk, nodes, bound, pod)
            if ours.error or not ours.feasible:
                continue
            prioritized = self.extender.metric("extender_requests_total", verb="prioritize")
            binds = self.extender.metric("extender_requests_total", verb="bind", outcome="ok")
            original = next(
                p for p in case.pending_pods if p["metadata"]["name"] == pod["metadata"]["name"]
            )
            name = original["metadata"]["name"]
            before = self._allocated_claims(pod["metadata"]["namespace"])
            node, placed = self._bind(original)
            found = compare_choice(case.case_id, name, KUBE_SCHEDULER_PATH, ours, node)
            for mismatch in found:
                mismatch.ours = {"best": sorted(ours.best), "totals": ours.per_plugin}
            asked = self.extender.metric("extender_requests_total", verb="prioritize")
            if len(ours.feasible) > 1 and asked <= prioritized:
                found.append(
                    Mismatch(
                        case.case_id, name, KUBE_SCHEDULER_PATH, "", "prioritize asked", "never"
                    )
                )
            bound_by_us = self.extender.metric("extender_requests_total", verb="bind", outcome="ok")
            if node in ours.best and bound_by_us <= binds:
                found.append(
                    Mismatch(
                        case.case_id, name, KUBE_SCHEDULER_PATH, node, "our bind", "not called"
                    )
                )
            tally.check(KUBE_SCHEDULER_PATH, found)
            if node in ours.best and (pod["spec"].get("resourceClaims") or _asks_extended(pod)):
                devices, claims = self._devices(case, pod, placed, node, ours, before)
                if claims:
                    tally.check(f"{KUBE_SCHEDULER_PATH}/devices", devices, claims)
            done += 1

    def _allocated_claims(self, namespace: str) -> dict[str, dict]:
        """The ResourceClaims of ``namespace`` now, by name."""
        path = namespaced_path(RESOURCE_CLAIMS, namespace)
        return {c["metadata"]["name"]: c for c in self.conformance._list(path)}

    def _devices(
        self,
        case: Case,
        pod: dict,
        placed: dict,
        node: str,
        ours: Standalone,
        before: dict[str, dict],
    ) -> tuple[list[Mismatch], int]:
        """The allocation of each claim kube-scheduler's PreBind wrote for ``placed`` (the
        bound copy of ``pod``) against what our allocator picked for ``pod`` on ``node``;
        claims allocated ``before`` the bind (shared ones) are not compared. Returns the
        disagreements and how many claims were compared."""
        mine = our_allocations(ours.state, node)
        if isinstance(mine, str):
            mine = {}  # nothing to allocate on our side: every claim must have been allocated
        name = pod["metadata"]["name"]
        path = f"{KUBE_SCHEDULER_PATH}/devices"
        our_names = pod_claim_names(pod)
        claims = self._allocated_claims(placed["metadata"]["namespace"])
        out = []
        compared = 0
        for pod_claim, claim_name in pod_claim_names(placed).items():
            if ((before.get(claim_name) or {}).get("status") or {}).get("allocation"):
                continue  # a shared claim allocated earlier: nothing allocated now
            compared += 1
            ours_key = EXTENDED_CLAIM if pod_claim == EXTENDED_CLAIM else our_names.get(pod_claim)
            theirs = allocation_summary(
                ((claims.get(claim_name) or {}).get("status") or {}).get("allocation")
            )
            if theirs != mine.get(ours_key or ""):
                out.append(
                    Mismatch(
                        case.case_id, name, path, node, mine.get(ours_key or ""), theirs, pod_claim
                    )
                )
        return out, compared

    # -- the bind verb ---------------------------------------------------------------------

    def extender_binds(self, case: Case, created: list[dict], limit: int, tally: PathTally) -> None:
        """Up to ``limit`` pods bound through the served extender's bind verb, in turn: onto a
        node the standalone path rejects it must refuse (nothing written), onto the node the
        standalone path picks it must write the Binding (the pod's ``spec.nodeName``)."""
        assert self.extender is not None
        conf = self.conformance
        done = 0
        for pod in created:
            if done >= limit:
                break
            if _needs_pre_bind(pod):
                continue
            nodes, bound, objects = conf.state(case)
            fwk = Framework(self.profile, registry(), objects.services())
            ours = standalone(fwk, nodes, bound, pod)
            if ours.error or not ours.best:
                continue
            meta = pod["metadata"]
            body = {
                "PodName": meta["name"],
                "PodNamespace": meta["namespace"],
                "PodUID": meta["uid"],
            }
            found: list[Mismatch] = []
            rejected = sorted(set(ours.failed) | set(ours.unresolvable))
            if rejected:
                node = rejected[0]
                status, reply = self.extender.post("bind", {**body, "Node": node})
                written = self._node_of(pod)
                if status != 200 or not (reply or {}).get("Error") or written:
                    found.append(
                        Mismatch(
                            case.case_id,
                            meta["name"],
                            "extender/bind",
                            node,
                            f"refused ({ours.deciders.get(node)} rejects it)",
                            f"HTTP {status} {reply}, pod bound to {written or 'nothing'}",
                            ours.deciders.get(node, ""),
                        )
                    )
            node = sorted(ours.best)[0]
            status, reply = self.extender.post("bind", {**body, "Node": node})
            written = self._node_of(pod)
            if status != 200 or (reply or {}).get("Error") or written != node:
                found.append(
                    Mismatch(
                        case.case_id,
                        meta["name"],
                        "extender/bind",
                        node,
                        f"bound to {node}",
                        f"HTTP {status} {reply}, pod bound to {written or 'nothing'}",
                    )
                )
            tally.check("extender/bind", found, 1 + bool(rejected))
            done += 1

    def _node_of(self, pod: dict) -> str:
        meta = pod["metadata"]
        obj = self.kube.get(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}") or {}
        return (obj.get("spec") or {}).get("nodeName") or ""

    def _bind(self, pod: dict) -> tuple[str, dict]:
        """A copy of ``pod`` (name ``-ks``) for kube-scheduler: the node it was bound to (or
        "(not bound)") and the pod as the apiserver serves it then."""
        body = copy.deepcopy(pod)
        body["metadata"]["name"] += "-ks"
        created = self.conformance.submit([body], PRIORITIZE_PROFILE)[0]
        ns, name = created["metadata"]["namespace"], created["metadata"]["name"]
        deadline = time.monotonic() + 30
        obj: dict = created
        while time.monotonic() < deadline:
            obj = self.kube.get(f"/api/v1/namespaces/{ns}/pods/{name}") or {}
            node = (obj.get("spec") or {}).get("nodeName")
            if node:
                return node, obj
            time.sleep(0.2)
        return "(not bound)", obj


def _needs_volume_binding(pod: dict) -> bool:
    """Binding waits for a PV controller that does not run here (VolumeBinding's PreBind)."""
    return any(
        v.get("persistentVolumeClaim") or v.get("ephemeral")
        for v in pod["spec"].get("volumes") or ()
    )


def _needs_pre_bind(pod: dict) -> bool:
    """Binding this pod needs a PreBind first: claims to allocate (DynamicResources) or volumes
    to bind (VolumeBinding, waiting for a PV controller that does not run here). kube-scheduler
    runs PreBind before it calls an extender's bind, so the bind verb alone cannot place it."""
    return bool(pod["spec"].get("resourceClaims")) or _needs_volume_binding(pod)


def _case_snapshot(cluster: Any, case: Case) -> Snapshot:
    """The listed cluster's snapshot, limited to the case's nodes (the listing holds every
    node of the control plane; the standalone answer is over the case's)."""
    nodes = [
        n
        for n in cluster.nodes
        if (n["metadata"].get("labels") or {}).get(gen.CASE_LABEL) == case.case_id
    ]
    from extender.offline import apiserver_defaults

    return Snapshot.from_objects(nodes, [apiserver_defaults(p) for p in cluster.pods])


def run_paths(
    paths: PathDifferential,
    cases: Iterable[Case],
    *,
    binds: int = 0,
    out: Callable[[str], None] = print,
) -> PathTally:
    total = PathTally()
    for case in cases:
        tally = paths.run_case(case, binds=binds)
        out(
            f"{case.case_id}: {tally.pods} pods, "
            f"{sum(tally.agreed.values())}/{sum(tally.compared.values())} path answers agreed "
            f"({tally.seconds:.1f}s)"
        )
        total.merge(tally)
    return total


PREEMPTING_CLASS = "conformance-preempting"
PREEMPTION_SEED_OFFSET = 500_000  # the preemption cases' ids: c500001...


def preempting_class() -> dict:
    """A PriorityClass above every generated pod's, allowed to preempt (the harness's classes
    say ``preemptionPolicy: Never``)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": PREEMPTING_CLASS},
        "value": 100_000,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def preemption_case(seed: int, pods: int, max_nodes: int = 8) -> Case:
    """Nodes full of bound pods of mixed priorities (none, ``conformance-low``,
    ``conformance-high``, one protected by a higher class), and pending pods too big for any
    node's free room: most may preempt (:data:`PREEMPTING_CLASS`), some may not (``Never``),
    some are held to a few nodes by a node selector. Their preemption dry run finds candidates
    with victims, which the extender's preempt verb must all keep."""
    import random

    rng = random.Random(PREEMPTION_SEED_OFFSET + seed)
    case_id = f"c{PREEMPTION_SEED_OFFSET + seed}"
    ns = f"{case_id}-a"
    nodes, existing = [], []
    classes = [None, *gen.PRIORITY_CLASSES]
    for i in range(rng.randint(3, max(3, max_nodes))):
        node = gen._plain_node(case_id, i, labels={"rack": f"r{i % 2}"})
        cpu = rng.choice((2, 4, 8))
        node["status"]["allocatable"]["cpu"] = node["status"]["capacity"]["cpu"] = str(cpu)
        nodes.append(node)
        free = cpu * 1000
        for k in range(rng.randint(1, 4)):
            request = rng.randint(1, max(1, free // 100 - 1)) * 100 if free > 200 else 0
            if request == 0:
                break
            free -= request
            extra = {}
            cls = rng.choice(classes)
            if cls:
                extra["priorityClassName"] = cls
            existing.append(
                gen._pod(
                    f"b{i}-{k}",
                    ns,
                    cpu=f"{request}m",
                    labels={"app": rng.choice(("web", "db"))},
                    node_name=node["metadata"]["name"],
                    **extra,
                )
            )
    pending = []
    for j in range(pods):
        spec: dict[str, Any] = {
            "priorityClassName": PREEMPTING_CLASS if rng.random() < 0.8 else "conformance-high"
        }
        if rng.random() < 0.3:
            spec["nodeSelector"] = {"rack": rng.choice(("r0", "r1"))}
        cpu = rng.choice((1500, 2500, 3500, 6000))
        pending.append(gen._pod(f"p{j}", ns, cpu=f"{cpu}m", labels={"app": "batch"}, **spec))
    return Case(
        seed=seed,
        case_id=case_id,
        namespaces={ns: {gen.TEAM: "red", gen.CASE_LABEL: case_id}},
        nodes=nodes,
        existing_pods=existing,
        pending_pods=pending,
    )


def case_families(seeds: Iterable[int], pods: int, max_nodes: int = 8) -> list[Case]:
    """The plain, preemption, volume and DRA cases of each seed, and the hand-made scoring
    cases (default spreading from Services and controllers among them)."""
    from .dra import generate_dra_case
    from .volumes import generate_volume_case

    cases: list[Case] = []
    for seed in seeds:
        cases.append(gen.generate(seed, pods=pods, max_nodes=max_nodes))
        cases.append(preemption_case(seed, pods=pods, max_nodes=max_nodes))
        cases.append(generate_volume_case(seed, pods=pods, max_nodes=min(max_nodes, 6)))
        cases.append(generate_dra_case(seed, pods=pods, max_nodes=min(max_nodes, 6)))
    cases.extend(case for case, _ in gen.clear_choice_cases())
    return cases


__all__ = ["PathDifferential", "PathTally", "case_families", "run_paths"]
