"""Feature gates: the scheduler features a process turns on or off, with kube-scheduler's
``--feature-gates`` syntax (``Name=true,Other=false``) and v1.36's defaults and dependencies
(kubernetes ``pkg/features/kube_features.go``).

Only the gates that change what kube-extender does are known here: the workload-aware
scheduling family (alpha, off by default in v1.36), ``SchedulerPopFromBackoffQ`` (beta, on
by default since v1.33: the queue pops from backoffQ when activeQ is empty) and
``SchedulerAsyncPreemption`` (beta, on by default since v1.33: the victims' API calls run off
the scheduling thread). Every other v1.36 gate that matters to the scheduler is fixed at its
v1.36 default (the DRA gates, NodeDeclaredFeatures, ...); naming one that is not listed is an
error, as kube-scheduler's is for an unknown gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
SCHEDULER_POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"
SCHEDULER_ASYNC_PREEMPTION = "SchedulerAsyncPreemption"

# Name -> v1.36 default.
DEFAULTS: dict[str, bool] = {
    GENERIC_WORKLOAD: False,
    GANG_SCHEDULING: False,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: False,
    WORKLOAD_AWARE_PREEMPTION: False,
    SCHEDULER_POP_FROM_BACKOFF_Q: True,
    SCHEDULER_ASYNC_PREEMPTION: True,
}

# Name -> the gates it needs on (upstream ``defaultKubernetesFeatureGateDependencies``).
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    GANG_SCHEDULING: (GENERIC_WORKLOAD,),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: (GENERIC_WORKLOAD,),
    WORKLOAD_AWARE_PREEMPTION: (GANG_SCHEDULING,),
}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value that does not parse or breaks a dependency."""


@dataclass(frozen=True)
class Features:
    """The gates of one process; ``Features()`` is v1.36's defaults."""

    enabled: frozenset[str] = field(
        default_factory=lambda: frozenset(name for name, on in DEFAULTS.items() if on)
    )

    def __contains__(self, name: str) -> bool:
        return name in self.enabled

    @property
    def generic_workload(self) -> bool:
        return GENERIC_WORKLOAD in self.enabled

    @property
    def gang_scheduling(self) -> bool:
        return GANG_SCHEDULING in self.enabled

    @property
    def topology_aware_workload_scheduling(self) -> bool:
        return TOPOLOGY_AWARE_WORKLOAD_SCHEDULING in self.enabled

    @property
    def workload_aware_preemption(self) -> bool:
        return WORKLOAD_AWARE_PREEMPTION in self.enabled

    @property
    def scheduler_pop_from_backoff_q(self) -> bool:
        return SCHEDULER_POP_FROM_BACKOFF_Q in self.enabled

    @property
    def scheduler_async_preemption(self) -> bool:
        return SCHEDULER_ASYNC_PREEMPTION in self.enabled

    def __str__(self) -> str:
        """The gates set away from their defaults, in ``--feature-gates`` syntax."""
        changed = [
            f"{name}={str(name in self.enabled).lower()}"
            for name, default in sorted(DEFAULTS.items())
            if (name in self.enabled) != default
        ]
        return ",".join(changed) or "(defaults)"

    @classmethod
    def parse(cls, text: str | None) -> Features:
        """``Name=true,Other=false`` as kube-scheduler's ``--feature-gates`` takes it."""
        values = dict(DEFAULTS)
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {name}")
            if name not in DEFAULTS:
                known = ", ".join(sorted(DEFAULTS))
                raise FeatureGateError(f"unrecognized feature gate: {name} (known: {known})")
            value = raw.strip().lower()
            if value not in ("true", "false"):
                raise FeatureGateError(f"invalid value of {name}={raw.strip()}, err: not a bool")
            values[name] = value == "true"
        enabled = frozenset(name for name, on in values.items() if on)
        for name in sorted(enabled):
            for needed in DEPENDENCIES.get(name, ()):
                if needed not in enabled:
                    raise FeatureGateError(
                        f"{name} is enabled, but it depends on {needed}, which is disabled"
                    )
        return cls(enabled)


DEFAULT_FEATURES = Features()
