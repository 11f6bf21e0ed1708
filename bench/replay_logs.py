"""Synthetic replay logs (format v1, ``extender/replay/log.py``) of a chosen size, for the
metrics and report benchmarks and tests: an openb-like cluster (8-GPU nodes of a few models,
some CPU-only nodes) and workload (CPU-only, shared-GPU, whole-GPU and multi-GPU pods of a
hundred shapes by default, Zipf-popular), placed by a toy random-fit scheduler in virtual
time. The placements mean nothing; the log is consistent (a bind only where the pod fits,
every bound pod leaves once) and has every event kind.

    python bench/replay_logs.py [--nodes 1500] [--pods 8000] [-o log.json]
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import sys
from collections import deque
from typing import Any

MODELS = ("V100M32", "V100M16", "T4", "P100", "A10")
GIB = 1 << 30


def synthetic_log(
    nodes: int = 1500,
    pods: int = 8000,
    *,
    seed: int = 0,
    policy: str = "synthetic",
    shapes: int = 100,
) -> dict:
    rng = random.Random(seed)
    node_list: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"n-{i}"
        if i % 6 == 5:
            node_list.append(
                {"name": name, "cpu": 96000, "memory": 512 * GIB, "labels": {}, "gpus": []}
            )
            continue
        model = MODELS[i % len(MODELS)]
        count = 8 if i % 3 else 4
        node_list.append(
            {
                "name": name,
                "cpu": 64000 if count == 4 else 96000,
                "memory": 256 * GIB if count == 4 else 512 * GIB,
                "labels": {"kube-extender.dev/gpu-model": model},
                "gpus": [
                    {"id": f"{name}/gpu-{g}", "model": model, "milli": 1000} for g in range(count)
                ],
            }
        )
    shape_list = []
    for s in range(shapes):
        kind = rng.random()
        cpu = rng.choice((1000, 2000, 4000, 8000, 16000, 32000))
        memory = rng.choice((2, 4, 8, 16, 32, 64)) * GIB
        if kind < 0.2:
            gpus, milli = 0, 0
        elif kind < 0.6:
            gpus, milli = 1, rng.choice((100, 200, 250, 300, 460, 500, 700, 900))
        elif kind < 0.9:
            gpus, milli = 1, 1000
        else:
            gpus, milli = rng.choice((2, 4, 8)), 1000
        wants = rng.choice(MODELS) if gpus and rng.random() < 0.2 else None
        shape_list.append((cpu, memory, gpus, milli, wants, f"ReplicaSet/shape-{s}"))
    weights = [1 / (rank + 1) for rank in range(len(shape_list))]
    end = 200000.0
    duration = 400000.0 * pods / nodes / 5.3
    pod_table: dict[str, dict[str, Any]] = {}
    arrivals = sorted(rng.uniform(0, end * 0.9) for _ in range(pods))
    for i, t in enumerate(arrivals):
        cpu, memory, gpus, milli, wants, owner = rng.choices(shape_list, weights)[0]
        pod: dict[str, Any] = {
            "cpu": cpu,
            "memory": memory,
            "gpus": gpus,
            "gpuMilli": milli,
            "owner": owner,
        }
        pod["arrival"] = round(t, 3)
        if wants:
            pod["gpuModel"] = wants
        pod_table[f"default/p-{i}"] = pod

    cpu_free = [n["cpu"] for n in node_list]
    mem_free = [n["memory"] for n in node_list]
    gpu_free = [[g["milli"] for g in n["gpus"]] for n in node_list]
    running: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    events: list[list] = []

    def fit(key: str) -> tuple[int, list[tuple[int, int]]] | None:
        p = pod_table[key]
        for n in rng.sample(range(nodes), min(nodes, 40)):
            if cpu_free[n] < p["cpu"] or mem_free[n] < p["memory"]:
                continue
            if p["gpus"] == 0:
                return n, []
            if (
                p.get("gpuModel")
                and node_list[n]["labels"].get("kube-extender.dev/gpu-model") != p["gpuModel"]
            ):
                continue
            chosen = [g for g, free in enumerate(gpu_free[n]) if free >= p["gpuMilli"]]
            if len(chosen) >= p["gpus"]:
                return n, [(g, p["gpuMilli"]) for g in chosen[: p["gpus"]]]
        return None

    def bind(t: float, key: str, n: int, shares: list[tuple[int, int]]) -> None:
        p = pod_table[key]
        cpu_free[n] -= p["cpu"]
        mem_free[n] -= p["memory"]
        for g, share in shares:
            gpu_free[n][g] -= share
        running[key] = (n, shares)
        name = node_list[n]["name"]
        events.append([t, "bind", key, name, [[f"{name}/gpu-{g}", s] for g, s in shares]])
        heapq.heappush(departures, (t + rng.expovariate(1 / duration), key))

    def free(key: str) -> str:
        n, shares = running.pop(key)
        p = pod_table[key]
        cpu_free[n] += p["cpu"]
        mem_free[n] += p["memory"]
        for g, share in shares:
            gpu_free[n][g] += share
        return node_list[n]["name"]

    departures: list[tuple[float, str]] = []
    queue: deque[str] = deque()
    patience: dict[str, float] = {}

    def retry(t: float, budget: int) -> None:
        for _ in range(min(budget, len(queue))):
            key = queue.popleft()
            if patience[key] < t:
                events.append([patience[key], "abandon", key])
                continue
            placed = fit(key)
            if placed is None:
                events.append([t, "fail", key])
                queue.append(key)
            else:
                bind(t, key, *placed)

    for key, pod in pod_table.items():
        t = pod["arrival"]
        while departures and departures[0][0] <= t:
            when, leaving = heapq.heappop(departures)
            if leaving in running:
                events.append([when, "leave", leaving, free(leaving), "completed"])
                retry(when, 3)
        events.append([t, "arrive", key])
        patience[key] = t + 30000
        placed = fit(key)
        if placed is None and pod["gpus"] >= 4 and rng.random() < 0.3:
            victim = next((v for v, (n, s) in running.items() if s), None)
            if victim is not None:
                events.append([t, "preempt", victim, free(victim), key])
                placed = fit(key)
        if placed is None:
            events.append([t, "fail", key])
            queue.append(key)
        else:
            bind(t, key, *placed)
    while departures and departures[0][0] <= end:
        when, leaving = heapq.heappop(departures)
        if leaving in running:
            events.append([when, "leave", leaving, free(leaving), "completed"])
            retry(when, 3)
    for key in list(running):
        events.append([end, "leave", key, free(key), "end"])
    events.sort(key=lambda e: e[0])
    return {
        "version": 1,
        "policy": policy,
        "config": f"synthetic/{policy}.yaml",
        "seed": seed,
        "trace": {"name": "synthetic", "source": "bench/replay_logs.py", "gpuMapping": "dra"},
        "nodes": node_list,
        "pods": pod_table,
        "events": events,
        "end": end,
        "wall_seconds": 0.0,
        "cycles": sum(1 for e in events if e[1] in ("bind", "fail")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--pods", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args(argv)
    log = synthetic_log(args.nodes, args.pods, seed=args.seed)
    text = json.dumps(log)
    if args.output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
