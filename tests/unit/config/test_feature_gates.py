"""Feature gates (kube-scheduler's ``--feature-gates``, upstream ``pkg/features/kube_features.go``)
and what they add to the default profile (``applyFeatureGates``)."""

from __future__ import annotations

import pytest

from extender.config import default_config
from extender.framework.features import FeatureGateError, Features


def test_workload_gates_are_off_by_default() -> None:
    # v1.36's defaults: the workload gates alpha and off, SchedulerPopFromBackoffQ and
    # SchedulerAsyncPreemption beta and on.
    assert Features.parse("").enabled == frozenset(
        {"SchedulerPopFromBackoffQ", "SchedulerAsyncPreemption"}
    )
    assert Features() == Features.parse("")
    assert str(Features()) == "(defaults)"
    assert "GangScheduling" not in default_config().profiles[0].plugin_names()


def test_pop_from_backoff_gate_is_on_by_default_and_can_be_turned_off() -> None:
    assert Features().scheduler_pop_from_backoff_q
    off = Features.parse("SchedulerPopFromBackoffQ=false")
    assert not off.scheduler_pop_from_backoff_q
    assert str(off) == "SchedulerPopFromBackoffQ=false"


def test_async_preemption_gate_is_on_by_default_and_can_be_turned_off() -> None:
    assert Features().scheduler_async_preemption
    off = Features.parse("SchedulerAsyncPreemption=false")
    assert not off.scheduler_async_preemption
    assert str(off) == "SchedulerAsyncPreemption=false"


def test_gang_scheduling_joins_the_default_profile_when_its_gate_is_on() -> None:
    features = Features.parse("GenericWorkload=true, GangScheduling=true")
    profile = default_config(features=features).profiles[0]
    assert profile.enabled("preEnqueue")[-1] == "GangScheduling"
    assert profile.enabled("permit") == ["GangScheduling"]
    assert features.generic_workload and features.gang_scheduling


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("GangScheduling=true", "GangScheduling is enabled, but it depends on GenericWorkload"),
        ("Bogus=true", "unrecognized feature gate: Bogus"),
        ("GenericWorkload", "missing bool value for GenericWorkload"),
        ("GenericWorkload=yes", "invalid value of GenericWorkload=yes"),
        (
            "GenericWorkload=true,WorkloadAwarePreemption=true",
            "WorkloadAwarePreemption is enabled, but it depends on GangScheduling",
        ),
    ],
)
def test_bad_gates_are_named(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message):
        Features.parse(text)


def test_topology_aware_scheduling_adds_its_two_plugins() -> None:
    features = Features.parse("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
    profile = default_config(features=features).profiles[0]
    assert profile.enabled("placementGenerate") == ["TopologyPlacementGenerator"]
    assert [(s.name, s.weight) for s in profile.plugins["placementScore"]] == [
        ("PodGroupPodsCount", 1)
    ]
