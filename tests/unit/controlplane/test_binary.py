"""A missing binary names the make target that builds it (``make start`` builds only the
demo's binaries; the tests' extra ones come with ``make test-binaries``)."""

from __future__ import annotations

import pytest

from extender.controlplane import ControlPlaneError, binary


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("kube-apiserver", "make controlplane"),
        ("kube-scheduler", "make controlplane"),
        ("kube-controller-manager", "make test-binaries"),
        ("hostpath-provisioner", "make test-binaries"),
        ("helm", "make test-binaries"),
    ],
)
def test_missing_binary_names_its_target(
    name: str, target: str, tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBE_EXTENDER_BIN", str(tmp_path))
    with pytest.raises(ControlPlaneError, match=f"{name} not found .*`{target}`"):
        binary(name)
