"""Differential harness: the same pod and cluster state through the real kube-scheduler and
through our core, comparing the feasible node sets (and, for clear-cut cases, the chosen node).

How the real answer is observed. kube-scheduler runs with one extender, the *recording
extender* below: a filter-only, ``nodeCacheCapable`` HTTP server in a thread. kube-scheduler
calls it with the nodes that passed all its filter plugins, so the recorded ``NodeNames`` are
kube-scheduler's feasible set. The extender then rejects every node, so nothing binds and every
pending pod of a case is evaluated against the same initial state (all of a case's pods can be
in flight at once). kube-scheduler does not call extenders when no node passed its filters: a
pod that got ``PodScheduled=False`` without a recorded call has an empty feasible set.

Our answer: ``Snapshot.from_objects`` over the nodes and bound pods *as the apiserver returns
them* (defaulting matters: limits-only containers get requests, RuntimeClass admission fills
``overhead``, priority classes resolve ``priority``), then ``find_nodes_that_fit(...,
evaluate_all=True)`` with the default profile's PreFilter and Filter plugins. The handle's
listers serve the case's Services and controllers as the apiserver returns them too:
PodTopologySpread's default constraints read them.

One kube-scheduler serves the whole run, with profile ``conformance`` (the defaults without
PostFilter, so no preemption nominates or evicts anything) and one *isolated* profile per
filter plugin (``conformance-<plugin>``: only that plugin, plus PrioritySort and DefaultBinder).
The isolated profiles pin a disagreement on a plugin, and ``isolate=True`` compares every
plugin on its own for every pod.

Cases follow each other in the same cluster. Node names carry the case id, and each case ends
its setup with a *barrier*: a tainted barrier node created last and a probe pod that only fits
there. The probe reaching the extender proves kube-scheduler's informers have caught up with
every node and pod event before it (one watch per resource delivers events in order), including
the deletions of the previous case.
"""

from __future__ import annotations

import copy
import http.server
import json
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from extender.controlplane import ControlPlane, free_port
from extender.framework.cycle_state import CycleState
from extender.framework.handle import (
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    EmptyLister,
    Kind,
    Lister,
    Services,
)
from extender.framework.profile import PluginSpec, Profile
from extender.framework.results import NodePluginScores
from extender.framework.runtime import Framework
from extender.framework.schedule import (
    FitError,
    SchedulingAlgorithm,
    SchedulingError,
    fit_error_message,
)
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.kube import ApiError

from . import generator as gen
from .dra import may_wait_for_binding
from .generator import CASE_LABEL, Case

# The default profile's filter plugins, in upstream order.
FILTER_PLUGINS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeDeclaredFeatures",
)
# The volume plugins (between NodeResourcesFit and PodTopologySpread upstream): compared on
# their own only in volume cases (:mod:`tests.conformance.volumes`).
VOLUME_PLUGINS = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone")
ALL_FILTER_PLUGINS = (*FILTER_PLUGINS[:6], *VOLUME_PLUGINS, *FILTER_PLUGINS[6:])
# DynamicResources (between InterPodAffinity and NodeDeclaredFeatures upstream): compared on its
# own only in DRA cases (:mod:`tests.conformance.dra`), with the filters those cases exercise.
DRA_PLUGINS = ("DynamicResources",)
DRA_CASE_PLUGINS = ("NodeAffinity", "NodeResourcesFit", "DynamicResources")
PROFILE_PLUGINS = (*ALL_FILTER_PLUGINS[:-1], *DRA_PLUGINS, ALL_FILTER_PLUGINS[-1])
PRE_FILTER_PLUGINS = frozenset(
    (
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeDeclaredFeatures",
        *VOLUME_PLUGINS,
        *DRA_PLUGINS,
    )
)
PROFILE = "conformance"
EXTENDER_ANNOTATION = "conformance.io/extender"  # "pass": let the pod bind (score tests)
BARRIER_LABEL = "conformance.io/barrier"
FEASIBLE = "(feasible)"
RECORDED_MESSAGE = "conformance: recorded, not binding"
WAIT_TIMEOUT = 90.0
# A pod's best node counts as clear when its total score beats the runner-up by this much
# (of 100 x the sum of weights): rounding differences stay far below it.
SCORE_MARGIN = 20
POLL = 0.2


def force_delete(kube: Any, path: str, name: str) -> None:
    """Delete ``path/name``, first lifting its finalizers: without kube-controller-manager no
    controller removes them (ResourceClaims', PodGroups' protection). Gone already is fine."""
    try:
        obj = kube.request("GET", f"{path}/{name}")
        if (obj.get("metadata") or {}).get("finalizers"):
            kube.request(
                "PATCH",
                f"{path}/{name}",
                {"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
        kube.request("DELETE", f"{path}/{name}")
    except ApiError as exc:
        if exc.status != 404:
            raise


def isolated_profile_name(plugin: str) -> str:
    return f"{PROFILE}-{plugin.lower()}"


# -- the recording extender ---------------------------------------------------------------


class RecordingExtender:
    """A filter-only extender that records the node names kube-scheduler sends per pod."""

    def __init__(self) -> None:
        self.port = free_port()
        self.calls: dict[str, list[list[str]]] = defaultdict(list)
        self.cond = threading.Condition()
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle each answer waits ~40 ms for
            # the peer's delayed ACK.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                args = orjson.loads(self.rfile.read(length) or b"{}")
                answer = recorder.filter(args)
                body = orjson.dumps(answer)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # kube-scheduler dropping a keep-alive connection at exit

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def filter(self, args: dict) -> dict:
        pod = args.get("Pod") or args.get("pod") or {}
        meta = pod.get("metadata") or {}
        names = args.get("NodeNames")
        if names is None:
            items = (args.get("Nodes") or {}).get("items") or []
            names = [n["metadata"]["name"] for n in items]
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        with self.cond:
            self.calls[key].append(list(names))
            self.cond.notify_all()
        if (meta.get("annotations") or {}).get(EXTENDER_ANNOTATION) == "pass":
            return {"NodeNames": names, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}}
        return {
            "NodeNames": [],
            "FailedNodes": {name: RECORDED_MESSAGE for name in names},
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }

    def recorded(self, key: str) -> list[str] | None:
        with self.cond:
            calls = self.calls.get(key)
            return list(calls[0]) if calls else None

    def forget(self, keys: Iterable[str]) -> None:
        with self.cond:
            for key in keys:
                self.calls.pop(key, None)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- kube-scheduler configuration ---------------------------------------------------------


def scheduler_config(extender_url: str) -> dict:
    profiles: list[dict] = [
        {
            "schedulerName": PROFILE,
            # No preemption: it would nominate or evict and change the state between pods.
            "plugins": {"postFilter": {"disabled": [{"name": "*"}]}},
        }
    ]
    for plugin in PROFILE_PLUGINS:
        profiles.append(
            {
                "schedulerName": isolated_profile_name(plugin),
                # queueSort must be the same in every profile: only touch the filter points.
                "plugins": {
                    "preFilter": {
                        "enabled": [{"name": plugin}] if plugin in PRE_FILTER_PLUGINS else [],
                        "disabled": [{"name": "*"}],
                    },
                    "filter": {"enabled": [{"name": plugin}], "disabled": [{"name": "*"}]},
                    "postFilter": {"disabled": [{"name": "*"}]},
                },
            }
        )
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        # Every rejected pod costs a status patch and an event: the default client rate limit
        # (50 QPS) would make kube-scheduler the bottleneck of a run.
        "clientConnection": {"qps": 1000, "burst": 2000},
        "percentageOfNodesToScore": 100,
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 2,
        "profiles": profiles,
        "extenders": [
            {
                "urlPrefix": extender_url,
                "filterVerb": "filter",
                "weight": 1,
                "nodeCacheCapable": True,
                "httpTimeout": "10s",
            }
        ],
    }


