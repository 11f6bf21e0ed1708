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
    return [name for name, _ in rows(section)]


def rows(section: str) -> list[tuple[str, str]]:
    """The first-column name and the whole row of each table row under ``## section``."""
    found: list[tuple[str, str]] = []
    inside = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line[3:].strip().startswith(section)
            continue
        match = ROW.match(line) if inside else None
        if match:
            found.append((match.group(1), line))
    return found


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


def protocols() -> list[type]:
    from extender.framework import interfaces

    return [
        value
        for value in vars(interfaces).values()
        if isinstance(value, type)
        and value.__module__ == interfaces.__name__
        and getattr(value, "_is_protocol", False)
    ]


@pytest.mark.parametrize("protocol", protocols(), ids=lambda p: p.__name__)
def test_every_extension_point_states_its_contract(protocol: type) -> None:
    """The contracts live on the Protocols (upstream's ``interface.go`` comments), and the
    doc's row of a public Protocol names each of its methods."""
    assert (protocol.__doc__ or "").strip(), f"{protocol.__name__} has no docstring"
    methods = [
        name
        for name, value in vars(protocol).items()
        if callable(value) and not name.startswith("_")
    ]
    for name in methods:
        assert (getattr(protocol, name).__doc__ or "").strip(), f"{protocol.__name__}.{name}"
    public = importlib.import_module("extender.framework").__all__
    if protocol.__name__ in public:
        row = dict(rows("Public names"))[protocol.__name__]
        for name in methods:
            assert f"{name}(" in row, f"docs/plugin-api.md's {protocol.__name__} row: {name}"
