"""The newcomer's maps stay whole: the README's layout table names every package and module at
the top of ``extender/`` and every directory of the repository, the architecture page's diagram
names every layer the import contracts list, and the tour's stages are numbered once each."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def layout_paths() -> set[str]:
    """The paths named in the first column of the README's layout table."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([^`]+)`", row.split(" | ", 1)[0]))
    return names


def test_the_layout_table_names_every_top_level_package_and_module() -> None:
    listed = layout_paths()
    for entry in sorted((REPO / "extender").iterdir()):
        if entry.name == "__init__.py" or entry.name.startswith((".", "__pycache__")):
            continue
        if entry.is_dir() and (entry / "__init__.py").exists():
            assert f"extender/{entry.name}/" in listed, f"layout table: extender/{entry.name}/"
        elif entry.suffix == ".py":
            assert f"extender/{entry.name}" in listed, f"layout table: extender/{entry.name}"


def test_the_layout_table_names_every_directory_of_the_repository() -> None:
    listed = layout_paths()
    ignored = [
        line.strip("/")
        for line in (REPO / ".gitignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    for entry in sorted(REPO.iterdir()):
        if not entry.is_dir() or entry.name in (".git", "extender"):
            continue
        if any(fnmatch.fnmatch(entry.name, pattern) for pattern in ignored):
            continue  # built or cached here (kube_extender.egg-info, .venv, ...)
        if entry.name.startswith(".") and entry.name != ".ci":
            continue  # tool caches
        assert any(name.split("/")[0] == entry.name for name in listed), f"layout: {entry.name}/"


def test_the_architecture_diagram_names_every_contract_layer() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    layers = config["tool"]["importlinter"]["contracts"][0]["layers"]
    diagram = (REPO / "docs" / "architecture.md").read_text().split("```", 2)[1]
    for layer in layers:
        for module in layer.split("|"):
            name = module.strip().removeprefix("extender.")
            assert re.search(rf"\b{re.escape(name)}\b", diagram), f"architecture.md: {name}"


def test_the_tour_numbers_its_stages_once_each_in_order() -> None:
    text = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    numbers = [int(n) for n in re.findall(r"^## (\d+)\. ", text, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
