"""A replay log's metrics: what one policy did to the workload, as a JSON-able dict.

``compute(log)`` reads the engine's log (format v1: ``nodes``, ``pods``, ``events`` and ``end``,
see ``extender/replay/log.py``) and replays its events once, in time order, over plain counters.
Nothing here schedules: it only measures placements already made.

What is computed
----------------
- **Pods**: scheduled (bound at least once), never scheduled (never bound: abandoned, or still
  pending at the end), pending at the end (including re-queued victims), failed attempts
  (``fail`` events), pods that never arrived before the end.
- **Queueing time**: first bind minus arrival (the pod's first ``arrive`` event, else its
  ``arrival``), over the scheduled pods: mean, p50, p90, p99, max, and a distribution (the
  waits at 281 percentiles, finer in the tail). Percentiles interpolate linearly between the closest
  ranks (numpy's default): of 0, 10, 20, 30, 40 s, p50 is 20 s and p90 is 36 s.
- **Time series** on a fixed grid of ``points`` times from 0 to ``end`` (both included): the
  state after every event at or before the grid time of CPU, memory and GPU allocation (the
  bound pods' requests as a fraction of the cluster's allocatable), pending pods, running pods,
  nodes in use (at least one bound pod) and GPU fragmentation. Time-weighted means of the same
  quantities are exact (integrated between events, not sampled). A ``leave`` event with reason
  ``end`` marks a pod still running when the window closed: it frees nothing.
- **GPU fragmentation**, the FGD definition (Weng et al., "Beware of Fragmentation: Scheduling
  GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23). The workload's
  task types ``m`` are the distinct pod shapes of the log's ``pods`` (CPU milli, memory bytes,
  GPU count, per-GPU milli, allowed GPU models), with popularity ``p_m`` = the share of pods of
  that shape. For a node ``n`` with free CPU, free memory and per-GPU free capacity, the
  fragmented GPU capacity with respect to ``m``, ``F_n(m)``, is

  * all of the node's unallocated GPU capacity when ``m`` cannot run on ``n``: it asks no GPU
    (it can use none of it), or the node lacks the CPU or memory ``m`` asks, or fewer than
    ``m``'s GPU count of the node's GPUs (of an allowed model) each have ``m``'s per-GPU milli
    free;
  * otherwise the free capacity of the GPUs ``m`` cannot use (free milli below its per-GPU
    request, or a model it does not allow): the partial GPUs too small for it.

  The node's fragmentation is ``F_n = sum_m p_m F_n(m)``, the cluster's ``sum_n F_n``, reported
  in GPUs (milli / 1000) and as a fraction of the cluster's unallocated GPU capacity (0 when
  none is unallocated). This follows the paper and the authors' simulator (hkust-adsl
  kubernetes-scheduler-simulator, ``pkg/utils/frag.go``: every pod shape counted, CPU-only ones
  included, as its ``isInvolvedCpuPods``), with two differences stated here: every shape counts
  (the simulator may keep only the most popular ones, 95% of pods by default), and memory is
  checked as well as CPU (the simulator checks CPU only).
- **Spread balance per workload** (a pod's ``owner``; pods without one are left out): at
  every grid time, for each owner with at least two running pods, the skew as
  PodTopologySpread defines it: the most of its pods in one domain minus the fewest, over all
  domains (zones when every node has a ``topology.kubernetes.io/zone`` label, else nodes; a
  domain without its pods counts 0). A workload spread one pod per node has skew 1 (or 0);
  one packed on a single node has skew = its pod count. Reported per owner (mean and max over
  the grid times it had >= 2 pods) and overall (mean over all such owner-times, max).
- **Preemptions**: ``preempt`` events, distinct victims and preemptors.
- **Heat map**: per-node allocation (GPU for GPU nodes when the cluster has GPUs, else CPU of
  all nodes) at ``heat_columns`` of the grid times: nodes x time.

Upstream has no counterpart (kube-scheduler exports no placement-quality metrics); the FGD
semantics were read from the paper and its simulator, not copied.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ZONE_LABEL = "topology.kubernetes.io/zone"
DEFAULT_POINTS = 300
DEFAULT_HEAT_COLUMNS = 120
# The queueing-time distribution's percentiles: every 1 to 90, every 0.1 to 99, every 0.01 to
# 100 (the tail is where policies differ).
_CDF_PERCENTS = np.concatenate(
    [np.arange(0, 90, 1.0), np.arange(90, 99, 0.1), np.linspace(99, 100, 101)]
)

FRAGMENTATION_DEFINITION = (
    "FGD (Weng et al., ATC'23): per node, sum over the workload's pod shapes m of "
    "popularity(m) x the node's unallocated GPU capacity m cannot use (all of it when m "
    "cannot run there by CPU, memory or GPUs, or asks no GPU; else the GPUs with less free "
    "than m's per-GPU request); summed over nodes"
)


class MetricsError(ValueError):
    """A replay log this module cannot read; the message names the field."""


@dataclass(frozen=True)
class _Shape:
    cpu: int
    memory: int
    gpus: int
    milli: int
    models: tuple[str, ...] | None


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MetricsError(f"{where}: must be a number")
    return float(value)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise MetricsError(f"{where}: must be a number >= 0")
    return int(value)


def _models(value: Any, where: str) -> tuple[str, ...] | None:
    """A pod's allowed GPU models: null (any), a string (``"A|B"`` lists alternatives) or a
    list of strings."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return tuple(sorted(v for v in value.split("|") if v))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(sorted(value)) or None
    raise MetricsError(f"{where}: must be null, a string or a list of strings")