# -- our side -----------------------------------------------------------------------------


def missing_plugins(dra: bool = False) -> dict[str, str]:
    """Filter plugins whose module or class cannot be loaded yet (written in parallel); with
    ``dra``, also the DRA plugins, which must be in our default profile."""
    from extender.plugins import plugin_class

    missing = {}
    if dra:
        in_profile = {s.name for s in base_profile().plugins.get("filter", ())}
        for name in DRA_PLUGINS:
            if name not in in_profile:
                missing[name] = "not in our default profile"
    for name in (*ALL_FILTER_PLUGINS, *(DRA_PLUGINS if dra else ())):
        try:
            plugin_class(name)
        except Exception as exc:  # any import problem means "not usable yet"
            missing[name] = f"{type(exc).__name__}: {exc}"
    return missing


def base_profile():
    from extender.config import default_profile

    return default_profile()


def filter_profile(plugins: Iterable[str] | None = None) -> Profile:
    """The default profile's PreFilter/Filter plugins (or only ``plugins``), default args."""
    default = base_profile()
    wanted = set(plugins) if plugins is not None else None

    def keep(point: str) -> list[PluginSpec]:
        return [
            PluginSpec(s.name, s.weight)
            for s in default.plugins.get(point, ())
            if wanted is None or s.name in wanted
        ]

    return Profile(
        scheduler_name=PROFILE,
        plugins={"preFilter": keep("preFilter"), "filter": keep("filter")},
        plugin_config=copy.deepcopy(default.plugin_config),
        percentage_of_nodes_to_score=100,
    )


def registry():
    from extender.plugins import in_tree_registry

    return in_tree_registry()


@dataclass
class Verdict:
    """One side's answer for one pod: the feasible set, or an error."""

    feasible: frozenset[str] | None
    error: str = ""
    # The pod's FailedScheduling message (kube-scheduler: its PodScheduled condition; ours:
    # the FitError text with the recording extender's rejection of every feasible node).
    message: str = ""
    # ours only: node -> (plugin, reasons) for every rejected node
    rejected: dict[str, tuple[str, str]] = field(default_factory=dict)
    # ours only: the cycle state after filtering every node (DRA: the allocations per node)
    state: CycleState | None = field(default=None, repr=False)

    def describe(self) -> str:
        if self.feasible is None:
            return f"error: {self.error}"
        return "{" + ", ".join(sorted(self.feasible)) + "}"


# The workload objects a case may create, by kind: what kube-scheduler's PodTopologySpread
# reads for its default constraints (upstream helper.DefaultSelector).
WORKLOAD_KINDS: dict[str, Kind] = {
    "Service": SERVICES,
    "ReplicationController": REPLICATION_CONTROLLERS,
    "ReplicaSet": REPLICA_SETS,
    "StatefulSet": STATEFUL_SETS,
}


# The storage objects of a volume case, by kind: what the volume plugins read.
STORAGE_KINDS: dict[str, Kind] = {
    "StorageClass": STORAGE_CLASSES,
    "CSINode": CSI_NODES,
    "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIMS,
    "PersistentVolume": PERSISTENT_VOLUMES,
}


# The DRA objects of a DRA case, by kind (resource.k8s.io/v1): what DynamicResources reads, and
# the templates kube-controller-manager's resourceclaim-controller makes claims from.
DEVICE_CLASSES = Kind("resource.k8s.io", "v1", "deviceclasses", namespaced=False)
RESOURCE_SLICES = Kind("resource.k8s.io", "v1", "resourceslices", namespaced=False)
RESOURCE_CLAIMS = Kind("resource.k8s.io", "v1", "resourceclaims")
RESOURCE_CLAIM_TEMPLATES = Kind("resource.k8s.io", "v1", "resourceclaimtemplates")
DRA_KINDS: dict[str, Kind] = {
    "DeviceClass": DEVICE_CLASSES,
    "ResourceSlice": RESOURCE_SLICES,
    "ResourceClaimTemplate": RESOURCE_CLAIM_TEMPLATES,
    "ResourceClaim": RESOURCE_CLAIMS,
}
CLAIM_CONTROLLER = "kube-controller-manager-resourceclaim"


def storage_path(kind: Kind, obj: dict) -> str:
    """The collection path of ``obj`` (namespaced or cluster-scoped)."""
    if kind.namespaced:
        return namespaced_path(kind, obj["metadata"]["namespace"])
    return kind.path


def case_plugins(case: Case) -> tuple[str, ...]:
    """The filter plugins compared on their own for ``case``'s pods."""
    if case.dra:
        return DRA_CASE_PLUGINS
    return ALL_FILTER_PLUGINS if case.storage else FILTER_PLUGINS


def namespaced_path(kind: Kind, namespace: str) -> str:
    prefix = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
    return f"{prefix}/namespaces/{namespace}/{kind.resource}"


class ObjectLister:
    """A lister over the objects of one kind as the apiserver served them."""

    def __init__(self, objects: list[dict]) -> None:
        self.objects = objects

    def list(self, namespace: str | None = None) -> list[dict]:
        return [
            o
            for o in self.objects
            if namespace is None or o["metadata"].get("namespace", "") == namespace
        ]

    def get(self, namespace: str, name: str) -> dict | None:
        return next((o for o in self.list(namespace) if o["metadata"]["name"] == name), None)


@dataclass
class ApiObjects:
    """What our handle reads besides nodes and pods: namespace labels and the workload
    objects (Services, ReplicationControllers, ReplicaSets, StatefulSets) and storage objects
    (PVs, PVCs, StorageClasses, CSINodes) of a case."""

    namespace_labels: dict[str, dict] = field(default_factory=dict)
    workloads: dict[Kind, list[dict]] = field(default_factory=dict)

    def lister(self, kind: Kind) -> Lister:
        objects = self.workloads.get(kind)
        return ObjectLister(objects) if objects else EmptyLister()

    def services(self) -> Services:
        return Services(namespace_labels=self.namespace_labels.get, listers=self.lister)


def our_verdict(
    profile: Profile,
    nodes: list[dict],
    pods: list[dict],
    pod: dict,
    objects: ApiObjects,
) -> Verdict:
    fwk = Framework(profile, registry(), objects.services())
    snapshot = Snapshot.from_objects(copy.deepcopy(nodes), copy.deepcopy(pods))
    state = CycleState()
    try:
        feasible, diagnosis = SchedulingAlgorithm().find_nodes_that_fit(
            fwk, state, copy.deepcopy(pod), snapshot, evaluate_all=True
        )
    except SchedulingError as exc:
        # kube-scheduler's condition message for an Error is the error itself.
        return Verdict(None, error=str(exc), message=str(exc))
    rejected = {}
    names = {info.name for info in feasible}
    # kube-scheduler's message: the recording extender rejects every node that passed.
    for name in sorted(names):
        diagnosis.add_rejection(name, Status(Code.UNSCHEDULABLE, RECORDED_MESSAGE))
    message = fit_error_message(len(snapshot.node_info_list), diagnosis)
    for info in snapshot.node_info_list:
        if info.name in names:
            continue
        status = diagnosis.status_of(info.name)
        if status is None:
            rejected[info.name] = ("?", "no status")
            continue
        plugin = status.plugin or _subset_plugins(status) or "?"
        rejected[info.name] = (plugin, "; ".join(status.reasons))
    return Verdict(frozenset(names), rejected=rejected, message=message, state=state)


def first_error_of_any_node(
    ours: Verdict,
    theirs: Verdict,
    profile: Profile,
    nodes: list[dict],
    bound: list[dict],
    pod: dict,
    objects: ApiObjects,
) -> Verdict:
    """kube-scheduler filters nodes in parallel and reports the first Error any of them
    returns: when both sides failed with different errors, ours agrees if some node, filtered
    alone, fails with kube-scheduler's (we filter in order and report the first node's)."""
    if ours.message == theirs.message:
        return ours
    for node in nodes:
        alone = our_verdict(profile, [node], bound, pod, objects)
        if alone.feasible is None and alone.message == theirs.message:
            return alone
    return ours


