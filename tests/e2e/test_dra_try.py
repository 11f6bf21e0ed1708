"""docs/dra.md, "Try it with a sample driver's slices": its commands run as printed against the
real etcd, kube-apiserver and kube-controller-manager, and the scenario prints what the doc shows.

Only what would clash with other tests running at the same time is changed: the cluster lives in
a temporary directory (``kube-extender cluster --dir``, and the kubeconfig path with it) and the
scheduler's metrics port is a free one. ``make test-binaries`` is not run (the binaries are
already built; this test needs them), only checked to be the target that builds
kube-controller-manager.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from extender.controlplane import ControlPlane, binary, free_port, kube_extender, stop_pid

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "dra.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Try it with a sample driver's slices", 1)[1].split("\n## ", 1)[0]
DEFAULT_CLUSTER = "~/.cache/kube-extender/cluster"
METRICS_BIND = "127.0.0.1:10251"


def block(language: str) -> str:
    found = re.search(rf"```{language}\n(.*?)```", SECTION, re.S)
    assert found, f"docs/dra.md's Try it section lost its {language} block"
    return found.group(1)


def commands() -> list[str]:
    """The sh block's commands, without their comments."""
    lines = (line.partition("#")[0].strip() for line in block("sh").splitlines())
    return [line for line in lines if line]


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """A ``... &`` line: in its own process group, so stop_pid stops all of it."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def stop(proc: subprocess.Popen) -> None:
    stop_pid(proc.pid, timeout=5)
    proc.wait(timeout=5)


def expand(arg: str, env: dict[str, str]) -> str:
    """``$NAME`` as the shell expands it (only what the block exported)."""
    return re.sub(r"\$(\w+)", lambda m: env[m.group(1)], arg)


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def run_as_printed(
    lines: Iterable[str],
    tmp_path: Path,
    env: dict[str, str],
    other: Callable[[str], bool] = lambda command: False,
) -> dict[str, str]:
    """A doc's shell commands run as printed, each ``kube-extender`` one for real, against a
    cluster in ``tmp_path`` and a free metrics port: ``export`` sets ``env``, ``&`` runs in the
    background (its log in ``tmp_path/run.log``) and ``kill %1`` stops it; ``other(command)``
    handles (and checks) any other command, answering whether it did. Returns each line's
    output; the cluster is down afterwards whatever happened."""
    cluster = tmp_path / "cluster"
    scheduler_log = tmp_path / "run.log"
    port = free_port()
    background: list[subprocess.Popen] = []
    outputs: dict[str, str] = {}
    try:
        for line in lines:
            command = (
                line.replace("kube-extender cluster ", f"kube-extender cluster --dir {cluster} ")
                .replace(DEFAULT_CLUSTER, str(cluster))
                .replace(METRICS_BIND, f"127.0.0.1:{port}")
            )
            if other(command):
                continue
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
    return outputs


def _make(command: str) -> bool:
    if not command.startswith("make "):
        return False
    assert command == "make test-binaries", command
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"\ntest-binaries:\n.*kube-controller-manager", makefile)
    return True


def test_the_try_it_commands_run_as_printed(tmp_path: Path) -> None:
    # A clear failure, not a half-run walkthrough, when `make test-binaries` has not run.
    binary("kube-controller-manager")
    cluster = tmp_path / "cluster"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    outputs = run_as_printed(commands(), tmp_path, env, other=_make)

    # The kubeconfig the doc exports is the one `cluster up` wrote and printed.
    up = outputs["kube-extender cluster up --controller-manager"]
    assert f"export KUBECONFIG={env['KUBECONFIG']}" in up, up
    assert "kube-controller-manager" in up.splitlines()[0], up
    scenario = next(
        out for line, out in outputs.items() if line.startswith("kube-extender scenario ")
    )
    assert scenario.splitlines() == block("text").splitlines()
    assert not ControlPlane(cluster).state.pids, "cluster down left processes"
