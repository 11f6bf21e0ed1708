"""`filter` under slow clients: requests per second and p99 with 0, 100 and 1000 slow
connections open on the same port, against the same app without them, in one run; and, with
``--scenarios``, which server survives which hostile client.

``kube-extender serve`` (examples/extender-offline.yaml, ``--offline``: the plugins read only
the Node objects sent) with its serving front (extender/webhook/front.py). A load generator
keeps C connections alive and posts examples/requests/extender-filter-request-nodecache-false.json
again and again. A second process holds the slow connections: 80 % send a request header a
byte every half second, never ending it; 20 % made one request and stay open, idle
(keep-alive). Rows alternate (0, 100, 1000, 0, ...) for ``--rounds`` rounds; the figures are
the medians over rounds, the ratios against the row without slow connections.

The peers, same app (``build_app``), same thread count, each given the same deadlines and
connection cap as far as it has the knob (``Settings``):

* ``gthread``: gunicorn's stock threaded worker (the serving model the front replaced);
* ``asgi+a2wsgi``: gunicorn's ASGI worker (``-k asgi``) with a2wsgi's ``WSGIMiddleware``
  (its pool thread reads the body from the loop);
* ``asgi+buffered``: gunicorn's ASGI worker with ``BufferedWSGI`` below, which reads the
  body whole in the loop before a pool thread runs the app (as hypercorn's ``WSGIWrapper``);
* ``hypercorn``: hypercorn's own WSGI mode (no connection cap, ``read_timeout`` per read);
* ``waitress``: waitress (``connection_limit``; ``channel_timeout`` is inactivity).

A request that gets no answer within 2 s counts as a timeout. The peers are dev dependencies
(``pip install -e '.[dev]'``).

    python bench/slow_clients.py [--seconds 3] [--rounds 3] [--connections 2] [--threads 4]
        [--servers kube-extender,gthread,...] [--scenarios]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import io
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

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
LIMIT = 32 * 1024 * 1024  # the default maxRequestBytes


def gthread_app():  # the peers' factory: the same app build_app makes
    from extender.cli.serve import build_app

    return build_app(str(CONFIG), None, True)


def a2wsgi_app():  # a2wsgi's WSGIMiddleware: reads the body from the app's thread
    from a2wsgi import WSGIMiddleware

    return WSGIMiddleware(gthread_app(), workers=int(os.environ["BENCH_THREADS"]))


class BufferedWSGI:
    """The WSGI app under an ASGI server, as hypercorn's ``WSGIWrapper`` runs it: the body is
    read whole in the event loop, then one of ``threads`` pool threads runs the app. A declared
    length over ``MAX_CONTENT_LENGTH`` is answered 413 and one over what is left of the app's
    bytes-in-flight budget 503, before the body is read (as the front does)."""

    def __init__(self, app: Any, threads: int) -> None:
        self.app = app
        self.limit = app.config["MAX_CONTENT_LENGTH"]
        self.budget = app.extensions["kube-extender"]["body_budget"]
        self.pool = ThreadPoolExecutor(threads)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        declared = int(dict(scope["headers"]).get(b"content-length", b"0") or 0)
        if declared > self.limit:
            await self._send(send, "413 Content Too Large", [], [b'{"error": "too large"}'])
            return
        if not self.budget.try_acquire(declared):
            await self._send(send, "503 Service Unavailable", [], [b'{"error": "in flight"}'])
            return
        try:
            await self._buffered(scope, receive, send)
        finally:
            self.budget.release(declared)

    async def _buffered(self, scope: dict, receive: Any, send: Any) -> None:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._send(send, "413 Content Too Large", [], [b'{"error": "too large"}'])
                return
            if not message.get("more_body"):
                break
        from a2wsgi.wsgi import build_environ

        environ = build_environ(scope, io.BytesIO(body))
        loop = asyncio.get_running_loop()
        await self._send(send, *await loop.run_in_executor(self.pool, self._run, environ))

    def _run(self, environ: dict) -> tuple[str, list, list[bytes]]:
        started: list = []
        chunks = list(
            self.app(environ, lambda status, headers, exc=None: started.extend((status, headers)))
        )
        return started[0], started[1], chunks

    @staticmethod
    async def _send(send: Any, status: str, headers: list, chunks: list[bytes]) -> None:
        raw = [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in headers]
        await send({"type": "http.response.start", "status": int(status[:3]), "headers": raw})
        await send({"type": "http.response.body", "body": b"".join(chunks)})


def buffered_app():
    return BufferedWSGI(gthread_app(), int(os.environ["BENCH_THREADS"]))


@dataclass(frozen=True)
class Settings:
    """One configuration, applied to every server as far as it has the knob."""

    threads: int
    connections: int  # the cap on open connections
    header: float  # seconds to send the request head
    body: float  # seconds to send the body
    keepalive: float


ROOMY = Settings(threads=4, connections=2000, header=600, body=600, keepalive=600)
TIGHT = Settings(threads=2, connections=20, header=2, body=1, keepalive=60)


def start_ours(s: Settings, log: Path) -> tuple[subprocess.Popen, int]:
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
            str(s.threads),
            "--max-connections",
            str(s.connections),
            "--header-timeout",
            str(s.header),
            "--body-timeout",
            str(s.body),
            "--keepalive",
            str(int(s.keepalive)),
            "--log-level",
            "warning",
        ),
        log,
        cwd=ROOT,
    )
    wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=60)
    return proc, port


def _gunicorn(worker: str, app: str, s: Settings, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    os.environ["BENCH_THREADS"] = str(s.threads)
    proc = spawn(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-k",
            worker,
            "--threads",
            str(s.threads),
            "--worker-connections",
            str(s.connections),
            "--keep-alive",
            str(int(s.keepalive)),
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "--no-control-socket",
            f"bench.slow_clients:{app}()",
        ],
        log,
        cwd=ROOT,
    )
    wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=60)
    return proc, port


def start_gthread(s: Settings, log: Path) -> tuple[subprocess.Popen, int]:
    return _gunicorn("gthread", "gthread_app", s, log)


def start_asgi_a2wsgi(s: Settings, log: Path) -> tuple[subprocess.Popen, int]:
    return _gunicorn("asgi", "a2wsgi_app", s, log)


def start_asgi_buffered(s: Settings, log: Path) -> tuple[subprocess.Popen, int]:
    return _gunicorn("asgi", "buffered_app", s, log)


def _in_process(name: str, s: Settings, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    argv = [sys.executable, __file__, "--serve", name, str(port)]
    argv += [str(v) for v in (s.threads, s.connections, s.header, s.body, s.keepalive)]
    proc = spawn(argv, log, cwd=ROOT)
    wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=60)
    return proc, port


def serve(name: str, port: int, s: Settings) -> None:
    """In a child process: hypercorn or waitress on the app, with ``s`` where they have it."""
    app = gthread_app()
    if name == "hypercorn":
        from hypercorn.asyncio import serve as hypercorn_serve
        from hypercorn.config import Config

        config = Config()
        config.bind = [f"127.0.0.1:{port}"]
        config.keep_alive_timeout = s.keepalive
        config.read_timeout = int(s.header)  # per read, the only read deadline it has
        config.wsgi_max_body_size = app.config["MAX_CONTENT_LENGTH"]
        # No connection cap; the app runs on the loop's default executor (no thread count).
        asyncio.run(hypercorn_serve(app, config, mode="wsgi"))
    else:
        import waitress

        waitress.serve(
            app,
            host="127.0.0.1",
            port=port,
            threads=s.threads,
            connection_limit=s.connections,
            # inactivity, the only deadline it has, checked every second
            channel_timeout=int(s.header),
            cleanup_interval=1,
            max_request_body_size=app.config["MAX_CONTENT_LENGTH"],
            _quiet=True,
        )


SERVERS: dict[str, Callable[[Settings, Path], tuple[subprocess.Popen, int]]] = {
    "kube-extender": start_ours,
    "gthread": start_gthread,
    "asgi+a2wsgi": start_asgi_a2wsgi,
    "asgi+buffered": start_asgi_buffered,
    "hypercorn": lambda s, log: _in_process("hypercorn", s, log),
    "waitress": lambda s, log: _in_process("waitress", s, log),
}


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


def worker_pid(server: subprocess.Popen) -> int:
    """gunicorn's worker, or the server itself when it does not fork."""
    out = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out.split() else server.pid