def _subset_plugins(status: Status) -> str:
    """The PreFilter plugins named by the status of nodes outside a PreFilterResult."""
    match = re.search(r"\[([^\]]*)\]", status.message)
    return ",".join(sorted(match.group(1).split())) if match else ""


# -- results ------------------------------------------------------------------------------


@dataclass
class PodResult:
    case_id: str
    seed: int
    pod: str
    theirs: Verdict
    ours: Verdict
    # isolated per-plugin comparisons: plugin -> (theirs, ours)
    isolated: dict[str, tuple[Verdict, Verdict]] = field(default_factory=dict)
    repro: dict | None = None
    # DRA cases: the FailedScheduling messages must agree too
    compare_messages: bool = False

    @property
    def messages_agree(self) -> bool:
        return not self.compare_messages or self.theirs.message == self.ours.message

    @property
    def agree(self) -> bool:
        return _same(self.theirs, self.ours) and self.messages_agree


def _same(theirs: Verdict, ours: Verdict) -> bool:
    if theirs.feasible is None or ours.feasible is None:
        return theirs.feasible is None and ours.feasible is None
    return theirs.feasible == ours.feasible


@dataclass
class Tally:
    """Agreement counters over a run."""

    pods: int = 0
    pods_agreed: int = 0
    # per plugin (our first rejecting plugin, or FEASIBLE): node verdicts agreed/total
    node_total: Counter = field(default_factory=Counter)
    node_agreed: Counter = field(default_factory=Counter)
    # per plugin, isolated profiles: pods agreed/total
    isolated_total: Counter = field(default_factory=Counter)
    isolated_agreed: Counter = field(default_factory=Counter)
    # per plugin, isolated: pods where kube-scheduler's single-plugin profile rejected a node
    isolated_rejecting: Counter = field(default_factory=Counter)
    # kube-scheduler's feasible set per pod: "none", "some" or "all" nodes
    shapes: Counter = field(default_factory=Counter)
    disagreements: list[PodResult] = field(default_factory=list)
    score_checks: list[ScoreResult] = field(default_factory=list)
    # DRA cases: FailedScheduling messages compared / agreed, and the devices checks
    messages: int = 0
    messages_agreed: int = 0
    device_checks: list[DeviceResult] = field(default_factory=list)
    cases: int = 0
    seconds: float = 0.0

    def add(self, result: PodResult, all_nodes: Iterable[str]) -> None:
        self.pods += 1
        if result.agree:
            self.pods_agreed += 1
        else:
            self.disagreements.append(result)
        if result.compare_messages:
            self.messages += 1
            self.messages_agreed += result.theirs.message == result.ours.message
        theirs, ours = result.theirs, result.ours
        all_nodes = list(all_nodes)
        if theirs.feasible is None:
            self.shapes["error"] += 1
        else:
            self.shapes[_shape(theirs.feasible, all_nodes)] += 1
        if theirs.feasible is not None and ours.feasible is not None:
            for node in all_nodes:
                plugin = FEASIBLE if node in ours.feasible else ours.rejected[node][0]
                self.node_total[plugin] += 1
                if (node in ours.feasible) == (node in theirs.feasible):
                    self.node_agreed[plugin] += 1
        for plugin, (t, o) in result.isolated.items():
            self.isolated_total[plugin] += 1
            if _same(t, o):
                self.isolated_agreed[plugin] += 1
            if t.feasible is not None and _shape(t.feasible, all_nodes) != "all":
                self.isolated_rejecting[plugin] += 1

    def add_scores(self, checks: list[ScoreResult]) -> None:
        self.score_checks.extend(checks)

    @property
    def score_disagreements(self) -> list[ScoreResult]:
        return [c for c in self.score_checks if not c.agree]

    @property
    def device_disagreements(self) -> list[DeviceResult]:
        return [c for c in self.device_checks if not c.agree]

    def merge(self, other: Tally) -> None:
        self.score_checks.extend(other.score_checks)
        self.device_checks.extend(other.device_checks)
        self.messages += other.messages
        self.messages_agreed += other.messages_agreed
        self.pods += other.pods
        self.pods_agreed += other.pods_agreed
        self.node_total.update(other.node_total)
        self.node_agreed.update(other.node_agreed)
        self.isolated_total.update(other.isolated_total)
        self.isolated_agreed.update(other.isolated_agreed)
        self.isolated_rejecting.update(other.isolated_rejecting)
        self.shapes.update(other.shapes)
        self.disagreements.extend(other.disagreements)
        self.cases += other.cases
        self.seconds += other.seconds

    def report(self) -> str:
        lines = [
            f"conformance: {self.cases} cases, {self.pods} pods, {self.seconds:.1f}s",
            f"  feasible sets agreed: {self.pods_agreed}/{self.pods}",
            "  kube-scheduler feasible sets: "
            + ", ".join(f"{k} nodes {self.shapes[k]}" for k in ("no", "some", "all"))
            + (f", error {self.shapes['error']}" if self.shapes["error"] else ""),
            "  node verdicts by our deciding plugin (agreed/total):",
        ]
        for plugin in (*PROFILE_PLUGINS, FEASIBLE):
            if plugin in (*VOLUME_PLUGINS, *DRA_PLUGINS) and not self.node_total[plugin]:
                continue
            lines.append(f"    {plugin:<20} {self.node_agreed[plugin]}/{self.node_total[plugin]}")
        for plugin in sorted(set(self.node_total) - set(PROFILE_PLUGINS) - {FEASIBLE}):
            lines.append(f"    {plugin:<20} {self.node_agreed[plugin]}/{self.node_total[plugin]}")
        if self.isolated_total:
            lines.append(
                "  isolated plugin profiles, pods agreed/total (pods where it rejected a node):"
            )
            for plugin in PROFILE_PLUGINS:
                if plugin in (*VOLUME_PLUGINS, *DRA_PLUGINS) and not self.isolated_total[plugin]:
                    continue
                lines.append(
                    f"    {plugin:<20} "
                    f"{self.isolated_agreed[plugin]}/{self.isolated_total[plugin]} "
                    f"({self.isolated_rejecting[plugin]})"
                )
        if self.messages:
            lines.append(
                f"  FailedScheduling messages agreed: {self.messages_agreed}/{self.messages}"
            )
        if self.score_checks:
            agreed = len(self.score_checks) - len(self.score_disagreements)
            lines.append(f"  clear-choice bindings agreed: {agreed}/{len(self.score_checks)}")
        if self.device_checks:
            agreed = len(self.device_checks) - len(self.device_disagreements)
            lines.append(
                f"  bindings with claims, node and devices agreed: "
                f"{agreed}/{len(self.device_checks)}"
            )
        for result in self.disagreements:
            lines.append(describe_disagreement(result))
        for check in self.score_disagreements:
            lines.append(check.describe())
        for device_check in self.device_disagreements:
            lines.append(device_check.describe())
        return "\n".join(lines)


def _shape(feasible: frozenset[str], all_nodes: list[str]) -> str:
    if not feasible:
        return "no"
    return "all" if len(feasible) >= len(all_nodes) else "some"


