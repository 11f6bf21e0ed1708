"""Speed of explain and simulate --max on a large built snapshot (no cluster).

    python bench/explain.py [--nodes 5000] [--replicas 1000]

Prints: snapshot build, explain of a pod that fits (all nodes filtered and scored), of a pod
that fits nowhere (FitError + dry-run preemption), and simulate --max placing N replicas
incrementally (assumed into the one snapshot, never rebuilt or re-listed).
"""

from __future__ import annotations

import argparse
import time

from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.engine import Explainer
from extender.explain.simulate import Simulation
from extender.testing import Cluster, node, pod


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--replicas", type=int, default=1000)
    args = parser.parse_args()
    zones = [f"zone-{z}" for z in range(3)]
    nodes = [
        node(
            f"node-{i:05}",
            cpu="16",
            memory="64Gi",
            labels={"topology.kubernetes.io/zone": zones[i % 3]},
        )
        for i in range(args.nodes)
    ]
    pods = [
        pod(f"run-{i}", cpu="2", memory="4Gi", node_name=f"node-{i % args.nodes:05}", priority=0)
        for i in range(args.nodes * 2)
    ]
    cluster = Cluster(nodes, pods)
    config, profile = pick_profile(None, "default-scheduler")
    t = time.perf_counter()
    snapshot = cluster.snapshot()
    print(f"snapshot of {args.nodes} nodes, {len(pods)} pods: {time.perf_counter() - t:.2f} s")
    explainer = Explainer(dry_run_framework(config, profile, cluster))
    for label, p in (
        ("fits", pod("p", cpu="1", memory="1Gi")),
        ("fits nowhere, preemption", pod("big", cpu="15", memory="1Gi", priority=100)),
        ("fits nowhere at all", pod("huge", cpu="64")),
    ):
        t = time.perf_counter()
        ex = explainer.explain(p, snapshot)
        took = time.perf_counter() - t
        print(
            f"explain ({label}): {took:.2f} s; feasible {len(ex.feasible)}, "
            f"chosen {len(ex.chosen)}, preemption {ex.preemption and ex.preemption.node}"
        )
    fresh = Cluster(nodes, list(pods))
    sim = Simulation(dry_run_framework(config, profile, fresh), fresh)
    t = time.perf_counter()
    count, why, _ = sim.max_replicas(pod("rep", cpu="1", memory="1Gi"), limit=args.replicas)
    took = time.perf_counter() - t
    print(
        f"simulate --max: {count} replicas placed in {took:.2f} s "
        f"({1000 * took / max(count, 1):.1f} ms each, no rebuild)"
    )


if __name__ == "__main__":
    main()
