"""The bridge to the structured allocator (``extender.dra.structured``, upstream
``staging/src/k8s.io/dynamic-resource-allocation/structured``): the feature gates it gets and
the allocated state it starts from, in one place.

The allocator package is imported on first use, so a profile without DynamicResources never
loads CEL.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .manager import AllocatedDevices


@dataclass(frozen=True)
class Features:
    """The DRA feature gates of kube-scheduler v1.36 (``pkg/features/kube_features.go``):
    the default-on ones are on, the alpha ones off."""

    prioritized_list: bool = True  # DRAPrioritizedList
    admin_access: bool = True  # DRAAdminAccess
    partitionable_devices: bool = True  # DRAPartitionableDevices
    device_taints: bool = True  # DRADeviceTaints
    consumable_capacity: bool = True  # DRAConsumableCapacity
    extended_resource: bool = True  # DRAExtendedResource
    resource_claim_device_status: bool = True  # DRAResourceClaimDeviceStatus
    device_binding_conditions: bool = True  # DRADeviceBindingConditions
    scheduler_filter_timeout: bool = True  # DRASchedulerFilterTimeout

    @property
    def binding_conditions(self) -> bool:
        return self.device_binding_conditions and self.resource_claim_device_status


DEFAULT_FEATURES = Features()


def structured() -> Any:
    return importlib.import_module("extender.dra.structured")


def allocator_features(features: Features) -> Any:
    """``AllocatorFeatures``: the allocator's view of the gates."""
    return structured().Features(
        admin_access=features.admin_access,
        prioritized_list=features.prioritized_list,
        partitionable_devices=features.partitionable_devices,
        device_taints=features.device_taints,
        device_binding_and_status=features.binding_conditions,
        consumable_capacity=features.consumable_capacity,
    )


def new_cel_cache() -> Any:
    # Upstream keeps the 10 most recent compiled expressions across cycles.
    return importlib.import_module("extender.dra.cel").CELCache(10)


def new_allocator(
    features: Features,
    allocated: AllocatedDevices,
    class_lister: Callable[[str], dict | None],
    slices: Sequence[dict],
    cel_cache: Any,
) -> Any:
    """``structured.NewAllocator`` over the allocated state; ``.allocate(node, claims,
    deadline)`` answers per node."""
    module = structured()
    capacity: dict = {}
    for device, consumed in allocated.consumed:
        module.insert_consumed(capacity, device, module.consumed_capacity_from_json(consumed))
    state = module.AllocatedState(
        allocated_devices=allocated.devices,
        allocated_shared_device_ids=allocated.shared,
        aggregated_capacity=capacity,
    )
    return module.Allocator(allocator_features(features), state, class_lister, slices, cel_cache)


def allocation_errors() -> tuple[type[Exception], type[Exception], type[Exception]]:
    """(AllocatorError, AllocationTimeout, FailedAllocationOnNode) of the allocator package:
    fatal, past the deadline, and not on this node (both others are AllocatorErrors)."""
    if not _ERRORS:  # asked per node: the import machinery once
        module = structured()
        _ERRORS.extend(
            (module.AllocatorError, module.AllocationTimeout, module.FailedAllocationOnNode)
        )
    return _ERRORS[0], _ERRORS[1], _ERRORS[2]


_ERRORS: list[type[Exception]] = []
