"""The cost of our extender to a real kube-scheduler: with and without it, in one run.

kube-scheduler (qps/burst 5000) schedules 2000 pods over N nodes, once alone and once with our
extender registered (filter + prioritize, nodeCacheCapable: true, served by gunicorn with a
watch-fed node cache), and once with a *null* extender (``bench/null_extender.py``: Flask under
gunicorn, same workers and threads, same registration, returns the names it got): the floor
any extender pays for the protocol. Prints pods/s for the three, the ratio with/without and
the ratio ours/null.

The extender's profile is printed: a typical policy extender (node affinity and taints as
filters, the seed's NodeNumber as the score), not a second copy of kube-scheduler.

With ``--base TREE`` each row also runs the extender from another checkout (e.g. a
``git worktree add --detach`` of the base commit), in the same run on the same nodes, for a
before/after that the machine's load does not skew.

    python bench/extender_overhead.py [--nodes 500,5000] [--pods 2000] [--base TREE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    create_nodes,
    delete_all_nodes,
    ensure_namespace,
    kube_for,
    start_control_plane,
)
from bench.throughput import measure_kube_scheduler
from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok

EXTENDER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: bench-extender
    plugins:
      multiPoint:
        disabled: [{name: "*"}]
      queueSort: {enabled: [{name: PrioritySort}]}
      preFilter: {enabled: [{name: NodeAffinity}]}
      filter: {enabled: [{name: NodeAffinity}, {name: TaintToleration}]}
      preScore: {enabled: [{name: NodeNumber}]}
      score: {enabled: [{name: NodeNumber, weight: 1}]}
      bind: {enabled: [{name: DefaultBinder}]}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: bench-extender
"""


def measure(cp, kube, pods: int, tag: str, extender: tuple[str, int] | None) -> float:
    """kube-scheduler's pods/s on ``pods`` single pods; ``extender``: (URL, pid) of the
    extender registered (``bench/throughput.py``'s runner, which also prints the CPU split)."""
    return measure_kube_scheduler(cp, kube, pods, tag, "single", extender=extender).pods_per_s


def _ready(proc: subprocess.Popen, url: str, log: Path) -> tuple[subprocess.Popen, str]:
    """``proc`` once it answers ``/readyz`` (stopped if it never does)."""
    try:
        wait_http_ok(url + "/readyz", proc, log)
    except BaseException:
        stop_pid(proc.pid)
        raise
    return proc, url


def start_extender(
    cp, workers: int, threads: int, tree: Path | None = None
) -> tuple[subprocess.Popen, str]:
    """``kube-extender serve`` from ``tree`` (default: this checkout)."""
    config = cp.directory / "bench-extender.yaml"
    config.write_text(EXTENDER_CONFIG)
    port = free_port()
    log = cp.logs / ("bench-extender.log" if tree is None else "bench-extender-base.log")
    proc = spawn(
        kube_extender(
            "serve",
            "--config",
            str(config),
            "--kubeconfig",
            str(cp.kubeconfig),
            "--bind",
            f"127.0.0.1:{port}",
            "--health-bind",
            f"127.0.0.1:{free_port()}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--log-level",
            "warning",
        ),
        log,
        # this checkout's extender (or the base's), not the venv's
        cwd=tree or Path(__file__).resolve().parents[1],
    )
    return _ready(proc, f"http://127.0.0.1:{port}", log)


def start_null_extender(cp, workers: int, threads: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = cp.logs / "null-extender.log"
    proc = spawn(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-k",
            "gthread",
            "-w",
            str(workers),
            "--threads",
            str(threads),
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "bench.null_extender:app",
        ],
        log,
        cwd=Path(__file__).resolve().parents[1],
    )
    return _ready(proc, f"http://127.0.0.1:{port}", log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--base",
        type=Path,
        help="also run the extender from this tree (e.g. a `git worktree` of the base commit)",
    )
    args = parser.parse_args()
    print(
        "extender profile: filter NodeAffinity + TaintToleration, score NodeNumber;"
        f" gunicorn {args.workers} worker(s) x {args.threads} threads"
    )
    cp = start_control_plane()
    rows = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        for count in (int(n) for n in args.nodes.split(",")):
            create_nodes(kube, count)
            alone = measure(cp, kube, args.pods, f"alone-{count}", None)
            print(f"{count} nodes: kube-scheduler alone {alone:.1f} pods/s", flush=True)
            proc, url = start_extender(cp, args.workers, args.threads)
            try:
                with_ext = measure(cp, kube, args.pods, f"with-{count}", (url, proc.pid))
            finally:
                stop_pid(proc.pid)
            print(f"{count} nodes: with kube-extender {with_ext:.1f} pods/s", flush=True)
            with_base = None
            if args.base is not None:
                proc, url = start_extender(cp, args.workers, args.threads, tree=args.base)
                try:
                    with_base = measure(cp, kube, args.pods, f"base-{count}", (url, proc.pid))
                finally:
                    stop_pid(proc.pid)
                print(f"{count} nodes: with the base extender {with_base:.1f} pods/s", flush=True)
            proc, url = start_null_extender(cp, args.workers, args.threads)
            try:
                with_null = measure(cp, kube, args.pods, f"null-{count}", (url, proc.pid))
            finally:
                stop_pid(proc.pid)
            print(f"{count} nodes: with the null extender {with_null:.1f} pods/s", flush=True)
            rows.append((count, alone, with_ext, with_null, with_base))
            delete_all_nodes(kube)
    finally:
        cp.down()
    base_head = f" {'with base':>12} {'base/null':>9}" if args.base is not None else ""
    print(
        f"\n{'nodes':>6} {'pods':>6} {'alone':>12} {'with ours':>12} {'with null':>12} "
        f"{'ours/alone':>10} {'ours/null':>9}" + base_head
    )
    for count, alone, with_ext, with_null, with_base in rows:
        print(
            f"{count:>6} {args.pods:>6} {alone:>8.1f} p/s {with_ext:>8.1f} p/s "
            f"{with_null:>8.1f} p/s {with_ext / alone:>10.2f} {with_ext / with_null:>9.2f}"
            + (
                f" {with_base:>8.1f} p/s {with_base / with_null:>9.2f}"
                if with_base is not None
                else ""
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
