"""Differential conformance: feasible node sets (and clear-cut choices) of our core against the
real kube-scheduler, on seeded generated clusters. See :mod:`tests.conformance.harness`.

CI runs a fixed set of seeds (250 pending pods, each also through the nine single-plugin
profiles) and a fixed set of volume seeds (:mod:`tests.conformance.volumes`: 100 pods with
PVCs, PVs, StorageClasses and CSINodes, each also through the twelve single-plugin profiles)
and a fixed set of DRA seeds (:mod:`tests.conformance.dra`: 100 pods with ResourceClaims, also
through the DRA cases' single-plugin profiles, FailedScheduling messages compared, and pods bound
to compare the devices allocated); longer runs: ``python -m tests.conformance --seeds N
[--volumes | --dra]`` (``make conformance``).
"""

from __future__ import annotations

import numpy as np
import pytest

from .generator import clear_choice_cases, generate
from .harness import (
    DRA_CASE_PLUGINS,
    VOLUME_PLUGINS,
    Conformance,
    Tally,
    missing_plugins,
    run_seeds,
)

CI_SEEDS = range(1, 11)
PODS_PER_SEED = 25
SCORE_CHECKS_PER_SEED = 2
VOLUME_SEEDS = range(1, 5)
# 1013: a multi-allocation device's share allocated, then more pods (regression: the allocated
# state's consumed capacity)
DRA_SEEDS = (1, 2, 3, 4, 1013)
DEVICE_CHECKS_PER_SEED = 2
BROKEN_PLUGIN_SEED = 4  # 9 of its first 10 pods meet a taint they do not tolerate

# Reports printed at the end of the session (conftest's pytest_terminal_summary).
REPORTS: list[str] = []


@pytest.fixture(scope="module")
def plugins_ready() -> None:
    missing = missing_plugins()
    if missing:
        details = "\n".join(f"  {name}: {why}" for name, why in missing.items())
        pytest.fail(f"filter plugins not usable yet:\n{details}", pytrace=False)


@pytest.fixture(scope="module")
def ci_tally(conformance: Conformance, plugins_ready: None) -> Tally:
    tally = run_seeds(
        conformance,
        CI_SEEDS,
        pods_per_seed=PODS_PER_SEED,
        isolate=True,
        scores=SCORE_CHECKS_PER_SEED,
        out=lambda line: None,
    )
    REPORTS.append(tally.report())
    return tally


@pytest.fixture(scope="module")
def dra_ready() -> None:
    missing = missing_plugins(dra=True)
    if missing:
        details = "\n".join(f"  {name}: {why}" for name, why in missing.items())
        pytest.fail(f"DRA plugins not usable yet:\n{details}", pytrace=False)


@pytest.fixture(scope="module")
def dra_tally(conformance: Conformance, plugins_ready: None, dra_ready: None) -> Tally:
    tally = run_seeds(
        conformance,
        DRA_SEEDS,
        pods_per_seed=PODS_PER_SEED,
        isolate=True,
        out=lambda line: None,
        dra=True,
        devices=DEVICE_CHECKS_PER_SEED,
    )
    REPORTS.append("DRA cases:\n" + tally.report())
    return tally


@pytest.fixture(scope="module")
def volume_tally(conformance: Conformance, plugins_ready: None) -> Tally:
    tally = run_seeds(
        conformance,
        VOLUME_SEEDS,
        pods_per_seed=PODS_PER_SEED,
        isolate=True,
        out=lambda line: None,
        volumes=True,
    )
    REPORTS.append("volume cases:\n" + tally.report())
    return tally


def test_feasible_sets_agree_with_kube_scheduler(ci_tally: Tally) -> None:
    assert ci_tally.pods == len(CI_SEEDS) * PODS_PER_SEED
    assert ci_tally.pods_agreed == ci_tally.pods, ci_tally.report()
    assert not ci_tally.disagreements, ci_tally.report()


def test_each_plugin_alone_agrees_with_kube_scheduler(ci_tally: Tally) -> None:
    for plugin, total in ci_tally.isolated_total.items():
        assert ci_tally.isolated_agreed[plugin] == total, ci_tally.report()
    # The generator must exercise every plugin that can reject (NodeName cannot: pods with
    # spec.nodeName never reach a scheduler).
    exercised = {p for p, n in ci_tally.isolated_rejecting.items() if n}
    assert exercised >= {
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeDeclaredFeatures",
    }, ci_tally.report()


