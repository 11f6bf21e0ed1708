"""`filter` under slow clients: requests per second and p99 with 0, 100 and 1000 slow
connections open on the same port, against the same app without them, in one run.

``kube-extender serve`` (examples/extender-offline.yaml, ``--offline``: the plugins read only
the Node objects sent) with its serving front (extender/webhook/front.py). A load generator
keeps C connections alive and posts examples/requests/extender-filter-request-nodecache-false.json
again and again. A second process holds the slow connections: 80 % send a request header a
byte every half second, never ending it; 20 % made one request and stay open, idle
(keep-alive). Rows alternate (0, 100, 1000, 0, ...) for ``--rounds`` rounds; the figures are
the medians over rounds, the ratios against the row without slow connections.

The peer, same run, same app, same threads: gunicorn's stock gthread worker (the serving
model this replaced; a request that gets no answer within 2 s counts as a timeout).

    python bench/slow_clients.py [--seconds 3] [--rounds 3] [--connections 2] [--threads 4]
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok  # noqa: E402

CONFIG = ROOT / "examples" / "extender-offline.yaml"
BODY = (
    ROOT / "examples" / "requests" / "extender-filter-request-nodecache-false.json"
).read_bytes()
SLOW_COUNTS = (0, 100, 1000)
HEAD = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: "
TIMEOUT = 2.0


def gthread_app():  # gunicorn's factory for the peer: the same app build_app makes
    from extender.cli.serve import build_app

    return build_app(str(CONFIG), None, True)


def start_ours(threads: int, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = spawn(
        kube_extender(
            "serve",
            "--config",
            str(CONFIG),
            "--offline",
            "--bind",
            f"127.0.0.1:{port}",
            "--health-bind",
            "off",
            "--threads",
            str(threads),
            "--header-timeout",
            "600",
            "--keepalive",
            "600",
            "--log-level",
            "warning",
        ),
        log,
        cwd=ROOT,
    )
    wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=60)
    return proc, port


def start_gthread(threads: int, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = spawn(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-k",
            "gthread",
            "--threads",
            str(threads),
            "--worker-connections",
            "2000",
            "--keep-alive",
            "600",
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "bench.slow_clients:gthread_app()",
        ],
        log,
        cwd=ROOT,
    )
    wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=60)
    return proc, port


def hold(port: int, count: int) -> None:
    """In a child process: hold ``count`` slow connections until stdin closes."""
    idle = count // 5
    socks = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        if i < idle:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        s.setblocking(False)
        socks.append(s)
    slow = socks[idle:]
    print("ready", flush=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    sent = 0
    while not stop.is_set():
        byte = HEAD[sent : sent + 1] or b"a"
        for s in slow:
            try:
                s.send(byte)
            except OSError:
                pass
        sent += 1
        stop.wait(float(os.environ.get("HOLD_EVERY", "0.5")))


def open_slow(port: int, count: int) -> subprocess.Popen | None:
    if not count:
        return None
    child = subprocess.Popen(
        [sys.executable, __file__, "--hold", str(port), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    time.sleep(1.0)  # a few bytes dribbled on every slow connection
    return child


def load(port: int, seconds: float, connections: int) -> tuple[list[float], int]:
    """Latencies of ``filter`` over keep-alive connections, and the number of timeouts."""
    latencies: list[float] = []
    timeouts = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker() -> None:
        mine: list[float] = []
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        while time.monotonic() < stop_at:
            start = time.perf_counter()
            try:
                conn.request(
                    "POST", "/filter", body=BODY, headers={"Content-Type": "application/json"}
                )
                response = conn.getresponse()
                response.read()
                assert response.status == 200, response.status
                mine.append(time.perf_counter() - start)
            except (TimeoutError, OSError, http.client.HTTPException):
                with lock:
                    timeouts[0] += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, timeouts[0]


def rss_mib(server: subprocess.Popen) -> float:
    out = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout
    pid = int(out.split()[0]) if out.split() else server.pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def p99_ms(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000


def run(name: str, server: subprocess.Popen, port: int, args: argparse.Namespace) -> dict:
    rows: dict[int, dict[str, list[float]]] = {
        n: {"rps": [], "p99": [], "timeouts": [], "rss": []} for n in SLOW_COUNTS
    }
    load(port, 0.5, args.connections)  # warm
    for _ in range(args.rounds):
        for count in SLOW_COUNTS:
            child = open_slow(port, count)
            try:
                latencies, timeouts = load(port, args.seconds, args.connections)
                rows[count]["rss"].append(rss_mib(server))
            finally:
                if child is not None:
                    child.communicate("")
            rows[count]["rps"].append(len(latencies) / args.seconds)
            rows[count]["p99"].append(p99_ms(latencies))
            rows[count]["timeouts"].append(timeouts)
            time.sleep(0.5)  # the server closes the slow connections
    return {n: {k: statistics.median(v) for k, v in row.items()} for n, row in rows.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--hold", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hold:
        hold(*args.hold)
        return 0
    logs = Path(os.environ.get("TMPDIR", "/tmp")) / "kube-extender-bench-slow-clients"
    print(
        f"filter, full Nodes mode (3 nodes, {len(BODY)} bytes); {args.connections} keep-alive "
        f"load connections; 1 worker x {args.threads} threads; {args.seconds:g} s a row, "
        f"median of {args.rounds} rounds\n"
    )
    results = {}
    for name, start in (("kube-extender", start_ours), ("gthread", start_gthread)):
        server, port = start(args.threads, logs / f"{name}.log")
        try:
            results[name] = run(name, server, port, args)
        finally:
            stop_pid(server.pid)
    print(
        f"{'server':>14} {'slow':>5} {'req/s':>8} {'x alone':>8} {'p99 ms':>8} {'x alone':>8}"
        f" {'timeouts':>8} {'RSS MiB':>8}"
    )
    for name, rows in results.items():
        base = rows[0]
        for count, row in rows.items():
            rps_ratio = row["rps"] / base["rps"] if base["rps"] else float("nan")
            p99_ratio = row["p99"] / base["p99"] if base["p99"] else float("nan")
            print(
                f"{name:>14} {count:>5} {row['rps']:>8.0f} {rps_ratio:>8.2f} {row['p99']:>8.2f}"
                f" {p99_ratio:>8.2f} {row['timeouts']:>8.0f} {row['rss']:>8.1f}"
            )
    ours, peer = results["kube-extender"][0], results["gthread"][0]
    print(
        "\nwithout slow connections, kube-extender / gthread: "
        f"req/s {ours['rps'] / peer['rps']:.2f}, p99 {ours['p99'] / peer['p99']:.2f}"
    )
    print("aim: with 1000 slow connections, req/s within 0.8x and p99 within 1.5x of alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
