"""docs/gang.md, "Try it locally", step by step: its commands run as printed against the real
etcd and kube-apiserver (with the gates `cluster up --feature-gates` gives it), and the scenario
prints what the doc shows midway: the same messages for the second gang's pods (which members
fitted varies) and the same PodGroup condition.

As in test_dra_try.py, only what would clash with other tests is changed: the cluster lives in
a temporary directory and the scheduler's metrics port is a free one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from extender.controlplane import ControlPlane

from .test_dra_try import run_as_printed

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "gang.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Try it locally", 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)


def step_by_step() -> list[str]:
    (block,) = [b for b in blocks("sh") if "cluster up" in b]
    return [line.strip() for line in block.splitlines() if line.strip()]


def pending(text: str) -> list[str]:
    """The messages of the pending pods, in order (the pods' names differ from run to run)."""
    return sorted(
        line.split(" pending: ", 1)[1] for line in text.splitlines() if " pending: " in line
    )


def test_the_step_by_step_commands_run_as_printed(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    outputs = run_as_printed(step_by_step(), tmp_path, env)

    up = next(out for line, out in outputs.items() if line.startswith("kube-extender cluster up"))
    assert (
        "apiserver args: --feature-gates=GenericWorkload=true,GangScheduling=true "
        "--runtime-config=scheduling.k8s.io/v1alpha2=true"
    ) in up, up
    assert f"export KUBECONFIG={env['KUBECONFIG']}" in up, up
    scenario = next(
        out for line, out in outputs.items() if line.startswith("kube-extender scenario ")
    )
    (shown,) = blocks("text")
    assert pending(scenario) == pending(shown), scenario
    for line in shown.splitlines():
        if " pending: " not in line:
            assert line in scenario.splitlines(), (line, scenario)
    assert "podgroup gang-b   PodGroupScheduled=True (Scheduled)" in scenario, scenario
    assert not ControlPlane(cluster).state.pids, "cluster down left processes"
