"""After a plain ``pip install -e .`` (no extras) every subcommand's ``--help`` works: each runs
in a fresh interpreter, exits 0 with its usage, and imports no module of an optional extra's
distributions (``cryptography`` for ``controlplane``; ``pytest``, ``hypothesis``, ... for
``dev``). The shared venv has the extras installed, so "works without them" is checked as
"does not import them"; a command that needs one imports it when it runs, and says which extra
to install if it is missing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from extender.cli.main import COMMANDS

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import contextlib, io, json, sys
from extender.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main([sys.argv[1], "--help"])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """``names`` and every distribution they require (their own extras left out)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return seen


def extra_modules() -> dict[str, str]:
    """Top-level module -> the distribution that brings it, for every optional extra's
    requirement that the base install does not also bring (directly or through a dependency:
    the kubernetes client brings urllib3, which the dev extra also names)."""
    base, extras = set(), set()
    for requirement in metadata.requires("kube-extender") or []:
        (extras if "extra ==" in requirement else base).add(_name(requirement))
    extras -= _closure(base) | {"kube-extender"}
    modules = {}
    for module, dists in metadata.packages_distributions().items():
        for dist in dists:
            if dist.lower().replace("_", "-") in extras:
                modules[module] = dist
    assert "cryptography" in modules and "pytest" in modules, modules  # the probe sees them
    return modules


@pytest.fixture(scope="module")
def optional() -> dict[str, str]:
    return extra_modules()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_works_without_the_optional_extras(command: str, optional: dict[str, str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] in (0, None), (result["code"], done.stderr)
    assert "usage:" in result["out"], result["out"]
    imported = {name.split(".")[0] for name in result["modules"]} & set(optional)
    assert not imported, f"kube-extender {command} --help imports {sorted(imported)}"


def test_a_command_run_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    """``cluster up`` imports ``cryptography`` only when it makes certificates: without it (a
    None in sys.modules makes its import fail as a missing module would), one line naming the
    extra and exit 2, as when the command's module itself needed it."""
    probe = (
        "import sys; sys.modules['cryptography'] = None\n"
        "from extender.cli.main import main\n"
        "sys.exit(main(['cluster', '--dir', sys.argv[1], 'up']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "cluster")],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.strip() == (
        "kube-extender cluster: needs the optional dependency 'cryptography': "
        "pip install 'kube-extender[controlplane]'"
    ), done.stderr