def describe_disagreement(result: PodResult) -> str:
    theirs, ours = result.theirs, result.ours
    lines = [f"  DISAGREE seed={result.seed} pod={result.case_id}/{result.pod}"]
    lines.append(f"    kube-scheduler: {theirs.describe()}")
    lines.append(f"    ours:           {ours.describe()}")
    if theirs.feasible is not None and ours.feasible is not None:
        for node in sorted(theirs.feasible - ours.feasible):
            plugin, reasons = ours.rejected.get(node, ("?", ""))
            lines.append(
                f"    {node}: kube-scheduler feasible, ours rejected by {plugin}: {reasons}"
            )
        for node in sorted(ours.feasible - theirs.feasible):
            lines.append(f"    {node}: ours feasible, kube-scheduler rejected")
    if not result.messages_agree:
        lines.append(f"    kube-scheduler message: {theirs.message}")
        lines.append(f"    our message:            {ours.message}")
    for plugin, (t, o) in result.isolated.items():
        if not _same(t, o):
            lines.append(
                f"    isolated {plugin}: kube-scheduler {t.describe()} ours {o.describe()}"
            )
    if result.repro is not None and result.repro.get("path"):
        lines.append(f"    reproduction: {result.repro['path']}")
    return "\n".join(lines)


# -- API helpers --------------------------------------------------------------------------

_STRIP_META = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")


