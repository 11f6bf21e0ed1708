"""Run one plugin's points the way the runtime does, on plain dicts."""

from __future__ import annotations

from typing import Any

from extender.framework.cycle_state import CycleState
from extender.framework.results import NodeScore
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code


def cycle(nodes: list[dict], pods: list[dict] = ()) -> tuple[CycleState, Snapshot]:  # type: ignore[assignment]
    snapshot = Snapshot.from_objects(nodes, pods)
    state = CycleState()
    state.snapshot = snapshot
    return state, snapshot


def filter_all(plugin: Any, pod: dict, nodes: list[dict], pods: list[dict] = ()) -> dict:  # type: ignore[assignment]
    """node name -> None (fits) or (code, reasons)."""
    state, snapshot = cycle(nodes, pods)
    if hasattr(plugin, "pre_filter"):
        _, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
        if status is not None and status.code == Code.SKIP:
            return {info.name: None for info in snapshot}
        assert status is None, status
    out = {}
    for info in snapshot:
        status = plugin.filter(state, pod, info)
        out[info.name] = None if status is None else (status.code, status.reasons)
    return out


def score_all(plugin: Any, pod: dict, nodes: list[dict], pods: list[dict] = ()) -> dict:  # type: ignore[assignment]
    """node name -> final (normalized) score; ``None`` for all when PreScore skips."""
    state, snapshot = cycle(nodes, pods)
    infos = snapshot.node_info_list
    if hasattr(plugin, "pre_score"):
        status = plugin.pre_score(state, pod, infos)
        if status is not None and status.code == Code.SKIP:
            return {info.name: None for info in infos}
        assert status is None, status
    scores = []
    for info in infos:
        value, status = plugin.score(state, pod, info)
        assert status is None, status
        scores.append(NodeScore(info.name, value))
    ext = plugin.score_extensions()
    if ext is not None:
        assert ext.normalize_score(state, pod, scores) is None
    return {s.name: s.score for s in scores}
