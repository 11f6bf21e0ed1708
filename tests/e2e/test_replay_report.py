"""The replay report's page in a real browser: Debian's headless Chromium (``make setup``
installs it, ``hack/install-chromium.sh``) driven by Playwright, never Playwright's own
browser download. The page renders, every plot has data (plotly's ``el.data``: traces with
points), the summary table has a column a policy, and the page logs no console error, throws
no page error and asks the network for nothing. Broken pages (an empty plot, a script error, a
console error, a request to the network) are caught by the same check."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.replay_logs import synthetic_log
from extender.replay.engine import replay
from extender.replay.metrics import compute
from extender.replay.report import write
from tests.unit.replay.test_engine import MOST_ALLOCATED, PROFILE, many_pods_trace

CHROMIUM = os.environ.get("KUBE_EXTENDER_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 120_000  # a loaded 2-core machine

# Every plot's traces, as plotly holds them: [id, [[kind, points], ...], drawn].
PLOTS = """() => [...document.querySelectorAll('.plot')].map(el => [
  el.id,
  (el.data || []).map(t => [t.type || 'scatter',
    t.type === 'heatmap' ? (t.z || []).filter(row => row.length).length
                         : (t.y || []).filter(v => v !== null && v !== undefined).length]),
  el.querySelectorAll('.main-svg').length > 0,
])"""


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM}: missing; `make setup` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def problems(browser, page_path: Path) -> tuple[list[str], list]:
    """What is wrong with the page (empty when nothing), and its plots as plotly holds them."""
    found: list[str] = []
    page = browser.new_page()
    url = page_path.resolve().as_uri()
    page.on("console", lambda m: m.type == "error" and found.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: found.append(f"page error: {e}"))
    page.on("request", lambda r: r.url != url and found.append(f"request: {r.url}"))
    page.route(
        "**/*", lambda route: route.continue_() if route.request.url == url else route.abort()
    )
    try:
        page.goto(url, wait_until="load", timeout=TIMEOUT_MS)
        plots = page.evaluate(PLOTS)
        if not plots:
            found.append("no plots")
        for fid, traces, drawn in plots:
            if not traces:
                found.append(f"{fid}: no traces")
            found.extend(
                f"{fid}: trace {i} has no points" for i, t in enumerate(traces) if not t[1]
            )
            if not drawn:
                found.append(f"{fid}: not drawn")
        columns = page.evaluate("document.querySelectorAll('#summary thead th').length")
        return found, [plots, columns]
    finally:
        page.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    results = [
        compute(synthetic_log(nodes=80, pods=600, seed=seed, policy=policy))
        for seed, policy in ((0, "default"), (1, "gpu-binpack"))
    ]
    write(results, out)
    return out / "report.html"


def test_the_report_renders_with_data_in_every_plot(browser, report: Path) -> None:
    found, (plots, columns) = problems(browser, report)
    assert found == []
    ids = [fid for fid, _, _ in plots]
    assert ids == [
        "alloc-cpu",
        "alloc-memory",
        "alloc-gpu",
        "pending",
        "nodes-in-use",
        "frag-gpus",
        "frag-fraction",
        "queueing",
        "heatmap-0",
        "heatmap-1",
    ]
    lines = dict((fid, traces) for fid, traces, _ in plots)
    assert [len(lines[fid]) for fid in ids[:8]] == [2] * 8  # a line a policy
    assert lines["heatmap-0"] == [["heatmap", 67]]  # the GPU nodes (5 of 6)
    assert columns == 3  # the figure's name and a column a policy


def test_a_cpu_only_replay_by_the_engine_renders_too(browser, tmp_path: Path) -> None:
    """Logs written by the virtual-time engine over CPU-only nodes: the GPU plots are flat
    zeros, the heat map is CPU, every pod is bound at once (the queueing axis is linear)."""
    results = []
    for name, text in (("default", PROFILE), ("most-allocated", MOST_ALLOCATED)):
        (tmp_path / f"{name}.yaml").write_text(text)
        results.append(compute(replay(many_pods_trace(), tmp_path / f"{name}.yaml")))
    write(results, tmp_path / "out")
    found, (plots, columns) = problems(browser, tmp_path / "out" / "report.html")
    assert found == []
    assert dict((fid, traces) for fid, traces, _ in plots)["heatmap-1"] == [["heatmap", 6]]
    assert columns == 3


def _empty_figure(fid: str):
    """The page with figure ``fid``'s traces replaced by ``[]``."""
    call = re.compile(r'(Plotly\.newPlot\("' + fid + r'",)(.*?)(,Object\.assign\()')
    return lambda text: call.sub(lambda m: m.group(1) + "[]" + m.group(3), text, count=1)


def _extra_empty_trace(fid: str):
    """The page with an empty trace first in figure ``fid``."""
    call = f'Plotly.newPlot("{fid}",['
    return lambda text: text.replace(call, call + '{"y":[]},', 1)


def _before_body_end(html: str):
    return lambda text: text.replace("</body>", html + "</body>", 1)


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (_extra_empty_trace("pending"), "pending: trace 0 has no points"),
        (_empty_figure("queueing"), "queueing: no traces"),
        (_empty_figure("heatmap-1"), "heatmap-1: no traces"),
        (_before_body_end("<script>notDefined()</script>"), "page error"),
        (_before_body_end("<script>console.error('boom')</script>"), "console: boom"),
        (_before_body_end("<img src='https://example.com/x.png'>"), "request: https://example.com"),
    ],
)
def test_a_broken_report_is_caught(
    browser, report: Path, tmp_path: Path, breakage: Callable[[str], str], expected: str
) -> None:
    text = report.read_text(encoding="utf-8")
    broken_text = breakage(text)
    assert broken_text != text
    broken = tmp_path / "report.html"
    broken.write_text(broken_text, encoding="utf-8")
    found, _ = problems(browser, broken)
    assert any(expected in problem for problem in found), found
