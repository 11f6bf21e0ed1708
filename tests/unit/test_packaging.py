"""The runtime dependencies are what the product imports: every third-party module imported
under ``extender/`` is declared (or comes with an optional extra), and nothing declared is
unused."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Distribution name -> the top-level module it provides, where they differ.
MODULE_OF = {
    "PyYAML": "yaml",
    "prometheus-client": "prometheus_client",
    "cel-expr-python": "cel_expr_python",
    "google-re2": "re2",
    "protobuf": "google",
}


def _requirement_name(requirement: str) -> str:
    for stop in "<>=![; ":
        requirement = requirement.split(stop)[0]
    return requirement


def _imported_modules() -> set[str]:
    modules: set[str] = set()
    for path in (ROOT / "extender").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return {m for m in modules if m not in sys.stdlib_module_names and m != "extender"}


def test_runtime_dependencies_are_what_the_product_imports() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {
        MODULE_OF.get(name, name.lower())
        for name in map(_requirement_name, project["dependencies"])
    }
    optional = {
        MODULE_OF.get(name, name.lower())
        for name in map(_requirement_name, project["optional-dependencies"]["controlplane"])
    }
    imported = _imported_modules()
    assert imported - runtime == optional, "imported but not declared (or only in an extra)"
    assert runtime - imported == set(), "declared but never imported"