class _Fragmentation:
    """FGD fragmentation of a node state against the workload's shapes, vectorised over the
    shapes and memoised by the node state (nodes of one kind in one state repeat a lot)."""

    def __init__(self, shapes: Mapping[_Shape, int]) -> None:
        total = sum(shapes.values())
        gpu_shapes = [s for s in shapes if s.gpus > 0]
        # Shapes that ask no GPU can use none of a node's free GPU capacity: all of it is
        # fragmented for them, whatever the node's state.
        self.cpu_only = sum(n for s, n in shapes.items() if s.gpus == 0) / total if total else 0
        self.p = np.array([shapes[s] / total for s in gpu_shapes], dtype=float)
        self.cpu = np.array([s.cpu for s in gpu_shapes], dtype=float)
        self.memory = np.array([s.memory for s in gpu_shapes], dtype=float)
        self.gpus = np.array([s.gpus for s in gpu_shapes], dtype=np.int64)
        self.milli = np.array([s.milli for s in gpu_shapes], dtype=float)
        self._shapes = gpu_shapes
        self._model_ok: dict[str, np.ndarray] = {}
        self._memo: dict[tuple, float] = {}

    def _allows(self, model: str) -> np.ndarray:
        ok = self._model_ok.get(model)
        if ok is None:
            ok = np.array([s.models is None or model in s.models for s in self._shapes])
            self._model_ok[model] = ok
        return ok

    def node(self, cpu_free: int, memory_free: int, gpus: Sequence[tuple[str, int]]) -> float:
        """Fragmented GPU milli of a node with this free CPU, memory and (model, free milli)
        per GPU."""
        total = sum(free for _, free in gpus)
        if total <= 0:
            return 0.0
        key = (cpu_free, memory_free, tuple(sorted(gpus)))
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        value = self.cpu_only * total
        if len(self.p):
            usable = np.zeros(len(self.p), dtype=np.int64)
            partial = np.zeros(len(self.p), dtype=float)
            for model, free in gpus:
                fits = self._allows(model) & (self.milli <= free)
                usable += fits
                partial += np.where(fits, 0.0, float(free))
            runs = (self.cpu <= cpu_free) & (self.memory <= memory_free) & (usable >= self.gpus)
            value += float(self.p @ np.where(runs, partial, float(total)))
        self._memo[key] = value
        return value


