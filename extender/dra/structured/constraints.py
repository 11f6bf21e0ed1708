"""Claim constraints across requests: ``matchAttribute`` and ``distinctAttribute``.

Upstream: ``structured/internal/incubating/allocator_incubating.go`` (matchAttributeConstraint,
lookupAttribute) and ``constraint.go`` (distinctAttributeConstraint). Constraints are monotonic:
once a device is refused, adding more devices cannot make the set acceptable again, so the
search backtracks at the first refusal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from extender.dra.structured.types import DeviceID

# The value kinds of a DeviceAttribute, in the order upstream's type switch checks them.
_VALUE_KINDS = ("string", "int", "bool", "version")


def _kind(attribute: dict) -> str | None:
    for kind in _VALUE_KINDS:
        if attribute.get(kind) is not None:
            return kind
    return None


def lookup_attribute(device: dict, device_id: DeviceID, name: str) -> dict | None:
    """``lookupAttribute``: a fully qualified name, or the bare name when the domain is the
    device's driver."""
    attributes = device.get("attributes") or {}
    if name in attributes:
        return attributes[name]
    domain, slash, short = name.partition("/")
    if not slash or domain != device_id[0]:
        return None
    return attributes.get(short)


class Constraint(Protocol):
    def add(self, request: str, subrequest: str, device: dict, device_id: DeviceID) -> bool: ...

    def remove(self, request: str, subrequest: str, device: dict, device_id: DeviceID) -> None: ...


class _RequestFilter:
    __slots__ = ("request_names",)

    def __init__(self, request_names: Iterable[str]) -> None:
        self.request_names = frozenset(request_names)

    def applies(self, request: str, subrequest: str) -> bool:
        """An empty list means every request; a subrequest counts under its own full name
        ("request/subrequest") and under its parent's name."""
        if not self.request_names:
            return True
        if not subrequest:
            return request in self.request_names
        return request in self.request_names or f"{request}/{subrequest}" in self.request_names


class MatchAttribute(_RequestFilter):
    """All devices of the requests share the same attribute value."""

    __slots__ = ("attribute_name", "attribute", "num_devices")

    def __init__(self, request_names: Iterable[str], attribute_name: str) -> None:
        super().__init__(request_names)
        self.attribute_name = attribute_name
        self.attribute: dict | None = None
        self.num_devices = 0

    def add(self, request: str, subrequest: str, device: dict, device_id: DeviceID) -> bool:
        if not self.applies(request, subrequest):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attribute = attribute
            self.num_devices = 1
            return True
        kind = _kind(attribute)
        if kind is None or self.attribute is None:
            return False
        wanted = self.attribute.get(kind)
        # Version strings are in semver's minimal form, so equal means equal text.
        if wanted is None or type(wanted) is not type(attribute[kind]) or wanted != attribute[kind]:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, subrequest: str, device: dict, device_id: DeviceID) -> None:
        if not self.applies(request, subrequest):
            return
        self.num_devices -= 1


class DistinctAttribute(_RequestFilter):
    """No two devices of the requests share the attribute value (tracked per request name,
    as upstream does)."""

    __slots__ = ("attribute_name", "attributes", "num_devices")

    def __init__(self, request_names: Iterable[str], attribute_name: str) -> None:
        super().__init__(request_names)
        self.attribute_name = attribute_name
        self.attributes: dict[str, dict] = {}
        self.num_devices = 0

    def add(self, request: str, subrequest: str, device: dict, device_id: DeviceID) -> bool:
        if not self.applies(request, subrequest):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attributes[request] = attribute
            self.num_devices = 1
            return True
        if not self._distinct(attribute):
            return False
        self.attributes[request] = attribute
        self.num_devices += 1
        return True

    def _distinct(self, attribute: dict) -> bool:
        kind = _kind(attribute)
        for existing in self.attributes.values():
            if kind is None:
                return False
            other = existing.get(kind)
            if (
                other is not None
                and type(other) is type(attribute[kind])
                and other == attribute[kind]
            ):
                return False
        return True

    def remove(self, request: str, subrequest: str, device: dict, device_id: DeviceID) -> None:
        if not self.applies(request, subrequest):
            return
        self.attributes.pop(request, None)
        self.num_devices -= 1
