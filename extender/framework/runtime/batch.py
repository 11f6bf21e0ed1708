"""The fast paths of Filter and Score: plugins' batch forms over the columnar node table
(:mod:`extender.framework.columns`) and the per-node memo of plugins that declare their answer
a function of the pod's spec and the node (``memo_points``).

:class:`BatchPaths` is the part of :class:`~extender.framework.runtime.framework.Framework`
that runs them; the per-node calls stay the reference, and a batch form or memo hit must
answer exactly what they answer (``tests/unit/framework/test_batch_equality.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

import numpy as np
import orjson

from ..columns import NodeTable
from ..cycle_state import SCORE_ROWS_KEY, CycleState
from ..interfaces import BatchNormalizeScore
from ..node_info import NodeInfo
from ..status import Status, is_non_success
from .calls import SCORE_ANSWER, PluginCalls, log, score_answer, wrong_return

POD_SIGNATURE_KEY = "PodSignature"
# Specs remembered per node and memoized plugin: more than the workloads that usually
# interleave in the queue (the `mixed` benchmark has 20), few enough to bound the memory
# (at most nodes x memoized plugins x this many entries, each a reference to a shared answer).
MEMO_SPECS_PER_NODE = 32
# In a batch filter answer: the row is rejected by no batch form.
NO_REJECT = np.iinfo(np.int32).max


_BATCH_NORMALIZE: dict[type, bool] = {}


def batch_normalizes(ext: Any) -> TypeGuard[BatchNormalizeScore]:
    """``isinstance(ext, BatchNormalizeScore)``, remembered per class: a runtime-checkable
    protocol check costs microseconds, and it runs for every plugin in every cycle."""
    if ext is None:
        return False
    known = _BATCH_NORMALIZE.get(type(ext))
    if known is None:
        known = _BATCH_NORMALIZE[type(ext)] = isinstance(ext, BatchNormalizeScore)
    return known


class BatchFilter:
    """The batch forms' answer for one pod (:meth:`Framework.run_filter_batch`).

    ``first_reject[row]`` is the index (in the profile's filter order) of the first plugin
    whose batch form rejects the row, or :data:`NO_REJECT`; ``answered`` the indexes of the
    plugins that answered in batch; ``complete`` says no other filter plugin is left to run,
    so a row nobody rejected is feasible without a per-node call."""

    __slots__ = ("table", "first_reject", "answered", "complete")

    def __init__(
        self, table: NodeTable, first_reject: np.ndarray, answered: frozenset[int], complete: bool
    ) -> None:
        self.table = table
        self.first_reject = first_reject
        self.answered = answered
        self.complete = complete


class BatchPaths(PluginCalls):
    """Batch forms and memos for the runner (a mixin of ``Framework``, which builds the
    tables below from the profile)."""

    use_batch: bool
    # (index in the filter order, plugin name, its filter_batch)
    _batch_filters: list[tuple[int, str, Callable[..., Any]]]
    # (plugin name, its filter method, its memo or None), in the filter order
    _filter_calls: list[tuple[str, Callable[..., Any], dict | None]]
    _batch_scores: dict[str, Callable[..., Any]]
    _score_memos: dict[str, dict]
    _memos: dict[tuple[str, str], dict]

    def pod_signature(self, state: CycleState, pod: dict) -> bytes:
        """The pod's spec, canonical, computed once per cycle (the memo's key)."""
        signature = state.get(POD_SIGNATURE_KEY)
        if signature is None:
            signature = orjson.dumps(pod.get("spec") or {}, option=orjson.OPT_SORT_KEYS)
            state.write(POD_SIGNATURE_KEY, signature)
        return signature

    def _memo_for(self, plugin: Any, point: str) -> dict | None:
        """Per-node memo of a plugin that declares its answer a function of the pod's spec and
        the NodeInfo alone (``memo_points``): pods of one workload share their spec, and between
        two of them only the node the last one landed on changed (a new NodeInfo generation).

        ``memo[node name] = (generation, {pod signature: answer})``: a new generation starts
        an empty table, and a table holds at most ``MEMO_SPECS_PER_NODE`` specs (then it is
        emptied), so pods of several interleaved workloads all find their answers."""
        if point not in getattr(plugin, "memo_points", ()):
            return None
        return self._memos.setdefault((plugin.name, point), {})

    def run_filter_batch(self, state: CycleState, pod: dict) -> BatchFilter | None:
        """The batch forms of the filter plugins over the cycle's snapshot (``None``: no batch
        form answered, filter node by node). A batch form that raises is logged and treated
        as declining: the per-node call then reports the failure through the contract."""
        snapshot = state.snapshot
        if not self.use_batch or not self._batch_filters or snapshot is None:
            return None
        skip = state.skip_filter_plugins
        table: NodeTable | None = None
        first: np.ndarray | None = None
        answered: set[int] = set()
        for k, name, filter_batch in self._batch_filters:
            if skip and name in skip:
                continue
            if table is None:
                table = snapshot.table
            try:
                mask = filter_batch(state, pod, table)
            except Exception as exc:
                log.warning("plugin %s: filter_batch failed, filtering per node: %r", name, exc)
                continue
            if mask is None:
                continue
            if not isinstance(mask, np.ndarray) or mask.shape != (len(table),):
                log.warning(
                    "plugin %s: filter_batch %s, filtering per node",
                    name,
                    wrong_return(mask, f"None or a bool array of {len(table)} rows"),
                )
                continue
            if first is None:
                first = np.full(len(table), NO_REJECT, dtype=np.int32)
            first[~mask & (first == NO_REJECT)] = k
            answered.add(k)
        if table is None or first is None:
            return None
        complete = all(
            k in answered or name in skip for k, (name, _, _) in enumerate(self._filter_calls)
        )
        return BatchFilter(table, first, frozenset(answered), complete)

    def _raw_scores(
        self,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        name: str,
        score: Callable[..., Any],
    ) -> tuple[np.ndarray | list[int], Status | None]:
        """One plugin's scores of ``nodes`` before NormalizeScore: its batch form's answer if
        it gives one, else Score node by node (through the memo when the plugin allows)."""
        batch = self._score_batches_for(state, nodes, name)
        if batch is not None:
            score_batch, node_table, rows = batch
            try:
                answer = score_batch(state, pod, node_table, rows)
            except Exception as exc:
                log.warning("plugin %s: score_batch failed, scoring per node: %r", name, exc)
                answer = None
            if answer is not None and (
                not isinstance(answer, np.ndarray) or answer.shape != (len(nodes),)
            ):
                log.warning(
                    "plugin %s: score_batch %s, scoring per node",
                    name,
                    wrong_return(answer, f"None or an int array of {len(nodes)} scores"),
                )
                answer = None
            if answer is not None:
                return answer, None
        values: list[int] = []
        memo = self._score_memos.get(name)
        try:
            if memo is None:
                for info in nodes:
                    answer = score(state, pod, info)
                    if not score_answer(answer):
                        return [], self._failed(name, "score", wrong_return(answer, SCORE_ANSWER))
                    value, status = answer
                    if is_non_success(status):
                        return [], self._failed(name, "score", status.message)
                    values.append(value)
                return values, None
            signature = self.pod_signature(state, pod)
            for info in nodes:
                entry = memo.get(info.name)
                if entry is None or entry[0] != info.generation:
                    entry = memo[info.name] = (info.generation, {})
                table: dict[bytes, Any] = entry[1]
                hit = table.get(signature)
                if hit is not None:
                    values.append(hit)
                    continue
                answer = score(state, pod, info)
                if not score_answer(answer):
                    return [], self._failed(name, "score", wrong_return(answer, SCORE_ANSWER))
                value, status = answer
                if is_non_success(status):
                    return [], self._failed(name, "score", status.message)
                if len(table) >= MEMO_SPECS_PER_NODE:
                    table.clear()
                table[signature] = value
                values.append(value)
        except Exception as exc:
            return [], self._failed(name, "score", exc)
        return values, None

    def remember_rows(
        self, state: CycleState, nodes: list[NodeInfo], table: NodeTable, rows: np.ndarray
    ) -> None:
        """The table rows of ``nodes`` (this exact list), known to the filter: Score's batch
        forms use them instead of looking the nodes up again."""
        state.write(SCORE_ROWS_KEY, (nodes, table, rows))

    def _score_batches_for(
        self, state: CycleState, nodes: list[NodeInfo], name: str
    ) -> tuple[Callable[..., Any], NodeTable, np.ndarray] | None:
        """The batch Score form of ``name`` with the table and the rows of ``nodes`` (the rows
        computed once per cycle), or ``None`` to score node by node."""
        score_batch = self._batch_scores.get(name)
        if score_batch is None or not self.use_batch or state.snapshot is None or not nodes:
            return None
        cached = state.get(SCORE_ROWS_KEY)
        if (
            cached is None
            or cached[0] is not nodes
            or (cached[2] is not None and len(cached[2]) != len(nodes))
        ):
            table = state.snapshot.table
            cached = (nodes, table, table.rows(nodes))
            state.write(SCORE_ROWS_KEY, cached)
        if cached[2] is None:
            return None
        return score_batch, cached[1], cached[2]