def test_clear_choices_in_generated_cases_agree(ci_tally: Tally) -> None:
    assert ci_tally.score_checks, "no generated pod had a clear best node"
    assert not ci_tally.score_disagreements, ci_tally.report()


@pytest.mark.parametrize(
    ("case", "best"),
    [pytest.param(case, best, id=case.case_id) for case, best in clear_choice_cases()],
)
def test_clear_choice_binding(conformance: Conformance, plugins_ready: None, case, best) -> None:
    result = conformance.run_score_case(case)
    REPORTS.append(
        f"  clear choice {case.case_id}: expected {best}, kube-scheduler bound {result.theirs}, "
        f"ours picked {result.ours}"
    )
    assert result.theirs == best, result.describe()
    assert result.ours == best, result.describe()


def test_harness_detects_a_broken_plugin(
    conformance: Conformance, plugins_ready: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison can fail: with our TaintToleration filter accepting every node, the
    harness must report disagreements and pin them on TaintToleration."""
    from extender.plugins import plugin_class

    broken = plugin_class("TaintToleration")
    monkeypatch.setattr(broken, "filter", lambda *args: None)
    # Its batch form too (the runtime answers from it first).
    monkeypatch.setattr(broken, "filter_batch", lambda self, s, p, table: np.ones(len(table), bool))
    tally = conformance.run_case(generate(BROKEN_PLUGIN_SEED, pods=10))
    assert tally.disagreements, tally.report()
    for result in tally.disagreements:
        theirs, ours = result.isolated["TaintToleration"]
        assert theirs.feasible is not None and ours.feasible is not None
        assert theirs.feasible < ours.feasible, tally.report()
        assert "TaintToleration" in result.repro["plugins"], result.repro


def test_volume_cases_agree_with_kube_scheduler(volume_tally: Tally) -> None:
    assert volume_tally.pods == len(VOLUME_SEEDS) * PODS_PER_SEED
    assert volume_tally.pods_agreed == volume_tally.pods, volume_tally.report()
    assert not volume_tally.disagreements, volume_tally.report()
    for plugin, total in volume_tally.isolated_total.items():
        assert volume_tally.isolated_agreed[plugin] == total, volume_tally.report()
    # Every volume plugin rejected some node on its own in kube-scheduler.
    exercised = {p for p, n in volume_tally.isolated_rejecting.items() if n}
    assert exercised >= set(VOLUME_PLUGINS), volume_tally.report()


def test_dra_cases_agree_with_kube_scheduler(dra_tally: Tally) -> None:
    """Pods with ResourceClaims (templates, shared and allocated claims) or extended resources
    a DeviceClass provides, against DeviceClasses and ResourceSlices: feasible sets,
    FailedScheduling messages and each filter alone."""
    assert dra_tally.pods == len(DRA_SEEDS) * PODS_PER_SEED
    assert dra_tally.pods_agreed == dra_tally.pods, dra_tally.report()
    assert dra_tally.messages == dra_tally.pods, dra_tally.report()
    assert dra_tally.messages_agreed == dra_tally.messages, dra_tally.report()
    for plugin in DRA_CASE_PLUGINS:
        total = dra_tally.isolated_total[plugin]
        assert total and dra_tally.isolated_agreed[plugin] == total, dra_tally.report()
    assert dra_tally.isolated_rejecting["DynamicResources"], dra_tally.report()
    assert dra_tally.shapes["some"] and dra_tally.shapes["no"], dra_tally.report()


def test_dra_devices_agree_with_kube_scheduler(dra_tally: Tally) -> None:
    """The devices kube-scheduler allocated to the claims of the pods it bound are the ones
    our allocator picks on that node."""
    assert dra_tally.device_checks, "no pod with claims was bound"
    assert not dra_tally.device_disagreements, dra_tally.report()


def test_harness_detects_a_broken_dra_filter(
    conformance: Conformance, plugins_ready: None, dra_ready: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DRA comparison can fail: with our DynamicResources Filter accepting every node, the
    harness must report disagreements and pin them on DynamicResources."""
    from extender.plugins import plugin_class

    from .dra import generate_dra_case

    monkeypatch.setattr(plugin_class("DynamicResources"), "filter", lambda *args: None)
    tally = conformance.run_case(generate_dra_case(DRA_SEEDS[0], pods=10))
    assert tally.disagreements, tally.report()
    for result in tally.disagreements:
        theirs, ours = result.isolated["DynamicResources"]
        assert theirs.feasible is not None and ours.feasible is not None
        assert theirs.feasible < ours.feasible, tally.report()
