"""Production hardening of ``kube-extender serve`` against a real gunicorn (issue 12).

Slow and idle clients, large and chunked bodies, content types and encodings, gunicorn's own
error answers and log lines.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "extender-offline.yaml"
SAMPLE = ROOT / "examples" / "requests" / "extender-filter-request-nodecache-false.json"
LIMIT = 32 * 1024 * 1024  # the default maxRequestBytes


class Server:
    def __init__(self, port: int, health: int, proc: subprocess.Popen, log: Path) -> None:
        self.port, self.health, self.proc, self.log = port, health, proc, log

    def worker_pid(self) -> int:
        out = subprocess.run(
            ["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True, check=True
        )
        return int(out.stdout.split()[0])

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        port: int | None = None,
    ) -> tuple[int, bytes, dict[str, str]]:
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("hardening")
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
            "--threads",
            "4",
            "--header-timeout",
            "2",
            "--body-timeout",
            "5",
            "--log-format",
            "json",
            "--access-log",
        ),
        log,
    )
    wait_http_ok(f"http://127.0.0.1:{health}/readyz", proc, log, timeout=30)
    yield Server(port, health, proc, log)
    stop_pid(proc.pid)


def _vm(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(key)


def _post_sample(server: Server) -> int:
    status, _, _ = server.request(
        "POST", "/filter", SAMPLE.read_bytes(), {"Content-Type": "application/json"}
    )
    return status


def test_health_answers_within_a_second_under_slowloris_and_idle_connects(
    server: Server,
) -> None:
    slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(8)]
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(8)]
    stop = threading.Event()

    def drip() -> None:
        for s in slow:
            s.sendall(b"P")
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"O")
                except OSError:
                    pass
            stop.wait(0.3)

    threading.Thread(target=drip, daemon=True).start()
    try:
        time.sleep(0.5)
        for _ in range(3):
            start = time.monotonic()
            status, body, _ = server.request("GET", "/healthz", port=server.health)
            took = time.monotonic() - start
            assert status == 200 and body == b"ok"
            assert took < 1.0, f"/healthz took {took:.2f}s under slowloris"
            status, _, _ = server.request("GET", "/readyz", port=server.health)
            assert status == 200
            time.sleep(0.3)
        # Slow clients hold no verb thread (front.py): a verb completes at once on the same
        # port (the gthread server took until the header deadline freed its threads).
        start = time.monotonic()
        assert _post_sample(server) == 200
        assert time.monotonic() - start < 2
        # The header deadline (2 s here) still closes the slow connections.
        deadline = time.monotonic() + 5
        while "request headers not received within 2.0s" not in server.log.read_text():
            assert time.monotonic() < deadline, "no slow connection was closed at its deadline"
            time.sleep(0.2)
    finally:
        stop.set()
        for s in slow + idle:
            s.close()


def test_health_port_is_small_and_strict(server: Server) -> None:
    assert server.request("GET", "/metrics", port=server.health)[0] == 404
    assert server.request("POST", "/healthz", b"x", port=server.health)[0] == 405
    # A silent client on the health port is dropped after its deadline, others still served.
    quiet = [socket.create_connection(("127.0.0.1", server.health)) for _ in range(32)]
    try:
        start = time.monotonic()
        while True:
            try:
                if server.request("GET", "/healthz", port=server.health)[0] == 200:
                    break
            except (ConnectionError, http.client.HTTPException):
                pass
            assert time.monotonic() - start < 3
            time.sleep(0.1)
    finally:
        for s in quiet:
            s.close()


def test_over_limit_body_is_413_json_before_it_is_read(server: Server) -> None:
    # Only the headers are sent: the answer comes from the declared length.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(
            b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {LIMIT + 1}\r\n\r\n".encode()
        )
        reply = b""
        while b"}" not in reply:
            chunk = s.recv(65536)
            assert chunk, reply
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == b"413" and b"application/json" in head
    error = json.loads(body)
    assert error["limit"] == LIMIT and f"{LIMIT} bytes" in error["error"]


def test_chunked_over_limit_body_is_413_not_cut_and_parsed(server: Server) -> None:
    def chunks():
        piece = b" " * (1024 * 1024)
        yield b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a"]}'
        for _ in range(LIMIT // len(piece) + 2):
            yield piece

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/filter",
            body=chunks(),
            headers={"Content-Type": "application/json"},
            encode_chunked=True,
        )
        resp = conn.getresponse()
        assert resp.status == 413
        assert f"{LIMIT} bytes" in json.loads(resp.read())["error"]
    except (BrokenPipeError, ConnectionResetError):
        pytest.fail("the connection was dropped instead of answered 413")
    finally:
        conn.close()


def test_large_body_rss_stays_bounded_and_concurrent_large_bodies_get_503(
    server: Server,
) -> None:
    worker = server.worker_pid()
    # A body that holds the whole in-flight budget, sent halfway and stalled.
    hog = socket.create_connection(("127.0.0.1", server.port))
    hog.sendall(
        b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {LIMIT - 1024}\r\n\r\n".encode()
        + b" " * (1024 * 1024)
    )
    try:
        time.sleep(0.5)
        status, reply, _ = server.request(
            "POST", "/filter", b" " * (2 * 1024 * 1024), {"Content-Type": "application/json"}
        )
        assert status == 503, reply
        assert "in flight" in json.loads(reply)["error"]
    finally:
        hog.close()
    time.sleep(0.5)
    # The largest accepted body, parsed and answered: RSS grows by a bounded factor.
    nodes = json.loads(SAMPLE.read_text())
    item = nodes["Nodes"]["items"][0]
    # Nodes of ~8 KB (as real ones with images are), so the count stays under the node limit.
    item = {**item, "metadata": {**item["metadata"], "annotations": {"pad": "x" * 6000}}}
    count = (LIMIT - 1024 * 1024) // len(json.dumps(item))
    nodes["Nodes"]["items"] = [
        {**item, "metadata": {**item["metadata"], "name": f"n{i}"}} for i in range(count)
    ]
    body = json.dumps(nodes).encode()
    assert LIMIT - 2 * 1024 * 1024 < len(body) <= LIMIT
    status, _, _ = server.request("POST", "/filter", body, {"Content-Type": "application/json"})
    assert status == 200
    peak = _vm(worker, "VmHWM")
    assert peak < 400, f"worker peak RSS {peak:.0f} MiB for a {len(body) >> 20} MiB body"


def test_content_type_and_encoding_are_415_json(server: Server) -> None:
    raw = SAMPLE.read_bytes()
    status, reply, _ = server.request(
        "POST",
        "/filter",
        raw,
        {"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert status == 415
    assert json.loads(reply)["error"] == "Content-Encoding gzip is not supported"
    status, reply, _ = server.request("POST", "/filter", raw, {"Content-Type": "text/plain"})
    assert status == 415 and "application/json" in json.loads(reply)["error"]
    status, reply, _ = server.request("POST", "/filter", raw)
    assert status == 415
    status, _, _ = server.request(
        "POST", "/filter", raw, {"Content-Type": "application/json; charset=utf-8"}
    )
    assert status == 200


def _raw(server: Server, data: bytes) -> tuple[int, dict, str]:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(data)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    return status, json.loads(body), head.decode("latin1")


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"BROKEN\r\n\r\n", 400),
        (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
    ],
)
def test_gunicorn_error_answers_are_json(server: Server, request_bytes: bytes, status: int) -> None:
    got, body, head = _raw(server, request_bytes)
    assert got == status
    assert "application/json" in head and isinstance(body["error"], str) and body["error"]


def test_gunicorn_lines_and_access_log_are_json(server: Server) -> None:
    assert _post_sample(server) == 200
    time.sleep(0.3)
    lines = [line for line in server.log.read_text().splitlines() if line.strip()]
    assert lines
    entries = [json.loads(line) for line in lines]  # every line, gunicorn's included
    loggers = {entry["logger"] for entry in entries}
    assert {"gunicorn.error", "gunicorn.access"} <= loggers
    access = [e for e in entries if e["logger"] == "gunicorn.access" and e["path"] == "/filter"]
    assert access and access[-1]["status"] == 200
    assert access[-1]["request_bytes"] == SAMPLE.stat().st_size
    assert access[-1]["response_bytes"] > 0 and access[-1]["duration_ms"] >= 0
    assert not any("Control socket" in e["msg"] for e in entries)


def _unknown_path_count(server: Server) -> float:
    _, metrics, _ = server.request("GET", "/metrics")
    for line in metrics.decode().splitlines():
        if line.startswith('extender_unknown_path_requests_total{method="POST"}'):
            return float(line.split()[-1])
    return 0.0


def test_unknown_verb_path_through_the_front_is_counted_and_warned(server: Server) -> None:
    before = _unknown_path_count(server)
    status, body, _ = server.request(
        "POST", "/prioritise", SAMPLE.read_bytes(), {"Content-Type": "application/json"}
    )
    assert status == 404
    assert json.loads(body)["verbs"] == ["/filter", "/prioritize", "/preempt", "/bind", "/explain"]
    # A body over the limit reaches the app unread: still a 404 on an unknown path, counted.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(
            b"POST /prioritise HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {LIMIT + 1}\r\n\r\n".encode()
        )
        assert s.recv(65536).split()[1] == b"404"
    assert _unknown_path_count(server) == before + 2
    deadline = time.monotonic() + 5
    while True:
        lines = [json.loads(line) for line in server.log.read_text().splitlines() if "{" in line]
        warned = [
            entry
            for entry in lines
            if entry.get("level") == "warning" and "'/prioritise'" in entry.get("msg", "")
        ]
        if warned or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(warned) == 1 and "/prioritize" in warned[0]["msg"], lines[-5:]


def test_a_verb_sent_to_the_health_port_is_counted_and_warned(server: Server) -> None:
    # urlPrefix pointed at the health port (the next port) by mistake: 404s, not silent.
    before = _unknown_path_count(server)
    status, body, _ = server.request("POST", "/filter", b"{}", port=server.health)
    assert status == 404 and "--bind" in json.loads(body)["error"]
    assert _unknown_path_count(server) == before + 1
    deadline = time.monotonic() + 5
    while True:
        warned = [
            line
            for line in server.log.read_text().splitlines()
            if '"warning"' in line and "'/filter' on the health port" in line
        ]
        if warned or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(warned) == 1
