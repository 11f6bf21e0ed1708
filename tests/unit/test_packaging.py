"""Packaging: the runtime dependencies are what the product imports (every third-party module
imported under ``extender/`` is declared, or comes with an optional extra, and nothing declared
is unused); what the tests, the benchmarks and the example plugin import is declared too (the
``dev`` extra, each example's own ``pyproject.toml``); the license is an SPDX expression with its
file, as setuptools >= 77 wants it (a TOML table prints a deprecation warning on every install).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The example plugin packages and their own top-level modules (the package, test helpers).
EXAMPLES = {
    "rack-spread": {"rack_spread"},
    "gpu-policies": {"gpu_policies", "gpu_objects"},
}
# Distribution name -> the top-level module it provides, where they differ.
MODULE_OF = {
    "PyYAML": "yaml",
    "prometheus-client": "prometheus_client",
    "kube-extender": "extender",
    "import-linter": "importlinter",
    "cel-expr-python": "cel_expr_python",
    "cel-python": "celpy",
    "google-re2": "re2",
    "protobuf": "google",
}
# Our own top-level packages: the product, and the trees that import each other by path.
FIRST_PARTY = {"extender", "tests", "bench", "rack_spread"}


def _requirement_name(requirement: str) -> str:
    for stop in "<>=![; ":
        requirement = requirement.split(stop)[0]
    return requirement


def _modules(requirements: list[str]) -> set[str]:
    return {MODULE_OF.get(name, name.lower()) for name in map(_requirement_name, requirements)}


def _imported_modules(*trees: Path) -> set[str]:
    modules: set[str] = set()
    for tree in trees:
        for path in tree.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    return {m for m in modules if m not in sys.stdlib_module_names}


def _project(path: Path) -> dict:
    return tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))


def test_runtime_dependencies_are_what_the_product_imports() -> None:
    project = _project(ROOT)["project"]
    runtime = _modules(project["dependencies"])
    extras = project["optional-dependencies"]
    optional = _modules(extras["controlplane"]) | _modules(extras["sweep"])
    imported = _imported_modules(ROOT / "extender") - {"extender"}
    assert imported - runtime == optional, "imported but not declared (or only in an extra)"
    assert runtime - imported == set(), "declared but never imported"


def test_tests_and_benchmarks_import_only_what_is_declared() -> None:
    project = _project(ROOT)["project"]
    declared = _modules(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= _modules([r for r in extra if not r.startswith("kube-extender")])
    imported = _imported_modules(ROOT / "tests", ROOT / "bench") - FIRST_PARTY
    assert imported - declared == set(), "imported by tests/ or bench/ but not declared"


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_plugins_declare_what_they_import(example: str) -> None:
    directory = ROOT / "examples" / example
    project = _project(directory)["project"]
    declared = _modules(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        declared |= _modules(extra)
    imported = _imported_modules(directory) - EXAMPLES[example]
    assert imported - declared == set(), "imported by the example but not declared"


def test_license_is_an_spdx_expression_with_its_file() -> None:
    data = _project(ROOT)
    project = data["project"]
    assert isinstance(project["license"], str), "project.license as a table is deprecated"
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] and all((ROOT / f).is_file() for f in project["license-files"])
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))
    # SPDX strings and license-files need setuptools >= 77 to build.
    assert any(r.replace(" ", "") == "setuptools>=77" for r in data["build-system"]["requires"])
