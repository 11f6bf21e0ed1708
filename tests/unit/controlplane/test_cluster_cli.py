"""``kube-extender cluster up --controller-manager``: the flag starts kube-controller-manager
after the control plane (and ``down`` on a failure), and a missing binary is one line naming
``make test-binaries`` before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli.cluster import main
from extender.controlplane import ControlPlane, ControlPlaneError


def fake_binary(directory: Path, name: str, marker: Path) -> None:
    """An executable that would leave ``marker`` behind if anything ran it."""
    path = directory / name
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)


def test_missing_controller_manager_is_one_line_and_nothing_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "ran"
    for name in ("etcd", "kube-apiserver"):
        fake_binary(bin_dir, name, ran)
    monkeypatch.setenv("KUBE_EXTENDER_BIN", str(bin_dir))

    code = main(["--dir", str(tmp_path / "cluster"), "up", "--controller-manager"])

    assert code == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("kube-extender cluster up: kube-controller-manager not found at ")
    assert line.endswith("build it with `make test-binaries`")
    assert not ran.exists(), "etcd or kube-apiserver started before the binary check"


def stub_control_plane(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    """Record the lifecycle calls instead of starting processes."""

    def up(self: ControlPlane, apiserver_extra_args: list[str] | None = None) -> None:
        calls.append(" ".join(["up", *(apiserver_extra_args or ())]))
        self.apiserver_extra_args = list(apiserver_extra_args or ())
        self.state.pids = {"etcd": 1, "kube-apiserver": 2}

    def start_controller_manager(self: ControlPlane) -> None:
        calls.append("start_controller_manager")
        self.state.pids["kube-controller-manager"] = 3

    monkeypatch.setattr(ControlPlane, "up", up)
    monkeypatch.setattr(ControlPlane, "start_controller_manager", start_controller_manager)
    monkeypatch.setattr(ControlPlane, "down", lambda self: calls.append("down"))


@pytest.fixture
def controller_manager_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_binary(bin_dir, "kube-controller-manager", tmp_path / "ran")
    monkeypatch.setenv("KUBE_EXTENDER_BIN", str(bin_dir))


@pytest.mark.usefixtures("controller_manager_binary")
def test_the_flag_starts_the_controller_manager_after_the_control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    stub_control_plane(monkeypatch, calls)

    assert main(["--dir", str(tmp_path / "cluster"), "up", "--controller-manager"]) == 0

    assert calls == ["up", "start_controller_manager"]
    out = capsys.readouterr().out
    assert "running:        etcd, kube-apiserver, kube-controller-manager" in out


@pytest.mark.usefixtures("controller_manager_binary")
def test_without_the_flag_no_controller_manager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    stub_control_plane(monkeypatch, calls)
    assert main(["--dir", str(tmp_path / "cluster"), "up"]) == 0
    assert calls == ["up"]


@pytest.mark.usefixtures("controller_manager_binary")
def test_a_controller_manager_that_fails_to_start_takes_the_cluster_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    stub_control_plane(monkeypatch, calls)

    def fails(self: ControlPlane) -> None:
        calls.append("start_controller_manager")
        raise ControlPlaneError("kube-controller-manager exited during start-up")

    monkeypatch.setattr(ControlPlane, "start_controller_manager", fails)

    assert main(["--dir", str(tmp_path / "cluster"), "up", "--controller-manager"]) == 1
    assert calls == ["up", "start_controller_manager", "down"]
    assert "kube-controller-manager exited during start-up" in capsys.readouterr().err


@pytest.mark.usefixtures("controller_manager_binary")
def test_feature_gates_reach_kube_apiserver_with_the_api_they_need(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    stub_control_plane(monkeypatch, calls)
    gates = "GenericWorkload=true,GangScheduling=true"
    assert main(["--dir", str(tmp_path / "cluster"), "up", "--feature-gates", gates]) == 0
    flags = f"--feature-gates={gates} --runtime-config=scheduling.k8s.io/v1alpha2=true"
    assert calls == [f"up {flags}"]
    assert f"apiserver args: {flags}" in capsys.readouterr().out
