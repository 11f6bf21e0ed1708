"""The README's curl walkthrough, run as printed (only the port is changed to a free one)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from extender.controlplane import free_port_pair, kube_extender, spawn, stop_pid, wait_http_ok

REPO = Path(__file__).resolve().parents[2]


def readme_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Try the extender with curl", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the README lost its curl block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_curl_walkthrough(tmp_path: Path) -> None:
    lines = readme_block()
    serve = lines[0].removesuffix("&").strip()
    assert serve.startswith("kube-extender serve ")
    port = free_port_pair()  # and the health port, the next one
    argv = shlex.split(serve.replace("127.0.0.1:8888", f"127.0.0.1:{port}"))
    log = tmp_path / "serve.log"
    proc = spawn(kube_extender(*argv[1:]), log, cwd=REPO)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/healthz", proc, log, timeout=30)
        outputs = []
        for line in lines[1:]:
            assert line.startswith("curl ")
            command = line.replace("127.0.0.1:8888", f"127.0.0.1:{port}")
            out = subprocess.run(
                command,
                shell=True,
                cwd=REPO,
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
            outputs.append(out if line.endswith("/readyz") else json.loads(out))
    finally:
        stop_pid(proc.pid)
    filtered, prioritized, bad, ready = outputs
    assert [n["metadata"]["name"] for n in filtered["Nodes"]["items"]] == [
        "ext-node-0",
        "ext-node-1",
        "ext-node-2",
    ]
    assert filtered["NodeNames"] is None and filtered["Error"] == ""
    assert sorted(e["Host"] for e in prioritized) == ["ext-node-0", "ext-node-1", "ext-node-2"]
    assert bad["error"] == "invalid request body" and "Pod" in bad["fields"]
    assert ready == "ok"
