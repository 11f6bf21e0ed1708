"""How far two replay logs of one trace agree: the fidelity check of issue 32 (point 4).

One log comes from the virtual-time engine (:mod:`extender.replay.engine`), the other from a
live replay through the real kube-scheduler (:mod:`extender.replay.live`), both under the same
KubeSchedulerConfiguration. They cannot agree exactly: ties between equally scored nodes are
broken at random on both sides, scheduling takes no time in virtual time but some milliseconds
(times the time scale) live, and queue timers (backoff, the unschedulable pods' flush) run in
wall time live. So they are compared on what a policy decides, within stated tolerances
(:class:`Tolerance`; the figures and the reasons are in ``docs/replay.md``, "Fidelity"):

* pods scheduled and never scheduled (abandoned, or still pending at the end);
* placements up to ties: how many bindings each node *shape* (allocatable CPU, memory, GPU
  count and model) received, since which of two identical nodes takes a pod is a coin toss;
* nodes in use (at least one pod) and CPU, memory and GPU allocation (fraction of the
  cluster) over time, sampled on a fixed grid: the mean absolute difference over the grid.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

DEFAULT_SAMPLES = 200
FIGURES = ("nodes", "cpu", "memory", "gpu")


@dataclass(frozen=True)
class Tolerance:
    """The largest differences still called agreement.

    Counts allow ``max(absolute, relative * total)``; the series' bounds are mean absolute
    differences over the sampling grid (nodes in use: nodes; allocation: fraction of the
    cluster's capacity); queueing times (mean, p50) allow ``max(queueing seconds,
    queueing_relative * the larger value)``, their p90 ``queueing_p90`` seconds at least:
    it rests on the few longest waits, and which pods wait longest is where two
    trajectories differ most."""

    pods: int = 2
    pods_relative: float = 0.05
    shape: int = 3
    shape_relative: float = 0.10
    nodes: float = 1.0
    cpu: float = 0.05
    memory: float = 0.05
    gpu: float = 0.05
    queueing: float = 60.0
    queueing_relative: float = 0.30
    queueing_p90: float = 150.0


def shape_of(node: dict) -> str:
    """A node's shape: allocatable CPU and memory, GPU count and models."""
    models = sorted({gpu.get("model") or "" for gpu in node.get("gpus") or ()})
    gpus = f"{len(node['gpus'])}x{'+'.join(models)}" if node.get("gpus") else "0"
    return f"cpu {node['cpu'] / 1000:g}, mem {node['memory'] / 2**30:g}Gi, gpu {gpus}"


def _percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def outcome(log: dict) -> dict:
    """Pods scheduled (bound at least once), never scheduled, bindings per node shape, and
    the queueing time (first binding - arrival): mean, p50 and p90."""
    shapes = {node["name"]: shape_of(node) for node in log["nodes"]}
    arrivals: dict[str, float] = {}
    waits: dict[str, float] = {}
    per_shape: Counter[str] = Counter()
    for event in log["events"]:
        if event[1] == "arrive":
            arrivals.setdefault(event[2], event[0])
        elif event[1] == "bind":
            key = event[2]
            if key not in waits:
                waits[key] = event[0] - arrivals.get(key, log["pods"][key]["arrival"])
            per_shape[shapes.get(event[3], "?")] += 1
    return {
        "pods": len(log["pods"]),
        "scheduled": len(waits),
        "never_scheduled": len(log["pods"]) - len(waits),
        "per_shape": dict(sorted(per_shape.items())),
        "queueing_mean": sum(waits.values()) / len(waits) if waits else 0.0,
        "queueing_p50": _percentile(list(waits.values()), 50),
        "queueing_p90": _percentile(list(waits.values()), 90),
    }


def series(log: dict, samples: int = DEFAULT_SAMPLES) -> dict[str, list[float]]:
    """Nodes in use and CPU/memory/GPU allocation (fractions of the cluster) at ``samples``
    evenly spaced times over ``[0, end]`` (the state after every event at that time)."""
    pods = log["pods"]
    nodes = {node["name"]: node for node in log["nodes"]}
    total_cpu = sum(n["cpu"] for n in nodes.values()) or 1
    total_memory = sum(n["memory"] for n in nodes.values()) or 1
    total_gpu = sum(g.get("milli", 1000) for n in nodes.values() for g in n["gpus"]) or 1
    end = float(log["end"])
    grid = [end * i / (samples - 1) for i in range(samples)] if samples > 1 else [end]
    running: dict[str, tuple[str, int]] = {}  # pod -> node, GPU milli it holds
    per_node: Counter[str] = Counter()
    cpu = memory = gpu = 0
    out: dict[str, list[float]] = {name: [] for name in FIGURES}
    events = sorted(log["events"], key=lambda e: e[0])
    i = 0
    for t in grid:
        while i < len(events) and events[i][0] <= t:
            event = events[i]
            i += 1
            kind, key = event[1], event[2]
            if kind == "bind" and key not in running:
                held = sum(share for _, share in event[4]) if len(event) > 4 else 0
                running[key] = (event[3], held)
                per_node[event[3]] += 1
                cpu += pods[key]["cpu"]
                memory += pods[key]["memory"]
                gpu += held
            elif kind in ("leave", "preempt") and key in running:
                node, held = running.pop(key)
                per_node[node] -= 1
                cpu -= pods[key]["cpu"]
                memory -= pods[key]["memory"]
                gpu -= held
        out["nodes"].append(float(sum(1 for count in per_node.values() if count > 0)))
        out["cpu"].append(cpu / total_cpu)
        out["memory"].append(memory / total_memory)
        out["gpu"].append(gpu / total_gpu)
    return out


