"""An :class:`~extender.explain.engine.Explanation` as data (the stable shape of
``docs/explain.md``, version 1) and as an 80-column table."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import yaml

from .engine import KIND, SCHEMA_VERSION, Explanation, ExtenderReport, NodeVerdict, code_name

WIDTH = 80


def _sort_key(verdict: NodeVerdict) -> tuple[int, int, str]:
    if verdict.fits:
        return (0, -(verdict.total or 0), verdict.name)
    return (1, 0, verdict.name)


def node_dict(verdict: NodeVerdict) -> dict[str, Any]:
    status = verdict.status
    return {
        "name": verdict.name,
        "fits": verdict.fits,
        "plugin": status.plugin if status is not None else None,
        "code": code_name(status.code) if status is not None else None,
        "reasons": list(status.reasons) if status is not None else [],
        "detail": list(verdict.detail),
        "devices": [dict(d) for d in verdict.devices],
        "scores": (
            {
                plugin: {"raw": s.raw, "normalized": s.normalized, "weighted": s.weighted}
                for plugin, s in verdict.scores.items()
            }
            if verdict.fits
            else None
        ),
        "total": verdict.total,
        "chosen": verdict.chosen,
    }


def to_dict(explanation: Explanation) -> dict[str, Any]:
    """The documented shape (``docs/explain.md``); keys are only ever added."""
    ex = explanation
    preemption = None
    if ex.preemption is not None:
        preemption = {
            "node": ex.preemption.node or None,
            "victims": [
                {"namespace": v.namespace, "name": v.name, "priority": v.priority}
                for v in ex.preemption.victims
            ],
            "message": ex.preemption.message,
        }
    return {
        "version": SCHEMA_VERSION,
        "kind": KIND,
        "pod": {**ex.pod, "boundTo": ex.bound_to or None},
        "profile": ex.profile,
        "verdict": ex.verdict,
        "numNodes": ex.num_nodes,
        "numFeasible": len(ex.feasible),
        "chosen": list(ex.chosen),
        "fitError": ex.fit_error,
        "error": ex.error,
        "reasonCounts": dict(sorted(ex.reason_counts().items())),
        "preemption": preemption,
        "scoreWeights": dict(ex.score_weights),
        "nodes": [node_dict(v) for v in sorted(ex.nodes, key=_sort_key)],
        "extenders": [
            {
                "name": e.name,
                "called": list(e.called),
                "answered": e.answered,
                "failed": dict(e.failed),
                "error": e.error,
                "ignorable": e.ignorable,
            }
            for e in ex.extenders
        ],
        "notes": list(ex.notes),
        "podScheduled": dict(ex.condition) if ex.condition is not None else None,
        "contradictsPodScheduled": ex.contradicts_condition,
    }


def dumps(data: Any, output: str) -> str:
    if output == "json":
        return json.dumps(data, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, width=WIDTH)


# -- the table ---------------------------------------------------------------------------------


def abbreviation(plugin: str) -> str:
    """``NodeResourcesBalancedAllocation`` -> ``NRBA``; an extender (its URL) -> ``EXT``."""
    if "://" in plugin:
        return "EXT"
    capitals = "".join(c for c in plugin if c.isupper())
    return capitals or plugin[:4]


def _cut(text: str, width: int) -> str:
    """Shortened in the middle (node names differ at their ends): ``node-wi~ame-006``."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "~" + text[len(text) - (width - 1 - head) :]


def _wrap(text: str, indent: str, width: int = WIDTH) -> list[str]:
    lines: list[str] = []
    line = indent
    for word in text.split(" "):
        if len(line) + len(word) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent + "  "
        line += word + " "
    if line.strip():
        lines.append(line.rstrip())
    return lines


