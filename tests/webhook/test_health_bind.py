"""The health port's default address (issue 27): the host of ``--bind``, its port + 1.

``serve --bind 127.0.0.1:P`` used to open its health port on ``0.0.0.0:8889``: a port on
every interface nobody asked for, and "address in use" beside a second extender.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from extender.cli.serve import default_health_bind
from extender.controlplane import free_port_pair, kube_extender, spawn, stop_pid, wait_http_ok

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "extender-offline.yaml"


def test_default_health_bind_is_the_host_of_bind_on_the_next_port() -> None:
    assert default_health_bind("127.0.0.1:8888") == "127.0.0.1:8889"
    assert default_health_bind("0.0.0.0:9000") == "0.0.0.0:9001"
    assert default_health_bind("[::1]:8888") == "[::1]:8889"
    assert default_health_bind("localhost:18000") == "localhost:18001"
    with pytest.raises(ValueError, match="--health-bind"):
        default_health_bind("127.0.0.1:65535")


def test_bind_on_the_last_port_without_health_bind_is_one_line_and_exit_2() -> None:
    proc = subprocess.run(
        kube_extender("serve", "--config", str(CONFIG), "--offline", "--bind", "127.0.0.1:65535"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "--health-bind" in last and "Traceback" not in proc.stderr, proc.stderr


def _listening(port: int, table: str) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} writes them) listening on ``port``."""
    found = set()
    for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
        fields = line.split()
        address, _, hexport = fields[1].partition(":")
        if fields[3] == "0A" and int(hexport, 16) == port:  # 0A: TCP_LISTEN
            found.add(address)
    return found


def _serve(tmp_path: Path, bind: str, health_url: str) -> subprocess.Popen:
    log = tmp_path / "serve.log"
    proc = spawn(kube_extender("serve", "--config", str(CONFIG), "--offline", "--bind", bind), log)
    try:
        wait_http_ok(health_url, proc, log, timeout=30)
    except BaseException:
        stop_pid(proc.pid)
        raise
    return proc


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp")
def test_loopback_bind_opens_its_health_port_on_loopback_only(tmp_path: Path) -> None:
    port = free_port_pair()
    proc = _serve(tmp_path, f"127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}/readyz")
    try:
        assert _listening(port + 1, "tcp") == {"0100007F"}  # 127.0.0.1, not 0.0.0.0
        assert not _listening(port + 1, "tcp6")
        assert f"also on 127.0.0.1:{port + 1}" in (tmp_path / "serve.log").read_text()
    finally:
        stop_pid(proc.pid)


def _has_ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback")
def test_ipv6_bind_opens_its_health_port_on_the_same_ipv6_host(tmp_path: Path) -> None:
    port = free_port_pair("::1")
    proc = _serve(tmp_path, f"[::1]:{port}", f"http://[::1]:{port + 1}/healthz")
    try:
        assert _listening(port + 1, "tcp6") == {"00000000000000000000000001000000"}  # ::1
    finally:
        stop_pid(proc.pid)


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback")
def test_bind_on_every_ipv6_address_serves_health_on_ipv4_too(tmp_path: Path) -> None:
    # --bind [::]:P: gunicorn's listener takes IPv4 as well; so does the health port (P + 1).
    port = free_port_pair("::")
    proc = _serve(tmp_path, f"[::]:{port}", f"http://127.0.0.1:{port}/healthz")
    try:
        wait_http_ok(f"http://127.0.0.1:{port + 1}/healthz", proc, tmp_path / "serve.log", 10)
        wait_http_ok(f"http://[::1]:{port + 1}/healthz", proc, tmp_path / "serve.log", 10)
    finally:
        stop_pid(proc.pid)
