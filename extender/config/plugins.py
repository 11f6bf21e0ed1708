"""Which plugins a config may name: in-tree ones, those of installed packages, and files.

* **Installed packages** declare plugins as entry points in the group ``kube_extender.plugins``
  (``Name = "package.module:Class"`` in their ``pyproject.toml``); the module is imported only
  when a profile enables the plugin.
* **Files that are not installed** are listed in our own ``ExtenderConfiguration`` section as
  ``pluginModules: ["module:Class", "path/to/file.py:Class"]``; a path is relative to the config
  file. The plugin's name is the class's ``name``.

A name may be registered once: a clash with an in-tree plugin or between two sources is a
config error naming both. :func:`check_plugin` is what the loader asks of every enabled
out-of-tree plugin: importable, a class named as registered, its constructor and methods
callable as the protocols call them (:func:`signature_problems`), implementing at least one
extension point.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path

from extender.framework.interfaces import (
    EXTENSION_POINTS,
    POINT_METHODS,
    BatchFilterPlugin,
    BatchNormalizeScore,
    BatchScorePlugin,
    EnqueueExtensions,
    PreBindPreFlightPlugin,
    PreFilterExtensions,
    ScoreExtensions,
)
from extender.framework.registry import LazyPlugin, PluginLoadError, Registry
from extender.plugins import IN_TREE, in_tree_registry

ENTRY_POINT_GROUP = "kube_extender.plugins"


@functools.cache
def points_of(cls: type) -> frozenset[str]:
    """The extension points a plugin class implements (its methods against the protocols).
    Once per class: an ``isinstance`` against a runtime-checkable protocol walks its
    members, and a profile asks for each plugin at each of its 14 points (0.14 s of the
    start-up's CPU before)."""
    return frozenset(point for point, proto in EXTENSION_POINTS.items() if isinstance(cls, proto))


# Protocols whose methods a plugin class may define besides the points' own: their
# signatures are checked too when the class has them (``score_extensions`` returning ``self``
# is the usual way to normalize, so ``normalize_score`` sits on the plugin class).
OPTIONAL_PROTOCOLS: tuple[type, ...] = (
    BatchFilterPlugin,
    BatchScorePlugin,
    BatchNormalizeScore,
    EnqueueExtensions,
    PreBindPreFlightPlugin,
    PreFilterExtensions,
    ScoreExtensions,
)


def _protocol_methods(proto: type) -> dict[str, inspect.Signature]:
    """The public methods a protocol declares (its own and its bases'), with signatures."""
    methods: dict[str, inspect.Signature] = {}
    for klass in reversed(proto.__mro__):
        if klass.__module__ != proto.__module__:
            continue  # Protocol, Generic, object
        for attr, value in vars(klass).items():
            if inspect.isfunction(value) and not attr.startswith("_"):
                methods[attr] = inspect.signature(value)
    return methods


def _shown(sig: inspect.Signature) -> str:
    """``(self, state, pod, node_info)``: the parameter names only."""
    return "(" + ", ".join(sig.parameters) + ")"


def _call_problem(cls: type, attr: str, expected: inspect.Signature) -> str | None:
    """Why ``cls().attr(...)`` cannot be called as ``expected`` says, or ``None``."""
    raw = inspect.getattr_static(cls, attr)
    value = getattr(cls, attr)
    if not callable(value):
        return f"{cls.__name__}.{attr} is a {type(value).__name__}, not a method"
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return None  # a builtin or C callable: nothing to inspect
    positional = len(expected.parameters) - 1  # without self
    # A plain function on the class takes the instance first; static and class methods do not.
    bound_self = not isinstance(raw, staticmethod | classmethod) and inspect.isfunction(value)
    try:
        sig.bind(*range(positional + bound_self))
    except TypeError:
        shown = _shown(sig)
        return (
            f"{cls.__name__}.{attr}{shown} does not take the arguments the runtime passes: "
            f"{attr}{_shown(expected)}"
        )
    return None


def _validate_args_problem(cls: type) -> str | None:
    """Why ``cls.validate_args(args)`` cannot be called on the class, or ``None``."""
    raw = inspect.getattr_static(cls, "validate_args")
    if isinstance(raw, classmethod | staticmethod):
        value = cls.validate_args
        try:
            inspect.signature(value).bind(None)
            return None
        except TypeError:
            shown = _shown(inspect.signature(value))
        except ValueError:
            return None  # no signature to inspect
    else:
        shown = _shown(inspect.signature(raw)) if inspect.isfunction(raw) else ""
    return (
        f"{cls.__name__}.validate_args{shown}: must be a classmethod taking (args); the "
        "loader calls it on the class, before any plugin is built"
    )


def signature_problems(cls: type) -> list[str]:
    """Mismatches between a plugin class and the protocols it (partly) implements, checked
    when the config loads so that a wrong method fails there instead of on the first pod:
    the constructor must take ``(args, handle)``; every point method and optional protocol
    method the class defines must take the protocol's arguments; a class that defines a
    point's method must define the rest of that point's protocol (``score`` needs
    ``score_extensions``); ``validate_args``, if defined, must be a classmethod taking
    ``(args)``."""
    problems: list[str] = []
    try:
        inspect.signature(cls).bind(None, None)
    except TypeError:
        problems.append(
            f"{cls.__name__}{_shown(inspect.signature(cls))}: the constructor must take "
            "(args, handle)"
        )
    except ValueError:
        pass  # no signature to inspect
    if hasattr(cls, "validate_args"):
        problem = _validate_args_problem(cls)
        if problem:
            problems.append(problem)
    checked: set[str] = set()
    for point, proto in EXTENSION_POINTS.items():
        if not hasattr(cls, POINT_METHODS[point]):
            continue
        methods = _protocol_methods(proto)
        missing = [attr for attr in methods if not hasattr(cls, attr)]
        if missing:
            problems.append(
                f"{cls.__name__} defines {POINT_METHODS[point]} but not "
                f"{', '.join(missing)} (the {point} point needs both; "
                "return None from a method you do not need)"
            )
        for attr, expected in methods.items():
            if attr not in checked and hasattr(cls, attr):
                checked.add(attr)
                problem = _call_problem(cls, attr, expected)
                if problem:
                    problems.append(problem)
    for proto in OPTIONAL_PROTOCOLS:
        for attr, expected in _protocol_methods(proto).items():
            if attr not in checked and hasattr(cls, attr):
                checked.add(attr)
                problem = _call_problem(cls, attr, expected)
                if problem:
                    problems.append(problem)
    return problems


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
    plugin_modules: Iterable[str] = (),
    base_dir: Path | None = None,
    classes: Iterable[type] = (),
) -> tuple[Registry, list[str]]:
    """In-tree plugins, then installed packages' entry points, then ``plugin_modules``, then
    ``classes`` (plugin classes a caller such as :mod:`extender.testing` registers by their
    ``name``; a class already registered under its name, e.g. by its own entry point, is
    not a clash).

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
    for cls in classes:
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            errors.append(f"class {cls.__name__} has no `name` (a non-empty str)")
            continue
        if name in registry and _same_class(registry, name, cls):
            continue
        _register(registry, name, cls, f"class {cls.__module__}.{cls.__qualname__}", errors)
    return registry, errors


def _same_class(registry: Registry, name: str, cls: type) -> bool:
    try:
        return registry.plugin_class(name) is cls
    except PluginLoadError:
        return False


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
    problems = signature_problems(cls)
    if problems:
        return f'plugin "{name}" ({source}): ' + "; ".join(problems)
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