def trimmed(obj: dict) -> dict:
    """An object for a reproduction: without server bookkeeping (kept: spec, labels...)."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    for key in _STRIP_META:
        meta.pop(key, None)
    if out.get("kind") == "Pod" or "containers" in (out.get("spec") or {}):
        out.pop("status", None)
    else:
        status = out.get("status") or {}
        kept = ("allocatable", "images", "phase", "declaredFeatures")
        out["status"] = {k: status[k] for k in kept if k in status}
    return out


class RawApi:
    """Create (a conflict is no error) and list through ``self.kube``, for the runners."""

    kube: Any

    def _create(self, path: str, body: dict) -> dict | None:
        try:
            return self.kube.request("POST", path, body)
        except ApiError as exc:
            if exc.status == 409:
                return None
            raise

    def _list(self, path: str, **query: Any) -> list[dict]:
        return (self.kube.request("GET", path, query=query or None) or {}).get("items") or []


class Conformance(RawApi):
    """The real side (control plane, kube-scheduler, recording extender) plus the comparison."""

    def __init__(
        self,
        cp: ControlPlane,
        *,
        out: Callable[[str], None] = print,
        repro_dir: Path | None = None,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        """``feature_gates``: kube-scheduler's ``--feature-gates`` (none: v1.36's defaults);
        the control plane's kube-apiserver needs the matching ones
        (``extender.controlplane.apiserver_args``)."""
        from extender.kube import api_client
        from extender.scenario.kube import Kube

        self.cp = cp
        self.out = out
        self.repro_dir = repro_dir
        self.feature_gates = dict(feature_gates or {})
        self.kube = Kube(api_client(str(cp.kubeconfig)), out=lambda *a: None)
        self.extender: RecordingExtender | None = None
        self.scheduler_name = "kube-scheduler-conformance"
        self._probe = 0
        # Creating pods one request at a time dominates a case: a few in flight at once.
        self.pool = ThreadPoolExecutor(max_workers=6, thread_name_prefix="conformance")

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> Conformance:
        self.extender = RecordingExtender()
        for pc in gen.priority_classes():
            self._create("/apis/scheduling.k8s.io/v1/priorityclasses", pc)
        self._create("/apis/node.k8s.io/v1/runtimeclasses", gen.runtime_class())
        self.cp.start_scheduler(
            scheduler_config(self.extender.url),
            name=self.scheduler_name,
            feature_gates=self.feature_gates,
        )
        return self

    def stop(self) -> None:
        self.cp.stop_component(self.scheduler_name)
        if self.extender is not None:
            self.extender.close()
        self.pool.shutdown(wait=False)

    def scheduler_log(self, lines: int = 40) -> str:
        return self.cp.log_tail(self.scheduler_name, lines)

    # -- case setup -----------------------------------------------------------------------

    def setup(self, case: Case) -> None:
        for ns, labels in case.namespaces.items():
            self._create(
                "/api/v1/namespaces",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns, "labels": labels},
                },
            )
        self.create_workloads(case)
        # Before the nodes and pods: the barrier only proves that kube-scheduler has the node
        # and pod events; its storage informers started with the others and have had the
        # storage objects' events for as long as the nodes' and pods' took.
        self.create_storage(case)
        self.create_dra(case)
        for node in case.nodes:
            self.create_node(node)
        for pod in case.existing_pods:
            ns = pod["metadata"]["namespace"]
            self.kube.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
            if (pod["metadata"].get("annotations") or {}).get(gen.TERMINATING_ANNOTATION):
                # Held by its finalizer: it stays, with a deletionTimestamp.
                self._delete_pod(ns, pod["metadata"]["name"])
        self.barrier(case)

    def create_workloads(self, case: Case) -> None:
        """Create the case's Services and controllers, then point the pods' owner references
        at the created objects' uids. Nothing runs the controllers (no kube-controller-manager):
        they are objects kube-scheduler reads. They go first, so that by the barrier's end
        kube-scheduler's informers have long had them."""
        uids: dict[tuple[str, str, str], str] = {}
        for obj in case.workloads:
            kind, meta = WORKLOAD_KINDS[obj["kind"]], obj["metadata"]
            created = self.kube.request("POST", namespaced_path(kind, meta["namespace"]), obj)
            uids[(obj["kind"], meta["namespace"], meta["name"])] = created["metadata"]["uid"]
        for pod in (*case.existing_pods, *case.pending_pods):
            ns = pod["metadata"]["namespace"]
            for ref in pod["metadata"].get("ownerReferences") or ():
                ref["uid"] = uids[(ref["kind"], ns, ref["name"])]

    def create_storage(self, case: Case) -> None:
        """Create the case's StorageClasses, CSINodes, claims and volumes (in that order),
        bound pairs already bound: a PV's claimRef gets its claim's uid, and each object's
        ``status`` is written through the status subresource (no PV controller runs)."""
        uids: dict[tuple[str, str], str] = {}
        for obj in case.storage:
            kind = STORAGE_KINDS[obj["kind"]]
            body = {k: v for k, v in obj.items() if k != "status"}
            ref = (body.get("spec") or {}).get("claimRef")
            if ref is not None:
                body = copy.deepcopy(body)
                if ref.get("uid") is None:
                    del body["spec"]["claimRef"]["uid"]  # pre-bound by name
                else:
                    body["spec"]["claimRef"]["uid"] = uids[(ref["namespace"], ref["name"])]
            created = self.kube.request("POST", storage_path(kind, obj), body)
            meta = created["metadata"]
            if obj["kind"] == "PersistentVolumeClaim":
                uids[(meta["namespace"], meta["name"])] = meta["uid"]
            if obj.get("status"):
                self.kube.request(
                    "PATCH",
                    f"{storage_path(kind, obj)}/{meta['name']}/status",
                    {"status": obj["status"]},
                    content_type="application/merge-patch+json",
                )

    def ensure_claim_controller(self) -> None:
        """kube-controller-manager with only the resourceclaim-controller (claims from
        ResourceClaimTemplates, reservations of deleted pods dropped), for DRA cases."""
        if not self.cp.running().get(CLAIM_CONTROLLER):
            self.cp.start_controller_manager(
                controllers="resourceclaim-controller", name=CLAIM_CONTROLLER
            )

    def create_dra(self, case: Case) -> None:
        """Create the case's DeviceClasses, ResourceSlices, templates and claims (in that
        order); a claim's ``status`` (an allocation) goes through the status subresource."""
        if case.dra:
            self.ensure_claim_controller()
        for obj in case.dra:
            kind = DRA_KINDS[obj["kind"]]
            body = {k: v for k, v in obj.items() if k != "status"}
            try:
                created = self.kube.request("POST", storage_path(kind, obj), body)
            except ApiError as exc:
                if exc.status != 422:
                    raise
                raise AssertionError(
                    f"the apiserver rejected generated {obj['kind']} "
                    f"{obj['metadata']['name']}: {exc.message}\n{json.dumps(body, indent=1)}"
                ) from exc
            if obj.get("status"):
                self.kube.request(
                    "PATCH",
                    f"{storage_path(kind, obj)}/{created['metadata']['name']}/status",
                    {"status": obj["status"]},
                    content_type="application/merge-patch+json",
                )

    def delete_dra(self, case: Case) -> None:
        """Delete the claims of the case's namespaces (generated ones too; finalizers dropped:
        the scheduler's allocations carry one), templates, slices and classes."""
        if not case.dra:
            return
        for ns in case.namespaces:
            for kind in (RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES):
                path = namespaced_path(kind, ns)
                for obj in self._list(path):
                    force_delete(self.kube, path, obj["metadata"]["name"])
        for kind in (RESOURCE_SLICES, DEVICE_CLASSES):
            self.kube.request(
                "DELETE", kind.path, query={"labelSelector": f"{CASE_LABEL}={case.case_id}"}
            )

    def delete_storage(self, case: Case) -> None:
        """Delete the case's storage objects; the protection finalizers (no controller
        removes them) are dropped first."""
        for obj in reversed(case.storage):
            kind = STORAGE_KINDS[obj["kind"]]
            path = f"{storage_path(kind, obj)}/{obj['metadata']['name']}"
            try:
                if obj["kind"] in ("PersistentVolumeClaim", "PersistentVolume"):
                    self.kube.request(
                        "PATCH",
                        path,
                        {"metadata": {"finalizers": None}},
                        content_type="application/merge-patch+json",
                    )
                self.kube.request("DELETE", path)
            except ApiError as exc:
                if exc.status != 404:
                    raise

    def create_node(self, node: dict) -> None:
        body = {k: v for k, v in node.items() if k != "status"}
        self.kube.request("POST", "/api/v1/nodes", body)
        name = node["metadata"]["name"]
        # No kubelet: report allocatable, images and readiness as one would.
        self.kube.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": node["status"]},
            content_type="application/merge-patch+json",
        )

    def barrier_node(self, case: Case) -> dict:
        name = f"{case.case_id}-barrier"
        allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    gen.HOSTNAME: name,
                    CASE_LABEL: case.case_id,
                    BARRIER_LABEL: case.case_id,
                },
            },
            "spec": {
                "taints": [{"key": BARRIER_LABEL, "value": case.case_id, "effect": "NoSchedule"}]
            }
            if case.barrier_taint
            else {},
            "status": {
                "capacity": dict(allocatable),
                "allocatable": allocatable,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            },
        }

    def barrier(self, case: Case, timeout: float = 60.0) -> None:
        """Wait until kube-scheduler has seen every node and pod event of the setup."""
        assert self.extender is not None
        barrier = self.barrier_node(case)
        self.create_node(barrier)
        ns = next(iter(case.namespaces))
        deadline = time.monotonic() + timeout
        while True:
            self._probe += 1
            name = f"probe-{self._probe}"
            probe = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "schedulerName": PROFILE,
                    "terminationGracePeriodSeconds": 0,
                    "nodeSelector": {BARRIER_LABEL: case.case_id},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "c", "image": gen.PAUSE_IMAGE}],
                },
            }
            self.kube.request("POST", f"/api/v1/namespaces/{ns}/pods", probe)
            key = f"{ns}/{name}"
            retry = time.monotonic() + 10
            while time.monotonic() < min(retry, deadline):
                names = self.extender.recorded(key)
                if names == [barrier["metadata"]["name"]]:
                    self._delete_pod(ns, name)
                    self.extender.forget([key])
                    return
                time.sleep(0.05)
            self._delete_pod(ns, name)
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"barrier for {case.case_id}: kube-scheduler never sent the probe with "
                    f"only the barrier node (got {self.extender.recorded(key)}); "
                    f"kube-scheduler log:\n{self.scheduler_log()}"
                )

    def _delete_pod(self, ns: str, name: str) -> None:
        try:
            self.kube.request(
                "DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", {"gracePeriodSeconds": 0}
            )
        except ApiError as exc:
            if exc.status != 404:
                raise

    def teardown(self, case: Case) -> None:
        for pod in case.existing_pods:
            if gen.HOLD_FINALIZER in (pod["metadata"].get("finalizers") or ()):
                ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
                try:
                    self.kube.request(
                        "PATCH",
                        f"/api/v1/namespaces/{ns}/pods/{name}",
                        {"metadata": {"finalizers": None}},
                        content_type="application/merge-patch+json",
                    )
                except ApiError as exc:
                    if exc.status != 404:
                        raise
        for ns in case.namespaces:
            self.kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods", {"gracePeriodSeconds": 0})
        for obj in case.workloads:
            kind, meta = WORKLOAD_KINDS[obj["kind"]], obj["metadata"]
            path = f"{namespaced_path(kind, meta['namespace'])}/{meta['name']}"
            try:
                # Background: a ReplicationController's default (orphan) adds a finalizer only
                # the garbage collector removes, and none runs here: the object would stay
                # "being deleted" and a rerun of the case in this cluster could not create it.
                self.kube.request("DELETE", path, {"propagationPolicy": "Background"})
            except ApiError as exc:
                if exc.status != 404:
                    raise
        self.delete_storage(case)
        self.delete_dra(case)
        self.kube.request(
            "DELETE", "/api/v1/nodes", query={"labelSelector": f"{CASE_LABEL}={case.case_id}"}
        )
        # Namespaces stay: without a namespace controller a deleted one would stay Terminating
        # and refuse the pods of a rerun of the same seed.

    def state(self, case: Case) -> tuple[list[dict], list[dict], ApiObjects]:
        """Nodes, bound pods, namespace labels and workloads as the apiserver serves them."""
        nodes = self._list("/api/v1/nodes", labelSelector=f"{CASE_LABEL}={case.case_id}")
        pods = []
        objects = ApiObjects()
        for ns in case.namespaces:
            for kind in WORKLOAD_KINDS.values():
                objects.workloads.setdefault(kind, []).extend(self._list(namespaced_path(kind, ns)))
            pods += [
                p
                for p in self._list(f"/api/v1/namespaces/{ns}/pods")
                if (p.get("spec") or {}).get("nodeName")
            ]
            ns_obj = self.kube.get(f"/api/v1/namespaces/{ns}") or {}
            objects.namespace_labels[ns] = (ns_obj.get("metadata") or {}).get("labels") or {}
        if case.storage:
            for kind in STORAGE_KINDS.values():
                if kind.namespaced:
                    found = [
                        o for ns in case.namespaces for o in self._list(namespaced_path(kind, ns))
                    ]
                else:
                    found = self._list(kind.path, labelSelector=f"{CASE_LABEL}={case.case_id}")
                objects.workloads[kind] = found
        if case.dra:
            for kind in (DEVICE_CLASSES, RESOURCE_SLICES):
                objects.workloads[kind] = self._list(
                    kind.path, labelSelector=f"{CASE_LABEL}={case.case_id}"
                )
            objects.workloads[RESOURCE_CLAIMS] = [
                o
                for ns in case.namespaces
                for o in self._list(namespaced_path(RESOURCE_CLAIMS, ns))
            ]
        return nodes, pods, objects

    # -- observing kube-scheduler ------------------------------------------------------------

    def submit(self, pods: list[dict], scheduler: str, suffix: str = "") -> list[dict]:
        """Create pending pods for ``scheduler``; the created (defaulted) objects, in order."""

        def create(pod: dict) -> dict:
            body = copy.deepcopy(pod)
            body["spec"]["schedulerName"] = scheduler
            if suffix:
                body["metadata"]["name"] += suffix
            ns = body["metadata"]["namespace"]
            try:
                return self.kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body)
            except ApiError as exc:
                if exc.status != 422:
                    raise
                # A generator bug: say which object, so the seed can be fixed and replayed.
                raise AssertionError(
                    f"the apiserver rejected generated pod {ns}/{body['metadata']['name']}: "
                    f"{exc.message}\n{json.dumps(body, indent=1)}"
                ) from exc

        return list(self.pool.map(create, pods))

    def observe(
        self, pods: list[dict], timeout: float = WAIT_TIMEOUT, messages: bool = False
    ) -> dict[str, Verdict]:
        """kube-scheduler's feasible set for each pod (keyed ``ns/name``); with ``messages``,
        also its FailedScheduling message (waits for every pod's PodScheduled condition)."""
        assert self.extender is not None
        keys = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods}
        namespaces = {p["metadata"]["namespace"] for p in pods}
        verdicts: dict[str, Verdict] = {}
        conditions: dict[str, dict] = {}

        def done() -> bool:
            return len(verdicts) == len(keys) and (not messages or keys <= set(conditions))

        deadline = time.monotonic() + timeout
        while True:
            for key in keys - set(verdicts):
                names = self.extender.recorded(key)
                if names is not None:
                    verdicts[key] = Verdict(frozenset(names))
            if done():
                break
            for ns in namespaces:
                for p in self._list(f"/api/v1/namespaces/{ns}/pods"):
                    key = f"{ns}/{p['metadata']['name']}"
                    for cond in (p.get("status") or {}).get("conditions") or ():
                        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                            conditions[key] = cond
            for key, cond in conditions.items():
                if key not in keys or key in verdicts:
                    continue
                # The extender is called before the condition is written: check it again.
                names = self.extender.recorded(key)
                if names is not None:
                    verdicts[key] = Verdict(frozenset(names))
                elif cond.get("reason") == "Unschedulable":
                    verdicts[key] = Verdict(frozenset())
                else:
                    verdicts[key] = Verdict(
                        None, error=f"{cond.get('reason')}: {cond.get('message')}"
                    )
            if done():
                break
            if time.monotonic() > deadline:
                missing = sorted(keys - set(verdicts)) or sorted(keys - set(conditions))
                raise AssertionError(
                    f"kube-scheduler did not evaluate {missing[:5]} within {timeout:g}s; "
                    f"its log:\n{self.scheduler_log()}"
                )
            time.sleep(POLL)
        if messages:
            for key, verdict in verdicts.items():
                verdict.message = conditions[key].get("message") or ""
        return verdicts

    def refreshed(self, pods: list[dict]) -> list[dict]:
        """``pods`` as the apiserver serves them now (DRA: the resourceclaim-controller has
        written ``status.resourceClaimStatuses``, the names of the claims it generated)."""
        out = []
        for pod in pods:
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            out.append(self.kube.get(f"/api/v1/namespaces/{ns}/pods/{name}") or pod)
        return out

    # -- one case -------------------------------------------------------------------------

    def run_case(
        self, case: Case, *, isolate: bool = False, scores: int = 0, devices: int = 0
    ) -> Tally:
        """Load ``case``, compare every pending pod, diagnose disagreements, clean up. A DRA
        case also compares FailedScheduling messages, and with ``devices`` binds up to that
        many pods through kube-scheduler and compares the devices allocated."""
        started = time.monotonic()
        tally = Tally(cases=1)
        dra = bool(case.dra)
        self.setup(case)
        try:
            nodes, bound, objects = self.state(case)
            node_names = [n["metadata"]["name"] for n in nodes]
            created = self.submit(case.pending_pods, PROFILE)
            theirs = self.observe(created, messages=dra)
            if dra:
                # The claims generated from templates exist now (kube-scheduler waited for them).
                created = self.refreshed(created)
                nodes, bound, objects = self.state(case)
            full = filter_profile()
            results = []
            for pod in created:
                key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                ours = our_verdict(full, nodes, bound, pod, objects)
                if dra and theirs[key].feasible is None and ours.feasible is None:
                    ours = first_error_of_any_node(
                        ours, theirs[key], full, nodes, bound, pod, objects
                    )
                results.append(
                    PodResult(
                        case.case_id,
                        case.seed,
                        pod["metadata"]["name"],
                        theirs[key],
                        ours,
                        compare_messages=dra,
                    )
                )
            to_isolate = [
                (r, p)
                for r, p in zip(results, case.pending_pods, strict=True)
                if isolate or not r.agree
            ]
            if to_isolate:
                self.isolate(
                    to_isolate, nodes, bound, objects, case_plugins(case), case if dra else None
                )
            for result, pod in zip(results, created, strict=True):
                if not result.agree or any(not _same(t, o) for t, o in result.isolated.values()):
                    result.repro = self.reproduction(result, pod, nodes, bound, objects)
                    if result.agree:
                        # Only an isolated plugin disagrees: still a disagreement to report.
                        tally.disagreements.append(result)
                tally.add(result, node_names)
            if scores:
                # Last: binding changes the state the feasibility answers were computed on.
                tally.add_scores(self.score_checks(case, created, results, scores))
            if devices and dra:
                tally.device_checks.extend(self.device_checks(case, results, devices))
        finally:
            self.teardown(case)
            if self.extender is not None:
                self.extender.forget(list(self.extender.calls))
        tally.seconds = time.monotonic() - started
        return tally

    def isolate(
        self,
        items: list[tuple[PodResult, dict]],
        nodes: list[dict],
        bound: list[dict],
        objects: ApiObjects,
        plugins: tuple[str, ...] = FILTER_PLUGINS,
        dra_case: Case | None = None,
    ) -> None:
        """Each pod again through every single-plugin profile, on both sides."""
        originals = [pod for _, pod in items]
        batches = {
            plugin: self.submit(originals, isolated_profile_name(plugin), "-" + plugin.lower())
            for plugin in plugins
        }
        theirs = self.observe([pod for batch in batches.values() for pod in batch])
        if dra_case is not None:
            batches = {plugin: self.refreshed(batch) for plugin, batch in batches.items()}
            nodes, bound, objects = self.state(dra_case)
        for plugin, created in batches.items():
            profile = filter_profile([plugin])
            for (result, _), pod in zip(items, created, strict=True):
                key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                ours = our_verdict(profile, nodes, bound, pod, objects)
                result.isolated[plugin] = (theirs[key], ours)

    def reproduction(
        self,
        result: PodResult,
        pod: dict,
        nodes: list[dict],
        bound: list[dict],
        objects: ApiObjects | None = None,
    ) -> dict:
        """A minimal reproduction: the pod, each disputed node, the pods bound there."""
        theirs, ours = result.theirs, result.ours
        disputed: set[str] = set()
        if theirs.feasible is not None and ours.feasible is not None:
            disputed = set(theirs.feasible ^ ours.feasible)
        plugins = {ours.rejected[n][0] for n in disputed if n in ours.rejected}
        plugins |= {p for p, (t, o) in result.isolated.items() if not _same(t, o)}
        by_name = {n["metadata"]["name"]: n for n in nodes}
        cluster_wide = bool(plugins & {"PodTopologySpread", "InterPodAffinity"})
        repro: dict[str, Any] = {
            "seed": result.seed,
            "case": result.case_id,
            "pod": trimmed(pod),
            "plugins": sorted(plugins),
            "kube_scheduler": sorted(theirs.feasible) if theirs.feasible is not None else None,
            "kube_scheduler_error": theirs.error,
            "ours": sorted(ours.feasible) if ours.feasible is not None else None,
            "ours_error": ours.error,
            "nodes": [
                {
                    "node": trimmed(by_name[name]),
                    "kube_scheduler": "feasible" if name in (theirs.feasible or ()) else "rejected",
                    "ours": "feasible"
                    if name in (ours.feasible or ())
                    else "rejected by {}: {}".format(*ours.rejected.get(name, ("?", ""))),
                    "pods_on_node": [
                        trimmed(p) for p in bound if p["spec"].get("nodeName") == name
                    ],
                }
                for name in sorted(disputed)
                if name in by_name
            ],
            "isolated": {
                p: {"kube_scheduler": t.describe(), "ours": o.describe()}
                for p, (t, o) in result.isolated.items()
                if not _same(t, o)
            },
        }
        if cluster_wide:
            # Spread and inter-pod affinity count pods on every node: give the whole state.
            repro["all_nodes"] = [trimmed(n) for n in nodes]
            repro["all_bound_pods"] = [trimmed(p) for p in bound]
        if objects is not None and objects.workloads.get(RESOURCE_SLICES) is not None:
            repro["dra"] = {
                kind.resource: [trimmed(o) for o in objects.workloads.get(kind, ())]
                for kind in (DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS)
            }
            repro["kube_scheduler_message"] = theirs.message
            repro["our_message"] = ours.message
        if objects is not None and plugins & set(VOLUME_PLUGINS):
            repro["storage"] = {
                kind.resource: [trimmed(o) for o in objects.workloads.get(kind, ())]
                for kind in STORAGE_KINDS.values()
            }
        if self.repro_dir is not None:
            self.repro_dir.mkdir(parents=True, exist_ok=True)
            path = self.repro_dir / f"{result.case_id}-{result.pod}.json"
            path.write_text(json.dumps(repro, indent=1, sort_keys=True))
            repro["path"] = str(path)
        return repro

    # -- scores: the node kube-scheduler binds vs the one schedule_pod picks ----------------

    def our_choice(
        self, pod: dict, nodes: list[dict], bound: list[dict], objects: ApiObjects
    ) -> tuple[str, list[NodePluginScores]]:
        """Our schedule_pod on the default profile: (node or "(no fit)", scores)."""
        from extender.config import default_profile

        fwk = Framework(default_profile(), registry(), objects.services())
        snapshot = Snapshot.from_objects(copy.deepcopy(nodes), copy.deepcopy(bound))
        try:
            result = SchedulingAlgorithm().schedule_pod(
                fwk, CycleState(), copy.deepcopy(pod), snapshot
            )
        except FitError as exc:
            return f"(no fit: {exc})", []
        return result.suggested_host, result.scores

    def bind_through_kube_scheduler(self, pod: dict, suffix: str = "") -> str:
        """Create ``pod`` for the conformance profile with the extender passing every node
        through; the node kube-scheduler bound it to (or "(not bound: why)")."""
        body = copy.deepcopy(pod)
        body["metadata"].setdefault("annotations", {})[EXTENDER_ANNOTATION] = "pass"
        created = self.submit([body], PROFILE, suffix)[0]
        ns, name = created["metadata"]["namespace"], created["metadata"]["name"]
        deadline = time.monotonic() + 30
        obj: dict = {}
        while time.monotonic() < deadline:
            obj = self.kube.get(f"/api/v1/namespaces/{ns}/pods/{name}") or {}
            node = (obj.get("spec") or {}).get("nodeName")
            if node:
                return node
            time.sleep(POLL)
        why = ""
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled":
                why = cond.get("message") or cond.get("reason") or ""
        return f"(not bound: {why or 'not tried'})"

    def run_score_case(self, case: Case) -> ScoreResult:
        """Let kube-scheduler bind ``case.pending_pods[0]`` and compare with our choice."""
        self.setup(case)
        try:
            nodes, bound, objects = self.state(case)
            pod = case.pending_pods[0]
            # Our answer for the pod as the apiserver would default it (dry run).
            ns = pod["metadata"]["namespace"]
            body = copy.deepcopy(pod)
            body["spec"]["schedulerName"] = PROFILE
            defaulted = self.kube.request(
                "POST", f"/api/v1/namespaces/{ns}/pods", body, query={"dryRun": "All"}
            )
            ours, scores = self.our_choice(defaulted, nodes, bound, objects)
            theirs = self.bind_through_kube_scheduler(pod)
            return ScoreResult(case.case_id, pod["metadata"]["name"], theirs, ours, scores)
        finally:
            self.teardown(case)

    def device_checks(self, case: Case, results: list[PodResult], limit: int) -> list[DeviceResult]:
        """Up to ``limit`` pods with claims that kube-scheduler and we both find feasible: each
        bound through kube-scheduler in turn, then its claims' ``status.allocation`` compared
        with what our allocator picks on the node kube-scheduler chose, in the state it chose
        in (the claims it just allocated read back unallocated)."""
        checks: list[DeviceResult] = []
        for result in results:
            if len(checks) >= limit:
                break
            original = next(p for p in case.pending_pods if p["metadata"]["name"] == result.pod)
            if not result.agree or not result.ours.feasible:
                continue
            if not original["spec"].get("resourceClaims") and not _asks_extended(original):
                continue
            if may_wait_for_binding(case, original):
                # A device with bindingConditions: kube-scheduler's PreBind would wait for the
                # driver to set them in the claim's device status (up to bindingTimeout, 10
                # minutes) and no driver runs here, so the pod would not be bound in time and
                # its devices would stay reserved for the checks after it. Skipped.
                continue
            ns = original["metadata"]["namespace"]
            claims_path = namespaced_path(RESOURCE_CLAIMS, ns)
            allocated_before = {
                c["metadata"]["name"]
                for c in self._list(claims_path)
                if (c.get("status") or {}).get("allocation")
            }
            refs = original["spec"].get("resourceClaims") or ()
            if not _asks_extended(original) and all(
                r.get("resourceClaimName") in allocated_before for r in refs
            ):
                continue  # nothing left to allocate: no devices to compare
            node = self.bind_through_kube_scheduler(original, "-dev")
            name = original["metadata"]["name"] + "-dev"
            pod = self.kube.get(f"/api/v1/namespaces/{ns}/pods/{name}") or {}
            if node.startswith("("):
                # Earlier checks took devices: fine if we find no node either.
                nodes, bound, objects = self.state(case)
                verdict = our_verdict(filter_profile(), nodes, bound, pod, objects)
                if verdict.feasible is not None and not verdict.feasible:
                    continue
                if verdict.feasible is None and node == f"(not bound: {verdict.error})":
                    continue  # the same Error both sides
                note = f"kube-scheduler {node}, ours {verdict.describe()}"
                checks.append(DeviceResult(case.case_id, name, node, {}, {}, note=note))
                continue
            names = pod_claim_names(pod)
            claims = {c["metadata"]["name"]: c for c in self._list(claims_path)}
            theirs = {
                pod_claim: allocation_summary(
                    (claims.get(claim) or {}).get("status", {}).get("allocation")
                )
                for pod_claim, claim in names.items()
                if claim not in allocated_before
            }
            # Our view of the state kube-scheduler decided in: this pod pending, its new
            # allocations undone.
            nodes, bound, objects = self.state(case)
            bound = [p for p in bound if p["metadata"].get("uid") != pod["metadata"].get("uid")]
            fresh = {names[c] for c in theirs}
            # Ours is computed with the pod pending: the claim kube-scheduler created in PreBind
            # for its extended resources does not exist yet.
            extended_claim = names.get(EXTENDED_CLAIM)
            undone = []
            for claim in objects.workloads.get(RESOURCE_CLAIMS, ()):
                if claim["metadata"]["name"] == extended_claim:
                    continue
                if claim["metadata"]["name"] in fresh:
                    claim = copy.deepcopy(claim)
                    claim.pop("status", None)
                    claim["metadata"].pop("finalizers", None)
                undone.append(claim)
            objects.workloads[RESOURCE_CLAIMS] = undone
            pending = copy.deepcopy(pod)
            pending["spec"].pop("nodeName", None)
            pending["status"] = {
                k: v for k, v in (pod.get("status") or {}).items() if k == "resourceClaimStatuses"
            }  # without extendedResourceClaimStatus: as kube-scheduler saw it
            verdict = our_verdict(filter_profile(), nodes, bound, pending, objects)
            try:
                mine = our_allocations(verdict.state, node)
            except Exception as exc:  # the plugin's state changed shape
                mine = f"reading our allocation failed: {exc!r}"
            if verdict.feasible is None:
                mine = f"our filter failed: {verdict.error}"
            if isinstance(mine, str):
                checks.append(DeviceResult(case.case_id, name, node, theirs, {}, note=mine))
                continue
            ours = {
                pod_claim: mine.get(pod_claim if pod_claim == EXTENDED_CLAIM else names[pod_claim])
                for pod_claim in theirs
            }
            note = (
                ""
                if node in (verdict.feasible or ())
                else "kube-scheduler's node is not feasible for us"
            )
            checks.append(DeviceResult(case.case_id, name, node, theirs, ours, note=note))
        return checks

    def score_checks(
        self, case: Case, created: list[dict], results: list[PodResult], limit: int
    ) -> list[ScoreResult]:
        """Up to ``limit`` pods of a case whose best node is clear by our scores: bind each
        through kube-scheduler (in turn; the state is re-read after each bind) and compare."""
        checks: list[ScoreResult] = []
        for pod, result in zip(created, results, strict=True):
            if len(checks) >= limit:
                break
            if not result.agree or len(result.ours.feasible or ()) < 2:
                continue
            nodes, bound, objects = self.state(case)
            ours, scores = self.our_choice(pod, nodes, bound, objects)
            totals = sorted((s.total_score for s in scores), reverse=True)
            if len(totals) < 2 or totals[0] - totals[1] < SCORE_MARGIN:
                continue
            original = next(
                p for p in case.pending_pods if p["metadata"]["name"] == pod["metadata"]["name"]
            )
            theirs = self.bind_through_kube_scheduler(original, "-bind")
            checks.append(
                ScoreResult(case.case_id, original["metadata"]["name"], theirs, ours, scores)
            )
        return checks


