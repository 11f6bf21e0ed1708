"""kube-scheduler command lines that run (issue 27): ``kube-extender cluster scheduler`` adds
the real kube-scheduler to a running cluster, and docs/extender.md's hand-written command line
runs as printed; both place a pod through the extender."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from extender.controlplane import (
    ControlPlane,
    binary,
    free_port,
    kube_extender,
    pid_alive,
    spawn,
    stop_pid,
)

from .harness import Extender, scheduler_config, wait_until
from .test_extender import EXTENDER_CONFIG, make_nodes

REPO = Path(__file__).resolve().parents[2]


def _cluster(cp: ControlPlane, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        kube_extender("cluster", "--dir", str(cp.directory), *args),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _pid(cp: ControlPlane, name: str) -> int | None:
    """From the state file the CLI wrote (this process's ``cp`` does not know its children)."""
    return ControlPlane(cp.directory).state.pids.get(name)


def test_cluster_scheduler_adds_a_scheduler_to_the_running_cluster(
    kube, control_plane, processes, tmp_path
):
    ext = Extender(control_plane, EXTENDER_CONFIG, name="extender-cli-scheduler")
    processes.append(ext)
    ext.wait_ready()
    config = scheduler_config(ext)
    config["profiles"] = [{"schedulerName": "cli-added-scheduler"}]
    mine = tmp_path / "my-scheduler.yaml"
    mine.write_text(yaml.safe_dump(config))
    before = mine.read_text()
    name = "kube-scheduler-cli"
    try:
        proc = _cluster(control_plane, "scheduler", "--config", str(mine), "--name", name)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert out.startswith(f"started {name}: pid "), out
        (command,) = re.findall(r"^command: +(.*)$", out, re.M)
        assert command.startswith(f"{binary('kube-scheduler')} --config=")
        derived = Path(re.search(r"--config=(\S+)", command).group(1))
        assert derived.parent == control_plane.directory and derived != mine
        assert mine.read_text() == before, "the user's file must not be written"
        used = yaml.safe_load(derived.read_text())
        assert used["clientConnection"]["kubeconfig"] == str(control_plane.kubeconfig)
        assert used["extenders"] == config["extenders"]
        first = _pid(control_plane, name)
        assert first is not None and pid_alive(first)

        nodes = make_nodes(kube, allowed={2}, count=2)
        kube.create_pod("cli-1", cpu="100m", schedulerName="cli-added-scheduler")
        assert kube.wait_bound("cli-1") == nodes[1]
        assert ext.metric("extender_requests_total", verb="filter", outcome="ok") >= 1

        # Again with the same name: replaced, not a second process.
        proc = _cluster(control_plane, "scheduler", "--config", str(mine), "--name", name)
        assert proc.returncode == 0 and proc.stdout.startswith(f"replaced {name}"), proc.stderr
        second = _pid(control_plane, name)
        assert second != first and not pid_alive(first) and pid_alive(second)
        kube.create_pod("cli-2", cpu="100m", schedulerName="cli-added-scheduler")
        assert kube.wait_bound("cli-2") == nodes[1]
    finally:
        pid = _pid(control_plane, name)
        if pid is not None:
            stop_pid(pid)


def test_cluster_scheduler_needs_a_running_cluster(tmp_path):
    proc = subprocess.run(
        kube_extender(
            "cluster",
            "--dir",
            str(tmp_path / "none"),
            "scheduler",
            "--config",
            str(REPO / "scheduler-config" / "extender-node-cache.yaml"),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no control plane running" in proc.stderr and "cluster up" in proc.stderr


def _doc_blocks() -> list[str]:
    text = (REPO / "docs" / "extender.md").read_text()
    section = text.split("### Running kube-scheduler with these files", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_documented_command_lines(kube, control_plane, processes, tmp_path):
    add, by_hand = _doc_blocks()
    assert add.strip() == (
        "kube-extender cluster scheduler --config scheduler-config/extender-node-cache.yaml"
    )  # run by the test above, with its own config
    ext = Extender(control_plane, EXTENDER_CONFIG, name="extender-doc-scheduler")
    processes.append(ext)
    ext.wait_ready()
    # The shipped file, with the extender's port (it says 8888).
    shutil.copytree(REPO / "scheduler-config", tmp_path / "scheduler-config")
    shipped = tmp_path / "scheduler-config" / "extender-node-cache.yaml"
    shipped.write_text(shipped.read_text().replace("127.0.0.1:8888", f"127.0.0.1:{ext.port}"))
    script = (
        by_hand.replace(
            "$HOME/.cache/kube-extender/cluster/kubeconfig", str(control_plane.kubeconfig)
        )
        .replace("$HOME/.cache/kube-extender/bin/kube-scheduler", str(binary("kube-scheduler")))
        .replace("10269", str(free_port()))
    )
    log = tmp_path / "kube-scheduler.log"
    scheduler = spawn(["bash", "-euc", script], log, cwd=tmp_path)
    try:
        nodes = make_nodes(kube, allowed={1}, count=2)
        kube.create_pod("doc-1", cpu="100m")  # default-scheduler: the shipped file's profile
        try:
            assert kube.wait_bound("doc-1", timeout=60) == nodes[0]
        except Exception:
            raise AssertionError(log.read_text()[-3000:]) from None
        wait_until(
            lambda: ext.metric("extender_requests_total", verb="filter", outcome="ok") >= 1,
            10,
            "a filter call",
        )
    finally:
        stop_pid(scheduler.pid)
