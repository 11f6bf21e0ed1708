"""A device as a selector sees it: :class:`CELDevice` (the input), its CEL values
(``device.attributes`` and ``device.capacity`` as upstream's ``DeviceMatches`` builds them, in
``k8s.io/dynamic-resource-allocation/cel/compile.go``) and the cache that builds them once per
device object."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.framework import quantity as quantity_lib

from . import semver as semver_lib
from .errors import CELError
from .types import _DeviceMsg, _quantity_msg_of, _semver_msg_of


@dataclass(frozen=True, slots=True, weakref_slot=True)
class CELDevice:
    """The input of a selector: one device of a ResourceSlice, as the API serves it.

    Weakly referenceable: the caches of its values and of each selector's answer hold it
    weakly, so a deleted slice's devices (and all that was derived from them) are freed."""

    driver: str
    # name -> {"int": 1} | {"bool": True} | {"string": "x"} | {"version": "1.2.3"};
    # names are "domain/id" or a bare "id" (then the driver is the domain).
    attributes: Mapping[str, Mapping[str, Any]]
    # name -> {"value": "80Gi", ...} (resource.k8s.io/v1 DeviceCapacity)
    capacity: Mapping[str, Mapping[str, Any]]
    allow_multiple_allocations: bool | None = None


def _attribute_value(name: str, attribute: Mapping[str, Any]) -> Any:
    """``getAttributeValue``: the one value of a DeviceAttribute (list values: gate off)."""
    # type() before isinstance(): this runs for every attribute of every device.
    if type(attribute) is not dict and not isinstance(attribute, Mapping):
        raise CELError(f"attribute {name}: unsupported attribute value")
    value = attribute.get("int")
    if type(value) is int and _MIN_INT64 <= value <= _MAX_INT64:
        return value
    value = attribute.get("bool")
    if type(value) is bool:
        return value
    value = attribute.get("string")
    if type(value) is str:
        return value
    value = attribute.get("version")
    if type(value) is str:
        try:
            return _semver_msg_of(value)
        except semver_lib.SemverError as e:
            raise CELError(f"attribute {name}: parse semantic version: {e}") from None
    raise CELError(f"attribute {name}: unsupported attribute value")


_MIN_INT64, _MAX_INT64 = -(1 << 63), (1 << 63) - 1


def _split_name(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def _capacity_value(name: str, capacity: Mapping[str, Any]) -> Any:
    is_mapping = type(capacity) is dict or isinstance(capacity, Mapping)
    value = capacity.get("value") if is_mapping else None
    if type(value) not in (str, int, float):
        raise CELError(f"capacity {name}: missing value")
    try:
        return _quantity_msg_of(str(value))
    except quantity_lib.QuantityError as e:
        raise CELError(f"capacity {name}: {e}") from None


def _device_maps(device: CELDevice) -> tuple[dict[str, Any], dict[str, Any]]:
    """device.attributes and device.capacity as CEL values (``DeviceMatches``)."""
    # The API's types, checked: a device from a file or a webhook may hold anything.
    if type(device.driver) is not str:
        raise CELError("device driver: not a string")
    for label, value in (("attributes", device.attributes), ("capacity", device.capacity)):
        if not isinstance(value, Mapping) or not all(type(k) is str for k in value):
            raise CELError(f"device {label}: not a map of names")
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        value = _attribute_value(name, attribute)
        domain, ident = _split_name(name, device.driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split_name(name, device.driver)
        capacity.setdefault(domain, {})[ident] = _capacity_value(name, cap)
    return attributes, capacity


class _DeviceRef(weakref.ref):
    """A weak reference to a cached CELDevice, with the cache key and the cached value: the
    entry goes when the device does (a deleted or replaced slice), not when the cache fills."""

    __slots__ = ("key", "value", "owner")
    key: int
    value: Any  # the cached answer (None for the values cache: the entry holds the ref)
    owner: dict[int, Any]  # the cache holding the entry


class _DeviceValues:
    """A device's CEL values, built once: every selector of every pod reads the same device."""

    __slots__ = ("ref", "message", "attributes", "capacity", "error")

    def __init__(self, device: CELDevice) -> None:
        self.ref: _DeviceRef | None = None  # set by _device_values: the device, weakly
        self.message: Any = None
        self.error: CELError | None = None
        self.attributes: dict[str, Any] = {}
        self.capacity: dict[str, Any] = {}
        try:
            self.attributes, self.capacity = _device_maps(device)
            self.message = _DeviceMsg(
                driver=device.driver,
                allowMultipleAllocations=device.allow_multiple_allocations is True,
            )
        except CELError as e:
            self.error = e
        except (ValueError, TypeError, OverflowError) as e:
            # Input no API server would have taken (a device from a file may hold anything).
            self.error = CELError(f"invalid device: {e}")


# Keyed by identity (a CELDevice holds dicts: it has no hash). The allocator builds one
# CELDevice per device of a ResourceSlice and keeps it while the slice is unchanged, so a
# device's values are built once, not once a selector and pod; its mappings must not change.
# Entries hold the device weakly and leave with it.
_DEVICE_CACHE_SIZE = 8192
_DEVICE_CACHE: OrderedDict[int, _DeviceValues] = OrderedDict()
_DEVICE_CACHE_LOCK = threading.Lock()


def _drop_entry(ref: Any) -> None:
    """The device of a cache entry is gone: drop the entry (no lock: this runs wherever the
    last reference went, maybe under the cache's lock; one dict operation is atomic)."""
    owner, key = ref.owner, ref.key
    entry = owner.get(key)
    if entry is ref or getattr(entry, "ref", None) is ref:
        owner.pop(key, None)
        if not owner:
            owner.clear()  # an emptied dict keeps its table; clear() gives it back


def _device_ref(device: CELDevice, owner: dict, value: Any) -> _DeviceRef:
    ref = _DeviceRef(device, _drop_entry)
    ref.key, ref.value, ref.owner = id(device), value, owner
    return ref


def _device_values(device: CELDevice) -> _DeviceValues:
    key = id(device)
    with _DEVICE_CACHE_LOCK:
        entry = _DEVICE_CACHE.get(key)
        if entry is not None and entry.ref is not None and entry.ref() is device:
            _DEVICE_CACHE.move_to_end(key)
            return entry
    entry = _DeviceValues(device)
    entry.ref = _device_ref(device, _DEVICE_CACHE, None)
    with _DEVICE_CACHE_LOCK:
        _DEVICE_CACHE[key] = entry
        _DEVICE_CACHE.move_to_end(key)
        while len(_DEVICE_CACHE) > _DEVICE_CACHE_SIZE:
            _DEVICE_CACHE.popitem(last=False)
    return entry
