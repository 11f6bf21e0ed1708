"""Feature gates and runtime-config reach kube-apiserver and kube-scheduler (the workload
conformance needs upstream's alpha gates), and nothing changes for callers that pass none."""

from __future__ import annotations

from pathlib import Path

import pytest

import extender.controlplane as controlplane
from extender.controlplane import (
    WORKLOAD_FEATURE_GATES,
    WORKLOAD_RUNTIME_CONFIG,
    ControlPlane,
    apiserver_args,
    apiserver_args_for_gates,
    feature_gates_value,
)


class Recorded(ControlPlane):
    """Records the command lines instead of starting anything."""

    def _spawn(self, name: str, argv: list[str]):  # type: ignore[override]
        self.commands[name] = argv
        return None

    def _wait(self, ready, name: str, timeout: float) -> None:
        pass

    def stop_component(self, name: str) -> None:
        pass


@pytest.fixture
def cp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    monkeypatch.setattr(controlplane, "binary", lambda name: Path("/bin") / name)
    plane = Recorded(tmp_path)
    plane.certs = controlplane.generate_certs(tmp_path / "pki")
    return plane


def test_feature_gates_value_is_the_components_syntax() -> None:
    assert feature_gates_value({"A": True, "B": False}) == "A=true,B=false"
    assert feature_gates_value(WORKLOAD_FEATURE_GATES) == (
        "GenericWorkload=true,GangScheduling=true,"
        "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
    )


def test_apiserver_args() -> None:
    assert apiserver_args() == []
    assert apiserver_args(WORKLOAD_FEATURE_GATES, WORKLOAD_RUNTIME_CONFIG) == [
        f"--feature-gates={feature_gates_value(WORKLOAD_FEATURE_GATES)}",
        "--runtime-config=scheduling.k8s.io/v1alpha2=true",
    ]


def test_apiserver_keeps_its_flags_across_a_restart(cp: Recorded) -> None:
    cp.start_apiserver()
    plain = cp.commands["kube-apiserver"]
    assert not [a for a in plain if a.startswith(("--feature-gates", "--runtime-config"))]
    extra = apiserver_args(WORKLOAD_FEATURE_GATES, WORKLOAD_RUNTIME_CONFIG)
    cp.start_apiserver(extra)
    assert cp.commands["kube-apiserver"] == plain + extra
    cp.restart_apiserver()
    assert cp.commands["kube-apiserver"] == plain + extra


def test_scheduler_gets_feature_gates_only_when_asked(cp: Recorded) -> None:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cp.start_scheduler(config, wait=False)
    assert not [a for a in cp.commands["kube-scheduler"] if a.startswith("--feature-gates")]
    cp.start_scheduler(
        config, name="gated", wait=False, feature_gates=WORKLOAD_FEATURE_GATES, extra_args=["--v=4"]
    )
    argv = cp.commands["gated"]
    assert f"--feature-gates={feature_gates_value(WORKLOAD_FEATURE_GATES)}" in argv
    # A caller's verbosity comes after the default one: the last flag wins.
    assert argv.index("--v=4") > argv.index("--v=2")


def test_apiserver_args_for_gates_serve_what_the_gates_need() -> None:
    assert apiserver_args_for_gates(None) == []
    assert apiserver_args_for_gates({"GenericWorkload": True, "GangScheduling": True}) == [
        "--feature-gates=GenericWorkload=true,GangScheduling=true",
        "--runtime-config=scheduling.k8s.io/v1alpha2=true",
    ]
    # A gate turned off serves nothing; a gate with no API of its own adds no runtime-config.
    assert apiserver_args_for_gates({"GenericWorkload": False}) == [
        "--feature-gates=GenericWorkload=false"
    ]
    assert apiserver_args_for_gates({"SomethingElse": True}) == [
        "--feature-gates=SomethingElse=true"
    ]