def sockets(server: subprocess.Popen) -> int:
    """Sockets open in the worker (listeners included)."""
    pid, count = worker_pid(server), 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count


def rss_mib(server: subprocess.Popen) -> float:
    pid = worker_pid(server)
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


class Slow:
    """Connections that send ``data`` a byte every ``every`` seconds (from ``start`` on, the
    first bytes at once) and never finish it; :meth:`closed` counts those the server closed."""

    def __init__(self, port: int, count: int, data: bytes, start: int = 1, every: float = 0.3):
        self.socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        for s in self.socks:
            s.sendall(data[:start])
            s.setblocking(False)
        self.data, self.sent, self.every = data, start, every
        self.shut: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        due = time.monotonic() + self.every
        while not self.stop.wait(0.1):
            send = time.monotonic() >= due
            if send:
                due += self.every
            byte = self.data[self.sent : self.sent + 1] or b"a"
            for i, s in enumerate(self.socks):
                try:
                    if send:
                        s.send(byte)
                    if s.recv(65536) == b"":
                        self.shut.add(i)
                except BlockingIOError:
                    pass
                except OSError:
                    self.shut.add(i)
            self.sent += send

    def closed(self) -> int:
        return len(self.shut)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def request(port: int, method: str, path: str, body: bytes | None, timeout: float) -> str:
    """The status of one request on a new connection, or why there was none."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return str(response.status)
    except TimeoutError:
        return f"no answer in {timeout:g} s"
    except (OSError, http.client.HTTPException) as exc:
        return type(exc).__name__
    finally:
        conn.close()


def closed_within(slow: Slow, seconds: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if slow.closed() == len(slow.socks):
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def closed_by_deadline(slow: Slow, bound: float) -> tuple[bool, str]:
    """Whether the server closed ``slow``'s connections within ``bound`` seconds (waiting 8 s
    at most), and what was seen; ``slow`` is closed either way."""
    try:
        took = closed_within(slow, 8)
        return (
            took is not None and took < bound,
            f"closed after {took:.1f} s" if took else "open after 8 s",
        )
    finally:
        slow.close()


SLOW_HEAD = HEAD + b"a" * 100_000
BODY_HEAD = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def s_thousand_slow(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """800 connections dribbling a head, 200 idle after a request: filter and /healthz on
    new connections answer within 5 s (tests/webhook/test_slow_clients.py)."""
    slow = Slow(port, 800, SLOW_HEAD, every=0.5)
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    for s in idle:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        time.sleep(2.0)
        start = time.monotonic()
        answers = [
            request(port, "POST", "/filter", BODY, 5),
            request(port, "GET", "/healthz", None, 5),
        ]
        took = time.monotonic() - start
        return answers == ["200", "200"], f"{'/'.join(answers)} in {took:.2f} s"
    finally:
        slow.close()
        for s in idle:
            s.close()


def s_head_deadline(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """A head sent a byte every 0.3 s is closed by a total deadline (2 s here)."""
    slow = Slow(port, 1, SLOW_HEAD)
    return closed_by_deadline(slow, 5)


def s_body_stall(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """A body that stops after its first byte is closed by the body deadline (1 s here)."""
    data = BODY_HEAD + b"Content-Length: 100\r\n\r\n{"
    slow = Slow(port, 1, data, start=len(data), every=1000)
    return closed_by_deadline(slow, 4)


def s_body_dribble(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """A body sent a byte every 0.3 s is closed by a total body deadline (1 s here)."""
    head = BODY_HEAD + b"Content-Length: 100000\r\n\r\n"
    slow = Slow(port, 1, head + b"{" + b" " * 99_999, start=len(head))
    return closed_by_deadline(slow, 4)


def s_slow_bodies_threads(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """Six slow bodies (3x the 2 threads) hold no thread: a filter answers within 2 s."""
    head = BODY_HEAD + b"Content-Length: 100000\r\n\r\n"
    slow = Slow(port, 6, head + b"{" + b" " * 99_999, start=len(head))
    try:
        time.sleep(0.3)
        answer = request(port, "POST", "/filter", BODY, 2)
        return answer == "200", answer
    finally:
        slow.close()


def s_cap_slow_heads(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """30 dribbling heads against a cap of 20: a new client's filter answers 200 in 3 s."""
    slow = Slow(port, 30, SLOW_HEAD)
    try:
        time.sleep(1.0)
        answer = request(port, "POST", "/filter", BODY, 3)
        held = sockets(server)
        return answer == "200", f"{answer}; {slow.closed()} of 30 closed, {held} sockets held"
    finally:
        slow.close()


