"""In process: one PreemptionBasic preemptor's scheduling cycle (Filter over every node, then
PostFilter: DefaultPreemption's dry runs, the choice of a node, the evictions against a client
that only counts the calls), with the default profile.

The cluster is ``bench/perf_workloads.py``'s PreemptionBasic: 4-CPU nodes each running four
low-priority 900m pods; each measured pod asks 3 CPUs at priority 10, so it fits only by
preempting (three victims on the node chosen; the dry run covers upstream's
``max(10 % of the nodes, 100)`` candidates). The snapshot is left as it is (no victim is
removed), so every pod takes the same path. Prints CPU ms per cycle and for PostFilter alone;
``--profile`` adds cProfile's top functions.

    python bench/preemption_core.py [--nodes 500] [--pods 30] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import perf_workloads as pw
from extender.config import default_profile
from extender.framework import CycleState, Framework, SchedulingAlgorithm, Snapshot
from extender.framework.handle import Services
from extender.framework.schedule import FitError
from extender.offline import apiserver_defaults
from extender.plugins import in_tree_registry


class CountingClient:
    """The evictions' API calls, counted and dropped."""

    def __init__(self) -> None:
        self.calls = 0

    def delete_pod(self, namespace: str, name: str, uid: str | None = None) -> None:
        self.calls += 1

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> None:
        self.calls += 1


def cluster(n: int) -> Snapshot:
    nodes = [pw.plain_node(i) for i in range(n)]
    pods = []
    for i in range(4 * n):
        pod = apiserver_defaults(pw.low_priority_pod(f"init-{i:05d}", pw.INIT_NAMESPACE))
        pod["spec"]["nodeName"] = nodes[i % n]["metadata"]["name"]
        pod["metadata"]["uid"] = f"init-uid-{i}"
        pod["status"] = {"phase": "Running"}
        pods.append(pod)
    return Snapshot.from_objects(nodes, pods)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=30)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    snapshot = cluster(args.nodes)
    client = CountingClient()
    services = Services(client=client, rng=random.Random(1))  # type: ignore[arg-type]
    fwk = Framework(default_profile(), in_tree_registry(), services)
    algorithm = SchedulingAlgorithm()

    def cycle(i: int) -> float:
        pod = apiserver_defaults(pw.high_priority_pod(f"preemptor-{i}", "bench"))
        pod["spec"]["priority"] = pw.HIGH_PRIORITY
        pod["metadata"]["uid"] = f"preemptor-uid-{i}"
        state = CycleState()
        try:
            algorithm.schedule_pod(fwk, state, pod, snapshot)
        except FitError as fit:
            c0 = time.process_time()
            statuses = dict(fit.diagnosis.node_to_status)
            for info in snapshot.node_info_list:
                statuses.setdefault(info.name, fit.diagnosis.absent_status)
            result, _ = fwk.run_post_filter_plugins(state, pod, statuses)
            if result is None or result.nominating_info is None:
                raise SystemExit(f"pod {i}: no node nominated") from None
            return time.process_time() - c0
        raise SystemExit(f"pod {i} fits without preempting: not the workload")

    cycle(-1)  # warm caches
    c0 = time.process_time()
    post = sum(cycle(i) for i in range(args.pods))
    total = (time.process_time() - c0) / args.pods * 1000
    print(
        f"{args.nodes} nodes, {args.pods} preemptors: {total:.1f} ms CPU per cycle, "
        f"PostFilter {post / args.pods * 1000:.1f} ms"
    )
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for i in range(args.pods):
            cycle(args.pods + i)
        profile.disable()
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(20)
        stats.sort_stats("cumulative").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
