"""CEL's equality on the Python values the runtime hands over, and cel-go's ``ext.Sets``
(``sets.contains``, ``sets.equivalent``, ``sets.intersects``) finding members by hash."""

from __future__ import annotations

import datetime
from collections.abc import Hashable
from typing import Any

from cel_expr_python import cel

from .meter import _CHECK_EVERY, _current_meter, _tick


def _cel_equal(a: Any, b: Any) -> bool:
    """CEL's ``==`` on the Python values the runtime hands over (a bool is no number)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return _dict_equal(a, b)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    if isinstance(a, cel.Type) or isinstance(b, cel.Type):
        # A type value's == takes only another type (it raises on anything else).
        return isinstance(a, cel.Type) and isinstance(b, cel.Type) and bool(a == b)
    return bool(a == b)


_MISSING = object()


def _dict_equal(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    """Same keys (a bool key is not the number 1), equal values."""
    if len(a) != len(b):
        return False
    others = {(type(k) is bool, k): v for k, v in b.items()}
    for k, v in a.items():
        other = others.get((type(k) is bool, k), _MISSING)
        if other is _MISSING or not _cel_equal(v, other):
            return False
    return True


# --- sets.*: membership by hash, with CEL's equality -------------------------------------


class _Unkeyable(Exception):
    """A value with no key: compared pairwise (``_cel_equal``)."""


class _Unequal(Exception):
    """A value equal to nothing, itself included: NaN, or a list or map holding it."""


# Messages keyed by type and content: our own value types, whose fields are strings and ints
# (their serialization is their value). Others are compared pairwise.
_KEYED_MESSAGES = frozenset(("kubernetes.Quantity", "kubernetes.Semver", "net.IP", "net.CIDR"))


def _key(value: Any) -> Hashable:
    """A key equal for values CEL's ``==`` finds equal (as ``_cel_equal``), else different.

    Numbers are their Python selves (``1 == 1.0``, and int and uint are both ``int``); every
    other kind is a tuple tagged with its kind, so a bool is not the number 1 and a string is
    not bytes. Raises ``_Unequal`` for a value equal to nothing and ``_Unkeyable`` for a value
    of another kind.
    """
    kind = type(value)
    if kind is int or kind is str:
        return value
    if kind is list:
        return ("list", tuple([_key(v) for v in value]))
    if kind is float:
        if value != value:
            raise _Unequal
        return value
    if kind is bool:
        return ("bool", value)
    if kind is dict:
        return ("map", frozenset([(_key(k), _key(v)) for k, v in value.items()]))
    if kind is bytes or kind is bytearray:
        return ("bytes", bytes(value))
    if value is None:
        return ("null",)
    if kind is datetime.timedelta:
        return ("duration", value)
    if kind is datetime.datetime:
        return ("timestamp", value)
    if isinstance(value, cel.Type):
        return ("type", value.name())
    name = getattr(getattr(value, "DESCRIPTOR", None), "full_name", None)
    if name in _KEYED_MESSAGES:
        return ("message", name, value.SerializeToString(deterministic=True))
    raise _Unkeyable


class _Index:
    """The elements of a list by key; those with no key are compared pairwise."""

    __slots__ = ("values", "keys", "loose")

    def __init__(self, values: list[Any]) -> None:
        self.values = values
        self.keys: set[Hashable] = set()
        self.loose: list[Any] = []
        meter = _current_meter()
        for i, value in enumerate(values):
            if meter is not None and i % _CHECK_EVERY == 0:
                meter.check()
            try:
                self.keys.add(_key(value))
            except _Unkeyable:
                self.loose.append(value)
            except _Unequal:
                pass

    def has(self, value: Any) -> bool:
        """Whether an element of the list equals ``value``."""
        try:
            key = _key(value)
        except _Unkeyable:
            return _any_equal(self.values, value)
        except _Unequal:
            return False
        return key in self.keys or (bool(self.loose) and _any_equal(self.loose, value))


def _any_equal(values: list[Any], value: Any) -> bool:
    for other in values:
        _tick()
        if _cel_equal(other, value):
            return True
    return False


def _probe(index: _Index, values: list[Any], want: bool) -> bool:
    """Whether some element of ``values`` is (``want``) or is not in ``index``."""
    meter = _current_meter()
    for i, value in enumerate(values):
        if meter is not None and i % _CHECK_EVERY == 0:
            meter.check()
        if index.has(value) is want:
            return True
    return False


def _sets_contains(a: list[Any], b: list[Any]) -> bool:
    """ext.Sets ``sets.contains``: every element of b is in a."""
    return not b or not _probe(_Index(a), b, False)


def _sets_equivalent(a: list[Any], b: list[Any]) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return bool(a) and bool(b) and _probe(_Index(a), b, True)
