"""docs/extender.md's certificate recipe, run as printed: the openssl commands, then ``serve``
with the certificates and curl with the client certificate (only the ports are changed)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from extender.controlplane import free_port_pair, kube_extender, spawn, stop_pid, wait_http_ok

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (shutil.which("openssl") and shutil.which("bash") and shutil.which("curl")),
    reason="needs openssl, bash and curl",
)


def recipe_blocks() -> tuple[str, list[str]]:
    text = (REPO / "docs" / "extender.md").read_text()
    section = text.split("### Certificates: a recipe", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(blocks) >= 2, "docs/extender.md lost its certificate recipe"
    return blocks[0], [line for line in blocks[1].splitlines() if line.strip()]


def test_certificate_recipe_serves_mtls(tmp_path: Path) -> None:
    recipe, lines = recipe_blocks()
    subprocess.run(
        ["bash", "-euo", "pipefail", "-c", recipe],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    tls = tmp_path / "tls"
    (tmp_path / "examples").symlink_to(REPO / "examples")

    port = free_port_pair()

    def ported(line: str) -> str:
        for host in ("127.0.0.1", "localhost"):
            line = line.replace(f"{host}:8443", f"{host}:{port}")
            line = line.replace(f"{host}:8444", f"{host}:{port + 1}")
        return line

    serve = shlex.split(ported(lines[0].removesuffix("&").strip()))
    assert serve[:2] == ["kube-extender", "serve"]
    log = tmp_path / "serve.log"
    proc = spawn(kube_extender(*serve[1:]), log, cwd=tmp_path)
    try:
        wait_http_ok(f"http://127.0.0.1:{port + 1}/readyz", proc, log, timeout=30)
        outputs = []
        for line in lines[1:]:
            assert line.startswith("curl "), line
            out = subprocess.run(
                ported(line),
                shell=True,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=30,
            )
            outputs.append(out.stdout.strip())
        # kube-scheduler dials the Service's name: the server certificate carries it.
        context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
        context.load_cert_chain(str(tls / "client.crt"), str(tls / "client.key"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="kube-extender.kube-extender.svc") as s:
                assert s.version()
    finally:
        stop_pid(proc.pid)
    filtered, refused, ready = outputs
    body, _, status = filtered.rpartition(" ")
    assert status == "200", filtered
    assert json.loads(body)["Error"] == ""
    assert refused == "refused: no client certificate"
    assert ready == "ok"
