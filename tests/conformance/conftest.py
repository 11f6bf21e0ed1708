"""Session fixtures: a control plane of our own (separate from tests/e2e), one kube-scheduler
with the recording extender, and the ``conformance`` marker on every test here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.controlplane import ControlPlane, running

from .harness import Conformance


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/conformance" in str(item.fspath):
            item.add_marker(pytest.mark.conformance)


def pytest_terminal_summary(terminalreporter) -> None:
    from .test_conformance import REPORTS

    if REPORTS:
        terminalreporter.section("conformance")
        for report in REPORTS:
            terminalreporter.write_line(report)


@pytest.fixture(scope="session")
def conformance_control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running(tmp_path_factory.mktemp("conformance-controlplane")) as cp:
        yield cp


@pytest.fixture(scope="session")
def conformance(
    conformance_control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Conformance]:
    runner = Conformance(
        conformance_control_plane, repro_dir=tmp_path_factory.mktemp("conformance-repro")
    )
    runner.start()
    try:
        yield runner
    finally:
        runner.stop()
