"""Progress on long work: ``kube-extender simulate`` draws a bar (tqdm) on stderr when it is a
terminal (a real pseudo-terminal here), and prints nothing of it under ``-o json`` or when
stderr is not a terminal, so a document on stdout and a CI log stay clean."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import yaml

from extender.testing import node, pod


def _dump(tmp_path: Path, pods: int = 300) -> list[str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node(f"n{i}", cpu="64") for i in range(20)]))
    wanted = tmp_path / "pods.yaml"
    wanted.write_text(yaml.safe_dump_all([pod(f"p{i}", cpu="100m") for i in range(pods)]))
    return ["simulate", "--cluster", str(cluster), "--pods", str(wanted)]


def _run_with_stderr_on_a_terminal(args: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, what the terminal on stderr received)."""
    leader, follower = pty.openpty()
    # 24 rows x 100 columns, as a terminal window has (a bare pty has 0 x 0).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "extender", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode() if proc.stdout else ""
    os.close(leader)
    return proc.wait(timeout=120), out, seen.decode(errors="replace")


def test_simulate_shows_a_bar_on_a_terminal(tmp_path: Path) -> None:
    code, out, terminal = _run_with_stderr_on_a_terminal(_dump(tmp_path))
    assert code == 0, terminal
    assert "300/300 pods placed" in out
    assert "scheduling:" in terminal and "/300 [" in terminal and "pod/s" in terminal
    assert "scheduling" not in out  # the table on stdout has no bar in it


def test_simulate_is_quiet_under_json_even_on_a_terminal(tmp_path: Path) -> None:
    code, out, terminal = _run_with_stderr_on_a_terminal([*_dump(tmp_path), "-o", "json"])
    assert code == 0, terminal
    assert len(json.loads(out)["placements"]) == 300
    assert terminal == ""


def test_simulate_is_quiet_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "extender", *_dump(tmp_path, pods=20)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == ""
