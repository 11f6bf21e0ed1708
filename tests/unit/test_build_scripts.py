"""hack/build-controlplane.sh and hack/gobuild.py against a fake ``go`` on PATH (the real
build takes minutes): the binaries asked for that are not up to date are built by ONE
``go build``, the stamps of the ones that are make the script only check, and the build shows
its progress (modules downloaded, packages compiled of the total) and passes go's own lines and
exit status through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack"

# `go list` prints two download lines and the stale packages; `go build -v` prints them as
# it compiles them and creates each main package's binary in the -o directory. FAKE_GO_FAIL
# makes the build print a compile error and exit 1.
FAKE_GO = r"""#!/usr/bin/env bash
echo "$*" >> "$FAKE_GO_LOG"
case "$1" in
  list)
    echo "go: downloading example.com/a v1.0.0" >&2
    echo "go: downloading example.com/b v1.2.0" >&2
    printf 'runtime\nexample.com/a\nexample.com/b\n'
    for a in "$@"; do [[ "$a" == ./* ]] && echo "m/${a#./}"; done
    ;;
  build)
    out=""; prev=""
    for a in "$@"; do [[ "$prev" == "-o" ]] && out="$a"; prev="$a"; done
    printf 'runtime\nexample.com/a\n' >&2
    if [[ -n "${FAKE_GO_FAIL:-}" ]]; then
      printf '# example.com/b\nb.go:3:1: syntax error\n' >&2
      exit 1
    fi
    echo example.com/b >&2
    for a in "$@"; do
      [[ "$a" == ./* ]] || continue
      echo "m/${a#./}" >&2
      : > "$out/${a#./}"
      chmod +x "$out/${a#./}"
    done
    [[ "$out" != */ ]] && { : > "$out"; chmod +x "$out"; }
    ;;
esac
exit 0
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    fake = tmp_path / "fakebin"
    fake.mkdir(exist_ok=True)
    go = fake / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    etcd = fake / "etcd"
    etcd.write_text("#!/bin/sh\necho 'etcd Version: 3.4.23'\n")
    etcd.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "KUBE_EXTENDER_CACHE": str(tmp_path / "cache"),
        "FAKE_GO_LOG": str(tmp_path / "go.log"),
        **extra,
    }


def _build(tmp_path: Path, *names: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(HACK / "build-controlplane.sh"), *names],
        env=_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _go_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "go.log"
    return log.read_text().splitlines() if log.exists() else []


def test_the_demo_binaries_are_one_go_build_then_only_checked(tmp_path: Path) -> None:
    first = _build(tmp_path, "kube-apiserver", "kube-scheduler")
    assert first.returncode == 0, first.stderr
    calls = _go_calls(tmp_path)
    builds = [c for c in calls if c.startswith("build ")]
    assert len(builds) == 1, calls
    assert builds[0].endswith("./kube-apiserver ./kube-scheduler"), builds[0]
    assert "-trimpath" in builds[0] and " -v " in builds[0]
    bin_dir = tmp_path / "cache" / "bin"
    for name in ("kube-apiserver", "kube-scheduler"):
        assert os.access(bin_dir / name, os.X_OK)
        assert (bin_dir / f"{name}.stamp").read_text().strip()
    assert not (bin_dir / "kube-controller-manager").exists()
    assert "[controlplane] go build: 5 packages compiled" in first.stderr
    assert "2 modules downloaded" in first.stderr

    again = _build(tmp_path, "kube-apiserver", "kube-scheduler")
    assert again.returncode == 0, again.stderr
    assert _go_calls(tmp_path) == calls, "an up-to-date binary must not run go"
    assert "kube-apiserver: up to date" in again.stderr

    # make test's set: only the missing one is built.
    more = _build(tmp_path, "kube-apiserver", "kube-scheduler", "kube-controller-manager")
    assert more.returncode == 0, more.stderr
    builds = [c for c in _go_calls(tmp_path) if c.startswith("build ")]
    assert len(builds) == 2 and builds[1].endswith(" ./kube-controller-manager"), builds


