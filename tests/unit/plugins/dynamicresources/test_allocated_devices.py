"""DynamicResources' allocated state (upstream ``allocateddevices.go``,
``foreachAllocatedDevice``): a result holding a share of a multi-allocation device (a
``shareID``) takes that share and adds its consumed capacity, per device, across claims;
admin-access results take nothing."""

from __future__ import annotations

from extender.plugins.dynamicresources.allocation import Features, new_allocator, new_cel_cache
from extender.plugins.dynamicresources.manager import AllocatedDevices


def _claim(name: str, results: list[dict]) -> dict:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"devices": {"requests": []}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _share(share: str, bandwidth: str) -> dict:
    return {
        "request": "nic",
        "driver": "net.example.com",
        "pool": "node-1",
        "device": "eth0",
        "shareID": share,
        "consumedCapacity": {"bandwidth": bandwidth},
    }


def test_shares_of_one_device_add_their_consumed_capacity() -> None:
    allocated = AllocatedDevices()
    allocated.add_claim(_claim("a", [_share("s1", "1Gi")]), consumable_capacity=True)
    allocated.add_claim(_claim("b", [_share("s2", "2Gi")]), consumable_capacity=True)
    allocated.add_claim(
        _claim("c", [{**_share("s3", "4Gi"), "adminAccess": True}]), consumable_capacity=True
    )
    device = ("net.example.com", "node-1", "eth0")
    assert allocated.devices == set()
    assert allocated.shared == {(*device, "s1"), (*device, "s2")}
    assert allocated.consumed == [(device, {"bandwidth": "1Gi"}), (device, {"bandwidth": "2Gi"})]
    allocator = new_allocator(Features(), allocated, lambda name: None, [], new_cel_cache())
    total = allocator.allocated_state.aggregated_capacity[device]["bandwidth"]
    assert str(total) == "3Gi"


def test_a_share_without_consumable_capacity_takes_the_whole_device() -> None:
    allocated = AllocatedDevices()
    allocated.add_claim(_claim("a", [_share("s1", "1Gi")]), consumable_capacity=False)
    assert allocated.devices == {("net.example.com", "node-1", "eth0")}
    assert allocated.shared == set() and allocated.consumed == []