@dataclass
class DeviceResult:
    """One pod with claims bound by kube-scheduler: the devices its claims got there, and the
    ones our allocator picks on that node (per pod claim name: sorted results and the
    allocation's node selector)."""

    case_id: str
    pod: str
    node: str
    theirs: dict[str, Any]
    ours: dict[str, Any]
    note: str = ""

    @property
    def agree(self) -> bool:
        return not self.note and self.theirs == self.ours

    def describe(self) -> str:
        lines = [
            f"  DEVICES {'agree' if self.agree else 'DISAGREE'} {self.case_id}/{self.pod} "
            f"on {self.node}" + (f": {self.note}" if self.note else "")
        ]
        for claim in sorted(set(self.theirs) | set(self.ours)):
            lines.append(f"    claim {claim}: kube-scheduler {self.theirs.get(claim)}")
            lines.append(f"    claim {claim}: ours           {self.ours.get(claim)}")
        return "\n".join(lines)


def allocation_summary(allocation: dict | None) -> dict | None:
    """What a device comparison looks at in a claim's ``status.allocation``."""
    if not allocation:
        return None
    results = sorted(
        (
            r.get("request", ""),
            r.get("driver", ""),
            r.get("pool", ""),
            r.get("device", ""),
            bool(r.get("adminAccess")),
            tuple(sorted((r.get("consumedCapacity") or {}).items())),
        )
        for r in (allocation.get("devices") or {}).get("results") or ()
    )
    return {"results": results, "nodeSelector": allocation.get("nodeSelector")}


