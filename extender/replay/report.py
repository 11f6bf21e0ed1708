"""The replay report: every policy's metrics side by side, as JSON, as an HTML page with plots
and as a plain-text table for the terminal.

``write(results, out_dir)`` takes the ``metrics.compute`` dicts of the policies compared (one a
policy, in the order given) and writes

- ``report.json``: ``{"version": 1, "policies": [<metrics>, ...]}``;
- ``report.html``: one self-contained page (plotly's JavaScript inlined: it opens offline and
  asks the network for nothing) with the summary table and the plots: CPU, memory and GPU
  allocation over time, pending pods, nodes in use, GPU fragmentation (in GPUs and as a
  fraction of the unallocated GPU capacity) over time, the queueing-time distribution (a
  cumulative curve on a log time axis) and a per-node allocation heat map per policy (nodes
  sorted by their mean allocation, busiest first);

and returns the terminal summary (the same table as the page's: one row a figure, one column
a policy).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import plotly

from extender.replay.metrics import summary

# The figures that read as fractions (shown as percentages).
_PERCENT = ("mean CPU alloc", "mean memory alloc", "mean GPU alloc", "mean GPU frag (of free)")
_HOUR = 3600.0


class ReportError(ValueError):
    """Results the report cannot show; the message names the field."""


def _check(results: list[dict]) -> None:
    if not isinstance(results, list) or not results:
        raise ReportError("results: must be a non-empty list of metrics")
    for i, metrics in enumerate(results):
        if not isinstance(metrics, dict):
            raise ReportError(f"results[{i}]: must be an object (metrics.compute's result)")
        for field in ("pods", "queueing", "series", "means", "peaks", "spread", "heatmap"):
            if not isinstance(metrics.get(field), dict):
                raise ReportError(f"results[{i}].{field}: missing (metrics.compute's result)")


def _labels(results: list[dict]) -> list[str]:
    """One distinct label a policy: its name, else its config, with the seed when repeated."""
    names = [
        str(m.get("policy") or m.get("config") or f"policy {i + 1}") for i, m in enumerate(results)
    ]
    labels = []
    for i, name in enumerate(names):
        label = name if names.count(name) == 1 else f"{name} (seed {results[i].get('seed')})"
        while label in labels:
            label = f"{label} #{i + 1}"
        labels.append(label)
    return labels


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in _PERCENT:
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value)}"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def table(results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The side-by-side table: the header (figure, then one column a policy) and its rows."""
    _check(results)
    labels = _labels(results)
    rows_of = [m.get("summary") or summary(m) for m in results]
    keys = list(rows_of[0])
    rows = [[key, *(_cell(key, row.get(key)) for row in rows_of)] for key in keys]
    return ["", *labels], rows


def terminal_summary(results: list[dict]) -> str:
    """The table as plain text, columns aligned, numbers right-aligned."""
    header, rows = table(results)
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    lines = []
    for r, row in enumerate([header, *rows]):
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(widths[c]) for c, cell in enumerate(row[1:], start=1)]
        lines.append("  ".join(cells).rstrip())
        if r == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _time_axis(results: list[dict]) -> tuple[float, str]:
    end = max(float(m.get("end") or 0.0) for m in results)
    return (_HOUR, "time (h)") if end >= 2 * _HOUR else (1.0, "time (s)")


def _lines(results: list[dict], labels: list[str], key: str, scale: float, percent: bool) -> list:
    traces = []
    for metrics, label in zip(results, labels, strict=True):
        series = metrics["series"]
        factor = 100.0 if percent else 1.0
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": [t / scale for t in series["t"]],
                "y": [v * factor for v in series[key]],
                "line": {"shape": "hv"},
            }
        )
    return traces


