"""The CEL cache for allocator tests: the real DRA CEL environment when it is there, otherwise a
table of the exact expressions upstream's allocator test table uses (expression -> Python
predicate), so the allocator can be tested before ``extender.dra.cel`` exists."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from extender.dra.structured.capacity import Quantity


class FakeCELError(Exception):
    pass


def _attr(device: Any, name: str) -> Any:
    attributes = device.attributes
    for key in (f"driver-a/{name}", name) if device.driver == "driver-a" else (f"driver-a/{name}",):
        if key in attributes:
            value = attributes[key]
            for kind in ("string", "int", "bool", "version"):
                if kind in value:
                    return value[kind]
    raise FakeCELError(f"no such key: {name}")


def _cap(device: Any, name: str) -> Decimal:
    capacity = device.capacity
    for key in (f"driver-a/{name}", name) if device.driver == "driver-a" else (f"driver-a/{name}",):
        if key in capacity:
            return Quantity.parse(capacity[key]["value"]).value
    raise FakeCELError(f"no such key: {name}")


def _q(text: str) -> Decimal:
    return Quantity.parse(text).value


_TABLE = {
    'device.driver == "driver-a"': lambda d: d.driver == "driver-a",
    'device.driver == "driver-b"': lambda d: d.driver == "driver-b",
    'device.driver == "driver-a" && device.allowMultipleAllocations == true': lambda d: (
        d.driver == "driver-a" and bool(d.allow_multiple_allocations)
    ),
    'device.driver == "driver-a" && device.allowMultipleAllocations == false': lambda d: (
        d.driver == "driver-a" and not d.allow_multiple_allocations
    ),
    'device.driver == "driver-a" && device.attributes["driver-a"].selected': lambda d: (
        d.driver == "driver-a" and _attr(d, "selected")
    ),
    'device.attributes["driver-a"].kind == "shared" || device.attributes["driver-a"].kind == "fallback"': lambda d: (  # noqa: E501
        _attr(d, "kind") in ("shared", "fallback")
    ),
    'device.attributes["driver-a"].boolAttribute': lambda d: _attr(d, "boolAttribute"),
    'device.attributes["driver-a"].special': lambda d: _attr(d, "special"),
}
for _name, _value in [
    ("generation", "v6"), ("generation", "v5"), ("type", "X"), ("type", "Y"), ("kind", "shared"),
    ("stringAttribute", "cap"), ("stringAttribute", "fb"), ("mode", "b"),
    ("kind", "counteronly"), ("kind", "gate"),
]:  # fmt: skip
    _TABLE[f'device.attributes["driver-a"].{_name} == "{_value}"'] = lambda d, n=_name, v=_value: (
        _attr(d, n) == v
    )
for _amount in ("1Gi", "2Gi", "4Gi", "6Gi", "8Gi"):
    _TABLE[f'device.capacity["driver-a"].memory.compareTo(quantity("{_amount}")) >= 0'] = (
        lambda d, a=_amount: _cap(d, "memory") >= _q(a)
    )
for _amount in ("2", "4"):
    _TABLE[f'device.capacity["driver-a"]["capacity-0"].compareTo(quantity("{_amount}")) >= 0'] = (
        lambda d, a=_amount: _cap(d, "capacity-0") >= _q(a)
    )


@dataclass
class _Compiled:
    expression: str
    error: Exception | None

    def device_matches(self, device: Any) -> bool:
        # Like the real environment, an attribute of a kind it cannot convert is an error.
        for name, value in device.attributes.items():
            if not any(kind in value for kind in ("string", "int", "bool", "version")):
                raise FakeCELError(f"attribute {name}: unsupported attribute value")
        return bool(_TABLE[self.expression](device))


class _FakeCache:
    def get_or_compile(self, expression: str) -> _Compiled:
        if expression not in _TABLE:
            return _Compiled(expression, FakeCELError(f"undeclared reference to {expression!r}"))
        return _Compiled(expression, None)


@dataclass
class FakeCELDevice:
    driver: str
    attributes: dict
    capacity: dict
    allow_multiple_allocations: Any


def _install_fake_module() -> None:
    """Until ``extender.dra.cel`` exists, stand in for it (tests only)."""
    module = types.ModuleType("extender.dra.cel")
    module.CELDevice = FakeCELDevice  # type: ignore[attr-defined]
    module.CELError = FakeCELError  # type: ignore[attr-defined]
    module.CELCache = lambda max_entries: _FakeCache()  # type: ignore[attr-defined]
    sys.modules["extender.dra.cel"] = module


try:
    import extender.dra.cel  # noqa: F401
except ImportError:
    _install_fake_module()


def cel_cache() -> Any:
    from extender.dra.cel import CELCache

    return CELCache(100)
