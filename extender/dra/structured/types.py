"""The allocator's public types: features, device IDs, the allocated state and errors.

Upstream: ``k8s.io/dynamic-resource-allocation/structured/internal/types.go`` (Features),
``structured/schedulerapi/types.go`` (DeviceID, SharedDeviceID, AllocatedState, consumed
capacity collections) and ``structured/internal/allocatedstate.go`` (IsDeviceAllocated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.dra.structured.capacity import Quantity

DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""

SharedDeviceID = tuple[str, str, str, str]
"""(driver, pool, device, shareID); shareID is "" for a device that is not shared."""

ConsumedCapacity = dict[str, Quantity]
"""Capacity name -> consumed amount (upstream ``schedulerapi.ConsumedCapacity``)."""

ConsumedCapacityCollection = dict[DeviceID, ConsumedCapacity]
"""Device -> the capacity consumed on it (upstream ``schedulerapi.ConsumedCapacityCollection``)."""

# resourceapi.AllocationResultsMaxSize: the most devices one claim can get.
ALLOCATION_RESULTS_MAX_SIZE = 32


@dataclass(frozen=True, slots=True)
class Features:
    """Optional allocator behaviour; kube-scheduler v1.36's defaults (every gate on but
    DRAListTypeAttributes)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding_and_status: bool = True
    consumable_capacity: bool = True
    list_type_attributes: bool = False


def shared_device_id(device_id: DeviceID, share_id: str | None) -> SharedDeviceID:
    """``MakeSharedDeviceID``: a missing share ID is the empty string."""
    return (device_id[0], device_id[1], device_id[2], share_id or "")


def consumed_capacity_from_json(values: Mapping[str, object]) -> ConsumedCapacity:
    """``consumedCapacity`` of a ``DeviceRequestAllocationResult`` as quantities."""
    return {name: Quantity.parse(value) for name, value in values.items()}


def insert_consumed(
    collection: ConsumedCapacityCollection, device_id: DeviceID, consumed: ConsumedCapacity
) -> None:
    """``ConsumedCapacityCollection.Insert``: add ``consumed`` to the device's entry."""
    entry = collection.get(device_id)
    if entry is None:
        collection[device_id] = dict(consumed)
        return
    for name, quantity in consumed.items():
        current = entry.get(name)
        entry[name] = quantity if current is None else current.add(quantity)


def remove_consumed(
    collection: ConsumedCapacityCollection, device_id: DeviceID, consumed: ConsumedCapacity
) -> None:
    """``ConsumedCapacityCollection.Remove``: subtract; an entry that becomes all zero goes."""
    entry = collection.get(device_id)
    if entry is None:
        return
    for name, quantity in consumed.items():
        current = entry.get(name)
        if current is not None:
            entry[name] = current.sub(quantity)
    if all(q.is_zero() for q in entry.values()):
        del collection[device_id]


@dataclass
class AllocatedState:
    """What is already allocated (by claims in the API or assumed in flight).

    ``aggregated_capacity`` values may be :class:`Quantity` or quantity strings as the API
    serves them (``consumedCapacity``).
    """

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: ConsumedCapacityCollection = field(default_factory=dict)


def is_device_allocated(device_id: DeviceID, state: AllocatedState) -> bool:
    """``IsDeviceAllocated``: fully allocated, shared, or with consumed capacity."""
    if device_id in state.allocated_devices:
        return True
    for shared in state.allocated_shared_device_ids:
        if shared[:3] == device_id:
            return True
    return device_id in state.aggregated_capacity


class AllocatorError(Exception):
    """A fatal allocation error (invalid claim, class or slice, CEL errors) with upstream's
    message text. Upstream's Filter returns it as an error status."""


class FailedAllocationOnNode(AllocatorError):
    """Allocation failed on this node and invalid pools were seen (upstream
    ``ErrFailedAllocationOnNode``): not fatal, the plugin reports the node unschedulable with
    this message."""


class AllocationTimeout(AllocatorError):
    """The deadline passed during the search (upstream: the context's DeadlineExceeded, which
    the plugin turns into "node X: timed out trying to allocate devices")."""
