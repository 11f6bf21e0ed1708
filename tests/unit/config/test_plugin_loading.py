"""Out-of-tree plugins in a config: entry points of installed packages, ``pluginModules`` files,
their args schemas and timeouts, and every way that can go wrong, each a clear ConfigError."""

from __future__ import annotations

import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from extender.config import ConfigError, load
from extender.config import plugins as config_plugins
from extender.framework.runtime import Framework

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
OURS = "---\napiVersion: kube-extender.io/v1alpha1\nkind: ExtenderConfiguration\n"

RACK_PLUGIN = """
from marshmallow import Schema, fields

from extender.framework.status import unschedulable


class RackArgs(Schema):
    label = fields.String(load_default="example.com/rack")
    maxPerRack = fields.Integer(load_default=2, validate=lambda n: n > 0)


class RackLimit:
    name = "RackLimit"
    args_schema = RackArgs

    def __init__(self, args, handle):
        self.label = args["label"]

    def filter(self, state, pod, node_info):
        if self.label not in node_info.labels:
            return unschedulable("node(s) had no rack label")
        return None


class NoPoints:
    name = "NoPoints"

    def __init__(self, args, handle):
        pass
"""


def write_config(tmp_path: Path, body: str, ours: str = "") -> Path:
    (tmp_path / "rack.py").write_text(RACK_PLUGIN, encoding="utf-8")
    path = tmp_path / "scheduler.yaml"
    text = HEADER + textwrap.dedent(body)
    if ours:
        text += OURS + textwrap.dedent(ours)
    path.write_text(text, encoding="utf-8")
    return path


ENABLE_RACK = """\
profiles:
  - schedulerName: racks
    plugins:
      filter:
        enabled: [{name: RackLimit}]
"""


def load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load(path)
    return str(info.value)


def test_a_plugin_module_file_is_enabled_by_name_with_its_args(tmp_path: Path) -> None:
    body = (
        ENABLE_RACK + "    pluginConfig:\n      - name: RackLimit\n        args: {maxPerRack: 3}\n"
    )
    config = load(write_config(tmp_path, body, "pluginModules: [rack.py:RackLimit]\n"))
    profile = config.profiles[0]
    assert profile.enabled("filter")[-1] == "RackLimit"
    # The schema loaded the args: defaults filled in, types checked.
    assert profile.plugin_config["RackLimit"] == {"label": "example.com/rack", "maxPerRack": 3}
    assert config.registry.source("RackLimit") == "pluginModules rack.py:RackLimit"
    fwk = Framework(profile, config.registry)
    assert fwk.plugin("RackLimit").label == "example.com/rack"


def test_a_bad_arg_names_the_file_the_plugin_and_the_field(tmp_path: Path) -> None:
    body = (
        ENABLE_RACK + "    pluginConfig:\n      - name: RackLimit\n        args: {maxPerRack: x}\n"
    )
    path = write_config(tmp_path, body, "pluginModules: [rack.py:RackLimit]\n")
    assert (
        load_error(path)
        == f"{path}: profiles[0].pluginConfig[0].args: maxPerRack: Not a valid integer."
    )


def test_an_unknown_arg_is_rejected_by_the_schema(tmp_path: Path) -> None:
    body = ENABLE_RACK + "    pluginConfig:\n      - name: RackLimit\n        args: {racks: 3}\n"
    path = write_config(tmp_path, body, "pluginModules: [rack.py:RackLimit]\n")
    assert "profiles[0].pluginConfig[0].args: racks: unknown field" in load_error(path)


def test_unknown_plugin_lists_what_is_registered_and_where_from(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, ENABLE_RACK.replace("RackLimit", "Racks"), "pluginModules: [rack.py:RackLimit]\n"
    )
    message = load_error(path)
    assert 'unknown plugin "Racks" (registered: in-tree: Coscheduling, DefaultBinder,' in message
    assert "RackLimit (pluginModules rack.py:RackLimit)" in message


def test_a_missing_file_or_class_is_named(tmp_path: Path) -> None:
    path = write_config(tmp_path, ENABLE_RACK, "pluginModules: [gone.py:RackLimit]\n")
    assert (
        f"ExtenderConfiguration.pluginModules[0]: no such file: {tmp_path / 'gone.py'}"
        in load_error(path)
    )
    path = write_config(tmp_path, ENABLE_RACK, "pluginModules: [rack.py:Nope]\n")
    assert f"{tmp_path / 'rack.py'} has no class 'Nope'" in load_error(path)