def s_cap_idle(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """1000 idle kept-alive connections (cap 20): a new client's filter answers 200 in 3 s."""
    idle = []
    try:
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            idle.append(s)
        time.sleep(0.5)
        answer = request(port, "POST", "/filter", BODY, 3)
        return answer == "200", f"{answer}; {sockets(server)} sockets held"
    except OSError as exc:
        return False, f"connect: {exc!r}"
    finally:
        for s in idle:
            s.close()


def s_cap_in_request(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """20 connections inside a request body (cap 20): a new client gets an answer (503) in
    3 s instead of waiting."""
    bodies = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    for s in bodies:
        s.sendall(BODY_HEAD + b"Content-Length: 100\r\n\r\n{")
    try:
        time.sleep(0.3)
        answer = request(port, "POST", "/filter", BODY, 3)
        return answer.isdigit(), answer
    finally:
        for s in bodies:
            s.close()


def s_declared_too_large(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """A head declaring a body over the 32 MiB limit is answered 413 before the body is sent."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(BODY_HEAD + f"Content-Length: {LIMIT + 1}\r\n\r\n".encode())
        s.settimeout(3)
        try:
            reply = s.recv(65536)
        except (TimeoutError, OSError) as exc:
            return False, type(exc).__name__
    status = reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/") else "closed"
    return status == "413", status


def s_chunked_too_large(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """A chunked body that passes the limit is answered 413, not cut and parsed."""
    chunk = b" " * (1 << 20)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(5)
        try:
            s.sendall(BODY_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
            for _ in range(LIMIT // len(chunk) + 2):
                s.sendall(b"100000\r\n" + chunk + b"\r\n")
            s.sendall(b"0\r\n\r\n")
            reply = s.recv(65536)
        except (TimeoutError, OSError) as exc:
            try:
                reply = s.recv(65536)
            except OSError:
                return False, type(exc).__name__
    status = reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/") else "closed"
    return status == "413", status


def s_bytes_in_flight(port: int, server: subprocess.Popen) -> tuple[bool, str]:
    """Four 24 MiB bodies at once (the budget is one 32 MiB body): the server holds at most
    about one (the others 503, or waiting unread): pass if RSS grows by less than three."""
    before = rss_mib(server)
    data = BODY_HEAD + f"Content-Length: {24 << 20}\r\n\r\n".encode() + b" " * (24 << 20)
    peak = [before]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], rss_mib(server))

    def post() -> None:
        try:
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.settimeout(10)
                s.sendall(data)
                statuses.append(s.recv(64).split(b" ", 2)[1].decode())
        except (OSError, IndexError) as exc:
            statuses.append(type(exc).__name__)

    statuses: list[str] = []
    watcher = threading.Thread(target=watch)
    watcher.start()
    posts = [threading.Thread(target=post) for _ in range(4)]
    for t in posts:
        t.start()
    for t in posts:
        t.join()
    time.sleep(0.3)
    stop.set()
    watcher.join()
    growth = peak[0] - before
    return growth < 72, f"{'/'.join(sorted(statuses))}; RSS +{growth:.0f} MiB"


SCENARIOS: tuple[tuple[str, Settings, Callable[[int, subprocess.Popen], tuple[bool, str]]], ...] = (
    ("1000 slow+idle", ROOMY, s_thousand_slow),
    ("head deadline", TIGHT, s_head_deadline),
    ("body stall", TIGHT, s_body_stall),
    ("body dribble", TIGHT, s_body_dribble),
    ("slow bodies", TIGHT, s_slow_bodies_threads),
    ("cap: slow heads", TIGHT, s_cap_slow_heads),
    ("cap: 1000 idle", TIGHT, s_cap_idle),
    ("cap: in request", TIGHT, s_cap_in_request),
    ("413 declared", TIGHT, s_declared_too_large),
    ("413 chunked", TIGHT, s_chunked_too_large),
    ("bytes in flight", TIGHT, s_bytes_in_flight),
)


def scenarios(names: list[str], logs: Path) -> int:
    """Every scenario against every server, each on a fresh server."""
    print(f"{'scenario':>16} " + " ".join(f"{n:>14}" for n in names))
    notes = []
    for title, settings, check in SCENARIOS:
        cells = []
        for name in names:
            server, port = SERVERS[name](settings, logs / f"{name}.log")
            try:
                ok, note = check(port, server)
            except Exception as exc:  # a scenario that broke the server counts as failed
                ok, note = False, repr(exc)
            finally:
                stop_pid(server.pid)
            cells.append("pass" if ok else "FAIL")
            notes.append(f"{title} / {name}: {'pass' if ok else 'FAIL'}: {note}")
        print(f"{title:>16} " + " ".join(f"{c:>14}" for c in cells), flush=True)
    print("\n" + "\n".join(notes))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help="comma-separated (default: all)"
    )
    parser.add_argument(
        "--scenarios", action="store_true", help="pass/fail per scenario instead of req/s"
    )
    parser.add_argument("--hold", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hold:
        hold(*args.hold)
        return 0
    if args.serve:
        name, port, threads, cap, *times = args.serve
        serve(name, int(port), Settings(int(threads), int(cap), *map(float, times)))
        return 0
    names = args.servers.split(",")
    logs = Path(os.environ.get("TMPDIR", "/tmp")) / "kube-extender-bench-slow-clients"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    if args.scenarios:
        return scenarios(names, logs)
    print(
        f"filter, full Nodes mode (3 nodes, {len(BODY)} bytes); {args.connections} keep-alive "
        f"load connections; 1 worker x {args.threads} threads; {args.seconds:g} s a row, "
        f"median of {args.rounds} rounds\n"
    )
    results = {}
    for name in names:
        server, port = SERVERS[name](replace(ROOMY, threads=args.threads), logs / f"{name}.log")
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
    print("\naim: with 1000 slow connections, req/s within 0.8x and p99 within 1.5x of alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
