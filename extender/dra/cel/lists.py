"""Kubernetes' ``lists`` CEL library on the C++ runtime's custom functions.

Upstream: ``k8s.io/apiserver/pkg/cel/library/lists.go`` (in the base environment since 1.0):
``<list>.isSorted()``, ``.sum()``, ``.min()``, ``.max()``, ``.indexOf(x)``, ``.lastIndexOf(x)``.

Upstream declares one overload per element type (``list_int_sum_int``, ...). The C++ runtime
dispatches on kinds, so a list of ints and a list of strings are one runtime signature: each
function is one overload on ``list(dyn)`` whose result is ``dyn``; ``check_call`` (run on the
checked AST) gives upstream's compile error for an element type the function does not take.
``indexOf`` / ``lastIndexOf`` of a string stay the string extension's.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2

_MIN_INT64, _MAX_INT64 = -(1 << 63), (1 << 63) - 1

# lists.go comparableTypes / summableTypes, as cel-go names them.
_DURATION, _TIMESTAMP = "google.protobuf.Duration", "google.protobuf.Timestamp"
COMPARABLE = frozenset(("int", "uint", "double", "bool", _DURATION, _TIMESTAMP, "string", "bytes"))
SUMMABLE = frozenset(("int", "uint", "double", _DURATION))
# function -> the element types it takes (the checker's list element type names).
ELEMENT_TYPES = {"isSorted": COMPARABLE, "min": COMPARABLE, "max": COMPARABLE, "sum": SUMMABLE}


class ListsError(Exception):
    """A runtime error; ``str(e)`` is upstream's text."""


def _native(value: Any) -> Any:
    """A value the runtime can take back (it refuses datetime objects from a function)."""
    if isinstance(value, datetime.timedelta):
        message = duration_pb2.Duration()
        message.FromTimedelta(value)
        return message
    if isinstance(value, datetime.datetime):
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(value)
        return stamp
    return value


def _comparable(value: Any) -> bool:
    return isinstance(value, int | float | str | bytes | datetime.timedelta | datetime.datetime)


def _compare(a: Any, b: Any) -> int:
    """cel-go's ``Compare`` of two values of one comparable type (bools: false < true)."""
    if type(a) is bool or type(b) is bool:
        if type(a) is not type(b):
            raise ListsError("no such overload")
    elif not (_comparable(a) and _comparable(b)):
        raise ListsError("no such overload")
    try:
        return -1 if a < b else (1 if a > b else 0)
    except TypeError:
        raise ListsError("no such overload") from None


def is_sorted(values: list[Any]) -> bool:
    for previous, current in zip(values, values[1:], strict=False):
        if _compare(previous, current) == 1:
            return False
    if len(values) == 1:
        _compare(values[0], values[0])
    return True


def list_sum(values: list[Any]) -> Any:
    if not values:
        return 0  # the int overload's zero: an empty literal list is list(int) to cel-go
    total: Any = values[0]
    if type(total) not in (int, float, datetime.timedelta):
        raise ListsError("no such overload")
    for value in values[1:]:
        if type(value) is bool or type(value) is not type(total):
            raise ListsError("no such overload")
        total = total + value
        if type(total) is int and not _MIN_INT64 <= total <= _MAX_INT64:
            raise ListsError("integer overflow")
    return _native(total)


def _extreme(name: str, prefer: int) -> Callable[[list[Any]], Any]:
    def pick(values: list[Any]) -> Any:
        if not values:
            raise ListsError(f"{name} called on empty list")
        result = values[0]
        _compare(result, result)
        for value in values[1:]:
            if _compare(result, value) == prefer:
                result = value
        return _native(result)

    return pick


list_min = _extreme("min", 1)
list_max = _extreme("max", -1)


def index_of(values: list[Any], item: Any, equal: Callable[[Any, Any], bool]) -> int:
    for i, value in enumerate(values):
        if equal(value, item):
            return i
    return -1


def last_index_of(values: list[Any], item: Any, equal: Callable[[Any, Any], bool]) -> int:
    for i in range(len(values) - 1, -1, -1):
        if equal(values[i], item):
            return i
    return -1
