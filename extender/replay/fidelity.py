"""How far two replay logs of one trace agree: the fidelity check of issue 32 (point 4).

One log comes from the virtual-time engine (:mod:`extender.replay.engine`), the other from a
live replay through the real kube-scheduler (:mod:`extender.replay.live`), both under the same
KubeSchedulerConfiguration. They cannot agree exactly: ties between equally scored nodes are
broken at random on both sides, scheduling takes no time in virtual time but some milliseconds
(times the time scale) live, and queue timers (backoff, the unschedulable pods' flush) run in
wall time live. So they are compared on what a policy decides, within stated tolerances
(:class:`Tolerance`; the figures and the reasons are in ``docs/replay.md``, "Fidelity"):

* pods scheduled and never scheduled (abandoned, or still pending at the end);
* queueing time (first binding - arrival): mean, p50 and p90;
* placements up to ties: how many bindings each node *shape* (allocatable CPU, memory, GPU
  count and model) received, since which of two identical nodes takes a pod is a coin toss;
* over time, on a fixed grid: nodes in use, CPU, memory and GPU allocation (fractions of the
  cluster), pending pods and GPU fragmentation (FGD, in GPUs): the mean absolute difference
  over the grid.

Every figure but the bindings per shape is the metrics module's
(:func:`extender.replay.metrics.compute`), computed the same way from both logs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .metrics import compute

DEFAULT_POINTS = 200
# Series compared: (the metrics' series name, this module's name for it).
SERIES = (
    ("nodes_in_use", "nodes"),
    ("cpu", "cpu"),
    ("memory", "memory"),
    ("gpu", "gpu"),
    ("pending", "pending"),
    ("frag_gpus", "fragmentation"),
)


@dataclass(frozen=True)
class Tolerance:
    """The largest differences still called agreement.

    Counts allow ``max(absolute, relative * count)``, queueing times (mean, p50, p90)
    ``max(queueing seconds, queueing_relative * the larger value)``. The series' bounds are
    mean absolute differences over the grid: nodes in use in nodes, allocation in fractions
    of the cluster, pending in pods, fragmentation in GPUs."""

    pods: int = 2
    pods_relative: float = 0.05
    shape: int = 3
    shape_relative: float = 0.10
    queueing: float = 60.0
    queueing_relative: float = 0.30
    nodes: float = 0.5
    cpu: float = 0.05
    memory: float = 0.05
    gpu: float = 0.05
    pending: float = 1.0
    fragmentation: float = 1.0


def shape_of(node: dict) -> str:
    """A node's shape: allocatable CPU and memory, GPU count and models."""
    models = sorted({gpu.get("model") or "" for gpu in node.get("gpus") or ()})
    gpus = f"{len(node['gpus'])}x{'+'.join(models)}" if node.get("gpus") else "0"
    return f"cpu {node['cpu'] / 1000:g}, mem {node['memory'] / 2**30:g}Gi, gpu {gpus}"


def bindings_per_shape(log: dict) -> dict[str, int]:
    """How many bindings each node shape received (a pod bound twice counts twice)."""
    shapes = {node["name"]: shape_of(node) for node in log["nodes"]}
    counts = Counter(shapes.get(e[3], "?") for e in log["events"] if e[1] == "bind")
    return dict(sorted(counts.items()))


def figures(log: dict, points: int = DEFAULT_POINTS) -> dict:
    """The figures of one log that :func:`compare` compares."""
    metrics = compute(log, points=points, heat_columns=1)
    queueing = metrics["queueing"]
    return {
        "pods": metrics["pods"]["total"],
        "scheduled": metrics["pods"]["scheduled"],
        "never_scheduled": metrics["pods"]["never_scheduled"],
        "queueing_mean": queueing["mean"] or 0.0,
        "queueing_p50": queueing["p50"] or 0.0,
        "queueing_p90": queueing["p90"] or 0.0,
        "per_shape": bindings_per_shape(log),
        "series": {name: metrics["series"][key] for key, name in SERIES},
    }


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
    points: int = DEFAULT_POINTS,
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
        if float(log["end"]) != float(b["end"]):
            raise ValueError("end: the logs do not end at the same time")
    outs = [figures(log, points) for log in references]
    out_b = figures(b, points)
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
        allowed = max(tolerance.queueing, tolerance.queueing_relative * max(*values, out_b[name]))
        check(f"{name} (s)", values, out_b[name], allowed)
    shapes = sorted({s for out in [*outs, out_b] for s in out["per_shape"]})
    for shape in shapes:
        values = [out["per_shape"].get(shape, 0) for out in outs]
        value = out_b["per_shape"].get(shape, 0)
        allowed = max(tolerance.shape, tolerance.shape_relative * max(*values, value))
        check(f"bindings on {shape}", values, value, allowed)
    for _, name in SERIES:
        points_a = list(zip(*(out["series"][name] for out in outs), strict=True))
        gap = _mean(
            [
                _distance(value, min(point), max(point))
                for point, value in zip(points_a, out_b["series"][name], strict=True)
            ]
        )
        means = [_mean(out["series"][name]) for out in outs]
        differences[f"{name} over time (mean |diff|)"] = (
            min(means),
            max(means),
            _mean(out_b["series"][name]),
            gap,
        )
        allowed = getattr(tolerance, name)
        if gap > allowed:
            failures.append(f"{name} over time: mean |diff| {gap:.3f} (allowed {allowed:g})")
    return Agreement(a=outs, b=out_b, differences=differences, failures=failures)
