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
    (["cluster", "up", "--feature-gates", "GangScheduling"], {}, "--feature-gates"),
    (
        ["cluster", "scheduler", "--config", CONFIG, "--feature-gates", "A=yes"],
        {},
        "--feature-gates",
    ),
    (["cluster", "scheduler", "--config", "/nonexistent.yaml"], {}, "--config"),
    (["cluster", "scheduler", "--config", "deploy/kind-config.yaml"], {}, "--config"),
    (["cluster", "scheduler", "--config", CONFIG, "--name", "etcd"], {}, "--name"),
    (["import", "openb", "-o", "t.json", "--limit-pods", "0"], {}, "--limit-pods"),
    (["import", "openb", "-o", "t.json", "--pods", "/nonexistent.csv"], {}, "--nodes"),
    (["import", "openb", "-o", "t.json", "--openb-dir", "/nonexistent"], {}, "--openb-dir"),
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


TLS_CASES = [
    # (tlsConfig, the field named, the file named): the one that is missing
    ({"certFile": "MISSING", "keyFile": "KEY"}, "tlsConfig.certFile", "MISSING"),
    ({"certFile": "CERT", "keyFile": "MISSING"}, "tlsConfig.keyFile", "MISSING"),
    ({"caFile": "MISSING"}, "tlsConfig.caFile", "MISSING"),
    ({"caFile": "CERT"}, "tlsConfig.caFile", "CERT"),  # exists, holds no certificate
]


@pytest.mark.parametrize("command", ["run", "explain"])
@pytest.mark.parametrize(("tls", "field", "named"), TLS_CASES, ids=[c[1] for c in TLS_CASES])
def test_an_extender_tls_file_that_does_not_load_is_one_line_naming_it(
    tmp_path: Path, command: str, tls: dict, field: str, named: str
) -> None:
    """Checked when the extenders' clients are built (upstream ``buildExtenders``), before
    the first request to the cluster (the kubeconfig's API server is a closed port)."""
    files = {
        "MISSING": str(tmp_path / "tls" / "absent.crt"),
        "CERT": str(tmp_path / "not-pem.crt"),
        "KEY": str(tmp_path / "not-pem.key"),
    }
    for name in ("CERT", "KEY"):
        Path(files[name]).write_text("not PEM\n")
    entries = "".join(f"    {key}: {files[value]}\n" for key, value in tls.items())
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
        "extenders:\n- urlPrefix: https://gpu-extender:8443\n  filterVerb: filter\n"
        f"  tlsConfig:\n{entries}"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    argv = ["run", "--config", str(config), "--kubeconfig", str(kubeconfig)]
    if command == "explain":
        argv = ["explain", "p", "--config", str(config), "--kubeconfig", str(kubeconfig)]
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    proc = subprocess.run(
        [sys.executable, "-m", "extender", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith(
        f"kube-extender {command}: {config}: extender https://gpu-extender:8443: "
    )
    assert f"{field}: {files[named]}" in line, line
