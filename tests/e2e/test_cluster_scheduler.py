"""kube-scheduler command lines that run (issue 27): ``kube-extender cluster scheduler`` adds
the real kube-scheduler to a running cluster, and docs/extender.md's hand-written command line
runs as printed; both place a pod through the extender."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import urllib.request
from pathlib import Path

import yaml

from extender.controlplane import (
    ControlPlane,
    binary,
    free_port,
    free_port_pair,
    kube_extender,
    pid_alive,
    spawn,
    stop_pid,
    wait_http_ok,
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
        assert command.startswith(f"{binary('kube-scheduler')} ")
        # The caller's flags come last, so that one given twice (--v) wins.
        assert re.search(r" --config=\S+$", command), command
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
    """docs/extender.md's two blocks as printed: serve and `cluster scheduler`, then
    kube-scheduler by hand; each places a pod through the extender."""
    add, by_hand = _doc_blocks()
    port = free_port_pair()  # the extender's, and its health port

    def ported(text: str) -> str:
        text = text.replace(
            "$HOME/.cache/kube-extender/cluster/kubeconfig", str(control_plane.kubeconfig)
        )
        return text.replace("127.0.0.1:8888", f"127.0.0.1:{port}")  # fmt: skip

    (tmp_path / "deploy").symlink_to(REPO / "deploy")
    shutil.copytree(REPO / "scheduler-config", tmp_path / "scheduler-config")
    shipped = tmp_path / "scheduler-config" / "extender-node-cache.yaml"
    shipped.write_text(ported(shipped.read_text()))

    serve_line, cluster_line = [line for line in add.splitlines() if line.strip()]
    serve = shlex.split(ported(serve_line.removesuffix("&").strip()))
    assert serve[:2] == ["kube-extender", "serve"]
    log = tmp_path / "serve.log"
    extender = spawn(kube_extender(*serve[1:]), log, cwd=tmp_path)
    try:
        wait_http_ok(f"http://127.0.0.1:{port + 1}/readyz", extender, log, timeout=30)
        cluster = shlex.split(cluster_line)
        assert cluster[:3] == ["kube-extender", "cluster", "scheduler"]
        proc = subprocess.run(
            kube_extender("cluster", "--dir", str(control_plane.directory), *cluster[2:]),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        try:
            assert proc.returncode == 0, proc.stderr
            nodes = make_nodes(kube, allowed=set(), count=2)
            kube.create_pod("doc-1", cpu="100m")  # default-scheduler: the shipped file's profile
            assert kube.wait_bound("doc-1", timeout=60) in nodes
        finally:
            pid = _pid(control_plane, "kube-scheduler")
            if pid is not None:
                stop_pid(pid)
        filtered = _filter_calls(port)
        assert filtered >= 1

        script = by_hand.replace(
            "$HOME/.cache/kube-extender/bin/kube-scheduler", str(binary("kube-scheduler"))
        )
        script = ported(script).replace("10269", str(free_port()))
        scheduler_log = tmp_path / "kube-scheduler.log"
        scheduler = spawn(["bash", "-euc", script], scheduler_log, cwd=tmp_path)
        try:
            kube.create_pod("doc-2", cpu="100m")
            try:
                assert kube.wait_bound("doc-2", timeout=60) in nodes
            except Exception:
                raise AssertionError(scheduler_log.read_text()[-3000:]) from None
            wait_until(lambda: _filter_calls(port) > filtered, 10, "a filter call")
        finally:
            stop_pid(scheduler.pid)
    finally:
        stop_pid(extender.pid)


def _filter_calls(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    found = re.search(
        r'^extender_requests_total\{outcome="ok",verb="filter"\} (\S+)$', metrics, re.M
    )
    return float(found.group(1)) if found else 0.0
