"""Extender service latency under a keep-alive load, both node modes, 100/1000/5000 nodes.

A real control plane holds the nodes (as a kubelet would report them: labels, taints,
images); ``kube-extender serve`` runs under gunicorn with its watch-fed cache. The load
generator keeps C connections alive and posts the same pre-encoded body again and again.

Floors printed beside each figure: a trivial endpoint (GET /healthz) on the same server, and
for full-node mode the time to ``orjson.loads`` the same body in this process.

    python bench/webhook.py [--nodes 100,500,1000,5000] [--seconds 3] [--connections 1]
"""

from __future__ import annotations

import argparse
import gc
import http.client
import statistics
import sys
import threading
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import create_nodes, ensure_namespace, kube_for, start_control_plane
from bench.extender_overhead import start_extender
from extender.controlplane import stop_pid

POD = {
    "metadata": {"name": "bench-pod-7", "namespace": "bench", "uid": "bench-uid"},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m"}},
            }
        ],
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}],
        "priority": 0,
    },
}


def load(
    url: str, method: str, path: str, body: bytes | None, seconds: float, connections: int
) -> tuple[list[float], int]:
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        mine = []
        headers = {"Content-Type": "application/json"} if body else {}
        while time.monotonic() < stop_at:
            start = time.perf_counter()
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append(time.perf_counter() - start)
            if response.status != 200:
                errors[0] += 1
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors[0]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,500,1000,5000")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    counts = [int(n) for n in args.nodes.split(",")]
    cp = start_control_plane()
    proc = None
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        create_nodes(kube, max(counts))
        nodes = kube.get("/api/v1/nodes")["items"]
        nodes.sort(key=lambda n: n["metadata"]["name"])
        size = sum(len(orjson.dumps(n)) for n in nodes) / len(nodes)
        proc, url = start_extender(cp, args.workers, args.threads)
        print(f"nodes as the apiserver serves them: {size / 1024:.1f} KB each on average")
        print(
            f"gunicorn {args.workers} worker(s) x {args.threads} threads; "
            f"{args.connections} keep-alive connections; {args.seconds:g} s per row\n"
        )
        floor, _ = load(url, "GET", "/healthz", None, args.seconds, args.connections)
        print(
            f"floor GET /healthz: p50 {pct(floor, 0.5):.2f} ms  p99 {pct(floor, 0.99):.2f} ms"
            f"  {len(floor) / args.seconds:.0f} req/s\n"
        )
        print(
            f"{'nodes':>6} {'mode':>6} {'verb':>10} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>7}"
            f" {'body MB':>8} {'parse p50':>9} {'x floor':>7}"
        )
        for count in counts:
            subset = nodes[:count]
            bodies = {
                "names": orjson.dumps(
                    {
                        "Pod": POD,
                        "Nodes": None,
                        "NodeNames": [n["metadata"]["name"] for n in subset],
                    }
                ),
                "full": orjson.dumps(
                    {"Pod": POD, "Nodes": {"metadata": {}, "items": subset}, "NodeNames": None}
                ),
            }
            for mode, body in bodies.items():
                parse = []
                gc.disable()  # the floor is the parse itself, not this process's GC
                for _ in range(max(3, min(50, int(2e8 // len(body))))):
                    start = time.perf_counter()
                    orjson.loads(body)
                    parse.append(time.perf_counter() - start)
                gc.enable()
                parse_ms = statistics.median(parse) * 1000
                for verb in ("filter", "prioritize"):
                    lat, errors = load(
                        url, "POST", f"/{verb}", body, args.seconds, args.connections
                    )
                    p50 = pct(lat, 0.5)
                    ratio = f"{p50 / parse_ms:.2f}" if mode == "full" else "-"
                    print(
                        f"{count:>6} {mode:>6} {verb:>10} {p50:>8.2f} {pct(lat, 0.99):>8.2f}"
                        f" {len(lat) / args.seconds:>7.0f} {len(body) / 1e6:>8.2f}"
                        f" {parse_ms:>9.2f} {ratio:>7}"
                        + (f"  ({errors} errors)" if errors else ""),
                        flush=True,
                    )
    finally:
        if proc is not None:
            stop_pid(proc.pid)
        cp.down()
    print(
        "\naims: names mode 5000 nodes filter+prioritize p50 <= 5 ms, p99 <= 10 ms;"
        " full mode at 500 nodes within 1.3x of its parse floor"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
