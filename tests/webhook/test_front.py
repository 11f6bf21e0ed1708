"""The serving front (extender/webhook/front.py) against a real ``kube-extender serve``: the
connection cap and what happens beyond it, the body deadline, keep-alive and pipelining,
``Expect: 100-continue``, the open-file limit, and mTLS (the allow-list reads the peer
certificate) with clients that never finish their TLS handshake."""

from __future__ import annotations

import http.client
import json
import resource
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok
from extender.controlplane.certs import generate, issue_serving_cert

from .test_slow_clients import FILTER, JSON, Dribbler, _open_sockets, _serve, _worker

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "extender-offline.yaml"
HEAD = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def _filter(port: int, timeout: float = 5.0) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/filter", body=FILTER, headers=JSON)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def _read_all(s: socket.socket, timeout: float = 5.0) -> bytes:
    s.settimeout(timeout)
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


def _wait_for(log: Path, needle: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while needle not in log.read_text():
        assert time.monotonic() < deadline, f"{needle!r} not logged"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory):
    proc, port, _, log = _serve(
        tmp_path_factory.mktemp("capped"),
        "--max-connections",
        "20",
        "--threads",
        "2",
        "--header-timeout",
        "60",
        "--keepalive",
        "60",
        "--body-timeout",
        "1",
    )
    yield proc, port, log
    stop_pid(proc.pid)


def test_at_the_cap_the_longest_waiting_slow_header_is_closed_for_a_new_client(capped) -> None:
    proc, port, log = capped
    dribbler = Dribbler(port, 19)
    time.sleep(1.0)
    more = Dribbler(port, 11)  # 30 slow heads against a cap of 20
    try:
        time.sleep(1.0)
        assert _filter(port) == 200
        held = _open_sockets(_worker(proc))
        assert held <= 20 + 8, f"{held} sockets held with a cap of 20"
        _wait_for(log, "sending its request head for")
    finally:
        dribbler.close()
        more.close()


def test_at_the_cap_the_longest_idle_is_closed_first(capped) -> None:
    _, port, log = capped
    time.sleep(0.5)  # the previous test's connections are gone
    idle = []
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        idle.append(s)
        time.sleep(0.01)
    try:
        time.sleep(0.3)
        assert _filter(port) == 200
        _wait_for(log, ", idle for")
        reply = _read_all(idle[0], 2)
        assert b"200 OK" in reply  # answered, then closed as the longest idle
        idle[-1].settimeout(0.5)
        with pytest.raises(TimeoutError):
            idle[-1].recv(65536)
            idle[-1].recv(65536)  # the newest is still open: no end of stream
    finally:
        for s in idle:
            s.close()


def test_at_the_cap_with_every_connection_in_a_request_new_ones_get_503(capped) -> None:
    _, port, log = capped
    time.sleep(0.5)
    bodies = []
    for _ in range(20):  # headers in, body still arriving: not evictable
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(HEAD + b"Content-Length: 100\r\n\r\n{")
        bodies.append(s)
    try:
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", port)) as extra:
            reply = _read_all(extra, 3)
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.split()[1] == b"503", reply
        assert "too many connections" in json.loads(body)["error"]
        _wait_for(log, "with every connection in a request")
    finally:
        for s in bodies:
            s.close()


def test_body_deadline_closes_a_stalled_body(capped) -> None:
    _, port, log = capped
    time.sleep(1.5)  # the previous test's bodies timed out (1 s)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(HEAD + b"Content-Length: 100\r\n\r\n{")
        start = time.monotonic()
        assert _read_all(s, 5) == b""  # closed, not answered
        assert time.monotonic() - start < 3
    _wait_for(log, "request body not received within 1.0s")


