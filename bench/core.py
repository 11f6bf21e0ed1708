"""Benchmark: one pod through filter + score with the default profile.

For 500, 5000 and 15000 nodes (each with ~10 running pods, realistic labels and taints) it
prints milliseconds per pod with the default (adaptive) percentageOfNodesToScore and with 100,
plus a peer measured in the same run: a bare per-node Python loop that only compares CPU
requests over every node (the floor any Python scheduler pays to look at every node once).

``--workload mixed`` instead schedules the pods of the `mixed` workload (``bench/workload.py``:
20 workloads of five kinds, pod i of workload i % 20), each pod with a CPU request of its own
so no two share a spec and the runtime's per-spec memo never answers, with the default
percentage, over a cluster that also runs half a `mixed` pod per node (so spreading and
anti-affinity have counts to read). It prints ms/pod, the cost per node (us), how ms/pod grows
with the node count, ms/pod per kind, and as the peer the same pods on the per-node reference
path (``Framework.use_batch = False``) in the same run.

``--workload spread`` (or ``spread-soft``) runs upstream scheduler_perf's TopologySpreading
(PreferredTopologySpreading): over nodes holding two plain pods each, ``--pods`` spreading pods
one after the other through a :class:`~extender.cache.Cache`, each assumed on the node chosen
before the next is scheduled (the snapshot the next one reads is the cache's overlay, as in
``kube-extender run``). It prints CPU ms/pod over all of them and over the first and the last
quarter (a cost growing with the pods already placed shows as the difference).

    python bench/core.py [--nodes 500,5000,15000] [--pods 20]
                         [--workload single|mixed|spread|spread-soft]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.progress import steps
from bench.workload import (
    MIXED_WORKLOADS,
    describe_mixed,
    make_cluster,
    make_node,
    make_pending_pod,
    mixed_pod,
    mixed_workload,
    preferred_spread_pod,
    spread_pod,
)
from extender.cache import Cache
from extender.config import default_profile
from extender.framework import CycleState, Framework, SchedulingAlgorithm, Snapshot
from extender.framework.resources import pod_requests
from extender.plugins import in_tree_registry


def time_per_pod(fn, repeats: int, cpu: list[float] | None = None) -> list[float]:
    """Wall ms per call; with ``cpu``, also this process's CPU ms per call appended there
    (the machine may be shared: CPU time is what other load does not inflate)."""
    out = []
    for i in steps(range(repeats), "pods timed", repeats, "pod"):
        c0, t0 = time.process_time(), time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - c0) * 1000)
    return out


def bare_loop(snapshot: Snapshot, pod: dict) -> int:
    want = pod_requests(pod).milli_cpu
    fits = 0
    for info in snapshot.node_info_list:
        if info.allocatable.milli_cpu - info.requested.milli_cpu >= want:
            fits += 1
    return fits


def run_profile(snapshot: Snapshot, pct: int | None, repeats: int) -> tuple[list[float], int]:
    profile = default_profile()
    profile.percentage_of_nodes_to_score = pct
    fwk = Framework(profile, in_tree_registry())
    algo = SchedulingAlgorithm()
    feasible = 0

    def one(i: int) -> None:
        nonlocal feasible
        pod = make_pending_pod(f"bench-pod-{i}")
        feasible = algo.schedule_pod(fwk, CycleState(), pod, snapshot).feasible_nodes

    one(0)  # warm caches (quantity parsing, imports)
    gc.collect()
    return time_per_pod(one, repeats), feasible


def mixed_cluster(n: int) -> tuple[list, list]:
    nodes, pods = make_cluster(n)
    for j in range(n // 2):
        pod = mixed_pod(j, f"running-mixed-{j}", "bench", "default-scheduler")
        pod["spec"]["nodeName"] = nodes[(j * 7) % n]["metadata"]["name"]
        pod["status"] = {"phase": "Running"}
        pods.append(pod)
    return nodes, pods


def unique_mixed_pod(i: int) -> dict:
    """Pod ``i`` of `mixed` with a CPU request of its own (50m + i m): no two pods share a
    spec, so the runtime's per-spec memo never answers (the aim's "no memo at its best")."""
    pod = mixed_pod(i, f"mixed-pod-{i}", "bench", "default-scheduler")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = f"{50 + i}m"
    return pod


def main_mixed(sizes: list[int], repeats: int) -> int:
    print(describe_mixed())
    print(
        "pods: unique specs (cpu 50m + i m); `batch`: the default runtime (batch forms over the "
        "node table); `per-node`: the reference path (Framework.use_batch = False), same pods"
    )
    print(
        f"{'nodes':>6} {'pods':>5} {'ms/pod p50':>10} {'p90':>7} {'mean':>7} {'cpu p50':>7} "
        f"{'us/node':>8} {'per-node p50':>12} {'cpu p50':>7} {'speedup':>7} {'growth':>9}"
    )
    previous: tuple[int, float] | None = None
    for n in sizes:
        nodes, pods = mixed_cluster(n)
        snapshot = Snapshot.from_objects(nodes, pods)
        results: dict[bool, list[float]] = {}
        cpu: dict[bool, list[float]] = {True: [], False: []}
        per_kind: dict[str, list[float]] = {}
        for use_batch in (True, False):
            fwk = Framework(default_profile(), in_tree_registry())
            fwk.use_batch = use_batch
            algo = SchedulingAlgorithm()

            def one(i: int, fwk=fwk, algo=algo, snapshot=snapshot) -> None:
                algo.schedule_pod(fwk, CycleState(), unique_mixed_pod(i), snapshot)

            for i in range(MIXED_WORKLOADS):  # warm: one pod of each workload
                one(i)
            gc.collect()
            count = repeats if use_batch else max(repeats // 2, MIXED_WORKLOADS)
            samples = time_per_pod(
                lambda i, one=one: one(i + MIXED_WORKLOADS), count, cpu[use_batch]
            )
            results[use_batch] = samples
            if use_batch:
                for i, ms in enumerate(cpu[True]):
                    kind = mixed_workload((i + MIXED_WORKLOADS) % MIXED_WORKLOADS)["kind"]
                    per_kind.setdefault(kind, []).append(ms)
        samples = results[True]
        p50 = statistics.median(samples)
        p90 = sorted(samples)[max(int(len(samples) * 0.9) - 1, 0)]
        reference = statistics.median(results[False])
        growth = ""
        if previous is not None:
            growth = f"x{p50 / previous[1]:.2f}/x{n / previous[0]:.0f}"
        cpu_p50, cpu_ref = statistics.median(cpu[True]), statistics.median(cpu[False])
        print(
            f"{n:>6} {repeats:>5} {p50:>10.2f} {p90:>7.2f} {statistics.mean(samples):>7.2f} "
            f"{cpu_p50:>7.2f} {p50 * 1000 / n:>8.2f} {reference:>12.2f} {cpu_ref:>7.2f} "
            f"{cpu_ref / cpu_p50:>6.1f}x {growth:>9}",
            flush=True,
        )
        print(
            "       by kind (cpu ms/pod p50): "
            + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in per_kind.items()),
            flush=True,
        )
        previous = (n, p50)
    print("aims: <= 2 ms/pod at 5000 nodes, <= 4 ms/pod at 15000 (default percentage)")
    print("(speedup: per-node CPU / batch CPU; growth: wall p50 ratio / node-count ratio)")
    return 0


def plain_pod(j: int, node: str) -> dict:
    """Upstream scheduler_perf's ``pod-default.yaml`` (no labels), on ``node``."""
    return {
        "metadata": {"name": f"init-{j}", "namespace": "bench", "uid": f"init-{j}"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ],
        },
    }


