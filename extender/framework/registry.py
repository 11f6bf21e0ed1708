"""The plugin registry: plugin name -> factory(args, handle) (upstream
``pkg/scheduler/framework/runtime/registry.go``).

The config selects plugins by name; nothing in the runtime knows a plugin list by heart. A
factory is usually the plugin class itself, or a :class:`LazyPlugin` that imports
``module:Class`` on first use (in-tree plugins, and plugins of installed packages), so a
profile only pays for the plugins it enables.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from .handle import Handle, Kind, reads_of
from .interfaces import Plugin
from .profile import Profile

# ``factory(args, handle)``: args as loaded by the config (defaulted, validated), the profile's
# handle (upstream ``PluginFactory``). Never called to validate args: see ``validate_args``.
PluginFactory = Callable[[dict, Handle], Plugin]


class PluginLoadError(ImportError):
    """A ``module:Class`` reference that cannot be imported or names no class."""


class LazyPlugin:
    """A factory that imports ``target`` (``"package.module:Class"``) on first use."""

    __slots__ = ("target", "_cls")

    def __init__(self, target: str) -> None:
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise PluginLoadError(f"{target!r}: expected 'module:Class'")
        self.target = target
        self._cls: type | None = None

    def load(self) -> type:
        if self._cls is None:
            module_name, _, attr = self.target.partition(":")
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:  # any error the module raises while importing
                raise PluginLoadError(
                    f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
                ) from exc
            obj: Any = module
            for part in attr.split("."):
                if not hasattr(obj, part):
                    raise PluginLoadError(f"module {module_name!r} has no attribute {attr!r}")
                obj = getattr(obj, part)
            if not isinstance(obj, type):
                raise PluginLoadError(f"{self.target!r} is not a class")
            self._cls = obj
        return self._cls

    def __call__(self, args: dict, handle: Handle) -> Plugin:
        plugin: Plugin = self.load()(args, handle)
        return plugin

    def __repr__(self) -> str:
        return f"LazyPlugin({self.target!r})"


class Registry(dict[str, PluginFactory]):
    """Plugin name -> factory, with where each plugin came from (``source``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        source = args[0] if args and isinstance(args[0], Registry) else None
        self.sources: dict[str, str] = dict(source.sources) if source is not None else {}

    def register(self, name: str, factory: PluginFactory, source: str = "") -> None:
        if name in self:
            raise ValueError(f"a plugin named {name!r} is already registered")
        self[name] = factory
        if source:
            self.sources[name] = source

    def merge(self, other: Registry) -> Registry:
        merged = Registry(self)
        for name, factory in other.items():
            merged.register(name, factory, other.sources.get(name, ""))
        return merged

    def source(self, name: str) -> str:
        return self.sources.get(name, "")

    def plugin_class(self, name: str) -> type | None:
        """The plugin's class (imported if lazy); ``None`` for a plain factory function."""
        factory = self[name]
        if isinstance(factory, LazyPlugin):
            return factory.load()
        return factory if isinstance(factory, type) else None

    def reads(self, name: str) -> tuple[Kind, ...]:
        """The kinds the plugin declares it reads (``reads`` on its class)."""
        cls = self.plugin_class(name)
        return reads_of(cls) if cls is not None else ()


def kinds_read(profiles: Iterable[Profile], registry: Registry) -> set[Kind]:
    """The union of the kinds the enabled plugins of ``profiles`` declare they read."""
    kinds: set[Kind] = set()
    for profile in profiles:
        for name in profile.plugin_names():
            kinds.update(registry.reads(name))
    return kinds
