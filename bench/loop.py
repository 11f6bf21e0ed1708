"""The standalone scheduler's per-pod work in process, without an API server: CPU per pod.

For each pod, what the scheduling thread and the pod informer do in ``kube-extender run``:
the cache's snapshot, ``schedule_pod`` (PreFilter, Filter, PreScore, Score), the assume and
Reserve, then the confirmation of the bound pod as the watch brings it (``Cache.add_pod`` of
a deep copy: equal to the assumed pod, not the same objects). Not measured: the queue, the
binding and event API calls, the watch decode. Pods: the ``single`` workload of
``bench/throughput.py`` (every pod alike), or with ``--anti-affinity`` each with a required
hostname anti-affinity on the others (the SchedulingPodAntiAffinity shape: one pod per node;
a tenth of the nodes are tainted).

CPU time, not wall time: on a shared machine it is what other load inflates least. Run it
from two checkouts (``cd TREE && python bench/loop.py``) for a before/after.

    python bench/loop.py [--nodes 500] [--pods 2000] [--anti-affinity] [--rounds 3]
"""

from __future__ import annotations

import argparse
import copy
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import single_pod
from bench.workload import make_cluster
from extender.cache import Cache
from extender.config import default_profile
from extender.framework import CycleState, Framework, SchedulingAlgorithm
from extender.framework.pod_info import PodInfo
from extender.plugins import in_tree_registry

ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "single"}},
            }
        ]
    }
}


def pending_pods(count: int, anti_affinity: bool) -> list[dict]:
    pods = []
    for i in range(count):
        pod = single_pod(i, f"loop-{i}", "bench", "default-scheduler")
        pod["metadata"]["uid"] = f"loop-uid-{i}"
        if anti_affinity:
            pod["spec"]["affinity"] = copy.deepcopy(ANTI_AFFINITY)
        pods.append(pod)
    return pods


def run(nodes: int, pods: int, anti_affinity: bool) -> float:
    """CPU ms per pod over ``pods`` pods placed one after the other on ``nodes`` nodes."""
    cache = Cache()
    for node in make_cluster(nodes)[0]:
        cache.add_node(node)
    fwk = Framework(default_profile(), in_tree_registry())
    algorithm = SchedulingAlgorithm()
    todo = pending_pods(pods, anti_affinity)
    gc.collect()
    started = time.process_time()
    for pod in todo:
        info = PodInfo(pod)  # the queue's entry (parsed in the informer thread, not timed apart)
        state = CycleState()
        if hasattr(state, "pod_info"):  # a checkout before CycleState.pod_info
            state.pod_info = info
        host = algorithm.schedule_pod(fwk, state, pod, cache.snapshot()).suggested_host
        assumed = copy.copy(pod)
        assumed["spec"] = {**pod["spec"], "nodeName": host}
        try:
            cache.assume_pod(assumed, info)
        except TypeError:  # a checkout whose assume_pod takes the pod alone
            cache.assume_pod(assumed)
        fwk.run_reserve_plugins_reserve(state, assumed, host)
        bound = copy.deepcopy(assumed)  # the watch's copy: equal, not the same objects
        cache.add_pod(bound)
    return 1000 * (time.process_time() - started) / pods


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--anti-affinity", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="runs; the least is printed too")
    args = parser.parse_args()
    if args.anti_affinity and args.pods > args.nodes * 9 // 10:
        # make_cluster taints a tenth of the nodes; the pods do not tolerate it.
        parser.error("--anti-affinity: one pod per untainted node (--pods <= 90 % of --nodes)")
    figures = [run(args.nodes, args.pods, args.anti_affinity) for _ in range(args.rounds)]
    shape = "required hostname anti-affinity" if args.anti_affinity else "one pod spec"
    print(
        f"{Path.cwd().name}: {args.nodes} nodes, {args.pods} pods, {shape}: CPU ms/pod "
        + " ".join(f"{f:.3f}" for f in figures)
        + f" (least {min(figures):.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
