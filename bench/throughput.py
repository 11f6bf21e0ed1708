"""Standalone throughput: our scheduler vs the real kube-scheduler, one after the other.

Same control plane, same nodes, same 2000 pods (default profile both). kube-scheduler runs
with clientConnection qps/burst 5000 (its default 50/100 caps it near 50 pods/s); ours has no
client-side rate limit. Prints pods/s for each and the ratio ours/kube-scheduler.

    python bench/throughput.py [--nodes 500,5000] [--pods 2000]
"""

from __future__ import annotations

import argparse
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
from extender.controlplane import free_port, kube_extender, spawn, stop_pid  # noqa: E402


def run_kube_scheduler(cp, kube, pods: int, tag: str) -> float:
    name = f"ks-{tag}"
    create_pods(kube, pods, name, name)
    recorder = BindRecorder(kube, name, pods)
    cp.start_scheduler(kube_scheduler_config(name), name=name)
    try:
        return recorder.wait(600)
    finally:
        cp.stop_component(name)
        delete_all_pods(kube)


def run_ours(cp, kube, pods: int, tag: str) -> float:
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
    create_pods(kube, pods, name, name)
    recorder = BindRecorder(kube, name, pods)
    proc = spawn(
        kube_extender(
            "run",
            "--config",
            str(config),
            "--kubeconfig",
            str(cp.kubeconfig),
            "--metrics-bind",
            f"127.0.0.1:{free_port()}",
            "--log-level",
            "warning",
        ),
        cp.logs / f"{name}.log",
    )
    try:
        return recorder.wait(600)
    finally:
        stop_pid(proc.pid)
        delete_all_pods(kube)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=2000)
    args = parser.parse_args()
    cp = start_control_plane()
    rows = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        for count in (int(n) for n in args.nodes.split(",")):
            started = time.monotonic()
            create_nodes(kube, count)
            print(f"{count} nodes created in {time.monotonic() - started:.1f} s", flush=True)
            theirs = run_kube_scheduler(cp, kube, args.pods, str(count))
            print(f"  kube-scheduler: {theirs:7.1f} pods/s", flush=True)
            ours = run_ours(cp, kube, args.pods, str(count))
            print(f"  kube-extender:  {ours:7.1f} pods/s", flush=True)
            rows.append((count, theirs, ours))
            delete_all_nodes(kube)
    finally:
        cp.down()
    print(f"\n{'nodes':>6} {'pods':>6} {'kube-scheduler':>15} {'kube-extender':>14} {'ratio':>6}")
    for count, theirs, ours in rows:
        print(
            f"{count:>6} {args.pods:>6} {theirs:>11.1f} p/s {ours:>10.1f} p/s {ours / theirs:>6.2f}"
        )
    print("kube-scheduler: clientConnection qps/burst 5000; kube-extender: no client rate limit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
