"""The docs' examples run, and do not clash with each other: the plugin of
``docs/plugin-api.md`` and its testing-kit example run while the package the first-plugin
tutorial (``docs/write-your-first-plugin.md``) makes is installed, as a reader who followed
both would have it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.unit.test_scaffold import REPO, _fake_install

DOC = REPO / "docs" / "plugin-api.md"
TUTORIAL_PLUGIN = "NeedsPool"  # the name docs/write-your-first-plugin.md scaffolds


def python_blocks(section: str) -> list[str]:
    """The ```python blocks under the ``## section`` heading of docs/plugin-api.md."""
    text = DOC.read_text(encoding="utf-8")
    body = re.split(rf"\n## {re.escape(section)}[^\n]*\n", text, maxsplit=1)[1]
    body = body.split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_plugin_api_examples_run_beside_the_tutorial_package(tmp_path: Path) -> None:
    package = tmp_path / "needs-pool"
    subprocess.run(
        [sys.executable, "-m", "extender", "new-plugin", TUTORIAL_PLUGIN, "--dir", str(package)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    site = tmp_path / "site"
    _fake_install(package, site)
    code = "\n".join(python_blocks("A plugin in one screen") + python_blocks("The testing kit"))
    assert "run_profile(" in code
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (site, package, REPO)))}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
