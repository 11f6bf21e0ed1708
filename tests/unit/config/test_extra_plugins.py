"""``loads(..., plugins=[cls])``: classes registered by the caller, and args_schema defaults."""

from __future__ import annotations

import pytest
from marshmallow import Schema, fields

from extender.config import ConfigError, loads


class _Args(Schema):
    label = fields.String(load_default="example.com/pool")


class Picky:
    name = "Picky"
    args_schema = _Args

    def __init__(self, args: dict, handle: object) -> None:
        self.label = args["label"]

    def filter(self, state: object, pod: dict, node_info: object) -> None:
        return None


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - plugins:
      filter: {enabled: [{name: Picky}]}
"""


def test_extra_class_is_registered_and_gets_schema_defaults_without_plugin_config() -> None:
    config = loads(CONFIG, plugins=[Picky])
    assert config.registry.plugin_class("Picky") is Picky
    assert config.profiles[0].plugin_config["Picky"] == {"label": "example.com/pool"}


def test_without_the_class_the_name_is_unknown() -> None:
    with pytest.raises(ConfigError, match='unknown plugin "Picky"'):
        loads(CONFIG)


def test_extra_class_clashing_with_an_in_tree_name_is_an_error() -> None:
    class Fake(Picky):
        name = "NodeName"

    with pytest.raises(ConfigError, match='clashes with the in-tree plugin "NodeName"'):
        loads(CONFIG, plugins=[Fake])


class Strict(Picky):
    """``validate_args`` runs after ``args_schema`` loaded the args (defaults filled in)."""

    name = "Strict"

    @classmethod
    def validate_args(cls, args: dict) -> None:
        if "/" not in args["label"]:
            raise ValueError(f"label: Invalid value: {args['label']!r}: must have a prefix")


STRICT = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - plugins:
      filter: {enabled: [{name: Strict}]}
    pluginConfig:
      - name: Strict
        args: {label: %s}
"""


def test_validate_args_of_an_extra_class_refuses_bad_args_with_its_message() -> None:
    with pytest.raises(ConfigError) as info:
        loads(STRICT % "pool", plugins=[Strict])
    assert (
        "profiles[0].pluginConfig[0].args: label: Invalid value: 'pool': must have a prefix"
        in str(info.value)
    )
    config = loads(STRICT % "example.com/pool", plugins=[Strict])
    assert config.profiles[0].plugin_config["Strict"] == {"label": "example.com/pool"}


def test_in_tree_args_are_validated_without_constructing_the_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from extender.plugins import plugin_class

    cls = plugin_class("InterPodAffinity")

    def refuse(self: object, args: dict, handle: object) -> None:
        raise AssertionError("the loader constructed the plugin")

    monkeypatch.setattr(cls, "__init__", refuse)
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - pluginConfig:
      - name: InterPodAffinity
        args: {hardPodAffinityWeight: %s}
"""
    assert (
        loads(config % 5).profiles[0].plugin_config["InterPodAffinity"]["hardPodAffinityWeight"]
        == 5
    )
    with pytest.raises(ConfigError) as info:
        loads(config % 101)
    assert (
        "profiles[0].pluginConfig[0].args: hardPodAffinityWeight: Invalid value: 101: "
        "not in valid range [0, 100]" in str(info.value)
    )


def test_every_in_tree_plugin_with_args_has_validate_args() -> None:
    from extender.config.defaults import ARG_KEYS
    from extender.plugins import plugin_class

    for name in ARG_KEYS:
        assert callable(getattr(plugin_class(name), "validate_args", None)), name
