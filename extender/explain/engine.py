"""One pod, one snapshot: the decision kube-scheduler would make, broken down per node and
per plugin.

The same :class:`~extender.framework.SchedulingAlgorithm` and
:class:`~extender.framework.Framework` as both shells run the pod's profile; differences
from one scheduling attempt, on purpose (as in :mod:`extender.testing`):

* every node is filtered (no early stop, no round-robin start), so each node has a verdict;
  when nothing fits kube-scheduler filters every node too, so the FitError counts agree;
* the feasible nodes are scored even when only one fits (kube-scheduler then skips scoring);
* PostFilter (preemption) runs through ``fwk.run_post_filter_plugins`` on a *dry-run twin*
  of the framework: its client records the evictions it is asked for and writes nothing,
  no events, no metrics, no nominator. The victims are read from those recorded calls and
  the candidate node from the PostFilterResult.

The config's ``extenders:`` (given as ``extenders``, e.g. the standalone scheduler's
:class:`~extender.scheduler.http_extender.HTTPExtender` s) are called through the algorithm as
kube-scheduler calls them, with their read-only verbs only (:class:`ReadOnlyExtender`: filter
and prioritize; never bind, never preempt); what each did is in
:attr:`Explanation.extenders`, and whatever was left out is said in :attr:`Explanation.notes`.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from extender.framework import budget
from extender.framework.cycle_state import CycleState
from extender.framework.handle import MAX_EXTENDER_PRIORITY, NoEvents, NoMetrics, NoNominator
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.pod_info import pod_priority
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.schedule import (
    NO_NODES_AVAILABLE,
    Diagnosis,
    SchedulingAlgorithm,
    SchedulingError,
    fit_error_message,
)
from extender.framework.snapshot import Snapshot
from extender.framework.status import _CODE_NAMES, Code, Status

from .dra import add_details as add_dra_details

SCHEMA_VERSION = 1
KIND = "SchedulingExplanation"


# -- the dry-run client ------------------------------------------------------------------------


@dataclass
class Eviction:
    namespace: str
    name: str
    uid: str


class DryRunClient:
    """A client that writes nothing: records pod deletions (preemption victims), ignores
    status patches, refuses to bind."""

    def __init__(self) -> None:
        self.evictions: list[Eviction] = []

    def bind(self, pod: dict, node_name: str) -> None:
        raise RuntimeError("dry run: no binding")

    def delete_pod(self, namespace: str, name: str, uid: str | None = None, **_: Any) -> None:
        self.evictions.append(Eviction(namespace, name, uid or ""))

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict | None:
        return None

    # ResourceClaims: a dry run reads them from the cluster it was given and writes nothing.
    def get_resource_claim(self, namespace: str, name: str) -> dict | None:
        return None

    def create_resource_claim(self, namespace: str, claim: dict) -> dict:
        return claim

    def delete_resource_claim(self, namespace: str, name: str) -> None:
        return None

    def update_resource_claim(self, claim: dict) -> dict:
        return claim

    def update_resource_claim_status(self, claim: dict) -> dict:
        return claim

    def patch_resource_claim_status(self, namespace: str, name: str, patch: dict) -> dict:
        return {}


@dataclass
class ExtenderReport:
    """What one configured extender did for one explanation."""

    name: str
    called: list[str] = field(default_factory=list)  # the verbs called, in order
    # Verb -> why it failed, for every verb that failed: a down extender fails filter and
    # then prioritize, and the filter failure is the one that changed the verdict.
    failed: dict[str, str] = field(default_factory=dict)
    ignorable: bool = False

    @property
    def answered(self) -> list[str]:
        """The verbs called that answered."""
        return [verb for verb in self.called if verb not in self.failed]

    @property
    def error(self) -> str | None:
        """The first failure, ``verb: message`` (None: every verb called answered)."""
        for verb in self.called:
            if verb in self.failed:
                return f"{verb}: {self.failed[verb]}"
        return None


class ReadOnlyExtender:
    """A configured extender as explain and simulate may call it: ``filter`` and
    ``prioritize`` (they change nothing) go to it; it is never a binder and never asked to
    preempt. Each call is recorded in :attr:`report` (reset per explanation)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.weight: int = inner.weight
        self.ignorable: bool = inner.ignorable
        self.report = ExtenderReport(self.name, ignorable=self.ignorable)

    def reset(self) -> None:
        self.report = ExtenderReport(self.name, ignorable=self.ignorable)

    def is_interested(self, pod: dict) -> bool:
        return bool(self.inner.is_interested(pod))

    def is_filter(self) -> bool:
        return bool(self.inner.is_filter())

    def is_prioritizer(self) -> bool:
        return bool(self.inner.is_prioritizer())

    def is_binder(self) -> bool:
        return False

    def supports_preemption(self) -> bool:
        return False

    def _call(self, verb: str, fn: Any, *args: Any) -> Any:
        self.report.called.append(verb)
        try:
            return fn(*args)
        except Exception as exc:
            self.report.failed[verb] = str(exc)
            raise

    def filter(
        self, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        return self._call("filter", self.inner.filter, pod, nodes)  # type: ignore[no-any-return]

    def prioritize(self, pod: dict, nodes: list[NodeInfo]) -> dict[str, int]:
        return self._call("prioritize", self.inner.prioritize, pod, nodes)  # type: ignore[no-any-return]

    def process_preemption(self, pod: dict, node_to_victims: dict) -> dict:
        raise RuntimeError("dry run: extenders are not asked to preempt")

    def bind(self, pod: dict, node_name: str) -> None:
        raise RuntimeError("dry run: no binding")


def dry_run_twin(fwk: Framework, client: DryRunClient | None = None) -> Framework:
    """A framework of the same profile and plugins whose handle cannot write: a
    :class:`DryRunClient`, no events, no metrics, no nominator, same listers."""
    registry = Registry()
    for name, plugin in fwk.plugins.items():
        registry.register(name, type(plugin))
    services = replace(
        fwk.services,
        client=client or DryRunClient(),
        event_recorder=NoEvents(),
        metrics=NoMetrics(),
        nominator=NoNominator(),
        extenders=(),
        rng=random.Random(0),
    )
    return Framework(fwk.profile, registry, services)


def unbind(pod: dict) -> dict:
    """The pod as if it were not bound (``spec.nodeName`` removed), for explaining a bound
    pod against a snapshot without it."""
    spec = dict(pod.get("spec") or {})
    spec.pop("nodeName", None)
    status = dict(pod.get("status") or {})
    status["phase"] = "Pending"
    return {**pod, "spec": spec, "status": status}


# -- the result --------------------------------------------------------------------------------


@dataclass
class PluginScore:
    raw: int | None
    normalized: int
    weighted: int


@dataclass
class NodeVerdict:
    name: str
    status: Status | None  # None: fits
    scores: dict[str, PluginScore] = field(default_factory=dict)
    total: int | None = None
    chosen: bool = False
    # Why the plugin rejected the node, beyond its upstream reason (DynamicResources: which
    # claim and request got no devices, and why); one sentence each.
    detail: list[str] = field(default_factory=list)
    # The same, as data: {claim, request, reason, message} (extender.explain.dra).
    devices: list[dict] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.status is None


@dataclass
class Victim:
    namespace: str
    name: str
    priority: int
    uid: str = ""


@dataclass
class PreemptionOutcome:
    """What DefaultPreemption (any PostFilter) would do: ``node`` and ``victims`` when it
    helps, else ``message`` says why not."""

    evaluated: bool
    node: str = ""
    victims: list[Victim] = field(default_factory=list)
    message: str = ""


@dataclass
class Explanation:
    pod: dict
    profile: str
    num_nodes: int
    nodes: list[NodeVerdict] = field(default_factory=list)
    score_weights: dict[str, int] = field(default_factory=dict)
    chosen: list[str] = field(default_factory=list)
    fit_error: str | None = None
    error: str | None = None
    preemption: PreemptionOutcome | None = None
    bound_to: str = ""
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    # The config's extenders and what each did (empty: none configured, or not called).
    extenders: list[ExtenderReport] = field(default_factory=list)
    # What the explanation left out or could not know (extenders not called, a pod whose
    # schedulerName no profile has): one sentence each, shown with the verdict.
    notes: list[str] = field(default_factory=list)
    # The pod's PodScheduled condition as its scheduler last wrote it ({status, reason,
    # message}), None when it has none: what the real scheduler concluded.
    condition: dict[str, str] | None = None

    @property
    def contradicts_condition(self) -> bool:
        """Explain finds a node, while the scheduler that handled the pod recorded that it
        found none (``Unschedulable``) or failed (``SchedulerError``, e.g. an extender)."""
        c = self.condition
        return (
            self.verdict == "Schedulable"
            and c is not None
            and c["status"] == "False"
            and c["reason"] in ("Unschedulable", "SchedulerError")
        )

    @property
    def feasible(self) -> list[str]:
        return [v.name for v in self.nodes if v.fits]

    @property
    def verdict(self) -> str:
        if self.error:
            return "Error"
        return "Schedulable" if self.chosen else "Unschedulable"

    def node(self, name: str) -> NodeVerdict:
        for verdict in self.nodes:
            if verdict.name == name:
                return verdict
        raise KeyError(name)

    def reason_counts(self) -> dict[str, int]:
        """Reason -> number of nodes, as kube-scheduler's FitError counts them."""
        counts: dict[str, int] = {}
        for verdict in self.nodes:
            if verdict.status is not None:
                for reason in verdict.status.reasons:
                    counts[reason] = counts.get(reason, 0) + 1
        return counts


def code_name(code: Code) -> str:
    return _CODE_NAMES[code]


def pod_scheduled_condition(pod: dict) -> dict[str, str] | None:
    """The pod's ``PodScheduled`` condition: ``status``, ``reason``, ``message``."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            return {k: str(condition.get(k) or "") for k in ("status", "reason", "message")}
    return None


def disagreement_note(
    explanation: Explanation, config_source: str | None, extenders: int
) -> str | None:
    """When the verdict contradicts the pod's recorded condition: what its scheduler said,
    what explain evaluated, and (without ``--config``) how to include that scheduler's
    extenders and configuration. ``config_source``: the ``--config`` file, None without."""
    if not explanation.contradicts_condition:
        return None
    c = explanation.condition
    assert c is not None
    said = (
        f'the scheduler that handled this pod reported "{c["message"]}" (PodScheduled False, '
        f"{c['reason']}), but explain finds it schedulable"
    )
    if config_source is None:
        return (
            f"{said}: explain evaluated only profile {explanation.profile}'s default plugins "
            "(no --config), without that scheduler's extenders or configuration; rerun with "
            "--config <that scheduler's KubeSchedulerConfiguration> to include its extenders"
        )
    return (
        f"{said} with profile {explanation.profile} of {config_source} ({extenders} "
        f"extender{'s' if extenders != 1 else ''}): the cluster may have changed since that "
        f"attempt, or that scheduler's configuration is not {config_source}"
    )


# -- the explainer -----------------------------------------------------------------------------


class Explainer:
    """Explains pods against snapshots with one profile's framework.

    ``fwk`` runs Filter and Score. Preemption runs on ``fwk`` itself when its client is a
    :class:`DryRunClient`, else on a dry-run twin built on first use (``preemption=False``:
    never).
    """

    def __init__(
        self, fwk: Framework, *, preemption: bool = True, extenders: Sequence[Any] = ()
    ) -> None:
        self.fwk = fwk
        self.preemption = preemption
        # Each configured extender, read-only (ReadOnlyExtender): filter and prioritize.
        self.extenders = [
            e if isinstance(e, ReadOnlyExtender) else ReadOnlyExtender(e) for e in extenders
        ]
        self._twin: Framework | None = fwk if isinstance(fwk.client, DryRunClient) else None
        # The twin's client records evictions: one dry run at a time (the service's threads).
        self._lock = threading.Lock()
        self._calls = threading.Lock()

    def _dry_run(self) -> Framework:
        if self._twin is None:
            self._twin = dry_run_twin(self.fwk)
        return self._twin

    def explain(
        self,
        pod: dict,
        snapshot: Snapshot,
        candidates: list[NodeInfo] | None = None,
        *,
        bound_to: str = "",
    ) -> Explanation:
        """Filter ``candidates`` (default: every node of ``snapshot``), score the feasible
        ones, pick the best (all ties), or when none fits: the FitError and preemption."""
        fwk = self.fwk
        meta = pod.get("metadata") or {}
        result = Explanation(
            pod={
                "namespace": meta.get("namespace", "default"),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
                "priority": pod_priority(pod),
            },
            profile=fwk.profile_name,
            num_nodes=len(snapshot),
            score_weights=dict(fwk.score_weights),
            bound_to=bound_to,
            condition=pod_scheduled_condition(pod),
        )
        if len(snapshot) == 0:
            result.fit_error = NO_NODES_AVAILABLE
            return result
        if not self.extenders:
            self._run(result, pod, snapshot, candidates)
            return result
        with self._calls:  # the extenders' reports are per explanation
            for extender in self.extenders:
                extender.reset()
            try:
                self._run(result, pod, snapshot, candidates)
            finally:
                self._report_extenders(result)
        return result

    def _report_extenders(self, result: Explanation) -> None:
        result.extenders = [e.report for e in self.extenders]
        for report in result.extenders:
            # A non-ignorable filter failure is the explanation's Error; these two are not
            # visible in the verdict, so each is said (upstream findNodesThatPassExtenders
            # skips an ignorable extender's failed filter, prioritizeNodes ignores any
            # extender's failed prioritize).
            if "filter" in report.failed and report.ignorable:
                result.notes.append(
                    f"extender {report.name} (ignorable) failed filter "
                    f"({report.failed['filter']}); kube-scheduler skips an ignorable extender "
                    "whose filter fails, and so did this explanation: its filter was skipped, "
                    "so the nodes it would reject were not rejected"
                )
            if "prioritize" in report.failed:
                result.notes.append(
                    f"extender {report.name} failed prioritize ({report.failed['prioritize']}); "
                    "kube-scheduler ignores prioritize failures, so its scores are not counted"
                )
        if result.preemption is not None and any(
            e.inner.supports_preemption() for e in self.extenders
        ):
            result.notes.append(
                "the preemption dry run did not ask the extenders' preemptVerb which victims "
                "they accept"
            )

    def _run(
        self,
        result: Explanation,
        pod: dict,
        snapshot: Snapshot,
        candidates: list[NodeInfo] | None,
    ) -> None:
        """The attempt, within the pod budget as the scheduler's (``/explain`` is served by
        the extender's workers: a hostile pod must not hold one)."""
        state = CycleState()
        try:
            with budget.enforced(state, self.fwk.profile.pod_budget):
                self._attempt(result, state, pod, snapshot, candidates)
        except budget.OVER as exc:
            result.error = str(exc)

    def _attempt(
        self,
        result: Explanation,
        state: CycleState,
        pod: dict,
        snapshot: Snapshot,
        candidates: list[NodeInfo] | None,
    ) -> None:
        fwk = self.fwk
        algorithm = SchedulingAlgorithm(self.extenders, rng=random.Random(0))
        try:
            feasible, diagnosis = algorithm.find_nodes_that_fit(
                fwk, state, pod, snapshot, candidates, evaluate_all=True
            )
        except SchedulingError as exc:
            result.error = exc.status.message
            return
        result.diagnosis = diagnosis
        passed = {info.name for info in feasible}
        listed = snapshot.node_info_list if candidates is None else candidates
        for info in listed:
            status = None if info.name in passed else diagnosis.status_of(info.name)
            if status is None and info.name not in passed:
                status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "not evaluated")
            result.nodes.append(NodeVerdict(info.name, status))
        add_dra_details(fwk, state, snapshot, result.nodes)
        if feasible:
            try:
                self._score(result, algorithm, state, pod, feasible)
            except SchedulingError as exc:
                result.error = exc.status.message
            return
        if self.preemption and fwk.has_post_filter_plugins():
            with self._lock:
                result.preemption = self._preempt(pod, snapshot, diagnosis)
        result.fit_error = fit_error_message(len(snapshot), diagnosis)

    def _score(
        self,
        result: Explanation,
        algorithm: SchedulingAlgorithm,
        state: CycleState,
        pod: dict,
        feasible: list[NodeInfo],
    ) -> None:
        fwk = self.fwk
        entries = algorithm.prioritize_nodes(fwk, state, pod, feasible)
        raw = _raw_scores(fwk, state, pod, feasible)
        weights = dict(fwk.score_weights)
        # An extender's 0..MAX_EXTENDER_PRIORITY answer counts x weight x 10 (upstream
        # prioritizeNodes): shown as raw = its answer, normalized = answer x 10, its weight.
        factor = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        for extender in self.extenders:
            if "prioritize" in extender.report.answered:
                weights[extender.name] = extender.weight
                result.score_weights[extender.name] = extender.weight
        by_name = {v.name: v for v in result.nodes}
        for entry in entries:
            verdict = by_name[entry.name]
            verdict.total = entry.total_score
            for plugin, weighted in entry.scores.items():
                weight = weights.get(plugin, 1) or 1
                normalized = weighted // weight
                raw_score = raw.get((entry.name, plugin))
                if plugin not in fwk.score_weights:
                    raw_score = normalized // factor  # an extender's own answer
                verdict.scores[plugin] = PluginScore(raw_score, normalized, weighted)
        best = max(entry.total_score for entry in entries)
        result.chosen = sorted(e.name for e in entries if e.total_score == best)
        for name in result.chosen:
            by_name[name].chosen = True

    def _preempt(self, pod: dict, snapshot: Snapshot, diagnosis: Diagnosis) -> PreemptionOutcome:
        """The scheduler's ``_post_filter`` on the dry-run twin; sets the diagnosis'
        ``post_filter_msg`` as kube-scheduler does (part of the FitError message)."""
        twin = self._dry_run()
        client = twin.client
        assert isinstance(client, DryRunClient)
        client.evictions.clear()
        state = CycleState()
        state.snapshot = snapshot
        # PreFilter state is what the preemption dry run's filters read.
        _, status, _ = twin.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
        statuses = dict(diagnosis.node_to_status)
        if diagnosis.absent_status is not None:
            for info in snapshot.node_info_list:
                statuses.setdefault(info.name, diagnosis.absent_status)
        try:
            res, status = twin.run_post_filter_plugins(state, pod, statuses)
        except Exception as exc:  # a dry run must never take the explanation down
            return PreemptionOutcome(True, message=f"{type(exc).__name__}: {exc}")
        if status.code != Code.ERROR and status.message:
            diagnosis.post_filter_msg = status.message
        node = ""
        if res is not None and res.nominating_info is not None:
            node = res.nominating_info.nominated_node_name
        victims = []
        info = snapshot.get(node) if node else None
        by_uid = {p.uid: p for p in info.pods} if info is not None else {}
        for eviction in client.evictions:
            found = by_uid.get(eviction.uid)
            victims.append(
                Victim(
                    eviction.namespace,
                    eviction.name,
                    found.priority if found else 0,
                    eviction.uid,
                )
            )
        message = "" if node else status.message
        if status.code == Code.ERROR:
            message = status.message
        return PreemptionOutcome(True, node, victims, message)


def _raw_scores(
    fwk: Framework, state: CycleState, pod: dict, nodes: list[NodeInfo]
) -> dict[tuple[str, str], int]:
    """Each score plugin's answer before NormalizeScore (after PreScore ran on ``state``)."""
    raw: dict[tuple[str, str], int] = {}
    skip = state.skip_score_plugins
    for plugin in fwk.score_plugins:
        name = plugin.name
        if name in skip:
            continue
        try:
            for info in nodes:
                value, status = plugin.score(state, pod, info)
                if status is None or status.code == Code.SUCCESS:
                    raw[(info.name, name)] = value
        except Exception:
            continue
    return raw