def _figures(results: list[dict], labels: list[str]) -> list[tuple[str, str, dict]]:
    """(id, title, figure) of every plot on the page."""
    scale, xtitle = _time_axis(results)
    figures: list[tuple[str, str, dict]] = []

    def over_time(fid: str, title: str, key: str, ytitle: str, percent: bool = False) -> None:
        layout = {
            "xaxis": {"title": {"text": xtitle}},
            "yaxis": {"title": {"text": ytitle}, "rangemode": "tozero"},
        }
        figures.append(
            (fid, title, {"data": _lines(results, labels, key, scale, percent), "layout": layout})
        )

    over_time("alloc-cpu", "CPU allocation over time", "cpu", "allocated (% of cluster)", True)
    over_time(
        "alloc-memory", "Memory allocation over time", "memory", "allocated (% of cluster)", True
    )
    over_time("alloc-gpu", "GPU allocation over time", "gpu", "allocated (% of cluster)", True)
    over_time("pending", "Pending pods over time", "pending", "pods")
    over_time("nodes-in-use", "Nodes in use over time (>= 1 pod)", "nodes_in_use", "nodes")
    over_time("frag-gpus", "GPU fragmentation over time (FGD)", "frag_gpus", "fragmented GPUs")
    over_time(
        "frag-fraction",
        "GPU fragmentation over time, share of unallocated GPU",
        "frag_fraction",
        "% of unallocated GPU",
        True,
    )
    queueing = []
    positive = False
    for metrics, label in zip(results, labels, strict=True):
        cdf = metrics["queueing"].get("cdf") or {}
        seconds = cdf.get("seconds") or []
        positive = positive or any(s > 0 for s in seconds)
        queueing.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                # A log axis cannot show a zero wait: the curve starts at the first one above
                # zero, at the share of pods bound at once.
                "x": [s if s > 0 else None for s in seconds],
                "y": cdf.get("percent") or [],
                "line": {"shape": "hv"},
            }
        )
    if not positive:  # every pod bound at once: a linear axis shows the step at 0
        for trace in queueing:
            trace["x"] = [0.0 if s is None else s for s in trace["x"]]
    figures.append(
        (
            "queueing",
            "Queueing time distribution (scheduled pods: first bind - arrival)",
            {
                "data": queueing,
                "layout": {
                    "xaxis": {
                        "title": {"text": "queueing time (s)"},
                        "type": "log" if positive else "linear",
                    },
                    "yaxis": {
                        "title": {"text": "% of scheduled pods bound by then"},
                    },
                },
            },
        )
    )
    for i, (metrics, label) in enumerate(zip(results, labels, strict=True)):
        heat = metrics["heatmap"]
        values = heat.get("values") or []
        order = sorted(range(len(values)), key=lambda r: -sum(values[r]) / max(len(values[r]), 1))
        figures.append(
            (
                f"heatmap-{i}",
                f"Per-node {heat.get('resource', '').upper()} allocation: {label} "
                "(nodes sorted by mean allocation)",
                {
                    "data": [
                        {
                            "type": "heatmap",
                            "x": [t / scale for t in heat.get("t") or []],
                            "y": [heat["nodes"][r] for r in order],
                            "z": [values[r] for r in order],
                            "zmin": 0,
                            "zmax": 1,
                            "colorscale": "Viridis",
                            "colorbar": {"title": {"text": "allocated"}},
                        }
                    ],
                    "layout": {
                        "height": 600,
                        "xaxis": {"title": {"text": xtitle}},
                        "yaxis": {"title": {"text": "node"}, "showticklabels": len(order) <= 60},
                    },
                },
            )
        )
    return figures


def _json(value: Any) -> str:
    # Inside <script>: "</" must not close it.
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def render_html(results: list[dict]) -> str:
    """The report's page (self-contained)."""
    header, rows = table(results)
    labels = header[1:]
    figures = _figures(results, labels)
    trace = results[0].get("trace") or {}
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    runs = "".join(
        f"<li><b>{html.escape(label)}</b>: config {html.escape(str(m.get('config')))}, "
        f"seed {html.escape(str(m.get('seed')))}, replayed in "
        f"{html.escape(_cell('', m.get('wall_seconds')))} s, "
        f"{html.escape(str(m.get('cycles')))} cycles</li>"
        for label, m in zip(labels, results, strict=True)
    )
    plots = "".join(
        f'<section><h2>{html.escape(title)}</h2><div class="plot" id="{fid}"></div></section>'
        for fid, title, _ in figures
    )
    calls = "".join(
        f"Plotly.newPlot({_json(fid)},{_json(fig['data'])},"
        f"Object.assign({{margin:{{t:20}}}},{_json(fig['layout'])}),"
        "{displaylogo:false,responsive:true});"
        for fid, _, fig in figures
    )
    first = results[0]
    definitions = (
        f"<p><b>GPU fragmentation</b>: {html.escape(first['fragmentation']['definition'])}.</p>"
        f"<p><b>Spread skew</b> (domain: {html.escape(str(first['spread'].get('domain')))}): "
        f"{html.escape(first['spread'].get('definition', ''))}.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kube-extender replay report: {html.escape(str(trace.get("name", "")))}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.6em; }}
td:not(:first-child) {{ text-align: right; }}
.plot {{ min-height: 380px; }}
</style>
<script>{plotly.offline.get_plotlyjs()}</script>
</head><body>
<h1>Replay report: {html.escape(str(trace.get("name", "")))}</h1>
<p>Trace {html.escape(str(trace.get("source", "")))}, GPU mapping
{html.escape(str(trace.get("gpuMapping", "")))}; window {_cell("", results[0].get("end"))} s.</p>
<ul>{runs}</ul>
<h2>Summary</h2>
<table id="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
{definitions}
{plots}
<script>{calls}</script>
</body></html>
"""


def write(results: list[dict], out_dir: str | Path) -> str:
    """Write ``report.json`` and ``report.html`` into ``out_dir`` (created if missing) and
    return the terminal summary."""
    _check(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(
        json.dumps({"version": 1, "policies": results}, separators=(",", ":")), encoding="utf-8"
    )
    (out / "report.html").write_text(render_html(results), encoding="utf-8")
    return terminal_summary(results)