def test_the_stamp_is_the_one_of_the_existing_cache(tmp_path: Path) -> None:
    """The stamp is computed as before (go.mod, go.sum, every main.go): binaries built by the
    previous script stay valid."""
    assert _build(tmp_path, "kube-scheduler").returncode == 0
    expected = subprocess.run(
        "sha256sum controlplane/go.mod controlplane/go.sum controlplane/*/main.go"
        " | sha256sum | cut -c1-16",
        shell=True,
        cwd=HACK,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (tmp_path / "cache/bin/kube-scheduler.stamp").read_text().strip() == expected


def test_a_failed_build_passes_go_lines_and_status_through(tmp_path: Path) -> None:
    failed = _build(tmp_path, "kube-scheduler", FAKE_GO_FAIL="1")
    assert failed.returncode != 0
    assert "b.go:3:1: syntax error" in failed.stderr
    assert "# example.com/b" in failed.stderr
    assert not (tmp_path / "cache/bin/kube-scheduler").exists()
    assert not (tmp_path / "cache/bin/kube-scheduler.stamp").exists()


def test_an_unknown_binary_is_refused(tmp_path: Path) -> None:
    result = _build(tmp_path, "kube-proxy")
    assert result.returncode == 2 and "kube-proxy: unknown" in result.stderr


def test_gobuild_prints_plain_periodic_lines_when_not_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    result = subprocess.run(
        [sys.executable, str(HACK / "gobuild.py"), "--label", "x", "--every", "0"]
        + ["-trimpath", "-o", str(tmp_path / "out") + "/", "./tool"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "\r" not in result.stderr and "\033[" not in result.stderr  # no terminal codes
    assert any(line.startswith("[x] resolving packages (") for line in lines)
    assert any("compiling" in line and "/4 packages" in line for line in lines), lines
    assert any(line.startswith("[x] linking (") for line in lines), lines
    assert lines[-1].startswith("[x] go build: 4 packages compiled")


# hack/install-chromium.sh against fake ``apt-get`` and ``id`` on PATH: the browser is
# installed only when missing, through apt-get (with an update when the first install fails),
# never through Playwright's download.
FAKE_APT = r"""#!/usr/bin/env bash
echo "$*" >> "$FAKE_APT_LOG"
if [[ "$*" == *install* ]]; then
  if [[ -n "${FAKE_APT_STALE:-}" && ! -e "$FAKE_APT_LOG.updated" ]]; then exit 100; fi
  printf '#!/bin/sh\necho "Chromium 140.0 built on Debian"\n' > "$KUBE_EXTENDER_CHROMIUM"
  chmod +x "$KUBE_EXTENDER_CHROMIUM"
fi
[[ "$1" == update ]] && : > "$FAKE_APT_LOG.updated"
exit 0
"""


def _install_chromium(tmp_path: Path, uid: int = 0, **extra: str):
    fake = tmp_path / "fakeapt"
    fake.mkdir(exist_ok=True)
    for name, text in (("apt-get", FAKE_APT), ("id", f"#!/bin/sh\necho {uid}\n")):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "KUBE_EXTENDER_CHROMIUM": str(tmp_path / "chromium"),
        "FAKE_APT_LOG": str(tmp_path / "apt.log"),
        **extra,
    }
    done = subprocess.run(
        ["bash", str(HACK / "install-chromium.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    log = tmp_path / "apt.log"
    return done, log.read_text().splitlines() if log.exists() else []


def test_chromium_is_installed_from_debian_only_when_missing(tmp_path: Path) -> None:
    done, calls = _install_chromium(tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == ["install -y -q chromium"]
    assert "Chromium 140.0" in done.stderr
    again, calls = _install_chromium(tmp_path)
    assert again.returncode == 0 and calls == ["install -y -q chromium"]
    assert "up to date" in again.stderr


def test_a_stale_package_index_is_updated_once(tmp_path: Path) -> None:
    done, calls = _install_chromium(tmp_path, FAKE_APT_STALE="1")
    assert done.returncode == 0, done.stderr
    assert calls == ["install -y -q chromium", "update -q", "install -y -q chromium"]


def test_without_root_it_says_what_to_install(tmp_path: Path) -> None:
    done, calls = _install_chromium(tmp_path, uid=1000)
    assert done.returncode == 0 and calls == []
    assert "apt-get install chromium" in done.stderr
