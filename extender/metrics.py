"""The plugin metrics both shells export (the ``Metrics`` of a plugin's handle, Prometheus)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class PluginMetrics:
    """``handle.metrics``: per-plugin, per-point errors; preemption is counted by the
    standalone scheduler only (the extender's preempt verb evicts nothing)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.plugin_errors = Counter(
            "kube_extender_plugin_errors_total",
            "Plugin calls that raised, timed out or returned an Error status, by plugin and "
            "extension point.",
            ["plugin", "extension_point"],
            registry=self.registry,
        )
        self.budget_exceeded_total = Counter(
            "kube_extender_pod_budget_exceeded_total",
            "Scheduling attempts (or extender verb calls) that ran past the pod budget "
            "(podBudget), by profile.",
            ["profile"],
            registry=self.registry,
        )

    def budget_exceeded(self, profile: str) -> None:
        self.budget_exceeded_total.labels(profile=profile).inc()

    def plugin_error(self, plugin: str, point: str) -> None:
        self.plugin_errors.labels(plugin=plugin, extension_point=point).inc()

    def preemption(self, victims: int) -> None:
        pass
