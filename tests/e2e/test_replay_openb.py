"""The whole openb trace, imported and replayed under two policies with its report, through the
commands a user runs (issue 32's "Done when"): ``kube-extender import openb --fetch`` (the
pinned CSVs, from the cache when they are there), then ``kube-extender replay`` of the default
profile and MostAllocated over all 1523 nodes and 8152 pods, in two local processes.

The experiment is the FGD paper's: the pods arrive in the trace's order (after its nearly idle
first months, 1000 times as fast) and never leave, so the cluster fills up and the policies
differ in how much of it they manage to allocate. No control plane: the replay runs the
scheduler's own loop in virtual time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "extender"]
BUSY_FROM = "10000000"  # openb: 99% of the pods arrive after 10.0 M s


def run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_full_openb_trace_under_two_policies(tmp_path: Path) -> None:
    trace = tmp_path / "openb.json.gz"
    imported = run(
        ["import", "openb", "--fetch", "--gpu-mapping", "extended", "-o", str(trace)], 300
    )
    assert "1523 nodes, 8152 pods" in imported.stdout + imported.stderr

    out = tmp_path / "report"
    started = time.monotonic()
    replayed = run(
        [
            "replay",
            "--trace",
            str(trace),
            "--config",
            "scheduler-config/replay/default.yaml",
            "--config",
            "scheduler-config/replay/most-allocated.yaml",
            "--jobs",
            "2",
            "--measure-from",
            BUSY_FROM,
            "--compress-arrivals",
            "1000",
            "--no-departures",
            "--out",
            str(out),
            "--quiet",
        ],
        1800,
    )
    wall = time.monotonic() - started
    print(replayed.stdout)
    print(replayed.stderr[-2000:])
    print(f"two policies over the full trace: {wall:.0f} s wall")

    report = json.loads((out / "report.json").read_text())
    policies = {p["policy"]: p for p in report["policies"]}
    assert sorted(policies) == ["default", "most-allocated"]
    for metrics in policies.values():
        pods = metrics["pods"]
        # Every pod of the trace is accounted for, and the cluster did fill up.
        assert pods["scheduled"] + pods["never_scheduled"] == 8152
        assert pods["scheduled"] > 6000 and pods["never_scheduled"] > 0
        assert metrics["start"] == float(BUSY_FROM)
        assert 0.3 < metrics["peaks"]["gpu"] <= 1.0
    # Bin packing uses fewer nodes for the same pods: the policies made different decisions.
    assert (
        policies["most-allocated"]["means"]["nodes_in_use"]
        < policies["default"]["means"]["nodes_in_use"]
    )
    assert "pods scheduled" in replayed.stdout
    html = (out / "report.html").read_text()
    assert "Plotly" in html and "most-allocated" in html
    assert sorted(p.name for p in (out / "logs").iterdir()) == [
        "default-seed0.json.gz",
        "most-allocated-seed0.json.gz",
    ]
