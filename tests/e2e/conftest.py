"""Session fixtures: one real control plane (etcd + kube-apiserver) per test run.

The binaries come from ``make controlplane`` and ``make test-binaries`` (``hack/build-*.sh``);
a missing binary fails the run with that instruction rather than skipping.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from extender.controlplane import ControlPlane, apiserver_args_for_gates, running
from extender.kube import api_client
from extender.scenario.kube import Kube

from .harness import GANG_GATES, Process

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
    yield from namespaced_kube(api, "e2e")


def namespaced_kube(api, prefix: str, **kwargs) -> Iterator[Kube]:
    """A client in a fresh namespace; what it created is removed afterwards."""
    namespace = f"{prefix}-{next(_ns)}"
    client = Kube(api, namespace=namespace, out=lambda *a: None, **kwargs)
    client.request(
        "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}, "apiVersion": "v1"}
    )
    try:
        yield client
    finally:
        client.cleanup()
        client.request("DELETE", f"/api/v1/namespaces/{namespace}")


@pytest.fixture(scope="session")
def gang_control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A second control plane whose kube-apiserver runs with the gang scheduling gates and
    serves ``scheduling.k8s.io/v1alpha2`` (PodGroups); started only for the tests that ask."""
    directory = tmp_path_factory.mktemp("gang-controlplane")
    with running(directory, apiserver_args_for_gates(GANG_GATES)) as cp:
        yield cp


@pytest.fixture
def gang_kube(gang_control_plane: ControlPlane) -> Iterator[Kube]:
    """As ``kube``, on the gang control plane."""
    yield from namespaced_kube(api_client(str(gang_control_plane.kubeconfig)), "gangs")


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
