"""``extender.kube`` is the bottom layer: it imports nothing else of ``extender``."""

from __future__ import annotations

import ast
from pathlib import Path

import extender.kube

PACKAGE = Path(extender.kube.__file__).parent


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # Inside extender/kube/, level 1 is extender.kube, level 2 is extender...
                base = ["extender", "kube"][: 3 - node.level]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def test_kube_imports_only_itself_stdlib_and_third_party() -> None:
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) > 5
    offenders = [
        f"{path.name}:{line}: {module}"
        for path in files
        for line, module in imported_modules(path)
        if (module == "extender" or module.startswith("extender."))
        and not (module == "extender.kube" or module.startswith("extender.kube."))
    ]
    assert offenders == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from ..cache import Cache\nimport extender.config\nfrom .errors import Gone\n")
    assert imported_modules(bad) == [
        (1, "extender.cache"),
        (2, "extender.config"),
        (3, "extender.kube.errors"),
    ]
