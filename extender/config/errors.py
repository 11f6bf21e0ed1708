"""Config errors: every message names the file and the field path."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A config that cannot be used; every line names the file and the field path."""


def flatten(messages: Any, prefix: str = "") -> list[str]:
    """marshmallow's nested error dict as ``path: message`` lines."""
    if isinstance(messages, dict):
        lines = []
        for key, value in messages.items():
            if key == "_schema":
                part = prefix
            elif isinstance(key, int):
                part = f"{prefix}[{key}]"
            else:
                part = f"{prefix}.{key}" if prefix else str(key)
            lines.extend(flatten(value, part))
        return lines
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        text = "; ".join(_MESSAGES.get(m, m) for m in messages)
        return [f"{prefix}: {text}" if prefix else text]
    if isinstance(messages, list):
        return [line for item in messages for line in flatten(item, prefix)]
    return [f"{prefix}: {messages}" if prefix else str(messages)]


# marshmallow's stock messages, reworded in the style of the others.
_MESSAGES = {
    "Unknown field.": "unknown field",
    "Missing data for required field.": "required",
    "Not a valid string.": "must be a string",
    "Not a valid list.": "must be a list",
    "Not a valid mapping type.": "must be a mapping",
    "Invalid input type.": "must be a mapping",
    "Field may not be null.": "must not be null",
}


def fail(source: str, lines: list[str] | str) -> ConfigError:
    if isinstance(lines, str):
        lines = [lines]
    return ConfigError("\n".join(f"{source}: {line}" for line in lines))
