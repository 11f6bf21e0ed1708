"""The plugin registry: plugin name -> factory(args, handle).

The config selects plugins by name; nothing in the runtime knows a plugin list by heart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PluginFactory = Callable[[dict, Any], Any]


class Registry(dict[str, PluginFactory]):
    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self:
            raise ValueError(f"a plugin named {name!r} is already registered")
        self[name] = factory

    def merge(self, other: Registry) -> Registry:
        merged = Registry(self)
        for name, factory in other.items():
            merged.register(name, factory)
        return merged
