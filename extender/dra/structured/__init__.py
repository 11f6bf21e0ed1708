"""The structured allocator of Dynamic Resource Allocation (upstream
``k8s.io/dynamic-resource-allocation/structured``, the "incubating" implementation that
kube-scheduler v1.36 uses with its default feature gates).

``Allocator(features, allocated_state, class_lister, slices, cel_cache).allocate(node, claims,
deadline)`` picks devices for claims on one node: one ``AllocationResult`` dict per claim, ``None``
when they do not fit, :class:`AllocatorError` for invalid input.
"""

from extender.dra.structured.allocator import Allocator
from extender.dra.structured.capacity import Quantity, QuantityError
from extender.dra.structured.pools import Pool, gather_pools, node_matches
from extender.dra.structured.types import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocatedState,
    AllocationTimeout,
    AllocatorError,
    ConsumedCapacity,
    ConsumedCapacityCollection,
    DeviceID,
    FailedAllocationOnNode,
    Features,
    SharedDeviceID,
    consumed_capacity_from_json,
    insert_consumed,
    is_device_allocated,
    remove_consumed,
    shared_device_id,
)

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocatedState",
    "AllocationTimeout",
    "Allocator",
    "AllocatorError",
    "ConsumedCapacity",
    "ConsumedCapacityCollection",
    "DeviceID",
    "FailedAllocationOnNode",
    "Features",
    "Pool",
    "Quantity",
    "QuantityError",
    "SharedDeviceID",
    "consumed_capacity_from_json",
    "gather_pools",
    "insert_consumed",
    "is_device_allocated",
    "node_matches",
    "remove_consumed",
    "shared_device_id",
]