def main_spread(sizes: list[int], pods: int, soft: bool) -> int:
    factory = preferred_spread_pod if soft else spread_pod
    print(
        f"workload `{'spread-soft' if soft else 'spread'}`: {pods} pods, one after the other, "
        "each assumed in a Cache before the next (2 plain pods per node already there)"
    )
    print(f"{'nodes':>6} {'pods':>5} {'cpu ms/pod':>10} {'first 1/4':>9} {'last 1/4':>9}")
    for n in sizes:
        rng = random.Random(1)
        cache = Cache()
        nodes = [make_node(i, rng) for i in range(n)]
        for node in nodes:
            cache.add_node(node)
        for j in range(2 * n):
            cache.add_pod(plain_pod(j, nodes[j % n]["metadata"]["name"]))
        fwk = Framework(default_profile(), in_tree_registry())
        algo = SchedulingAlgorithm()

        def one(i: int, fwk=fwk, algo=algo, cache=cache) -> None:
            pod = factory(i, f"spread-{i}", "bench", "default-scheduler")
            result = algo.schedule_pod(fwk, CycleState(), pod, cache.snapshot())
            pod["spec"]["nodeName"] = result.suggested_host
            cache.assume_pod(pod)

        gc.collect()
        cpu: list[float] = []
        time_per_pod(one, pods, cpu)
        q = max(len(cpu) // 4, 1)
        print(
            f"{n:>6} {pods:>5} {statistics.mean(cpu):>10.2f} {statistics.mean(cpu[:q]):>9.2f} "
            f"{statistics.mean(cpu[-q:]):>9.2f}",
            flush=True,
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000,15000")
    parser.add_argument("--pods", type=int, default=20, help="pods timed per configuration")
    parser.add_argument(
        "--workload", choices=("single", "mixed", "spread", "spread-soft"), default="single"
    )
    args = parser.parse_args()
    if args.workload in ("spread", "spread-soft"):
        sizes = [int(x) for x in args.nodes.split(",")]
        return main_spread(sizes, args.pods, args.workload == "spread-soft")
    if args.workload == "mixed":
        return main_mixed([int(x) for x in args.nodes.split(",")], max(args.pods, 40))

    print(
        f"{'nodes':>6} {'pct':>7} {'feasible':>8} {'ms/pod p50':>10} {'p90':>7} "
        f"{'bare loop ms':>12} {'ratio':>6}"
    )
    for n in (int(x) for x in args.nodes.split(",")):
        nodes, pods = make_cluster(n)
        t0 = time.perf_counter()
        snapshot = Snapshot.from_objects(nodes, pods)
        build_s = time.perf_counter() - t0
        pending = make_pending_pod()
        bare = statistics.median(time_per_pod(lambda i, s=snapshot, p=pending: bare_loop(s, p), 5))
        for pct in (None, 100):
            samples, feasible = run_profile(snapshot, pct, args.pods)
            p50 = statistics.median(samples)
            p90 = sorted(samples)[max(int(len(samples) * 0.9) - 1, 0)]
            label = "default" if pct is None else str(pct)
            print(
                f"{n:>6} {label:>7} {feasible:>8} {p50:>10.2f} "
                f"{p90:>7.2f} {bare:>12.2f} {p50 / bare:>6.1f}"
            )
        print(f"{'':>6} (snapshot of {n} nodes / {len(pods)} pods built in {build_s:.2f}s)")
    print("aim: <= 3 ms/pod at 5000 nodes with the default percentage")
    return 0


if __name__ == "__main__":
    sys.exit(main())
