"""The README's first screen: its commands are Makefile targets that do what it says, without
running the Go build (``make -n`` prints the recipe): ``make start`` builds only etcd,
kube-apiserver and kube-scheduler (one build script call for both binaries) and then runs the
demo; ``make test`` builds everything its tests run itself (``.ci/run`` runs it on a fresh
clone); the cache directory it names is the one the Makefile and the scripts use; the demo's
closing lines it shows are the ones the demo prints."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
# The first screen: everything before the first section after the two commands' explanation.
FIRST_SCREEN = README.split("Why is a pod Pending?", 1)[0]


def first_commands() -> list[tuple[str, str]]:
    """(command, comment) for each line of the README's first ``sh`` block."""
    block = re.search(r"```sh\n(.*?)```", FIRST_SCREEN, re.S)
    assert block, "the README lost its first sh block"
    out = []
    for line in block.group(1).splitlines():
        command, _, comment = line.partition("#")
        out.append((command.strip(), comment.strip()))
    return out


def dry_run(target: str) -> list[str]:
    """The commands ``make TARGET`` would run (as if the venv were not set up yet)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "-W", "pyproject.toml", target],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"make -n {target}: {done.stderr}"
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def test_the_first_screen_commands_are_make_targets() -> None:
    commands = first_commands()
    assert [c for c, _ in commands] == ["make start", "make test"]
    for command, comment in commands:
        assert comment, f"{command}: say what it does"
        dry_run(command.split()[1])


def test_make_start_builds_only_what_the_demo_runs_then_runs_it() -> None:
    lines = dry_run("start")
    builds = [line for line in lines if "hack/build-" in line]
    assert builds == ["bash hack/build-controlplane.sh kube-apiserver kube-scheduler"], builds
    for other in ("kube-controller-manager", "provisioner", "helm"):
        assert not any(other in line for line in lines), f"make start builds {other}"
    assert any("pip install" in line for line in lines)  # the venv, step 1 of the README
    assert lines[-1] == ".venv/bin/kube-extender demo"
    assert "kube-apiserver and kube-scheduler" in FIRST_SCREEN


def test_make_test_builds_all_its_tests_run() -> None:
    lines = dry_run("test")
    assert (
        "bash hack/build-controlplane.sh kube-apiserver kube-scheduler kube-controller-manager"
        in lines
    )
    assert "bash hack/build-provisioner.sh" in lines and "bash hack/build-helm.sh" in lines
    assert "bash hack/install-chromium.sh" in lines
    assert any(
        line.startswith(".venv/bin/python -m pytest") and " tests " in f"{line} " for line in lines
    )
    for named in (
        "kube-controller-manager",
        "hack/build-provisioner.sh",
        "hack/build-helm.sh",
        "hack/install-chromium.sh",
    ):
        assert named in FIRST_SCREEN, f"the first screen does not say make test builds {named}"
    assert (REPO / ".ci" / "run").read_text().strip().endswith("make test")


def test_the_cache_named_is_the_one_used() -> None:
    assert "`~/.cache/kube-extender/bin`" in FIRST_SCREEN and "KUBE_EXTENDER_CACHE" in FIRST_SCREEN
    makefile = (REPO / "Makefile").read_text()
    assert "KUBE_EXTENDER_CACHE ?= $(HOME)/.cache/kube-extender" in makefile
    for script in ("build-controlplane.sh", "build-provisioner.sh", "build-helm.sh"):
        text = (REPO / "hack" / script).read_text()
        assert 'cache="${KUBE_EXTENDER_CACHE:-$HOME/.cache/kube-extender}"' in text, script
        assert 'bin="$cache/bin"' in text, script


def test_the_first_screen_gives_measured_times_and_the_demo_end() -> None:
    assert "@" not in FIRST_SCREEN.replace("@examples", ""), "a figure left unfilled"
    assert re.search(r"\*\*\d+ min", FIRST_SCREEN), "the first run's time"
    assert re.search(r"every later run: \*\*\d+ s\*\*", FIRST_SCREEN), "a warm run's time"
    end = re.search(r"```text\n(.*?)```", FIRST_SCREEN, re.S)
    assert end, "what the newcomer sees at the end"
    demo = (REPO / "extender" / "cli" / "demo.py").read_text()
    for line in end.group(1).splitlines():
        if line.startswith("### "):
            message = line.removeprefix("### ")
            said = message in demo or message.startswith("demo ") and '"demo "' in demo
            assert said, f"the demo does not print {line!r}"
    assert "### demo passed" in end.group(1)
