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
