"""Prometheus metrics of the standalone scheduler, with upstream names and labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from extender.metrics import PluginMetrics

from .scheduler import Metrics

# Upstream buckets: exponential from 1 ms, factor 2, 15 buckets.
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))


class PrometheusMetrics(PluginMetrics, Metrics):
    """The scheduling loop's metrics and the plugins' (``handle.metrics``), one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry)
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=self.registry,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now",
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=tuple(2**i for i in range(7)),
            registry=self.registry,
        )

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self.schedule_attempts.labels(result=result, profile=profile).inc()
        self.attempt_duration.labels(result=result, profile=profile).observe(seconds)

    def preemption(self, victims: int) -> None:
        """One preemption attempt that chose a node and ``victims`` pods to evict."""
        self.preemption_attempts.inc()
        self.preemption_victims.observe(victims)

    def pending(self, counts: dict[str, int]) -> None:
        for queue, count in counts.items():
            self.pending_pods.labels(queue=queue).set(count)