def table(
    explanation: Explanation,
    *,
    top: int = 10,
    all_nodes: bool = False,
    node: str | None = None,
) -> str:
    ex = explanation
    pod = ex.pod
    out: list[str] = []
    where = f", bound to {ex.bound_to}" if ex.bound_to else ""
    out += _wrap(
        f"Pod {pod['namespace']}/{pod['name']} (profile {ex.profile}, priority "
        f"{pod['priority']}{where}): {ex.verdict}",
        "",
    )
    feasible = sorted((v for v in ex.nodes if v.fits), key=_sort_key)
    rejected = [v for v in ex.nodes if not v.fits]
    for note in ex.notes:
        out += _wrap(f"Note: {note}", "")
    called = [e for e in ex.extenders if e.called]
    if called:
        out += _wrap("Extenders called: " + ", ".join(_verbs(e) for e in called), "")
    if ex.error:
        out += _wrap(f"Error: {ex.error}", "")
    if ex.chosen:
        out += _wrap(
            ("Would choose: " if len(ex.chosen) == 1 else "Would choose one of (tie): ")
            + ", ".join(ex.chosen[:10])
            + (f" (+{len(ex.chosen) - 10})" if len(ex.chosen) > 10 else ""),
            "",
        )
    if ex.fit_error:
        out += _wrap(ex.fit_error, "")
    if ex.preemption is not None:
        pre = ex.preemption
        if pre.node:
            victims = ", ".join(
                f"{v.namespace}/{v.name} (priority {v.priority})" for v in pre.victims
            )
            out += _wrap(f"Preemption: would nominate {pre.node}, evicting {victims or 'none'}", "")
        else:
            why = pre.message.removeprefix("preemption: ") or "no candidate"
            out += _wrap(f"Preemption cannot help: {why}", "")
    if node is not None:
        out.append("")
        out += _node_detail(ex, node)
        return "\n".join(out) + "\n"

    out.append("")
    out.append(
        f"FEASIBLE {len(feasible)}/{ex.num_nodes} nodes"
        + (f" (top {top} by total)" if len(feasible) > top and not all_nodes else "")
    )
    # Columns for the plugins that scored (PreScore may skip some for this pod).
    plugins = [p for p in ex.score_weights if any(p in v.scores for v in feasible)]
    if feasible:
        shown = feasible if all_nodes else feasible[:top]
        col = 6
        name_width = max(8, WIDTH - 2 - 7 - col * len(plugins) - 2)
        header = f"  {'NODE':<{name_width}} {'TOTAL':>6}" + "".join(
            f"{_cut(abbreviation(p), col - 1):>{col}}" for p in plugins
        )
        out.append(header.rstrip())
        for v in shown:
            mark = "*" if v.chosen else " "
            cells = "".join(
                f"{(v.scores[p].weighted if p in v.scores else '-'):>{col}}" for p in plugins
            )
            out.append(f"{mark} {_cut(v.name, name_width):<{name_width}} {v.total or 0:>6}{cells}")
        if len(shown) < len(feasible):
            out.append(f"  ... {len(feasible) - len(shown)} more (--top N, --all-nodes)")
        legend = ", ".join(f"{abbreviation(p)}={p} x{ex.score_weights[p]}" for p in plugins)
        out += _wrap(f"(* chosen; weighted scores: {legend})", "  ")
    out.append("")
    out.append(f"REJECTED {len(rejected)}/{ex.num_nodes} nodes")
    if all_nodes:
        for v in sorted(rejected, key=lambda v: v.name):
            assert v.status is not None
            out += _wrap(f"{v.name}: {v.status.plugin}: {'; '.join(v.status.reasons)}", "  ")
            for line in v.detail:
                out += _wrap(f"- {line}", "    ")
    else:
        groups: dict[tuple[str, tuple[str, ...]], list[NodeVerdict]] = defaultdict(list)
        for v in rejected:
            assert v.status is not None
            groups[(v.status.plugin, v.status.reasons)].append(v)
        for (plugin, reasons), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            names = [v.name for v in members]
            out += _wrap(f"{len(names):>5}  {plugin or '-'}: {'; '.join(reasons)}", "")
            listed = " ".join(sorted(names)[:6]) + (
                f" (+{len(names) - 6})" if len(names) > 6 else ""
            )
            out += _wrap(listed, "       ")
            out += _details(members)
    return "\n".join(out) + "\n"


def _verbs(report: ExtenderReport) -> str:
    """``URL (answered: filter; failed: prioritize)``."""
    parts = []
    if report.answered:
        parts.append("answered: " + ", ".join(report.answered))
    if report.failed:
        parts.append("failed: " + ", ".join(v for v in report.called if v in report.failed))
    return f"{report.name} ({'; '.join(parts)})"


SHOWN_DETAILS = 3


def _details(members: list[NodeVerdict]) -> list[str]:
    """The group's details (DRA: which request, why), the most common first, with the number
    of nodes each was said of."""
    counts: dict[str, int] = defaultdict(int)
    for v in members:
        for line in v.detail:
            counts[line] += 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    lines: list[str] = []
    for line, n in ordered[:SHOWN_DETAILS]:
        lines += _wrap(f"- {line} ({n} node{'s' if n != 1 else ''})", "       ")
    if len(ordered) > SHOWN_DETAILS:
        lines.append(f"       ... {len(ordered) - SHOWN_DETAILS} more (--all-nodes, -o json)")
    return lines


def _node_detail(ex: Explanation, name: str) -> list[str]:
    try:
        v = ex.node(name)
    except KeyError:
        return [f"node {name}: not in the cluster"]
    if v.status is not None:
        lines = [f"Node {name}: rejected by {v.status.plugin} ({code_name(v.status.code)})"]
        for reason in v.status.reasons:
            lines += _wrap(f"- {reason}", "  ")
        for line in v.detail:
            lines += _wrap(f"- {line}", "    ")
        return lines
    lines = [f"Node {name}: fits; total {v.total}" + (" (chosen)" if v.chosen else "")]
    lines.append(f"  {'PLUGIN':<34} {'RAW':>8} {'NORM':>6} {'WEIGHT':>6} {'SCORE':>6}")
    for plugin, s in v.scores.items():
        raw = "-" if s.raw is None else str(s.raw)
        weight = ex.score_weights.get(plugin, 1)
        lines.append(
            f"  {_cut(plugin, 34):<34} {raw:>8} {s.normalized:>6} {weight:>6} {s.weighted:>6}"
        )
    return lines
