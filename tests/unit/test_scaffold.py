"""``kube-extender new-plugin``: the generated package passes its own tests and its config loads
once the package's entry point is visible."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import extender
from extender.cli.main import main as cli_main
from extender.cli.new_plugin import generate, snake_case

REPO = Path(extender.__file__).resolve().parent.parent


def _run(code: str, cwd: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (*paths, REPO))}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _fake_install(package_dir: Path, site: Path) -> None:
    """What ``pip install`` leaves for entry-point discovery: a dist-info with the pyproject's
    entry points (the package itself is imported from ``package_dir``)."""
    project = tomllib.loads((package_dir / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


LOAD = (
    "from extender.config import load; c = load('config.yaml'); print(c.profiles[0].plugin_config)"
)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("gen") / "label-score"
    generate("LabelScore", directory)
    return directory


def test_snake_case() -> None:
    assert snake_case("LabelScore") == "label_score"
    assert snake_case("GPUFit") == "gpu_fit"
    assert snake_case("Zone2Spread") == "zone2_spread"


def test_layout_and_entry_point(package: Path) -> None:
    names = sorted(str(p.relative_to(package)) for p in package.rglob("*") if p.is_file())
    assert names == [
        "README.md",
        "config.yaml",
        "label_score/__init__.py",
        "label_score/plugin.py",
        "pyproject.toml",
        "tests/test_plugin.py",
    ]
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    assert "kube-extender" in project["dependencies"]
    assert project["entry-points"]["kube_extender.plugins"] == {
        "LabelScore": "label_score.plugin:LabelScore"
    }


STABLE = {"extender.framework", "extender.testing"}


def test_generated_code_imports_only_the_stable_api(package: Path) -> None:
    """docs/plugin-api.md: a plugin and its tests use extender.framework and extender.testing
    only; everything else of kube-extender may change in any release."""
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            for module in modules:
                if module.split(".")[0] == "extender":
                    assert module in STABLE, f"{path.name} imports {module}"


def test_generated_tests_pass(package: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{package}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout


def test_config_loads_once_the_entry_point_is_visible(package: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _fake_install(package, site)
    done = _run(LOAD, package, site, package)
    assert done.returncode == 0, done.stderr
    assert "'LabelScore': {'required_label': 'example.com/pool'" in done.stdout
    # The offline extender accepts it as it is (no plugin needs the cluster's pods).
    app = "from extender.cli.serve import build_app; print(build_app('config.yaml', None, True))"
    done = _run(app, package, site, package)
    assert done.returncode == 0, done.stderr


def test_config_fails_without_the_entry_point_or_with_a_wrong_name(
    package: Path, tmp_path: Path
) -> None:
    done = _run(LOAD, package, package)  # importable, but not installed: no entry point
    assert done.returncode != 0
    assert 'unknown plugin "LabelScore"' in done.stderr
    site = tmp_path / "site"
    _fake_install(package, site)
    wrong = package / "wrong.yaml"
    wrong.write_text(
        (package / "config.yaml").read_text().replace("{name: LabelScore}", "{name: LabelScor}")
    )
    done = _run(LOAD.replace("config.yaml", "wrong.yaml"), package, site, package)
    assert done.returncode != 0
    assert 'unknown plugin "LabelScor"' in done.stderr
    assert "LabelScore (package kube-extender-label-score 0.1.0)" in done.stderr


def test_real_pip_install(package: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), "."],
        cwd=package,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if pip.returncode != 0:
        pytest.skip(f"pip cannot build here (needs setuptools from an index): {pip.stderr[-300:]}")
    # The installed copy only: run from elsewhere, the generated dir is not on the path.
    done = _run(LOAD.replace("'config.yaml'", repr(str(package / "config.yaml"))), tmp_path, site)
    assert done.returncode == 0, done.stderr
    assert "'LabelScore': {'required_label': 'example.com/pool'" in done.stdout


def test_cli_refuses_existing_directories_and_bad_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    assert cli_main(["new-plugin", "LabelScore", "--dir", str(target)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"kube-extender new-plugin: {target}: already exists; choose another --dir"
    )
    for bad in ("label_score", "labelScore", "Label-Score", "NodeName"):
        with pytest.raises(SystemExit) as exit_:
            cli_main(["new-plugin", bad, "--dir", str(tmp_path / "x")])
        assert exit_.value.code == 2
        assert f"NAME {bad!r}" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert cli_main(["new-plugin", "GPUFit", "--dir", str(tmp_path / "ok")]) == 0
    assert (tmp_path / "ok" / "gpu_fit" / "plugin.py").is_file()
