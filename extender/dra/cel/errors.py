"""CEL errors and their texts: the exceptions a selector raises, and the C++ runtime's and
checker's words rewritten to cel-go's (``no such key: x``, ``division by zero``, ``no such
overload: f``, the result conversion errors of ``DeviceMatches`` in upstream
``k8s.io/dynamic-resource-allocation/cel/compile.go``)."""

from __future__ import annotations

import re

COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
# The C++ runtime's own bound (cel-expr-python: 10,000 comprehension iterations an evaluation).
_ITERATION_BUDGET = "Iteration budget exceeded"


class CELError(Exception):
    """A compile or runtime error; ``str(e)`` is upstream's message."""


class CELDeadlineExceeded(CELError):
    """The evaluation passed its deadline (cel-go's interrupt): no answer for the device."""


# cel-go's EvalCancelledError for an interrupted evaluation.
INTERRUPTED = "operation interrupted"


# --- error texts: the C++ runtime's words to cel-go's ---------------------------------------


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")


def _strip_status(message: str) -> str:
    """Drop absl's ``CODE: `` prefix and `` [CODE]`` suffix."""
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", message, count=1))


_KEY_NOT_FOUND = "Key not found in map : "
_NO_OVERLOAD = "No matching overloads found"


def _runtime_message(message: str) -> str:
    message = _strip_status(message)
    if message.startswith(_KEY_NOT_FOUND):
        key = message[len(_KEY_NOT_FOUND) :]
        if len(key) >= 2 and key[0] == key[-1] == '"':
            key = key[1:-1]
        return f"no such key: {key}"
    if message == _ITERATION_BUDGET:
        return COST_LIMIT_EXCEEDED
    if message == "divide by zero":
        return "division by zero"
    if message.startswith(_NO_OVERLOAD):
        # "No matching overloads found : (int64).isGreaterThan(struct)" -> the function name
        names = re.findall(r"([^\s(),]+)\(", message[len(_NO_OVERLOAD) :])
        return f"no such overload: {names[-1].lstrip('.')}" if names else "no such overload"
    if message.startswith("Index error: index="):
        found = re.match(r"Index error: index=(-?\d+) size=(\d+)", message)
        if found:
            return f"index '{found[1]}' out of range in list size '{found[2]}'"
    return message


# cel-go's ConvertToNative(bool) errors, by the result's type (the reachable ones: a selector's
# result is only not bool when its type is dyn, i.e. an attribute or capacity value).
_CONVERSION_ERRORS = {
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "string": "unsupported native conversion from string to 'bool'",
    "double": "type conversion error from Double to 'bool'",
    "bytes": "type conversion error from Bytes to 'bool'",
    "null_type": "type conversion error from 'null_type' to 'bool'",
    "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'",
    "kubernetes.Quantity": "type conversion error from 'Quantity' to 'bool'",
}


def _not_bool(type_name: str) -> str:
    """``DeviceMatches``' error for a result that is not a bool."""
    if type_name.startswith("list("):
        detail = "type conversion error from list to 'bool'"
    elif type_name.startswith("map("):
        detail = "unsupported type conversion: bool to map"
    else:
        detail = _CONVERSION_ERRORS.get(
            type_name, f"type conversion error from '{type_name}' to 'bool'"
        )
    return f"CEL result of type {type_name} could not be converted to bool: {detail}"


def _type_name(name: str) -> str:
    """A C++ checker type name in cel-go's spelling (``LIST<INT>`` -> ``list(int)``)."""
    simple = {
        "BOOL": "bool",
        "INT": "int",
        "UINT": "uint",
        "DOUBLE": "double",
        "STRING": "string",
        "BYTES": "bytes",
        "NULL": "null_type",
        "DYN": "dyn",
        "DURATION": "google.protobuf.Duration",
        "TIMESTAMP": "google.protobuf.Timestamp",
        "ERROR": "*error*",
    }
    if name in simple:
        return simple[name]
    if "<" in name and name.endswith(">"):
        head, _, inner = name.partition("<")
        args = _split_type_args(inner[:-1])
        converted = ", ".join(_type_name(a) for a in args)
        return f"{_type_name(head) if head not in ('LIST', 'MAP', 'TYPE') else head.lower()}" + (
            f"({converted})"
        )
    return name


def _split_type_args(text: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return args


_UNDEFINED_FIELD = re.compile(r"undefined field '([^']*)' not found in struct '[^']*'")


def _compile_message(message: str) -> str:
    """A C++ checker error in cel-go's words."""
    return _UNDEFINED_FIELD.sub(r"undefined field '\1'", _strip_status(message))