# The device checks' key for the claim kube-scheduler creates for a pod's extended resources
# served by DRA (DRAExtendedResource; ``status.extendedResourceClaimStatus`` names it).
EXTENDED_CLAIM = "(extended resources)"


def pod_claim_names(pod: dict) -> dict[str, str]:
    """Pod claim name -> ResourceClaim name (generated ones from ``resourceClaimStatuses``;
    :data:`EXTENDED_CLAIM` -> the claim for the pod's extended resources)."""
    generated = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out = {}
    for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = ref.get("resourceClaimName") or generated.get(ref.get("name"))
        if name:
            out[ref["name"]] = name
    extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get(
        "resourceClaimName"
    )
    if extended:
        out[EXTENDED_CLAIM] = extended
    return out


def our_allocations(state: CycleState | None, node: str) -> dict[str, dict | None] | str:
    """Claim name -> the allocation our DynamicResources Filter computed on ``node`` for each
    claim it had to allocate (its cycle state after filtering every node), or why not."""
    if state is None:
        return "our filter did not run"
    try:
        s = state.read("DynamicResources")
    except Exception as exc:  # a missing or renamed state: report, not crash
        return f"no DynamicResources state: {exc!r}"
    entry = getattr(s, "node_allocations", {}).get(node)
    if entry is None:
        return f"no allocation on {node}"
    # A NodeAllocation (results per claim to allocate, in store order), or the bare list.
    allocations = list(getattr(entry, "results", entry) or ())
    to_allocate = [claim for _, claim in s.claims.to_allocate()]
    if len(to_allocate) != len(allocations):
        return f"{len(allocations)} allocations for {len(to_allocate)} claims"
    extended = s.claims.extended_resource_claim()
    return {
        EXTENDED_CLAIM if claim is extended else claim["metadata"]["name"]: allocation_summary(
            result
        )
        for claim, result in zip(to_allocate, allocations, strict=True)
    }


