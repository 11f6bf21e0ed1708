"""The test cluster's private keys are never readable by others, not even for a moment."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from extender.controlplane import certs

KEYS = ("ca.key", "apiserver.key", "admin.key", "sa.key")


@pytest.fixture
def no_chmod(monkeypatch: pytest.MonkeyPatch):
    """Freeze each file at the mode it was created with: a chmod after the write is the
    window this guards against, so it must not be what makes the key private."""
    monkeypatch.setattr(Path, "chmod", lambda self, mode: None)
    monkeypatch.setattr(os, "chmod", lambda *a, **k: None)
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_are_created_0600(tmp_path: Path, no_chmod: None) -> None:
    files = certs.generate(tmp_path / "pki")
    for name in KEYS:
        assert _mode(tmp_path / "pki" / name) == 0o600, name
    assert _mode(files.ca_cert) == 0o644  # certificates are public


def test_issued_key_is_created_0600(tmp_path: Path, no_chmod: None) -> None:
    files = certs.generate(tmp_path)
    _, key = certs.issue_serving_cert(files, tmp_path, "extender", ["127.0.0.1"])
    assert _mode(key) == 0o600


def test_a_world_readable_leftover_is_replaced_not_reused(tmp_path: Path, no_chmod: None) -> None:
    stale = tmp_path / "ca.key"
    stale.write_bytes(b"old")
    os.umask(0)
    fd = os.open(tmp_path / "wide", os.O_WRONLY | os.O_CREAT, 0o666)
    os.close(fd)
    os.replace(tmp_path / "wide", stale)
    os.umask(0o022)
    assert _mode(stale) == 0o666
    certs.generate(tmp_path)
    assert _mode(stale) == 0o600
    assert stale.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
