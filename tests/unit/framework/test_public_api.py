"""The public plugin API: ``extender.framework.__all__`` and ``extender.testing.__all__`` are
importable and equal to the tables of ``docs/plugin-api.md`` (so the doc cannot drift)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import extender

DOC = Path(extender.__file__).resolve().parent.parent / "docs" / "plugin-api.md"
ROW = re.compile(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|")


def documented(section: str) -> list[str]:
    """The first-column names of the tables under the ``## section`` heading."""
    names: list[str] = []
    inside = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line[3:].strip().startswith(section)
            continue
        match = ROW.match(line) if inside else None
        if match:
            names.append(match.group(1))
    return names


@pytest.mark.parametrize(
    ("module", "section"),
    [("extender.framework", "Public names"), ("extender.testing", "The testing kit")],
)
def test_all_is_importable_and_documented(module: str, section: str) -> None:
    mod = importlib.import_module(module)
    public = list(mod.__all__)
    assert len(public) == len(set(public)), "duplicates in __all__"
    for name in public:
        assert getattr(mod, name, None) is not None, f"{module}.{name} is not importable"
    names = documented(section)
    assert len(names) == len(set(names)), "a name is documented twice"
    assert sorted(names) == sorted(public)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict = {}
    exec("from extender.framework import *", namespace)
    namespace.pop("__builtins__")
    assert sorted(namespace) == sorted(importlib.import_module("extender.framework").__all__)


def test_in_tree_helper_still_imports() -> None:
    from extender.framework import default_normalize_score
    from extender.plugins.helper import default_normalize_score as old

    assert old is default_normalize_score