def test_keepalive_pipelining_and_100_continue(capped) -> None:
    _, port, _ = capped
    time.sleep(1.5)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        request = HEAD + f"Content-Length: {len(FILTER)}\r\n\r\n".encode() + FILTER
        s.sendall(
            request + request + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        replies = _read_all(s)
    assert replies.count(b"HTTP/1.1 200 OK") == 3
    assert replies.endswith(b"\r\n\r\nok")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(HEAD + f"Content-Length: {len(FILTER)}\r\nExpect: 100-continue\r\n\r\n".encode())
        assert s.recv(1024).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        s.sendall(FILTER)
        s.shutdown(socket.SHUT_WR)  # half-closed: the answer still comes
        reply = _read_all(s)
    assert reply.startswith(b"HTTP/1.1 200 OK") and b'"Error":""' in reply


def _big_filter(megabytes: int) -> bytes:
    sample = json.loads(FILTER)
    item = sample["Nodes"]["items"][0]
    item = {**item, "metadata": {**item["metadata"], "annotations": {"pad": "x" * 6000}}}
    count = megabytes * 1024 * 1024 // len(json.dumps(item))
    sample["Nodes"]["items"] = [
        {**item, "metadata": {**item["metadata"], "name": f"n{i}"}} for i in range(count)
    ]
    return json.dumps(sample).encode()


def test_a_client_that_does_not_read_its_answer_is_dropped(capped) -> None:
    _, port, log = capped
    body = _big_filter(8)  # the answer echoes the Nodes: 8 MiB the client never reads
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert _filter(port) == 200  # meanwhile, others are served
        _wait_for(log, "the response was not read within 1.0s", seconds=10)
    finally:
        s.close()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", 501),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Many: 1\r\n" * 100 + b"\r\n", 431),
        (b"GET /healthz HTTP/1.1\r\nX-Huge: " + b"a" * 40000, 431),
    ],
    ids=["transfer-coding", "fields", "head-size"],
)
def test_more_error_answers_are_json(capped, request_bytes: bytes, status: int) -> None:
    _, port, _ = capped
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(request_bytes)
        reply = _read_all(s)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == str(status).encode(), reply
    assert b"application/json" in head and json.loads(body)["error"]


def _limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), (-1 if hard == "unlimited" else int(hard))
    raise AssertionError("no open-file limit")


def _serve_limited(
    tmp: Path, nofile: tuple[int, int], *flags: str
) -> tuple[subprocess.Popen, Path]:
    """The server started with this (soft, hard) open-file limit."""
    port, health = free_port(), free_port()
    log = tmp / "serve.log"
    argv = kube_extender(
        "serve",
        "--config",
        str(CONFIG),
        "--offline",
        "--bind",
        f"127.0.0.1:{port}",
        "--health-bind",
        f"127.0.0.1:{health}",
        *flags,
    )
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # stop_pid stops the group
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile),
        )
    wait_http_ok(f"http://127.0.0.1:{health}/readyz", proc, log, timeout=30)
    return proc, log


def test_the_soft_open_file_limit_is_raised_for_the_connections(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1256:
        pytest.skip(f"the hard open-file limit is {hard}")
    proc, _ = _serve_limited(tmp_path, (128, hard), "--max-connections", "1000")
    try:
        assert _limits(_worker(proc))[0] == 1000 + 256
    finally:
        stop_pid(proc.pid)


def test_a_low_hard_limit_lowers_the_cap_and_says_so(tmp_path: Path) -> None:
    proc, log = _serve_limited(tmp_path, (600, 600), "--max-connections", "1000")
    try:
        assert _limits(_worker(proc)) == (600, 600)
        assert "--max-connections 1000 lowered to 344" in log.read_text()
    finally:
        stop_pid(proc.pid)


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("mtls")
    pki = generate(tmp / "pki")
    cert, key = issue_serving_cert(pki, tmp / "pki", "extender", ["127.0.0.1"])
    allowed = issue_serving_cert(pki, tmp / "pki", "scheduler", ["scheduler.example"])
    other = issue_serving_cert(pki, tmp / "pki", "someone", ["someone.example"])
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
            "--certfile",
            str(cert),
            "--keyfile",
            str(key),
            "--ca-certs",
            str(pki.ca_cert),
            "--allowed-client",
            "scheduler.example",
            "--header-timeout",
            "2",
        ),
        log,
    )
    wait_http_ok(f"http://127.0.0.1:{health}/readyz", proc, log, timeout=30)

    def context(client: tuple[Path, Path]) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
        ctx.load_cert_chain(*map(str, client))
        return ctx

    yield port, context(allowed), context(other), log
    stop_pid(proc.pid)


def _tls_filter(port: int, context: ssl.SSLContext) -> tuple[int, dict]:
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
    try:
        conn.request("POST", "/filter", body=FILTER, headers=JSON)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_mtls_allow_list_reads_the_peer_certificate_with_silent_tcp_clients(mtls) -> None:
    port, allowed, other, log = mtls
    # Connections that never start their TLS handshake hold no thread either.
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
    try:
        status, reply = _tls_filter(port, allowed)
        assert status == 200 and reply["Error"] == "", reply
        status, reply = _tls_filter(port, other)
        assert status == 403 and reply["identities"] == ["someone", "someone.example"], reply
        # The handshake deadline (--header-timeout) closes them.
        time.sleep(3)
        assert all(_read_all(s, 1) == b"" for s in silent[:5])
    finally:
        for s in silent:
            s.close()
