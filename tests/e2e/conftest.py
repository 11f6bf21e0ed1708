"""Session fixtures: one real control plane (etcd + kube-apiserver) per test run.

The binaries come from ``make controlplane`` and ``make test-binaries`` (``hack/build-*.sh``);
a missing binary fails the run with that instruction rather than skipping.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from extender.controlplane import ControlPlane, running
from extender.kube import api_client
from extender.scenario.kube import Kube

from .harness import Process

_ns = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running(tmp_path_factory.mktemp("controlplane")) as cp:
        yield cp


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane):
    return api_client(str(control_plane.kubeconfig))


@pytest.fixture
def kube(api, request: pytest.FixtureRequest) -> Iterator[Kube]:
    """A client in a fresh namespace; the nodes and pods it created are removed afterwards."""
    namespace = f"e2e-{next(_ns)}"
    client = Kube(api, namespace=namespace, out=lambda *a: None)
    client.request(
        "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}, "apiVersion": "v1"}
    )
    try:
        yield client
    finally:
        client.cleanup()
        client.request("DELETE", f"/api/v1/namespaces/{namespace}")


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    """Processes a test starts; stopped (and their logs printed on failure) afterwards."""
    started: list[Process] = []
    yield started
    for proc in reversed(started):
        proc.stop()


@pytest.fixture
def kube_scheduler(control_plane: ControlPlane) -> Iterator:
    """Start the real kube-scheduler with a config dict; stopped after the test."""
    names: list[str] = []
    counter = itertools.count(1)

    def start(
        config: dict | Path,
        wait: bool = True,
        kubeconfig: Path | None = None,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> Path:
        name = f"kube-scheduler-{next(counter)}"
        names.append(name)
        return control_plane.start_scheduler(
            config, name=name, wait=wait, kubeconfig=kubeconfig, feature_gates=feature_gates
        )

    yield start
    for name in names:
        control_plane.stop_component(name)
