"""One scheduling attempt's algorithm: filter, score, select (upstream
``pkg/scheduler/schedule_one.go``: ``schedulePod``, ``findNodesThatFitPod``, ``prioritizeNodes``,
``selectHost``).

Both shells call this: the standalone scheduler for every pod it pops, the webhook for the
filter/prioritize verbs (with the candidate nodes kube-scheduler sent). The decision for a
pod and a cluster state is therefore the same in both.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from .cycle_state import CycleState
from .handle import MAX_EXTENDER_PRIORITY, Extender
from .node_info import NodeInfo
from .results import NodePluginScores, NodeScoreList
from .runtime import Framework
from .runtime.batch import NO_REJECT, BatchFilter
from .snapshot import Snapshot
from .status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
EXTENDER_PLUGIN_NAME = "Extender"

log = logging.getLogger(__name__)


class Diagnosis:
    """Why nodes were rejected: per-node statuses plus one status for nodes not listed.

    Statuses of nodes the batch forms rejected may be *deferred*: their per-node ``filter``
    call (which gives the exact status) runs when ``node_to_status`` or the plugin sets are
    first read, over a clone of the cycle state taken at filter time. A pod that is scheduled
    is never asked why the other nodes did not fit, so the call is usually never made.
    """

    def __init__(
        self,
        node_to_status: dict[str, Status] | None = None,
        absent_status: Status | None = None,
        unschedulable_plugins: set[str] | None = None,
        pending_plugins: set[str] | None = None,
        pre_filter_msg: str = "",
        post_filter_msg: str = "",
    ) -> None:
        self._node_to_status: dict[str, Status] = node_to_status or {}
        self.absent_status = absent_status
        self._unschedulable_plugins: set[str] = unschedulable_plugins or set()
        self._pending_plugins: set[str] = pending_plugins or set()
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = post_filter_msg
        self._deferred: list[tuple[list[NodeInfo], list[int], Callable[..., Status | None]]] = []
        self._deferred_count = 0

    def defer(
        self, nodes: list[NodeInfo], plugins: list[int], resolve: Callable[..., Status | None]
    ) -> None:
        """Rejections of ``nodes`` whose status is ``resolve(node, plugins[i])``, later."""
        if nodes:
            self._deferred.append((nodes, plugins, resolve))
            self._deferred_count += len(nodes)

    def _resolve(self) -> None:
        if not self._deferred:
            return
        deferred, self._deferred, self._deferred_count = self._deferred, [], 0
        for nodes, plugins, resolve in deferred:
            for info, k in zip(nodes, plugins, strict=True):
                status = resolve(info, k)
                if status is None:  # a batch form disagreed with its filter
                    log.warning("batch filter rejected %s, its filter did not", info.name)
                    continue
                self.add_rejection(info.name, status)

    # What the deferred rejections feed: read through these, after resolving them.

    @property
    def node_to_status(self) -> dict[str, Status]:
        self._resolve()
        return self._node_to_status

    @property
    def unschedulable_plugins(self) -> set[str]:
        self._resolve()
        return self._unschedulable_plugins

    @property
    def pending_plugins(self) -> set[str]:
        self._resolve()
        return self._pending_plugins

    @property
    def rejected_count(self) -> int:
        """How many nodes were rejected, deferred ones included (resolves nothing)."""
        return len(self._node_to_status) + self._deferred_count

    def status_of(self, node_name: str) -> Status | None:
        return self.node_to_status.get(node_name, self.absent_status)

    def add_rejection(self, node_name: str, status: Status) -> None:
        self._node_to_status[node_name] = status
        if status.plugin:
            if status.code == Code.PENDING:
                self._pending_plugins.add(status.plugin)
            else:
                self._unschedulable_plugins.add(status.plugin)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """The upstream FitError text (``FitError.Error`` in the framework's ``types.go``), e.g.
    ``0/5 nodes are available: 2 Insufficient cpu, 3 node(s) were unschedulable.``"""
    message = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        message += f" {diagnosis.pre_filter_msg}."
    else:
        # One count over every node's reasons: a Counter.update per node (its Mapping check
        # and call) cost more than the rest of a failed attempt at 500 nodes.
        histogram: Counter[str] = Counter(
            chain.from_iterable(status.reasons for status in diagnosis.node_to_status.values())
        )
        absent = num_all_nodes - len(diagnosis.node_to_status)
        if diagnosis.absent_status is not None and absent > 0:
            for reason in diagnosis.absent_status.reasons:
                histogram[reason] += absent
        if histogram:
            items = sorted(f"{count} {reason}" for reason, count in histogram.items())
            message += " " + ", ".join(items) + "."
    if diagnosis.post_filter_msg:
        message += " " + diagnosis.post_filter_msg
    return message


class FitError(Exception):
    """No node fits the pod; carries the diagnosis."""

    def __init__(self, pod: dict, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__()

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)


class SchedulingError(Exception):
    """An Error status during scheduling (plugin failure, extender failure)."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message)


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: Sequence[NodePluginScores] = field(default_factory=list)


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream ``numFeasibleNodesToFind``)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if pct >= 100:
        return num_all_nodes
    return max(num_all_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingAlgorithm:
    """Holds what persists between attempts: the round-robin start index and the RNG."""

    def __init__(
        self,
        extenders: Sequence[Extender] = (),
        rng: random.Random | None = None,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        self.extenders = list(extenders)
        self.rng = rng or random.Random()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0

    # -- filter -------------------------------------------------------------------------

    def num_to_find(self, fwk: Framework, num_all_nodes: int) -> int:
        if not fwk.has_score_plugins() and not self.extenders:
            return min(1, num_all_nodes)
        pct = fwk.percentage_of_nodes_to_score
        if pct is None:
            pct = self.percentage_of_nodes_to_score
        return num_feasible_nodes_to_find(pct, num_all_nodes)

    def find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: dict,
        snapshot: Snapshot,
        nodes: list[NodeInfo] | None = None,
        *,
        evaluate_all: bool = False,
    ) -> tuple[list[NodeInfo], Diagnosis]:
        """PreFilter, Filter (and extender filters) over ``nodes`` (default: the snapshot).

        With ``evaluate_all`` every node is filtered (no early stop, no round-robin): the
        webhook must answer for each node kube-scheduler sent.
        """
        state.snapshot = snapshot
        diagnosis = Diagnosis()
        all_nodes = snapshot.node_info_list
        result, status, rejected_by = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        if status is not None:
            if status.code == Code.ERROR:
                raise SchedulingError(status)
            diagnosis.absent_status = status
            diagnosis.pre_filter_msg = status.message
            if status.code == Code.PENDING:
                diagnosis.pending_plugins.update(rejected_by)
            else:
                diagnosis.unschedulable_plugins.update(rejected_by)
            return [], diagnosis

        candidates = all_nodes if nodes is None else nodes
        if result is not None and result.node_names is not None:
            names = result.node_names
            candidates = [info for info in candidates if info.name in names]
            diagnosis.absent_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(result.plugins)}]",
            )
            diagnosis.unschedulable_plugins.update(result.plugins)

        feasible = self._filter(fwk, state, pod, candidates, diagnosis, evaluate_all)
        feasible = self._extender_filter(pod, feasible, diagnosis)
        return feasible, diagnosis

    def _filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        diagnosis: Diagnosis,
        evaluate_all: bool,
    ) -> list[NodeInfo]:
        n = len(nodes)
        if n == 0:
            return []
        if evaluate_all:
            to_find, start = n, 0
        else:
            to_find = self.num_to_find(fwk, n)
            start = self.next_start_node_index % n
        feasible: list[NodeInfo] = []
        if not fwk.has_filter_plugins():
            feasible = [nodes[(start + i) % n] for i in range(to_find)]
            if not evaluate_all:
                self.next_start_node_index = (start + len(feasible)) % n
            return feasible
        has_nominations = _has_nominations(fwk)
        batch = None if has_nominations else fwk.run_filter_batch(state, pod)
        rows = batch.table.rows(nodes) if batch is not None else None
        if batch is not None and rows is not None:
            return self._filter_batched(
                fwk, state, pod, nodes, diagnosis, evaluate_all, batch, rows, start, to_find
            )
        run = (
            fwk.run_filter_plugins_with_nominated_pods
            if has_nominations
            else fwk.run_filter_plugins
        )
        visits = (nodes[(start + i) % n] for i in range(n))
        try:
            _scan(((info, run(state, pod, info)) for info in visits), to_find, feasible, diagnosis)
        finally:
            if not evaluate_all:
                self._advance(start, n, feasible, diagnosis)
        return feasible

    def _advance(self, start: int, n: int, feasible: list[NodeInfo], diagnosis: Diagnosis) -> None:
        """The next cycle starts after the nodes this one visited (upstream
        ``nextStartNodeIndex``): the feasible ones and the rejected ones."""
        visited = len(feasible) + diagnosis.rejected_count
        self.next_start_node_index = (start + visited) % n

    def _filter_batched(
        self,
        fwk: Framework,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        diagnosis: Diagnosis,
        evaluate_all: bool,
        batch: BatchFilter,
        rows: np.ndarray,
        start: int,
        to_find: int,
    ) -> list[NodeInfo]:
        """:meth:`_filter` with the batch forms' answer: the same nodes visited in the same
        order with the same statuses, but a node the batch forms let pass costs a per-node call
        only for the plugins without a batch form, and none when there is none left."""
        n = len(nodes)
        order = np.arange(start, start + n) % n if start else np.arange(n)
        first = batch.first_reject[rows[order]]
        answered = batch.answered
        feasible: list[NodeInfo] = []
        try:
            if batch.complete:
                passing = first == NO_REJECT
                found = np.cumsum(passing)
                # Visit up to the node that completes `to_find` feasible ones, as the loop does.
                processed = n if found[-1] < to_find else int(np.searchsorted(found, to_find)) + 1
                kept = order[:processed][passing[:processed]]
                feasible.extend([nodes[i] for i in kept.tolist()])
                fwk.remember_rows(state, feasible, batch.table, rows[kept])
                failing = ~passing[:processed]
                out = [nodes[i] for i in order[:processed][failing].tolist()]
                if out:
                    # The exact statuses come from the rejecting plugins' filter, when read.
                    frozen = state.clone()
                    diagnosis.defer(
                        out,
                        first[:processed][failing].tolist(),
                        lambda info, k: fwk.run_filter_plugins(frozen, pod, info, answered, k),
                    )
                return feasible
            checked = (
                (nodes[i], fwk.run_filter_plugins(state, pod, nodes[i], answered, k))
                for i, k in zip(order.tolist(), first.tolist(), strict=True)
            )
            _scan(checked, to_find, feasible, diagnosis)
        finally:
            if not evaluate_all:
                self._advance(start, n, feasible, diagnosis)
        return feasible

    def _extender_filter(
        self, pod: dict, feasible: list[NodeInfo], diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        for extender in self.extenders:
            if not feasible:
                break
            if not extender.is_filter() or not extender.is_interested(pod):
                continue
            try:
                kept, failed, failed_unresolvable = extender.filter(pod, feasible)
            except Exception as exc:
                if extender.ignorable:
                    continue
                raise SchedulingError(Status.error(exc)) from exc
            for name, message in failed_unresolvable.items():
                diagnosis.node_to_status[name] = Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, plugin=EXTENDER_PLUGIN_NAME
                )
            for name, message in failed.items():
                if name not in failed_unresolvable:
                    diagnosis.node_to_status[name] = Status(
                        Code.UNSCHEDULABLE, message, plugin=EXTENDER_PLUGIN_NAME
                    )
            if len(kept) < len(feasible):
                diagnosis.unschedulable_plugins.add(EXTENDER_PLUGIN_NAME)
            feasible = kept
        return feasible

    # -- score --------------------------------------------------------------------------

    def prioritize_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        failures: dict[str, Status] | None = None,
    ) -> Sequence[NodePluginScores]:
        """PreScore, Score, NormalizeScore, weights and extender priorities (upstream
        ``prioritizeNodes``). With ``failures``, a failing plugin is recorded there and left
        out of the totals instead of failing the call (the extender's prioritize verb)."""
        if not fwk.has_score_plugins() and not self.extenders:
            return [NodePluginScores(info.name, total_score=1) for info in nodes]
        status = fwk.run_pre_score_plugins(state, pod, nodes, failures)
        if status is not None:
            raise SchedulingError(status)
        scores, status = fwk.run_score_plugins(state, pod, nodes, failures)
        if status is not None:
            raise SchedulingError(status)
        if self.extenders:
            scores = list(scores)  # the extenders add to the entries' totals
        by_name = {entry.name: entry for entry in scores} if self.extenders else {}
        for extender in self.extenders:
            if not extender.is_prioritizer() or not extender.is_interested(pod):
                continue
            try:
                priorities = extender.prioritize(pod, nodes)
            except Exception:
                continue  # prioritize errors are ignored upstream
            factor = extender.weight * (100 // MAX_EXTENDER_PRIORITY)
            for name, score in priorities.items():
                entry = by_name.get(name)
                if entry is not None:
                    entry.scores[extender.name] = score * factor
                    entry.total_score += score * factor
        return scores

    def select_host(self, scores: Sequence[NodePluginScores]) -> str:
        """Highest total; ties broken uniformly at random. Upstream (``selectHost``) samples
        a reservoir, one random draw per tie; one draw among the ties picks each of them with
        the same probability, without a Python step per node (a spreading workload leaves a
        third of the nodes tied: a draw per tie was a tenth of its cycle)."""
        if not scores:
            raise ValueError("empty priority list")
        if isinstance(scores, NodeScoreList):
            names, totals = scores.names, scores.totals
        else:
            names = [entry.name for entry in scores]
            totals = [entry.total_score for entry in scores]
        best_total = max(totals)
        best = totals.index(best_total)
        ties = totals.count(best_total)
        for _ in range(self.rng.randrange(ties) if ties > 1 else 0):
            best = totals.index(best_total, best + 1)
        return names[best]

    # -- whole attempt ------------------------------------------------------------------

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: dict,
        snapshot: Snapshot,
        placement: Sequence[str] | None = None,
    ) -> ScheduleResult:
        """Pick a node for ``pod`` or raise :class:`FitError` / :class:`SchedulingError`.

        ``placement``: the names of the only nodes the pod may go to (a pod group cycle's
        placement, upstream ``ListNodesInPlacement``); plugins still see the whole snapshot.
        """
        state.snapshot = snapshot
        candidates: list[NodeInfo] | None = None
        if placement is not None:
            info_map = snapshot.node_info_map
            candidates = [info_map[name] for name in placement if name in info_map]
        num_nodes = len(snapshot) if candidates is None else len(candidates)
        if num_nodes == 0:
            raise SchedulingError(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE))
        feasible: list[NodeInfo] = []
        diagnosis: Diagnosis | None = None
        nominated = (pod.get("status") or {}).get("nominatedNodeName")
        if (
            nominated
            and nominated in snapshot.node_info_map
            and (placement is None or nominated in placement)
        ):
            feasible, diagnosis = self.find_nodes_that_fit(
                fwk, state, pod, snapshot, [snapshot.node_info_map[nominated]], evaluate_all=True
            )
            if not feasible:
                state = _fresh_state(state)
        if not feasible:
            feasible, diagnosis = self.find_nodes_that_fit(fwk, state, pod, snapshot, candidates)
        assert diagnosis is not None
        if not feasible:
            raise FitError(pod, num_nodes, diagnosis)
        evaluated = len(feasible) + diagnosis.rejected_count
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1)
        scores = self.prioritize_nodes(fwk, state, pod, feasible)
        return ScheduleResult(self.select_host(scores), evaluated, len(feasible), scores)


def _scan(
    checked: Iterable[tuple[NodeInfo, Status | None]],
    to_find: int,
    feasible: list[NodeInfo],
    diagnosis: Diagnosis,
) -> None:
    """Nodes in visiting order with their filter status (computed as the walk reaches them):
    the feasible ones into ``feasible`` until ``to_find``, the rejected ones into the
    diagnosis; an Error ends the walk (upstream ``findNodesThatPassFilters``)."""
    for info, status in checked:
        if status is None:
            feasible.append(info)
            if len(feasible) >= to_find:
                break
        elif status.code == Code.ERROR:
            raise SchedulingError(status)
        else:
            diagnosis.add_rejection(info.name, status)


def _fresh_state(state: CycleState) -> CycleState:
    fresh = CycleState()
    fresh.snapshot = state.snapshot
    fresh.deadline, fresh.budget = state.deadline, state.budget
    fresh.record_plugin_metrics = state.record_plugin_metrics
    return fresh


def _has_nominations(fwk: Framework) -> bool:
    return fwk.nominator.has_nominated_pods()