def test_an_import_error_names_the_module_and_the_last_line(tmp_path: Path) -> None:
    path = write_config(tmp_path, ENABLE_RACK, "pluginModules: [rack.py:RackLimit]\n")
    (tmp_path / "rack.py").write_text("import not_a_module_anywhere\n", encoding="utf-8")
    message = load_error(path)
    assert "cannot import" in message and "rack.py" in message
    assert "ModuleNotFoundError: No module named 'not_a_module_anywhere'" in message


def test_a_class_with_no_extension_point_is_refused(tmp_path: Path) -> None:
    body = ENABLE_RACK.replace(
        "filter:\n        enabled: [{name: RackLimit}]",
        "multiPoint:\n        enabled: [{name: NoPoints}]",
    )
    path = write_config(tmp_path, body, "pluginModules: [rack.py:NoPoints]\n")
    assert (
        'plugin "NoPoints" (pluginModules rack.py:NoPoints): '
        "class NoPoints implements no extension point" in load_error(path)
    )


def test_a_name_clash_with_an_in_tree_plugin_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clash.py").write_text(
        "class TaintToleration:\n    name = 'TaintToleration'\n", encoding="utf-8"
    )
    path = write_config(tmp_path, "", "pluginModules: [clash.py:TaintToleration]\n")
    assert (
        'plugin "TaintToleration" from pluginModules clash.py:TaintToleration '
        'clashes with the in-tree plugin "TaintToleration"' in load_error(path)
    )


def entry_points_of(*pairs: tuple[str, str]):
    points = [EntryPoint(name, value, config_plugins.ENTRY_POINT_GROUP) for name, value in pairs]
    return lambda group: points if group == config_plugins.ENTRY_POINT_GROUP else []


def test_entry_points_register_plugins_lazily(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, "")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        config_plugins,
        "entry_points",
        entry_points_of(("RackLimit", "rack:RackLimit"), ("Broken", "nowhere_at_all:X")),
    )
    # Registered but never imported unless enabled: the broken one does no harm here.
    config = load(write_config(tmp_path, ENABLE_RACK))
    assert "RackLimit" in config.profiles[0].enabled("filter")
    assert "Broken" in config.registry
    # Enabled, the broken one is reported with its module.
    path = write_config(tmp_path, ENABLE_RACK.replace("RackLimit", "Broken"))
    message = load_error(path)
    assert "plugin \"Broken\" (nowhere_at_all:X): cannot import module 'nowhere_at_all'" in message


def test_an_entry_point_name_must_match_the_class_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, "")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        config_plugins, "entry_points", entry_points_of(("Racks", "rack:RackLimit"))
    )
    message = load_error(write_config(tmp_path, ENABLE_RACK.replace("RackLimit", "Racks")))
    assert "class RackLimit has name 'RackLimit'; it must equal the registered name" in message


def test_plugin_timeouts_reach_every_profile(tmp_path: Path) -> None:
    ours = "pluginModules: [rack.py:RackLimit]\npluginTimeouts: {RackLimit: {filter: 250ms}}\n"
    config = load(write_config(tmp_path, ENABLE_RACK, ours))
    assert config.profiles[0].plugin_timeouts == {"RackLimit": {"filter": 0.25}}


@pytest.mark.parametrize(
    ("timeouts", "expected"),
    [
        (
            "{Nope: {filter: 1s}}",
            'ExtenderConfiguration.pluginTimeouts.Nope: unknown plugin "Nope"',
        ),
        (
            "{RackLimit: {score: 1s}}",
            "ExtenderConfiguration.pluginTimeouts.RackLimit.score: "
            'plugin "RackLimit" does not extend score',
        ),
        ("{RackLimit: {filter: soon}}", "pluginTimeouts"),
        ("{RackLimit: {sideways: 1s}}", "pluginTimeouts"),
    ],
)
def test_bad_plugin_timeouts_are_named(tmp_path: Path, timeouts: str, expected: str) -> None:
    ours = f"pluginModules: [rack.py:RackLimit]\npluginTimeouts: {timeouts}\n"
    assert expected in load_error(write_config(tmp_path, ENABLE_RACK, ours))
