"""Resident memory of kube-extender (``run`` and ``serve``, all their processes) and of the
real kube-scheduler, side by side on the same cluster, synced, then under churn.

Nodes (``bench/workload.make_node``) and already-bound running pods
(``make_running_pod``, created with ``spec.nodeName`` so nobody schedules them) are created
first; then the three schedulers start against the same API and we wait until each is synced
and its resident set stops growing. Churn: ``--churn-rounds`` times, delete ``--churn-pods``
pods and create as many new ones (bound), then read the resident sets again.

RSS is VmRSS summed over the process and all its descendants (gunicorn's arbiter + workers).

    python bench/memory.py [--nodes 5000] [--pods 50000] [--churn-pods 5000] [--churn-rounds 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    BENCH_NAMESPACE,
    create_nodes,
    ensure_namespace,
    kube_for,
    kube_scheduler_config,
    start_control_plane,
)
from bench.workload import make_node, make_running_pod
from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok

SERVE_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: memory-extender
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: memory-extender
"""


def rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` and all its descendants, KiB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def bound_pods(kube, count: int, start: int, nodes: list[dict], seed: int) -> list[str]:
    rng = random.Random(seed)
    names = []

    def create(k: int) -> None:
        node = nodes[k % len(nodes)]
        pod = make_running_pod(node, k, rng)
        pod["metadata"]["name"] = f"run-{k:06d}"
        pod["metadata"]["namespace"] = BENCH_NAMESPACE
        pod["metadata"].pop("uid", None)
        pod["metadata"].pop("ownerReferences", None)
        pod["spec"]["terminationGracePeriodSeconds"] = 0
        pod.pop("status", None)
        kube.request("POST", f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods", pod)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(start, start + count)))
    names.extend(f"run-{k:06d}" for k in range(start, start + count))
    return names


def delete_pods(kube, names: list[str]) -> None:
    def delete(name: str) -> None:
        kube.request(
            "DELETE",
            f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods/{name}",
            query={"gracePeriodSeconds": "0"},
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(delete, names))


def settle(pids: dict[str, int], timeout: float = 300) -> dict[str, int]:
    """Sample until every process's RSS moved < 1 % over three samples 2 s apart."""
    history: dict[str, list[int]] = {k: [] for k in pids}
    deadline = time.monotonic() + timeout
    while True:
        for k, pid in pids.items():
            history[k].append(rss_kib(pid))
        stable = all(
            len(h) >= 3 and max(h[-3:]) - min(h[-3:]) <= 0.01 * max(h[-3:])
            for h in history.values()
        )
        if stable or time.monotonic() > deadline:
            return {k: h[-1] for k, h in history.items()}
        time.sleep(2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--churn-pods", type=int, default=5000)
    parser.add_argument("--churn-rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    cp = start_control_plane()
    procs = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        t0 = time.monotonic()
        create_nodes(kube, args.nodes)
        rng = random.Random(1)
        nodes = [make_node(i, rng) for i in range(args.nodes)]
        names = bound_pods(kube, args.pods, 0, nodes, seed=2)
        print(
            f"cluster: {args.nodes} nodes, {args.pods} bound pods, created in "
            f"{time.monotonic() - t0:.0f} s",
            flush=True,
        )
        pids: dict[str, int] = {}
        cp.start_scheduler(kube_scheduler_config("memory-ks"), name="memory-ks")
        pids["kube-scheduler"] = cp.state.pids["memory-ks"]

        run_config = cp.directory / "memory-run.yaml"
        run_config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": False},
                    "profiles": [{"schedulerName": "memory-run"}],
                }
            )
        )
        metrics = f"127.0.0.1:{free_port()}"
        run = spawn(
            kube_extender(
                "run",
                "--config",
                str(run_config),
                "--kubeconfig",
                str(cp.kubeconfig),
                "--metrics-bind",
                metrics,
                "--log-level",
                "warning",
            ),
            cp.logs / "memory-run.log",
            cwd=Path(__file__).resolve().parents[1],  # this checkout's extender
        )
        procs.append(run)
        pids["kube-extender run"] = run.pid
        serve_config = cp.directory / "memory-serve.yaml"
        serve_config.write_text(SERVE_CONFIG)
        port = free_port()
        serve = spawn(
            kube_extender(
                "serve",
                "--config",
                str(serve_config),
                "--kubeconfig",
                str(cp.kubeconfig),
                "--bind",
                f"127.0.0.1:{port}",
                "--health-bind",
                f"127.0.0.1:{free_port()}",
                "--workers",
                str(args.workers),
                "--threads",
                str(args.threads),
                "--log-level",
                "warning",
            ),
            cp.logs / "memory-serve.log",
            cwd=Path(__file__).resolve().parents[1],
        )
        procs.append(serve)
        pids[f"kube-extender serve ({args.workers}w)"] = serve.pid
        wait_http_ok(f"http://{metrics}/readyz", run, cp.logs / "memory-run.log", timeout=600)
        wait_http_ok(
            f"http://127.0.0.1:{port}/readyz", serve, cp.logs / "memory-serve.log", timeout=600
        )
        rows = [("synced", settle(pids))]
        print(f"synced: {rows[-1][1]}", flush=True)
        next_index = args.pods
        for r in range(args.churn_rounds):
            gone, names = names[: args.churn_pods], names[args.churn_pods :]
            delete_pods(kube, gone)
            names += bound_pods(kube, args.churn_pods, next_index, nodes, seed=10 + r)
            next_index += args.churn_pods
            rows.append((f"churn {r + 1} (-{args.churn_pods}/+{args.churn_pods})", settle(pids)))
            print(f"{rows[-1][0]}: {rows[-1][1]}", flush=True)
    finally:
        for proc in procs:
            stop_pid(proc.pid)
        cp.down()
    keys = list(rows[0][1])
    print(f"\nRSS MiB, {args.nodes} nodes, {args.pods} pods")
    print(f"{'':<32}" + "".join(f"{k:>26}" for k in keys))
    for label, values in rows:
        print(f"{label:<32}" + "".join(f"{values[k] / 1024:>26.1f}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
