"""``kube-extender new-plugin NAME [--dir D]``: write a small installable plugin package.

The package holds a plugin with a Filter (nodes lacking a label given in args are rejected)
and a Score (a numeric node label, normalized), its marshmallow ``args_schema``, tests that
use :mod:`extender.testing`, a ``config.yaml`` that ``kube-extender serve --config config.yaml
--offline`` accepts once the package is installed (it registers the plugin through the
``kube_extender.plugins`` entry point), and a README.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from extender.config.plugins import ENTRY_POINT_GROUP
from extender.plugins import IN_TREE_PLUGINS

# A plugin name: a CamelCase Python identifier (the config and the entry point use it).
PLUGIN_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def snake_case(name: str) -> str:
    """``LabelScore`` -> ``label_score``; ``GPUFit`` -> ``gpu_fit``."""
    words = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", words).lower()


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a plugin name, or ``None``."""
    if not PLUGIN_NAME.match(name):
        return f"NAME {name!r}: must be a CamelCase identifier such as LabelScore"
    if name in IN_TREE_PLUGINS:
        return f"NAME {name!r}: clashes with the in-tree plugin of that name"
    return None


def files(name: str) -> dict[str, str]:
    """Relative path -> text of the package for plugin ``name``."""
    package = snake_case(name)
    values = {
        "Name": name,
        "package": package,
        "dist": "kube-extender-" + package.replace("_", "-"),
        "scheduler": package.replace("_", "-") + "-scheduler",
        "group": ENTRY_POINT_GROUP,
    }
    return {
        path: _fill(template, values)
        for path, template in {
            "pyproject.toml": PYPROJECT,
            f"{package}/__init__.py": INIT,
            f"{package}/plugin.py": PLUGIN,
            "tests/test_plugin.py": TESTS,
            "config.yaml": CONFIG,
            "README.md": README,
        }.items()
    }


def _fill(template: str, values: dict[str, str]) -> str:
    text = template
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text.lstrip("\n")


def generate(name: str, directory: Path) -> list[Path]:
    """Write the package into ``directory`` (which must not exist); the paths written."""
    problem = name_problem(name)
    if problem:
        raise ValueError(problem)
    if directory.exists():
        raise FileExistsError(f"{directory}: already exists; choose another --dir")
    written = []
    for relative, text in files(name).items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kube-extender new-plugin",
        description="Write an installable out-of-tree plugin package (plugin, tests, config).",
    )
    parser.add_argument("name", metavar="NAME", help="the plugin's name, CamelCase (LabelScore)")
    parser.add_argument(
        "--dir", help="directory to create (default: ./kube-extender-<name> in snake-case)"
    )
    args = parser.parse_args(argv)
    problem = name_problem(args.name)
    if problem:
        parser.error(problem)
    default = "kube-extender-" + snake_case(args.name).replace("_", "-")
    directory = Path(args.dir or default)
    try:
        written = generate(args.name, directory)
    except (FileExistsError, OSError) as exc:
        print(f"kube-extender new-plugin: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files under {directory}:")
    for path in written:
        print(f"  {path}")
    print(
        f"next: pip install -e {directory} && pytest {directory}/tests && "
        f"kube-extender serve --config {directory}/config.yaml --offline"
    )
    return 0


# -- templates ({{Name}}, {{package}}, {{dist}}, {{scheduler}}, {{group}}) ---------------------

PYPROJECT = """
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{{dist}}"
version = "0.1.0"
description = "{{Name}}: an out-of-tree kube-extender scheduling plugin"
requires-python = ">=3.11"
dependencies = ["kube-extender", "marshmallow>=3.20"]

[project.optional-dependencies]
test = ["pytest>=8"]

# kube-extender finds the plugin by this entry point; the config names it {{Name}}.
[project.entry-points."{{group}}"]
{{Name}} = "{{package}}.plugin:{{Name}}"

# package-dir: an editable install is one path entry (setuptools' static mode, no warning).
[tool.setuptools]
packages = ["{{package}}"]
package-dir = { "" = "." }
"""

INIT = '''
"""{{Name}}: an out-of-tree kube-extender plugin."""

from .plugin import {{Name}}

__all__ = ["{{Name}}"]
'''

PLUGIN = '''
"""{{Name}}: Filter and Score on node labels.

* Filter: a node without the label ``requiredLabel`` is rejected (UnschedulableAndUnresolvable:
  only a change to the node can help, so preemption does not try).
* Score: the integer value of the node label ``scoreLabel`` (absent, negative or not a number:
  0), normalized so the highest-valued node gets 100.

Reads nothing but the NodeInfo it is given; mutates nothing but the NodeScore list it is given
to normalize. Only ``extender.framework`` (the stable plugin API) is imported.
"""

from __future__ import annotations

from extender.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    Resource,
    Status,
    default_normalize_score,
    unresolvable,
)
from marshmallow import Schema, fields


class {{Name}}Args(Schema):
    """The plugin's args (pluginConfig); unknown fields are rejected when the config loads."""

    required_label = fields.String(data_key="requiredLabel", load_default="example.com/pool")
    score_label = fields.String(data_key="scoreLabel", load_default="example.com/score")


class {{Name}}:
    name = "{{Name}}"
    args_schema = {{Name}}Args

    def __init__(self, args: dict, handle: Handle) -> None:
        # args come loaded by args_schema: snake_case keys, defaults filled in.
        self.required_label: str = args["required_label"]
        self.score_label: str = args["score_label"]

    # -- Filter --------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        labels = (node_info.node.get("metadata") or {}).get("labels") or {}
        if self.required_label not in labels:
            return unresolvable(f"node(s) didn't have label {self.required_label}")
        return None

    # -- Score ---------------------------------------------------------------------------

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, None]:
        labels = (node_info.node.get("metadata") or {}).get("labels") or {}
        try:
            return max(int(labels.get(self.score_label, "0")), 0), None
        except ValueError:
            return 0, None

    def score_extensions(self) -> {{Name}}:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    # -- queueing hints (standalone scheduler) --------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod this plugin rejected may fit after a node is added or relabelled."""
        node_events = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, node_events))]
'''

