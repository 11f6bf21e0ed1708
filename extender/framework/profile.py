"""A scheduling profile: which plugins run at each extension point, with weights and args.

The config loader (``extender.config``) builds these from a ``KubeSchedulerConfiguration``;
the runtime (:class:`~extender.framework.runtime.Framework`) instantiates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Upstream's name for the profile a config that names none gets, and the ``schedulerName`` the
# apiserver gives a pod that names none: the one definition (``extender.config`` exports it).
DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(slots=True)
class PluginSpec:
    name: str
    weight: int = 0


@dataclass(slots=True)
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # extension point (config name, e.g. "filter") -> enabled plugins in run order
    plugins: dict[str, list[PluginSpec]] = field(default_factory=dict)
    # plugin name -> args (the pluginConfig entry, defaults applied)
    plugin_config: dict[str, dict] = field(default_factory=dict)
    # None: use the global value; 0: adaptive (upstream ``pkg/scheduler/schedule_one.go,
    # numFeasibleNodesToFind``)
    percentage_of_nodes_to_score: int | None = None
    # plugin name -> extension point -> seconds: a call that takes longer is an Error status
    plugin_timeouts: dict[str, dict[str, float]] = field(default_factory=dict)
    # The most time one scheduling attempt of one pod may take, seconds (None: no bound;
    # extender.framework.budget). The config loader sets it from ``podBudget``.
    pod_budget: float | None = None

    def plugin_names(self) -> set[str]:
        """Every plugin the profile enables, at any point."""
        return {spec.name for specs in self.plugins.values() for spec in specs}

    def enabled(self, point: str) -> list[str]:
        return [spec.name for spec in self.plugins.get(point, ())]