@dataclass
class Agreement:
    """The figures of the reference runs (``a``: one log, or several such as the engine under
    a few seeds, as the range they span) and of the compared run (``b``), the distance of
    each of ``b``'s figures to ``a``'s range, and the figures beyond the tolerance."""

    a: list[dict]
    b: dict
    differences: dict[str, tuple[float, float, float, float]]  # a's min, max, b, distance
    failures: list[str]

    @property
    def agrees(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        width = max(len(name) for name in self.differences)
        lines = [f"{'figure':<{width}} {'a':>17} {'b':>8} {'diff':>7}"]
        for name, (low, high, value, distance) in self.differences.items():
            span = f"{low:.3f}" if low == high else f"{low:.3f}..{high:.3f}"
            lines.append(f"{name:<{width}} {span:>17} {value:>8.3f} {distance:>7.3f}")
        lines += [f"FAIL {failure}" for failure in self.failures] or ["agree within tolerance"]
        return "\n".join(lines)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _distance(value: float, low: float, high: float) -> float:
    return max(low - value, value - high, 0.0)


def compare(
    a: dict | list[dict],
    b: dict,
    tolerance: Tolerance | None = None,
    samples: int = DEFAULT_SAMPLES,
) -> Agreement:
    """Compare the replay log ``b`` (e.g. live) with the reference ``a`` (e.g. the engine's
    log, or its logs under several seeds) of the same trace, within ``tolerance``.

    With several reference logs a figure of ``b`` is compared with the range the references
    span (a series point by point): how far random tie-breaking moves the references
    themselves is not held against ``b``. With one, it is a plain difference."""
    tolerance = tolerance or Tolerance()
    references = [a] if isinstance(a, dict) else list(a)
    if not references:
        raise ValueError("compare: no reference log")
    for log in references:
        if set(log["pods"]) != set(b["pods"]):
            raise ValueError("pods: the logs are not of the same trace")
    outs = [outcome(log) for log in references]
    out_b = outcome(b)
    all_series = [series(log, samples) for log in references]
    series_b = series(b, samples)
    differences: dict[str, tuple[float, float, float, float]] = {}
    failures: list[str] = []

    def check(name: str, values: list[float], value: float, allowed: float) -> None:
        low, high = min(values), max(values)
        distance = _distance(value, low, high)
        differences[name] = (low, high, value, distance)
        if distance > allowed:
            failures.append(f"{name}: {value:g} vs {low:g}..{high:g} (allowed {allowed:g})")

    count_bound = max(tolerance.pods, tolerance.pods_relative * out_b["pods"])
    for name in ("scheduled", "never_scheduled"):
        check(name, [out[name] for out in outs], out_b[name], count_bound)
    for name in ("queueing_mean", "queueing_p50", "queueing_p90"):
        values = [out[name] for out in outs]
        least = tolerance.queueing_p90 if name == "queueing_p90" else tolerance.queueing
        allowed = max(least, tolerance.queueing_relative * max(*values, out_b[name]))
        check(f"{name} (s)", values, out_b[name], allowed)
    shapes = sorted({s for out in [*outs, out_b] for s in out["per_shape"]})
    for shape in shapes:
        values = [out["per_shape"].get(shape, 0) for out in outs]
        value = out_b["per_shape"].get(shape, 0)
        allowed = max(tolerance.shape, tolerance.shape_relative * max(*values, value))
        check(f"bindings on {shape}", values, value, allowed)
    for name in FIGURES:
        points = list(zip(*(s[name] for s in all_series), strict=True))
        gaps = [
            _distance(value, min(point), max(point))
            for point, value in zip(points, series_b[name], strict=True)
        ]
        gap = _mean(gaps)
        means = [_mean(s[name]) for s in all_series]
        label = f"{name} over time (mean |diff|)"
        differences[label] = (min(means), max(means), _mean(series_b[name]), gap)
        allowed = getattr(tolerance, name)
        if gap > allowed:
            failures.append(f"{name} over time: mean |diff| {gap:.3f} (allowed {allowed:g})")
    return Agreement(
        a=[{**out, "series": s} for out, s in zip(outs, all_series, strict=True)],
        b={**out_b, "series": series_b},
        differences=differences,
        failures=failures,
    )
