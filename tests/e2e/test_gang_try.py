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
import shlex
import subprocess
from pathlib import Path

from extender.controlplane import ControlPlane, free_port, kube_extender

from .test_dra_try import DEFAULT_CLUSTER, METRICS_BIND, expand, run, start, stop, tail

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
    scheduler_log = tmp_path / "run.log"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    port = free_port()
    background: list[subprocess.Popen] = []
    outputs: dict[str, str] = {}
    try:
        for line in step_by_step():
            command = (
                line.replace("kube-extender cluster ", f"kube-extender cluster --dir {cluster} ")
                .replace(DEFAULT_CLUSTER, str(cluster))
                .replace(METRICS_BIND, f"127.0.0.1:{port}")
            )
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                env[name] = value
                continue
            if command == "kill %1":
                assert len(background) == 1, "kill %1 with one background job"
                stop(background.pop())
                continue
            argv = [expand(arg, env) for arg in shlex.split(command.removesuffix("&"))]
            assert argv[0] == "kube-extender", command
            if command.endswith("&"):
                background.append(start(kube_extender(*argv[1:]), env, scheduler_log))
                continue
            done = run(kube_extender(*argv[1:]), env)
            assert done.returncode == 0, (
                f"{line}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
                f"\nkube-extender run's log:\n{tail(scheduler_log)}"
            )
            outputs[line] = done.stdout
    finally:
        for proc in background:
            stop(proc)
        ControlPlane(cluster).down()  # a no-op after the doc's own `cluster down`

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
