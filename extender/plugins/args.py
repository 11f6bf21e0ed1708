"""Helpers for validating in-tree plugin args (upstream
``pkg/scheduler/apis/config/validation/validation_pluginargs.go``, whose field errors come from
``staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go``).

A plugin validates its args in ``__init__`` and raises one ``ValueError`` naming each bad field
as ``<path>: <kind>: <value>: <detail>``; the config loader reports that text verbatim, so these
helpers only format, they never decide what is valid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeGuard

ValueFormat = Callable[[Any], str]


def go_value(value: Any) -> str:
    """A field value as upstream prints it: strings quoted, everything else as is."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def invalid(path: str, value: Any, detail: str, quote: ValueFormat = go_value) -> str:
    """``field.Invalid``: ``<path>: Invalid value: <value>: <detail>``."""
    return f"{path}: Invalid value: {quote(value)}: {detail}"


def unsupported(
    path: str, value: Any, supported: Iterable[str] = (), quote: ValueFormat = go_value
) -> str:
    """``field.NotSupported``: the value, then the supported ones (quoted) when given."""
    message = f"{path}: Unsupported value: {quote(value)}"
    choices = ", ".join(f'"{s}"' for s in supported)
    return f"{message}: supported values: {choices}" if choices else message


def required(path: str, detail: str) -> str:
    """``field.Required``: ``<path>: Required value: <detail>``."""
    return f"{path}: Required value: {detail}"


def duplicate(path: str, value_text: str) -> str:
    """``field.Duplicate``, the value already formatted."""
    return f"{path}: Duplicate value: {value_text}"


def raise_errors(errors: list[str]) -> None:
    """Raise one ValueError carrying every field error, formatted as upstream's aggregate."""
    if len(errors) == 1:
        raise ValueError(errors[0])
    if errors:
        raise ValueError("[" + ", ".join(errors) + "]")


def is_int(value: Any) -> TypeGuard[int]:
    """An integer that is not a bool (YAML ``true`` is not a weight)."""
    return isinstance(value, int) and not isinstance(value, bool)


def string_list(value: Any, path: str, errors: list[str]) -> list[str]:
    """``value`` as a list of strings (``None``: empty); anything else is an error."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(invalid(path, str(value), "must be a list of strings"))
        return []
    return value