def _percentiles(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {
            "count": 0,
            "mean": None,
            "p50": None,
            "p90": None,
            "p99": None,
            "max": None,
            "cdf": {"percent": [], "seconds": []},
        }
    a = np.asarray(values, dtype=float)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {
        "count": len(a),
        "mean": float(a.mean()),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "max": float(a.max()),
        "cdf": {
            "percent": [round(float(q), 2) for q in _CDF_PERCENTS],
            "seconds": [round(float(v), 3) for v in np.percentile(a, _CDF_PERCENTS)],
        },
    }


def _grid(start: float, end: float, points: int) -> np.ndarray:
    return np.linspace(start, end, max(points, 2))


def compute(
    log: dict,
    *,
    points: int = DEFAULT_POINTS,
    heat_columns: int = DEFAULT_HEAT_COLUMNS,
    start: float = 0.0,
) -> dict:
    """The metrics of one replay log (see the module docstring); raises ``MetricsError``
    naming the field on a log it cannot read. ``start``: the time series, the heat map and the
    time-weighted means cover ``[start, end]`` only (a trace whose first weeks are nearly
    idle, as openb's, would dilute every mean); the pod counts and queueing times cover every
    pod."""
    if not isinstance(log, dict):
        raise MetricsError("log: must be an object")
    end = _number(log.get("end"), "end")
    if end < 0:
        raise MetricsError("end: must be a number >= 0")
    if not 0 <= start <= end:
        raise MetricsError(f"start: must be between 0 and the log's end ({end:g}), not {start:g}")

    # Nodes.
    raw_nodes = log.get("nodes")
    if not isinstance(raw_nodes, list):
        raise MetricsError("nodes: must be a list")
    node_names: list[str] = []
    node_index: dict[str, int] = {}
    cpu_cap: list[int] = []
    mem_cap: list[int] = []
    zones: list[str | None] = []
    gpu_index: dict[str, int] = {}
    gpu_node: list[int] = []
    gpu_model: list[str] = []
    gpu_cap: list[int] = []
    node_gpus: list[list[int]] = []
    for i, node in enumerate(raw_nodes):
        where = f"nodes[{i}]"
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            raise MetricsError(f"{where}.name: must be a string")
        name = node["name"]
        if name in node_index:
            raise MetricsError(f"{where}.name: {name!r} is listed twice")
        node_index[name] = i
        node_names.append(name)
        cpu_cap.append(_int(node.get("cpu"), f"{where}.cpu"))
        mem_cap.append(_int(node.get("memory"), f"{where}.memory"))
        labels = node.get("labels") or {}
        zones.append(labels.get(ZONE_LABEL) if isinstance(labels, dict) else None)
        own: list[int] = []
        for j, gpu in enumerate(node.get("gpus") or []):
            gwhere = f"{where}.gpus[{j}]"
            if not isinstance(gpu, dict) or not isinstance(gpu.get("id"), str):
                raise MetricsError(f"{gwhere}.id: must be a string")
            if gpu["id"] in gpu_index:
                raise MetricsError(f"{gwhere}.id: {gpu['id']!r} is listed twice")
            gpu_index[gpu["id"]] = len(gpu_cap)
            own.append(len(gpu_cap))
            gpu_node.append(i)
            gpu_model.append(str(gpu.get("model") or ""))
            gpu_cap.append(_int(gpu.get("milli", 1000), f"{gwhere}.milli"))
        node_gpus.append(own)
    n_nodes = len(node_names)

    # Pods and the workload's shapes.
    raw_pods = log.get("pods")
    if not isinstance(raw_pods, dict):
        raise MetricsError("pods: must be an object keyed by namespace/name")
    pod_cpu: dict[str, int] = {}
    pod_mem: dict[str, int] = {}
    pod_owner: dict[str, str] = {}
    pod_arrival: dict[str, float] = {}
    shapes: dict[_Shape, int] = {}
    for key, pod in raw_pods.items():
        where = f"pods[{key!r}]"
        if not isinstance(pod, dict):
            raise MetricsError(f"{where}: must be an object")
        cpu = _int(pod.get("cpu", 0), f"{where}.cpu")
        memory = _int(pod.get("memory", 0), f"{where}.memory")
        gpus = _int(pod.get("gpus", 0) or 0, f"{where}.gpus")
        milli = _int(pod.get("gpuMilli", 0) or 0, f"{where}.gpuMilli") if gpus else 0
        if gpus and not milli:
            milli = 1000
        shape = _Shape(cpu, memory, gpus, milli, _models(pod.get("gpuModel"), f"{where}.gpuModel"))
        shapes[shape] = shapes.get(shape, 0) + 1
        pod_cpu[key] = cpu
        pod_mem[key] = memory
        pod_owner[key] = str(pod.get("owner") or "")
        pod_arrival[key] = _number(pod.get("arrival", 0.0), f"{where}.arrival")
    fragmentation = _Fragmentation(shapes)

    raw_events = log.get("events")
    if not isinstance(raw_events, list):
        raise MetricsError("events: must be a list")
    for i, event in enumerate(raw_events):
        if (
            not isinstance(event, list | tuple)
            or len(event) < 3
            or isinstance(event[0], bool)
            or not isinstance(event[0], int | float)
            or not isinstance(event[1], str)
        ):
            raise MetricsError(f"events[{i}]: must be [time, kind, pod, ...]")
    order = sorted(range(len(raw_events)), key=lambda i: raw_events[i][0])

    # State.
    cpu_used = [0] * n_nodes
    mem_used = [0] * n_nodes
    pods_on = [0] * n_nodes
    gpu_used = [0] * len(gpu_cap)
    node_gpu_used = [0] * n_nodes
    node_frag = [0.0] * n_nodes
    node_gpu_cap = [sum(gpu_cap[g] for g in gs) for gs in node_gpus]
    total_cpu = sum(cpu_cap)
    total_mem = sum(mem_cap)
    total_gpu = sum(gpu_cap)
    zoned = n_nodes > 0 and all(zones)
    zone_names = sorted({z for z in zones if z}) if zoned else []
    zone_of = [zone_names.index(z) if zoned and z else i for i, z in enumerate(zones)]
    n_domains = len(zone_names) if zoned else n_nodes

    for i, own_gpus in enumerate(node_gpus):
        node_frag[i] = fragmentation.node(
            cpu_cap[i], mem_cap[i], [(gpu_model[g], gpu_cap[g]) for g in own_gpus]
        )
    totals = {"cpu": 0, "memory": 0, "gpu": 0, "in_use": 0, "pending": 0, "running": 0}
    frag_total = sum(node_frag)
    pending: set[str] = set()
    bound: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    first_arrive: dict[str, float] = {}
    first_bind: dict[str, float] = {}
    abandoned: set[str] = set()
    fails = 0
    preemptions = 0
    victims: set[str] = set()
    preemptors: set[str] = set()
    owner_domains: dict[str, dict[int, int]] = {}

    def refrag(n: int) -> None:
        nonlocal frag_total
        value = fragmentation.node(
            cpu_cap[n] - cpu_used[n],
            mem_cap[n] - mem_used[n],
            [(gpu_model[g], gpu_cap[g] - gpu_used[g]) for g in node_gpus[n]],
        )
        frag_total += value - node_frag[n]
        node_frag[n] = value

    def place(key: str, n: int, shares: list[tuple[int, int]], sign: int) -> None:
        cpu_used[n] += sign * pod_cpu[key]
        mem_used[n] += sign * pod_mem[key]
        totals["cpu"] += sign * pod_cpu[key]
        totals["memory"] += sign * pod_mem[key]
        for g, share in shares:
            gpu_used[g] += sign * share
            node_gpu_used[n] += sign * share
            totals["gpu"] += sign * share
        before = pods_on[n]
        pods_on[n] += sign
        totals["in_use"] += (pods_on[n] > 0) - (before > 0)
        totals["running"] += sign
        if pod_owner[key]:  # a pod without an owner belongs to no workload
            counts = owner_domains.setdefault(pod_owner[key], {})
            domain = zone_of[n]
            counts[domain] = counts.get(domain, 0) + sign
            if not counts[domain]:
                del counts[domain]
        if shares or node_gpus[n]:
            refrag(n)

    def release(key: str) -> None:
        if key in bound:
            n, shares = bound.pop(key)
            place(key, n, shares, -1)

    # Sampling.
    grid = _grid(start, end, points)
    columns = max(min(heat_columns, len(grid)), 1)
    heat_at = {int(k) for k in np.linspace(0, len(grid) - 1, columns).round()}
    heat_gpu = total_gpu > 0
    heat_rows = [i for i in range(n_nodes) if node_gpu_cap[i] > 0 or not heat_gpu]
    heat_den = np.array(
        [node_gpu_cap[i] if heat_gpu else max(cpu_cap[i], 1) for i in heat_rows], dtype=float
    )
    heat_times: list[float] = []
    heat_values: list[np.ndarray] = []
    names = ("cpu", "memory", "gpu", "pending", "running", "nodes_in_use", "frag_gpus")
    series: dict[str, list[float]] = {name: [] for name in (*names, "frag_fraction")}
    spread_samples: dict[str, list[int]] = {}

    def current() -> tuple[float, ...]:
        return (
            totals["cpu"] / total_cpu if total_cpu else 0.0,
            totals["memory"] / total_mem if total_mem else 0.0,
            totals["gpu"] / total_gpu if total_gpu else 0.0,
            float(len(pending)),
            float(totals["running"]),
            float(totals["in_use"]),
            max(frag_total, 0.0) / 1000.0,
        )

    def frag_fraction() -> float:
        free = total_gpu - totals["gpu"]
        return max(frag_total, 0.0) / free if free > 0 else 0.0

    def sample(k: int) -> None:
        for name, value in zip(names, current(), strict=True):
            series[name].append(value)
        series["frag_fraction"].append(frag_fraction())
        for owner, counts in owner_domains.items():
            running = sum(counts.values())
            if running < 2:
                continue
            fewest = min(counts.values()) if len(counts) >= n_domains else 0
            spread_samples.setdefault(owner, []).append(max(counts.values()) - fewest)
        if k in heat_at:
            heat_times.append(float(grid[k]))
            if heat_gpu:
                used = np.array([node_gpu_used[i] for i in heat_rows], dtype=float)
            else:
                used = np.array([cpu_used[i] for i in heat_rows], dtype=float)
            heat_values.append(used / heat_den)

    integral = [0.0] * (len(names) + 1)
    last_t = start  # nothing before start is integrated

    def advance(t: float) -> None:
        nonlocal last_t
        t = min(t, end)
        if t > last_t:
            for j, value in enumerate((*current(), frag_fraction())):
                integral[j] += value * (t - last_t)
            last_t = t

    k = 0
    for i in order:
        event = raw_events[i]
        t = float(event[0])
        while k < len(grid) and grid[k] < t:
            sample(k)
            k += 1
        advance(t)
        kind, key = event[1], event[2]
        if key not in raw_pods:
            raise MetricsError(f"events[{i}]: pod {key!r} is not in pods")
        if kind == "arrive":
            first_arrive.setdefault(key, t)
            if key not in bound:
                pending.add(key)
        elif kind == "bind":
            if len(event) < 5 or event[3] not in node_index or not isinstance(event[4], list):
                raise MetricsError(f"events[{i}]: bind must be [time, 'bind', pod, node, gpus]")
            if key in bound:
                raise MetricsError(f"events[{i}]: pod {key!r} is bound already")
            n = node_index[event[3]]
            shares: list[tuple[int, int]] = []
            for share in event[4]:
                if not isinstance(share, list | tuple) or len(share) != 2:
                    raise MetricsError(f"events[{i}]: a GPU share must be [gpu id, milli]")
                g = gpu_index.get(share[0])
                if g is None or gpu_node[g] != n:
                    raise MetricsError(f"events[{i}]: GPU {share[0]!r} is not on node {event[3]!r}")
                shares.append((g, _int(share[1], f"events[{i}][4]")))
            pending.discard(key)
            first_bind.setdefault(key, t)
            bound[key] = (n, shares)
            place(key, n, shares, +1)
        elif kind == "fail":
            fails += 1
        elif kind == "preempt":
            preemptions += 1
            victims.add(key)
            if len(event) >= 5 and isinstance(event[4], str) and event[4]:
                preemptors.add(event[4])
            release(key)
        elif kind == "leave":
            reason = event[4] if len(event) >= 5 else "completed"
            if reason != "end":
                release(key)
                pending.discard(key)
        elif kind == "abandon":
            if key in pending:
                pending.discard(key)
                if key not in first_bind:
                    abandoned.add(key)
        else:
            raise MetricsError(f"events[{i}]: unknown kind {kind!r}")
    while k < len(grid):
        sample(k)
        k += 1
    advance(end)

    # Results.
    arrived = set(first_arrive) | set(first_bind)
    waits = [
        first_bind[key] - first_arrive.get(key, pod_arrival[key]) for key in sorted(first_bind)
    ]
    never = len(arrived) - len(first_bind)
    means = {
        name: (integral[j] / (end - start) if end > start else values[-1])
        for j, (name, values) in enumerate(series.items())
    }
    per_owner = {
        owner: {"mean_skew": float(np.mean(s)), "max_skew": int(max(s)), "samples": len(s)}
        for owner, s in sorted(spread_samples.items())
    }
    all_skews = [v for s in spread_samples.values() for v in s]
    queueing = _percentiles(waits)
    result = {
        "version": 1,
        "policy": log.get("policy"),
        "config": log.get("config"),
        "seed": log.get("seed"),
        "trace": log.get("trace"),
        "start": start,
        "end": end,
        "wall_seconds": log.get("wall_seconds"),
        "cycles": log.get("cycles"),
        "cluster": {
            "nodes": n_nodes,
            "cpu_milli": total_cpu,
            "memory_bytes": total_mem,
            "gpus": len(gpu_cap),
            "gpu_milli": total_gpu,
        },
        "pods": {
            "total": len(raw_pods),
            "arrived": len(arrived),
            "scheduled": len(first_bind),
            "never_scheduled": never,
            "abandoned": len(abandoned),
            "pending_at_end": len(pending),
            "not_arrived": len(raw_pods) - len(arrived),
            "failed_attempts": fails,
        },
        "queueing": queueing,
        "series": {
            "t": [float(t) for t in grid],
            **{name: [round(v, 6) for v in values] for name, values in series.items()},
        },
        "means": means,
        "peaks": {name: max(values) for name, values in series.items()},
        "fragmentation": {
            "definition": FRAGMENTATION_DEFINITION,
            "task_types": len(shapes),
            "mean_gpus": means["frag_gpus"],
            "mean_fraction": means["frag_fraction"],
            "end_gpus": series["frag_gpus"][-1],
            "end_fraction": series["frag_fraction"][-1],
        },
        "spread": {
            "domain": "zone" if zoned else "node",
            "definition": (
                "per owner with >= 2 running pods, at each grid time: max - min of its pods "
                "per domain over all domains (PodTopologySpread's skew)"
            ),
            "owners": len(per_owner),
            "mean_skew": float(np.mean(all_skews)) if all_skews else None,
            "max_skew": int(max(all_skews)) if all_skews else None,
            "per_owner": per_owner,
        },
        "preemptions": {
            "count": preemptions,
            "victims": len(victims),
            "preemptors": len(preemptors),
        },
        "heatmap": {
            "resource": "gpu" if heat_gpu else "cpu",
            "nodes": [node_names[i] for i in heat_rows],
            "t": heat_times,
            # rows: nodes, columns: times
            "values": (
                np.round(np.array(heat_values).T, 3).tolist()
                if heat_values and heat_rows
                else [[] for _ in heat_rows]
            ),
        },
    }
    result["summary"] = summary(result)
    return result


def summary(metrics: dict) -> dict[str, Any]:
    """The headline figures of one policy, flat (the report's side-by-side table)."""
    pods, q, means = metrics["pods"], metrics["queueing"], metrics["means"]
    return {
        "pods scheduled": pods["scheduled"],
        "never scheduled": pods["never_scheduled"],
        "abandoned": pods["abandoned"],
        "pending at end": pods["pending_at_end"],
        "failed attempts": pods["failed_attempts"],
        "queueing p50 (s)": q["p50"],
        "queueing p90 (s)": q["p90"],
        "queueing p99 (s)": q["p99"],
        "mean CPU alloc": means["cpu"],
        "mean memory alloc": means["memory"],
        "mean GPU alloc": means["gpu"],
        "mean nodes in use": means["nodes_in_use"],
        "peak nodes in use": metrics["peaks"]["nodes_in_use"],
        "mean pending": means["pending"],
        "mean GPU frag (GPUs)": means["frag_gpus"],
        "mean GPU frag (of free)": means["frag_fraction"],
        "mean spread skew": metrics["spread"]["mean_skew"],
        "max spread skew": metrics["spread"]["max_skew"],
        "preemptions": metrics["preemptions"]["count"],
    }