@dataclass
class ScoreResult:
    case_id: str
    pod: str
    theirs: str
    ours: str
    scores: list[NodePluginScores]

    @property
    def agree(self) -> bool:
        return self.theirs == self.ours

    def describe(self) -> str:
        lines = [
            f"  SCORE {'agree' if self.agree else 'DISAGREE'} {self.case_id}/{self.pod}: "
            f"kube-scheduler bound {self.theirs}, ours picked {self.ours}"
        ]
        for entry in sorted(self.scores, key=lambda e: -e.total_score):
            parts = " ".join(f"{k}={v}" for k, v in sorted(entry.scores.items()))
            lines.append(f"    {entry.name}: total {entry.total_score} ({parts})")
        return "\n".join(lines)


def _asks_extended(pod: dict) -> bool:
    """Whether a DRA case's pod asks for an extended resource (served by a DeviceClass)."""
    for container in pod["spec"].get("containers") or ():
        for name in (container.get("resources") or {}).get("requests") or {}:
            if "/" in name:
                return True
    return False


def run_seeds(
    conformance: Conformance,
    seeds: Iterable[int],
    *,
    pods_per_seed: int = 25,
    max_nodes: int = 8,
    isolate: bool = False,
    scores: int = 0,
    out: Callable[[str], None] = print,
    volumes: bool = False,
    dra: bool = False,
    devices: int = 2,
    extended: bool = True,
) -> Tally:
    """Run ``seeds``: the general cases, with ``volumes`` the volume cases
    (:mod:`tests.conformance.volumes`; no score checks there: binding a pod with unbound
    claims would wait for a PV controller that does not run), with ``dra`` the DRA cases
    (:mod:`tests.conformance.dra`: messages compared too, and ``devices`` pods per seed bound
    to compare the devices allocated; no score checks; ``extended=False``: no pod asks for an
    extended resource served by a DeviceClass)."""
    from .dra import generate_dra_case
    from .volumes import generate_volume_case

    total = Tally()
    for seed in seeds:
        if dra:
            case = generate_dra_case(
                seed, pods=pods_per_seed, max_nodes=min(max_nodes, 6), extended=extended
            )
            scores = 0
        elif volumes:
            case = generate_volume_case(seed, pods=pods_per_seed, max_nodes=min(max_nodes, 6))
            scores = 0
        else:
            case = gen.generate(seed, pods=pods_per_seed, max_nodes=max_nodes)
        tally = conformance.run_case(
            case, isolate=isolate, scores=scores, devices=devices if dra else 0
        )
        out(
            f"seed {seed}: {tally.pods_agreed}/{tally.pods} agreed "
            f"({len(case.nodes) + 1} nodes, {len(case.existing_pods)} bound pods, "
            f"{tally.seconds:.1f}s)"
        )
        total.merge(tally)
    return total
