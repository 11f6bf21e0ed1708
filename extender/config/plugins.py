"""Which plugins a config may name: in-tree ones, those of installed packages, and files.

* **Installed packages** declare plugins as entry points in the group ``kube_extender.plugins``
  (``Name = "package.module:Class"`` in their ``pyproject.toml``); the module is imported only
  when a profile enables the plugin.
* **Files that are not installed** are listed in our own ``ExtenderConfiguration`` section as
  ``pluginModules: ["module:Class", "path/to/file.py:Class"]``; a path is relative to the config
  file. The plugin's name is the class's ``name``.

A name may be registered once: a clash with an in-tree plugin or between two sources is a
config error naming both. :func:`check_plugin` is what the loader asks of every enabled
out-of-tree plugin: importable, a class named as registered, implementing at least one
extension point.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path

from extender.framework.interfaces import EXTENSION_POINTS
from extender.framework.registry import LazyPlugin, PluginLoadError, Registry
from extender.plugins import IN_TREE, in_tree_registry

ENTRY_POINT_GROUP = "kube_extender.plugins"


def points_of(cls: type) -> frozenset[str]:
    """The extension points a plugin class implements (its methods against the protocols)."""
    return frozenset(point for point, proto in EXTENSION_POINTS.items() if isinstance(cls, proto))


def _load_file_class(reference: str, base_dir: Path) -> type:
    """``path/to/file.py:Class``, imported under a private module name."""
    path_text, _, attr = reference.rpartition(":")
    path = Path(path_text)
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise PluginLoadError(f"no such file: {path}")
    module_name = f"kube_extender_plugin_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise PluginLoadError(f"cannot import {path}: {type(exc).__name__}: {exc}") from exc
    cls = getattr(module, attr, None)
    if not isinstance(cls, type):
        raise PluginLoadError(f"{path} has no class {attr!r}")
    return cls


def load_reference(reference: str, base_dir: Path) -> type:
    """The class of a ``pluginModules`` entry."""
    module, sep, attr = reference.rpartition(":")
    if not sep or not module or not attr:
        raise PluginLoadError(f"{reference!r}: expected 'module:Class' or 'file.py:Class'")
    if module.endswith(".py") or "/" in module:
        return _load_file_class(reference, base_dir)
    return LazyPlugin(reference).load()


def plugin_registry(
    plugin_modules: Iterable[str] = (), base_dir: Path | None = None
) -> tuple[Registry, list[str]]:
    """In-tree plugins, then installed packages' entry points, then ``plugin_modules``.

    Returns the registry and the problems found (clashes, modules that cannot be loaded),
    each a line naming the source.
    """
    registry = in_tree_registry()
    errors: list[str] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        source = f"package {dist.name} {dist.version}" if dist is not None else ep.value
        _register(registry, ep.name, LazyPlugin(ep.value), source, errors)
    for i, reference in enumerate(plugin_modules):
        where = f"pluginModules[{i}]"
        try:
            cls = load_reference(reference, base_dir or Path.cwd())
        except PluginLoadError as exc:
            errors.append(f"{where}: {exc}")
            continue
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            errors.append(f"{where}: class {cls.__name__} has no `name` (a non-empty str)")
            continue
        _register(registry, name, cls, f"pluginModules {reference}", errors, where)
    return registry, errors


def _register(
    registry: Registry,
    name: str,
    factory: LazyPlugin | type,
    source: str,
    errors: list[str],
    where: str = "",
) -> None:
    if name in registry:
        other = registry.source(name)
        what = "the in-tree plugin" if other == IN_TREE else f"the plugin from {other}"
        prefix = f"{where}: " if where else ""
        errors.append(f'{prefix}plugin "{name}" from {source} clashes with {what} "{name}"')
        return
    registry.register(name, factory, source)


def check_plugin(registry: Registry, name: str) -> str | None:
    """Why an enabled out-of-tree plugin cannot run, or ``None``."""
    source = registry.source(name)
    try:
        cls = registry.plugin_class(name)
    except PluginLoadError as exc:
        return f'plugin "{name}" ({source}): {exc}'
    if cls is None:
        return None  # a plain factory function: nothing to check before it runs
    if getattr(cls, "name", None) != name:
        return (
            f'plugin "{name}" ({source}): class {cls.__name__} has name '
            f"{getattr(cls, 'name', None)!r}; it must equal the registered name"
        )
    if not points_of(cls):
        points = ", ".join(EXTENSION_POINTS)
        return (
            f'plugin "{name}" ({source}): class {cls.__name__} implements no extension point '
            f"(one of: {points})"
        )
    return None


def describe(registry: Registry) -> str:
    """The registered plugins with their sources, for "unknown plugin" errors."""
    outside = sorted(n for n in registry if registry.source(n) != IN_TREE)
    in_tree = sorted(n for n in registry if registry.source(n) == IN_TREE)
    parts = [f"in-tree: {', '.join(in_tree)}"]
    parts += [f"{n} ({registry.source(n)})" for n in outside]
    return "; ".join(parts)
