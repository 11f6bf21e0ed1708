"""Standalone throughput: our scheduler vs the real kube-scheduler, one after the other.

Same control plane, same nodes, same pods (default profile both), for each workload:
``single`` (every pod alike: 10m CPU, 16Mi) and ``mixed`` (20 workloads of five kinds, see
``bench/workload.py``; its exact shape is printed). kube-scheduler runs with clientConnection
qps/burst 5000 (its default 50/100 caps it near 50 pods/s); ours has no client-side rate limit.
Prints pods/s for each and the ratio ours/kube-scheduler.

With ``--profile`` a third run per row runs ``kube-extender run`` under cProfile in every
thread (``bench/profiled.py``; slower, its pods/s is printed but not compared) and prints the
top functions of the scheduling thread and of the other threads.

    python bench/throughput.py [--nodes 500,5000] [--pods 2000] [--workloads single,mixed]
                               [--profile]
"""

from __future__ import annotations

import argparse
import pstats
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (  # noqa: E402
    BindRecorder,
    create_nodes,
    create_pods,
    delete_all_nodes,
    delete_all_pods,
    ensure_namespace,
    kube_for,
    kube_scheduler_config,
    start_control_plane,
)
from bench.workload import describe_mixed  # noqa: E402
from extender.controlplane import free_port, kube_extender, spawn, stop_pid  # noqa: E402

PROFILED = Path(__file__).resolve().parent / "profiled.py"


def run_kube_scheduler(cp, kube, pods: int, tag: str, workload: str) -> float:
    name = f"ks-{tag}"
    create_pods(kube, pods, name, name, workload)
    recorder = BindRecorder(kube, name, pods)
    cp.start_scheduler(kube_scheduler_config(name), name=name)
    try:
        return recorder.wait(900)
    finally:
        cp.stop_component(name)
        delete_all_pods(kube)


def run_ours(
    cp, kube, pods: int, tag: str, workload: str, profile_dir: Path | None = None
) -> float:
    name = f"ours-{tag}"
    config = cp.directory / f"{name}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": name}],
            }
        )
    )
    create_pods(kube, pods, name, name, workload)
    recorder = BindRecorder(kube, name, pods)
    args = [
        "run",
        "--config",
        str(config),
        "--kubeconfig",
        str(cp.kubeconfig),
        "--metrics-bind",
        f"127.0.0.1:{free_port()}",
        "--log-level",
        "warning",
    ]
    argv = kube_extender(*args)
    if profile_dir is not None:
        argv = [sys.executable, str(PROFILED), str(profile_dir), *args]
    # cwd = this checkout: `python -m extender` imports its tree, not the venv's install.
    proc = spawn(argv, cp.logs / f"{name}.log", cwd=PROFILED.parents[1])
    try:
        return recorder.wait(1800)
    finally:
        stop_pid(proc.pid, timeout=60)
        delete_all_pods(kube)


def print_profile(profile_dir: Path, top: int = 25) -> None:
    for path in sorted(profile_dir.glob("*.prof")):
        stats = pstats.Stats(str(path))
        print(f"\n--- cProfile, threads {path.stem!r}: top {top} by own time ---", flush=True)
        stats.sort_stats("tottime").print_stats(top)
        if path.stem == "MainThread":
            print(f"--- threads {path.stem!r}: top {top} by cumulative time ---")
            stats.sort_stats("cumulative").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--workloads", default="single,mixed")
    parser.add_argument("--profile", action="store_true", help="also a cProfiled run per row")
    args = parser.parse_args()
    workloads = args.workloads.split(",")
    if "mixed" in workloads:
        print(describe_mixed(), flush=True)
    cp = start_control_plane()
    rows = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        for count in (int(n) for n in args.nodes.split(",")):
            started = time.monotonic()
            create_nodes(kube, count)
            print(f"{count} nodes created in {time.monotonic() - started:.1f} s", flush=True)
            for workload in workloads:
                tag = f"{workload}-{count}"
                theirs = run_kube_scheduler(cp, kube, args.pods, tag, workload)
                print(f"  {workload}: kube-scheduler: {theirs:7.1f} pods/s", flush=True)
                ours = run_ours(cp, kube, args.pods, tag, workload)
                print(f"  {workload}: kube-extender:  {ours:7.1f} pods/s", flush=True)
                rows.append((count, workload, theirs, ours))
                if args.profile:
                    profile_dir = cp.directory / f"profile-{tag}"
                    profiled = run_ours(cp, kube, args.pods, f"prof-{tag}", workload, profile_dir)
                    print(f"  {workload}: kube-extender under cProfile: {profiled:.1f} pods/s")
                    print_profile(profile_dir)
            delete_all_nodes(kube)
    finally:
        cp.down()
    print(
        f"\n{'nodes':>6} {'workload':>8} {'pods':>6} {'kube-scheduler':>15} "
        f"{'kube-extender':>14} {'ratio':>6}"
    )
    for count, workload, theirs, ours in rows:
        print(
            f"{count:>6} {workload:>8} {args.pods:>6} {theirs:>11.1f} p/s {ours:>10.1f} p/s "
            f"{ours / theirs:>6.2f}"
        )
    print("kube-scheduler: clientConnection qps/burst 5000; kube-extender: no client rate limit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
