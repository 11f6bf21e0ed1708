"""Deleted ResourceSlices give their memory back (issue 28): 500 slices x 128 devices through
the slice informer's store and DynamicResources' PreFilter/Filter (the allocator, the CEL
selectors), then deleted through the store: every cache keyed by a device or slice lets go,
without waiting for another allocation."""

from __future__ import annotations

import gc
import weakref

import pytest

import extender.dra.cel.device as cel_device
import extender.dra.structured.allocator as allocator
import extender.plugins.dynamicresources.manager as manager
from extender.cache.informers import Listers
from extender.dra.cel import CELDevice
from extender.framework.cycle_state import CycleState
from extender.framework.handle import RESOURCE_SLICES
from extender.framework.node_info import NodeInfo

from .fixtures import DRIVER, FakeHandle, claim, device_class, node, plugin, pod_with_claim_name

SLICES, DEVICES = 500, 128


def make_slice(i: int, generation: int = 1) -> dict:
    name = f"node-{i}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-slice", "resourceVersion": str(generation)},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": generation, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{j}",
                    "attributes": {
                        "model": {"string": "a100" if j % 2 else "h100"},
                        "index": {"int": j},
                        "driverVersion": {"version": "1.2.3"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for j in range(DEVICES)
            ],
        },
    }


def live_cel_devices() -> int:
    """CEL views of this module's devices alive (other tests may keep their own)."""
    return sum(1 for o in gc.get_objects() if type(o) is CELDevice and ours(o))


def ours(device: CELDevice) -> bool:
    attributes, capacity = device.attributes, device.capacity
    return (
        isinstance(attributes, dict)
        and isinstance(capacity, dict)
        and "driverVersion" in attributes
        and capacity.get("memory") == {"value": "80Gi"}
    )


def cached() -> dict[str, int]:
    return {
        "cel devices": len(allocator._CEL_DEVICES),
        "plain capacity": len(allocator._PLAIN_CAPACITY),
        "node pools": len(allocator._NODE_POOLS),
        "slice index": 0 if allocator._SLICE_INDEX is None else len(allocator._SLICE_INDEX[0]),
        "device values": len(cel_device._DEVICE_CACHE),
    }


def clear_module_caches() -> None:
    allocator._CEL_DEVICES.clear()
    allocator._PLAIN_CAPACITY.clear()
    allocator._NODE_POOLS.clear()
    allocator._SLICE_INDEX = None
    with cel_device._DEVICE_CACHE_LOCK:
        cel_device._DEVICE_CACHE.clear()
    gc.collect()


@pytest.fixture
def cluster():
    """The slice informer as the composition root builds it (its store is the slice cache),
    the class, one pending claim whose request matches only the last device of a slice (so
    every device of every node is looked at), and the nodes."""
    clear_module_caches()  # what earlier tests left: this one counts from zero
    listers = Listers.watching(None, [RESOURCE_SLICES])
    informer = listers.informers[RESOURCE_SLICES]
    cls = device_class()
    cls["spec"]["selectors"].append(
        {
            "cel": {
                "expression": 'device.capacity["some-driver"].memory.compareTo('
                'quantity("40Gi")) >= 0'
            }
        }
    )
    pending = claim()
    pending["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["some-driver"].index == {DEVICES - 1}'}}
    ]
    handle = FakeHandle(claims=[pending], classes=[cls])
    handle.listers[RESOURCE_SLICES] = listers(RESOURCE_SLICES)
    infos = [NodeInfo(node(f"node-{i}")) for i in range(SLICES)]
    yield informer, handle, infos
    informer.store.clear()
    clear_module_caches()


def schedule(handle: FakeHandle, infos: list[NodeInfo]) -> int:
    pl = plugin(handle)
    state = CycleState()
    _, status = pl.pre_filter(state, pod_with_claim_name(), infos)
    assert status is None, status
    return sum(pl.filter(state, pod_with_claim_name(), info) is None for info in infos)


def test_deleted_slices_leave_every_cache(cluster) -> None:
    informer, handle, infos = cluster
    for i in range(SLICES):
        informer._apply("ADDED", make_slice(i))
    assert schedule(handle, infos) == SLICES
    gc.collect()
    full = cached()
    # Every device was looked at (its CEL view); the chosen ones' capacity was checked.
    assert full["cel devices"] == SLICES * DEVICES
    assert full["plain capacity"] >= SLICES and full["device values"] > 0
    assert full["node pools"] == full["slice index"] == SLICES
    assert live_cel_devices() == SLICES * DEVICES
    one_device = next(iter(allocator._CEL_DEVICES.values()))[1]
    gone = weakref.ref(one_device)
    del one_device

    for i in range(SLICES):  # the watch's DELETED events carry the final state: a new dict
        informer._apply("DELETED", make_slice(i))
    gc.collect()
    assert informer.store == {}
    assert cached() == dict.fromkeys(full, 0)
    assert gone() is None
    assert live_cel_devices() == 0
    # The selectors' answers went with their devices.
    cel_cache = plugin(handle)._cel()
    assert all(not r._results for r in cel_cache._entries.values())


def test_replaced_slices_leave_the_caches_too(cluster) -> None:
    informer, handle, infos = cluster
    nodes = 50
    for i in range(nodes):
        informer._apply("ADDED", make_slice(i))
    assert schedule(handle, infos[:nodes]) == nodes
    for i in range(nodes):  # an update is a new object: the old one's entries go
        informer._apply("MODIFIED", make_slice(i, generation=2))
    gc.collect()
    assert cached()["cel devices"] == 0 and live_cel_devices() == 0
    assert schedule(handle, infos[:nodes]) == nodes
    gc.collect()
    assert live_cel_devices() == nodes * DEVICES  # the new objects', none of the old ones


def test_a_slice_list_replaced_without_events_is_swept_at_the_next_allocation() -> None:
    """A lister without the informer's hook (or a relist replacing unchanged objects, which
    is no event): the next allocation drops what belonged to slices no longer listed."""
    clear_module_caches()
    slices = [make_slice(i) for i in range(4)]
    handle = FakeHandle(claims=[claim()], classes=[device_class()], slices=slices)
    infos = [NodeInfo(node(f"node-{i}")) for i in range(4)]
    assert schedule(handle, infos) == 4
    old = {id(d) for s in slices for d in s["spec"]["devices"]}
    assert old & set(allocator._CEL_DEVICES)
    slices[:] = [make_slice(i, generation=2) for i in range(4)]
    assert schedule(handle, infos) == 4
    assert not old & set(allocator._CEL_DEVICES)
    slices.clear()
    schedule(handle, infos)
    gc.collect()
    assert live_cel_devices() == 0


def test_a_deleted_claim_leaves_the_allocated_devices_memo() -> None:
    allocated = claim()
    allocated["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "req-1", "driver": DRIVER, "pool": "node-0", "device": "gpu-0"}
                ]
            }
        }
    }
    handle = FakeHandle(claims=[allocated])
    tracker = plugin(handle).tracker
    tracker.gather_allocated_state(False)
    assert id(allocated) in manager._CONTRIBUTIONS
    handle.claims.clear()
    tracker.gather_allocated_state(False)
    assert id(allocated) not in manager._CONTRIBUTIONS
