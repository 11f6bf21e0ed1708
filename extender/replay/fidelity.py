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

from collections import Counter
from dataclasses import dataclass

DEFAULT_SAMPLES = 200
FIGURES = ("nodes", "cpu", "memory", "gpu")


@dataclass(frozen=True)
class Tolerance:
    """The largest differences still called agreement.

    Counts allow ``max(absolute, relative * total)``; the series' bounds are mean absolute
    differences over the sampling grid (nodes in use: nodes; allocation: fraction of the
    cluster's capacity)."""

    pods: int = 2
    pods_relative: float = 0.05
    shape: int = 3
    shape_relative: float = 0.10
    nodes: float = 1.0
    cpu: float = 0.05
    memory: float = 0.05
    gpu: float = 0.05


def shape_of(node: dict) -> str:
    """A node's shape: allocatable CPU and memory, GPU count and models."""
    models = sorted({gpu.get("model") or "" for gpu in node.get("gpus") or ()})
    gpus = f"{len(node.get('gpus') or ())}x{'+'.join(models)}" if node.get("gpus") else "0"
    return f"cpu={node['cpu']}m,memory={node['memory']},gpus={gpus}"


def outcome(log: dict) -> dict:
    """Pods scheduled (bound at least once), never scheduled, and bindings per node shape."""
    shapes = {node["name"]: shape_of(node) for node in log["nodes"]}
    bound: set[str] = set()
    per_shape: Counter[str] = Counter()
    for event in log["events"]:
        if event[1] == "bind":
            bound.add(event[2])
            per_shape[shapes.get(event[3], "?")] += 1
    return {
        "pods": len(log["pods"]),
        "scheduled": len(bound),
        "never_scheduled": len(log["pods"]) - len(bound),
        "per_shape": dict(sorted(per_shape.items())),
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
    """Both logs' figures, their differences, and which exceed the tolerance."""

    a: dict
    b: dict
    differences: dict
    failures: list[str]

    @property
    def agrees(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [f"{'figure':<42} {'a':>10} {'b':>10} {'diff':>8}"]
        for name, (a, b, diff) in self.differences.items():
            lines.append(f"{name:<42} {a:>10.3f} {b:>10.3f} {diff:>8.3f}")
        lines += [f"FAIL {failure}" for failure in self.failures] or ["agree within tolerance"]
        return "\n".join(lines)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def compare(
    a: dict, b: dict, tolerance: Tolerance | None = None, samples: int = DEFAULT_SAMPLES
) -> Agreement:
    """Compare two replay logs of one trace (e.g. engine and live) within ``tolerance``."""
    tolerance = tolerance or Tolerance()
    if set(a["pods"]) != set(b["pods"]):
        raise ValueError("pods: the two logs are not of the same trace")
    out_a, out_b = outcome(a), outcome(b)
    series_a, series_b = series(a, samples), series(b, samples)
    differences: dict[str, tuple[float, float, float]] = {}
    failures: list[str] = []
    total = out_a["pods"]
    count_bound = max(tolerance.pods, tolerance.pods_relative * total)
    for name in ("scheduled", "never_scheduled"):
        diff = abs(out_a[name] - out_b[name])
        differences[name] = (out_a[name], out_b[name], diff)
        if diff > count_bound:
            failures.append(f"{name}: {out_a[name]} vs {out_b[name]} (allowed {count_bound:g})")
    for shape in sorted(set(out_a["per_shape"]) | set(out_b["per_shape"])):
        x, y = out_a["per_shape"].get(shape, 0), out_b["per_shape"].get(shape, 0)
        allowed = max(tolerance.shape, tolerance.shape_relative * max(x, y))
        differences[f"bindings on {shape}"] = (x, y, abs(x - y))
        if abs(x - y) > allowed:
            failures.append(f"bindings on {shape}: {x} vs {y} (allowed {allowed:g})")
    for name in FIGURES:
        gap = _mean([abs(x - y) for x, y in zip(series_a[name], series_b[name], strict=True)])
        differences[f"{name} over time (mean |diff|)"] = (
            _mean(series_a[name]),
            _mean(series_b[name]),
            gap,
        )
        allowed = getattr(tolerance, name)
        if gap > allowed:
            failures.append(f"{name} over time: mean |diff| {gap:.3f} (allowed {allowed:g})")
    return Agreement(
        a={**out_a, "series": series_a},
        b={**out_b, "series": series_b},
        differences=differences,
        failures=failures,
    )
