"""curl against a running ``kube-extender serve`` (real gunicorn, gthread workers).

Offline (no cluster connection) with plugins that need no pods: the full-Nodes mode, fed the
exact bytes a real kube-scheduler v1.36 sent (tests/webhook/samples).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok

SAMPLES = Path(__file__).resolve().parents[2] / "examples" / "requests"

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: offline
    plugins:
      multiPoint:
        disabled: [{name: "*"}]
      queueSort: {enabled: [{name: PrioritySort}]}
      filter: {enabled: [{name: NodeUnschedulable}, {name: NodeName}]}
      preScore: {enabled: [{name: NodeNumber}]}
      score: {enabled: [{name: NodeNumber, weight: 1}]}
      bind: {enabled: [{name: DefaultBinder}]}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
urlPrefix: /scheduler
maxRequestBytes: 100000
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("gunicorn")
    config = tmp / "config.yaml"
    config.write_text(CONFIG)
    port = free_port()
    log = tmp / "serve.log"
    proc = spawn(
        kube_extender(
            "serve",
            "--config",
            str(config),
            "--offline",
            "--bind",
            f"127.0.0.1:{port}",
            "--health-bind",
            f"127.0.0.1:{free_port()}",
            "--workers",
            "2",
            "--threads",
            "4",
        ),
        log,
    )
    url = f"http://127.0.0.1:{port}"
    wait_http_ok(url + "/readyz", proc, log, timeout=30)
    yield url
    stop_pid(proc.pid)


def curl(url: str, *args: str, stdin: str | None = None) -> tuple[int, str]:
    out = subprocess.run(
        ["curl", "-s", "-w", "\n%{http_code}", *args, url],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    body, _, code = out.rpartition("\n")
    return int(code), body


def post_file(url: str, name: str) -> tuple[int, str]:
    return curl(
        url,
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        f"@{SAMPLES / name}",
    )


def test_filter_sample_full_nodes(server: str) -> None:
    code, body = post_file(
        server + "/scheduler/filter", "extender-filter-request-nodecache-false.json"
    )
    assert code == 200, body
    reply = json.loads(body)
    sent = json.loads((SAMPLES / "extender-filter-request-nodecache-false.json").read_text())
    assert reply["NodeNames"] is None
    assert reply["Nodes"]["items"] == sent["Nodes"]["items"], "nodes must be echoed unchanged"
    assert reply["FailedNodes"] == {} and reply["FailedAndUnresolvableNodes"] == {}
    assert reply["Error"] == ""


def test_prioritize_sample(server: str) -> None:
    code, body = post_file(
        server + "/scheduler/prioritize", "extender-prioritize-request-nodecache-false.json"
    )
    assert code == 200, body
    reply = json.loads(body)
    assert isinstance(reply, list)
    assert {entry["Host"] for entry in reply} == {"ext-node-0", "ext-node-1", "ext-node-2"}
    assert all(isinstance(entry["Score"], int) and 0 <= entry["Score"] <= 10 for entry in reply)


def test_names_mode_offline_is_an_in_band_error(server: str) -> None:
    code, body = post_file(
        server + "/scheduler/filter", "extender-filter-request-nodecache-true.json"
    )
    assert code == 200
    reply = json.loads(body)
    assert reply["NodeNames"] == [] and "no node cache" in reply["Error"]


def test_bind_is_off_by_default(server: str) -> None:
    code, body = post_file(server + "/scheduler/bind", "extender-bind-request.json")
    assert code == 404
    assert "bind verb is disabled" in json.loads(body)["error"]


JSON = ("-H", "Content-Type: application/json")


def test_bad_bodies(server: str) -> None:
    code, body = curl(server + "/scheduler/filter", "-X", "POST", *JSON, "--data-binary", "{oops")
    assert code == 400 and "not valid JSON" in json.loads(body)["error"]
    code, body = curl(
        server + "/scheduler/filter",
        "-X",
        "POST",
        *JSON,
        "--data-binary",
        '{"Pod": {}, "NodeNames": ["a"]}',
    )
    assert code == 400 and "metadata.name" in body
    big = json.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["n" * 200_000]})
    code, body = curl(
        server + "/scheduler/filter", "-X", "POST", *JSON, "--data-binary", "@-", stdin=big
    )
    assert code == 413 and "100000 bytes" in json.loads(body)["error"]


def test_health_metrics_version(server: str) -> None:
    assert curl(server + "/healthz")[0] == 200
    code, body = curl(server + "/version")
    assert code == 200 and json.loads(body)["name"] == "kube-extender"
    code, body = curl(server + "/metrics")
    assert code == 200 and "extender_requests_total" in body


def test_serve_refuses_pod_plugins_without_a_cluster(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "extender",
            "serve",
            "--config",
            str(config),
            "--offline",
            "--bind",
            f"127.0.0.1:{free_port()}",
            "--health-bind",
            f"127.0.0.1:{free_port()}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Checked before gunicorn starts: one line and exit 2 (not a worker that fails to boot,
    # gunicorn's log lines and its exit code 4).
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "gunicorn" not in proc.stderr, proc.stderr
    assert lines[0].startswith("kube-extender serve: ")
    assert "NodeResourcesFit" in lines[0] and "no cluster connection" in lines[0]


def test_serve_names_the_bad_config_field(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - schedulerName: x\n    plugins:\n      score:\n        enabled:\n"
        "          - name: NoSuchPlugin\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "extender", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr and "NoSuchPlugin" in proc.stderr
    assert "Traceback" not in proc.stderr
