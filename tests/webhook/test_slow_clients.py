"""Slow and idle clients cannot starve the verb port (issue 21): a real ``kube-extender serve``
and real sockets.

1000 connections held open (most dribbling a request header a byte at a time, the rest idle
kept-alive after a request) while ``filter``, ``prioritize`` and ``/healthz`` on the same port
answer within a generous bound, and the worker's memory stays bounded. The gthread server this
replaced stopped answering the verb port with 24 such connections (each held a thread).
"""

from __future__ import annotations

import http.client
import os
import resource
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "extender-offline.yaml"
REQUESTS = ROOT / "examples" / "requests"
FILTER = (REQUESTS / "extender-filter-request-nodecache-false.json").read_bytes()
PRIORITIZE = (REQUESTS / "extender-prioritize-request-nodecache-false.json").read_bytes()
JSON = {"Content-Type": "application/json"}

SLOW, IDLE = 800, 200
BOUND = 5.0  # seconds: the normal time is milliseconds; the gthread server never answered
RSS_GROWTH_MIB = 32  # measured: about 5 MiB for the 1000 connections


def _ensure_fds(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"needs {needed} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def _serve(tmp: Path, *flags: str) -> tuple[subprocess.Popen, int, int, Path]:
    port, health = free_port(), free_port()
    log = tmp / "serve.log"
    proc = spawn(
        kube_extender(
            "serve",
            "--config",
            str(CONFIG),
            "--offline",
            "--bind",
            f"127.0.0.1:{port}",
            "--health-bind",
            f"127.0.0.1:{health}",
            *flags,
        ),
        log,
    )
    wait_http_ok(f"http://127.0.0.1:{health}/readyz", proc, log, timeout=30)
    return proc, port, health, log


def _worker(proc: subprocess.Popen) -> int:
    out = subprocess.run(
        ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=True
    ).stdout
    return int(out.split()[0])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _open_sockets(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def _timed(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, float]:
    """(status, seconds) of one request on a new connection; fails past BOUND."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND)
    try:
        conn.request(method, path, body=body, headers=JSON if body else {})
        resp = conn.getresponse()
        resp.read()
        status = resp.status
    except (TimeoutError, OSError, http.client.HTTPException) as exc:
        pytest.fail(f"{method} {path} got no answer within {BOUND}s: {exc!r}")
    finally:
        conn.close()
    return status, time.monotonic() - start


def _probe(port: int) -> dict[str, float]:
    took = {}
    for name, method, path, body in (
        ("filter", "POST", "/filter", FILTER),
        ("prioritize", "POST", "/prioritize", PRIORITIZE),
        ("healthz", "GET", "/healthz", None),
    ):
        status, seconds = _timed(port, method, path, body)
        assert status == 200, (name, status)
        took[name] = seconds
    return took


class Dribbler:
    """Connections that send a request header a byte every ``every`` seconds, never ending it."""

    HEAD = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: "

    def __init__(self, port: int, count: int, every: float = 0.5) -> None:
        self.socks = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port))
            s.setblocking(False)
            self.socks.append(s)
        self.every = every
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            byte = self.HEAD[self.sent : self.sent + 1] or b"a"
            for s in self.socks:
                try:
                    s.send(byte)
                except OSError:
                    pass
            self.sent += 1
            self.stop.wait(self.every)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def _idle_keepalives(port: int, count: int) -> list[socket.socket]:
    """Connections that made one request and stay open (HTTP/1.1 keep-alive), unread."""
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(s)
    return socks


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    _ensure_fds(SLOW + IDLE + 256)
    tmp = tmp_path_factory.mktemp("slow-clients")
    # Deadlines longer than the test: the connections stay open by design, not by luck.
    proc, port, _, log = _serve(
        tmp, "--header-timeout", "120", "--keepalive", "120", "--threads", "4"
    )
    yield proc, port, log
    stop_pid(proc.pid)


def test_verbs_and_healthz_answer_with_1000_slow_and_idle_connections(server) -> None:
    proc, port, _ = server
    worker = _worker(proc)
    for _ in range(3):  # warm: every route answered once, allocator settled
        _probe(port)
    before = _rss_mib(worker)
    dribbler = Dribbler(port, SLOW)
    idle = _idle_keepalives(port, IDLE)
    try:
        time.sleep(2.0)  # several bytes dribbled on every slow connection
        rounds = [_probe(port) for _ in range(5)]
        worst = {name: max(r[name] for r in rounds) for name in rounds[0]}
        assert all(seconds < BOUND for seconds in worst.values()), worst
        growth = _rss_mib(worker) - before
        assert growth < RSS_GROWTH_MIB, f"RSS grew {growth:.1f} MiB for {SLOW + IDLE} sockets"
        # The slow connections are still open: nothing was answered by dropping them.
        held = _open_sockets(worker)
        assert held >= SLOW + IDLE, f"the worker holds {held} sockets, not all of them"
    finally:
        dribbler.close()
        for s in idle:
            s.close()
