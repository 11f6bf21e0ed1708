"""Path-differential conformance (:mod:`tests.conformance.paths`): every pending pod of the
CI seeds' plain, volume and DRA cases and of the hand-made scoring cases, through the
standalone algorithm in process and through the served extender's verbs (both node modes),
``explain``, ``simulate`` and a real kube-scheduler using our extender to prioritize. Longer
runs: ``python -m tests.conformance --paths --seeds N`` (``make conformance``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from .generator import generate
from .harness import Conformance
from .paths import KUBE_SCHEDULER_PATH, MODES, PathDifferential, PathTally, case_families, run_paths
from .test_conformance import REPORTS

PATH_SEEDS = (1, 2)
PODS_PER_CASE = 10
BINDS_PER_CASE = 2


def regression_cases() -> list:
    """Cases that once disagreed. DRA seed 1000: its first pod asks for an extended resource
    a DeviceClass provides; bound through kube-scheduler and our bind verb, the verb filtered
    the extended-resource claim PreBind had made again, and refused every such pod."""
    from .dra import generate_dra_case

    return [generate_dra_case(1000, pods=PODS_PER_CASE, max_nodes=6)]


@pytest.fixture(scope="module")
def paths(
    conformance: Conformance, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PathDifferential]:
    runner = PathDifferential(conformance, tmp_path_factory.mktemp("paths")).start()
    try:
        yield runner
    finally:
        runner.stop()


@pytest.fixture(scope="module")
def path_tally(paths: PathDifferential) -> PathTally:
    tally = run_paths(
        paths,
        [*case_families(PATH_SEEDS, PODS_PER_CASE), *regression_cases()],
        binds=BINDS_PER_CASE,
        out=lambda line: None,
    )
    REPORTS.append(tally.report())
    return tally


def test_every_path_answers_what_the_standalone_path_answers(path_tally: PathTally) -> None:
    assert not path_tally.mismatches, path_tally.report()
    for mode in MODES:
        for verb in ("filter", "prioritize", "preempt"):
            assert path_tally.compared[f"extender/{verb}/{mode}"], path_tally.report()
    for path in (
        "extender/explain/NodeNames",
        "extender/bind",
        "explain",
        "simulate",
        KUBE_SCHEDULER_PATH,
        f"{KUBE_SCHEDULER_PATH}/devices",
    ):
        assert path_tally.compared[path], path_tally.report()


def test_the_comparison_can_fail(paths: PathDifferential, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the in-process TaintToleration filter accepting every node, the served extender
    (unchanged) must disagree on filter in both modes, pinned on the nodes it rejects."""
    from extender.plugins import plugin_class

    broken = plugin_class("TaintToleration")
    monkeypatch.setattr(broken, "filter", lambda *args: None)
    monkeypatch.setattr(broken, "filter_batch", lambda self, s, p, table: np.ones(len(table), bool))
    tally = paths.run_case(generate(4, pods=10))
    for mode in MODES:
        found = [m for m in tally.mismatches if m.path == f"extender/filter/{mode}"]
        assert found, tally.report()
        assert all("TaintToleration" in str(m.theirs) or "taint" in str(m.theirs) for m in found)