TESTS = '''
"""{{Name}} on a cluster of plain dicts, with kube-extender's testing kit."""

from __future__ import annotations

from pathlib import Path

import pytest
from extender.framework import Code
from extender.testing import Cluster, ConfigError, node, pod, run_plugin, run_profile

from {{package}} import {{Name}}

CONFIG = Path(__file__).resolve().parent.parent / "config.yaml"

CLUSTER = Cluster(
    nodes=[
        node("low", labels={"example.com/pool": "a", "example.com/score": "10"}),
        node("high", labels={"example.com/pool": "a", "example.com/score": "40"}),
        node("nolabel", labels={"example.com/score": "90"}),
    ]
)


def test_filter_rejects_nodes_without_the_label() -> None:
    result = run_plugin({{Name}}, pod("p"), CLUSTER)
    assert result.feasible == ["high", "low"]
    assert result.code("nolabel") == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.reasons("nolabel") == ("node(s) didn't have label example.com/pool",)
    assert result.rejected_by("nolabel") == "{{Name}}"


def test_score_prefers_the_highest_label_value() -> None:
    result = run_plugin({{Name}}, pod("p"), CLUSTER)
    assert result.scores["high"]["{{Name}}"] == 100
    assert result.scores["low"]["{{Name}}"] == 25
    assert result.chosen == ["high"]


def test_args_change_the_labels() -> None:
    result = run_plugin({{Name}}, pod("p"), CLUSTER, args={"requiredLabel": "example.com/score"})
    assert result.feasible == ["high", "low", "nolabel"]
    assert result.chosen == ["nolabel"]


def test_unknown_args_are_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown field"):
        run_plugin({{Name}}, pod("p"), CLUSTER, args={"requiredLabels": "typo"})


def test_no_node_fits() -> None:
    cluster = Cluster(nodes=[node("a"), node("b")])
    result = run_plugin({{Name}}, pod("p"), cluster)
    assert result.fit_error == (
        "0/2 nodes are available: 2 node(s) didn't have label example.com/pool."
    )


def test_the_shipped_config_profile() -> None:
    result = run_profile(pod("p", cpu="100m"), CLUSTER, CONFIG, plugins=[{{Name}}])
    assert result.feasible == ["high", "low"]
    assert result.chosen == ["high"]
'''

CONFIG = """
# kube-extender serve --config config.yaml --offline   (after: pip install .)
# {{Name}} is found through the package's "{{group}}" entry point.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: {{scheduler}}
    plugins:
      # Only plugins that need no pods from the cluster, so --offline works.
      multiPoint:
        disabled: [{name: "*"}]
      queueSort: {enabled: [{name: PrioritySort}]}
      filter:
        enabled: [{name: NodeUnschedulable}, {name: TaintToleration}, {name: {{Name}}}]
      score:
        enabled: [{name: {{Name}}, weight: 2}]
      bind: {enabled: [{name: DefaultBinder}]}
    pluginConfig:
      - name: {{Name}}
        args:
          requiredLabel: example.com/pool
          scoreLabel: example.com/score
"""

README = """
# {{Name}}

An out-of-tree scheduling plugin for kube-extender (plugin API: `extender.framework`, see
kube-extender's `docs/plugin-api.md`).

* **Filter**: nodes without the label `requiredLabel` (default `example.com/pool`) are
  rejected as UnschedulableAndUnresolvable.
* **Score**: the integer value of the node label `scoreLabel` (default
  `example.com/score`), normalized so that the highest node scores 100.

## Use

```sh
pip install -e .                 # registers {{Name}} (entry point group {{group}})
pytest tests                     # runs the plugin with extender.testing, no cluster needed
kube-extender serve --config config.yaml --offline --bind 127.0.0.1:8888
```

`config.yaml` is a `KubeSchedulerConfiguration` with one profile, `{{scheduler}}`, that
enables {{Name}} at Filter and Score (weight 2) and sets its args in `pluginConfig`. Args are
validated by `{{Name}}Args` (marshmallow) when the config loads: an unknown field or a wrong
type is a config error naming the field.

## Layout

* `{{package}}/plugin.py`: the plugin and its args schema
* `tests/test_plugin.py`: tests with `extender.testing` (`run_plugin`, `run_profile`)
* `config.yaml`: the scheduler configuration
"""
