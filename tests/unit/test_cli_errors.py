"""Mistyped flags and variables: one line naming the flag or variable, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "examples" / "extender-offline.yaml")
MISSING = "/nonexistent/kubeconfig"
# Exists, but is not a kubeconfig (a KubeSchedulerConfiguration).
BROKEN = CONFIG
NO_CLUSTER = {"KUBECONFIG": "", "KUBERNETES_SERVICE_HOST": "", "HOME": "/nonexistent-home"}

CASES = [
    # (command line, extra environment, what the message must name)
    (["serve", "--config", CONFIG, "--log-level", "verbose"], {}, "--log-level"),
    (["serve", "--config", CONFIG, "--bind", "127.0.0.1:99999"], {}, "--bind"),
    (["serve", "--config", CONFIG, "--bind", "18901"], {}, "0.0.0.0:18901"),
    (["serve", "--config", CONFIG, "--health-bind", "8889"], {}, "--health-bind"),
    (["serve", "--config", CONFIG], {"KUBECONFIG": MISSING}, "KUBECONFIG"),
    (["serve", "--config", CONFIG, "--kubeconfig", MISSING], {}, "--kubeconfig"),
    # A kubeconfig that exists but does not load: checked before gunicorn starts its workers.
    (
        ["serve", "--config", CONFIG, "--kubeconfig", BROKEN, "--health-bind", "off"],
        {},
        "no cluster connection",
    ),  # fmt: skip
    (["run", "--config", CONFIG, "--log-level", "verbose"], {}, "--log-level"),
    (["run", "--config", CONFIG, "--metrics-bind", "10259"], {}, "--metrics-bind"),
    (["run", "--config", CONFIG, "--metrics-bind", "h:99999"], {}, "--metrics-bind"),
    (["run", "--config", CONFIG], {"KUBECONFIG": MISSING}, "KUBECONFIG"),
    (["run", "--config", "/nonexistent.yaml"], {}, "--config"),
    (["scenario", "scenarios/seed.py"], {"KUBECONFIG": MISSING}, "KUBECONFIG"),
    (["scenario", "scenarios/seed.py"], NO_CLUSTER, "--kubeconfig"),
    (["scenario", "scenarios/seed.py", "--kubeconfig", MISSING], {}, "--kubeconfig"),
    (["cluster", "up", "--scheduler-config", "/nonexistent.yaml"], {}, "--scheduler-config"),
    (["cluster", "restart"], {}, "invalid choice"),
    (["cluster", "scheduler", "--config", "/nonexistent.yaml"], {}, "--config"),
    (["cluster", "scheduler", "--config", "deploy/kind-config.yaml"], {}, "--config"),
    (["cluster", "scheduler", "--config", CONFIG, "--name", "etcd"], {}, "--name"),
]


@pytest.mark.parametrize(("argv", "env", "named"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_cli_error_is_one_line_and_exit_2(argv: list[str], env: dict, named: str) -> None:
    environ = {**os.environ, **env}
    for key, value in env.items():
        if value == "":
            environ.pop(key, None)
    proc = subprocess.run(
        [sys.executable, "-m", "extender", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=environ,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    # argparse prints its usage first; the error is the last line, and it names the culprit.
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("kube-extender") and named in last, proc.stderr
