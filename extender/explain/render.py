"""An :class:`~extender.explain.engine.Explanation` as data (the stable shape of
``docs/explain.md``, version 1) and as an 80-column table."""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict
from typing import Any

import yaml

from extender.framework.pod_info import pod_priority

from . import gang
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


# -- pod groups (gangs) ------------------------------------------------------------------------

POD_GROUP_KIND = "PodGroupExplanation"


def member_dict(member: gang.Member) -> dict[str, Any]:
    return {
        "pod": member.key,
        "priority": pod_priority(member.pod),
        "state": member.state,
        "node": member.node or None,
        "outcome": member.outcome,
        "plugin": member.plugin or None,
        "message": member.message,
        "reasonCounts": dict(member.reasons),
        "victims": list(member.victims),
    }


def pod_group_dict(cycle: gang.GangCycle) -> dict[str, Any]:
    """A pod group's quorum and its cycle (``docs/explain.md``, "Gangs")."""
    blocking = cycle.blocking
    return {
        "namespace": cycle.namespace,
        "name": cycle.name,
        "exists": cycle.pod_group is not None,
        "policy": cycle.policy,
        "minCount": cycle.min_count,
        "verdict": cycle.verdict,
        "message": cycle.message,
        "quorum": {
            "minCount": cycle.min_count,
            "bound": cycle.count(gang.BOUND),
            "waiting": cycle.count(gang.WAITING),
            "pending": cycle.count(gang.PENDING),
            "met": cycle.quorum_met,
        },
        "groupVictims": [f"{v.namespace}/{v.name}" for v in cycle.group_victims],
        "fitInCycle": cycle.fit_in_cycle,
        "placeableNow": cycle.placeable_now,
        "shortBy": cycle.short_by,
        "blocking": (
            {
                "pod": blocking.key,
                "outcome": blocking.outcome,
                "plugin": blocking.plugin or None,
                "message": blocking.message,
                "reasonCounts": dict(blocking.reasons),
            }
            if blocking is not None
            else None
        ),
        "members": [member_dict(m) for m in cycle.members],
        "podGroupScheduled": gang.pod_group_condition(cycle.pod_group),
    }


def pod_group_document(cycle: gang.GangCycle, focus: Explanation | None) -> dict[str, Any]:
    """``explain podgroup/NAME``: the group, and the explanation of the member it shows."""
    return {
        "version": SCHEMA_VERSION,
        "kind": POD_GROUP_KIND,
        "podGroup": pod_group_dict(cycle),
        "explanation": to_dict(focus) if focus is not None else None,
    }


_OUTCOME_WORDS = {
    gang.PLACED: "would be bound",
    gang.FITS: "fits, waits at Permit",
    gang.NEEDS_PREEMPTION: "fits after preemption",
    gang.UNSCHEDULABLE: "no node",
    gang.ERROR: "error",
    gang.GATED: "gated",
    gang.NOT_TRIED: "not tried",
}


def _member_outcome(member: gang.Member) -> str:
    if member.state == gang.BOUND:
        return "-"
    if member.state == gang.WAITING:
        return "waits at Permit (assumed)"
    words = _OUTCOME_WORDS.get(member.outcome, member.outcome)
    if member.outcome == gang.UNSCHEDULABLE and member.reasons:
        words += ": " + ", ".join(f"{n} {reason}" for reason, n in member.reasons.items())
    elif member.outcome in (gang.GATED, gang.ERROR) and member.message:
        words += f": {member.plugin + ': ' if member.plugin else ''}{member.message}"
    elif member.outcome == gang.NEEDS_PREEMPTION and member.victims:
        words += " of " + ", ".join(member.victims)
    return words


def pod_group_lines(cycle: gang.GangCycle, *, members: int = 20) -> list[str]:
    """The group's quorum, verdict, blocker and members, 80 columns."""
    out: list[str] = []
    if cycle.pod_group is None:
        policy = "PodGroup not found"
    elif cycle.min_count is None:
        policy = "Basic"
    else:
        policy = f"Gang, minCount {cycle.min_count}"
    total = len(cycle.members)
    out += _wrap(
        f"Pod group {cycle.namespace}/{cycle.name} ({policy}, {total} member"
        f"{'s' if total != 1 else ''}): {cycle.verdict}",
        "",
    )
    bound, waiting = cycle.count(gang.BOUND), cycle.count(gang.WAITING)
    quorum = f"Quorum: {bound} bound + {waiting} waiting"
    if cycle.min_count is not None:
        quorum += f" of minCount {cycle.min_count} ({'met' if cycle.quorum_met else 'not met'})"
    quorum += (
        f"; {cycle.count(gang.PENDING)} pending, {cycle.fit_in_cycle} fit in this cycle, "
        f"{cycle.placeable_now} could be placed now"
    )
    out += _wrap(quorum, "")
    if cycle.message:
        out += _wrap(cycle.message, "")
    if cycle.short_by and cycle.result is not None:
        out += _wrap(
            f"The quorum is {cycle.short_by} member{'s' if cycle.short_by != 1 else ''} short: "
            f"{cycle.min_count} needed, {cycle.min_count - cycle.short_by} bound, waiting or "
            "fitting",
            "",
        )
    if cycle.group_victims:
        victims = ", ".join(f"{v.namespace}/{v.name}" for v in cycle.group_victims)
        out += _wrap(f"Workload-aware preemption would evict: {victims}", "")
    blocking = cycle.blocking
    if blocking is not None:
        out += _wrap(f"Blocked by {blocking.key}: {_member_outcome(blocking)}", "")
    out.append("")
    out.append(f"  {'MEMBER':<28} {'STATE':<8} {'NODE':<12} OUTCOME")
    indent = " " * 53
    for member in cycle.members[:members]:
        head = f"  {_cut(member.key, 28):<28} {member.state:<8} {_cut(member.node or '-', 12):<12} "
        lines = textwrap.wrap(_member_outcome(member), WIDTH - len(indent)) or ["-"]
        out.append(head + lines[0])
        out += [indent + "  " + line for line in lines[1:]]
    if len(cycle.members) > members:
        out.append(f"  ... {len(cycle.members) - members} more (-o json)")
    return out


def gang_table(
    cycle: gang.GangCycle, focus: Explanation | None, focus_title: str = "", **options: Any
) -> str:
    """The group, then ``focus`` (one member's per-node explanation) as :func:`table`."""
    out = pod_group_lines(cycle)
    if focus is not None:
        out.append("")
        if focus_title:
            out += _wrap(focus_title, "")
        return "\n".join(out) + "\n" + table(focus, **options)
    return "\n".join(out) + "\n"
