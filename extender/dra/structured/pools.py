"""Resource pools: which ResourceSlices a node can use, and whether each pool is complete.

Upstream: ``structured/internal/incubating/pools_incubating.go`` (NodeMatches, GatherPools,
buildPool and its validation). Pools come back sorted by (driver, pool name), with pools that
have devices with binding conditions after all others; slices within a pool are sorted by name.
That order is the allocator's first-fit search order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from extender.dra.structured.capacity import Quantity
from extender.dra.structured.types import Features
from extender.framework.labels import NodeSelector


def node_matches(
    features: Features,
    node: dict | None,
    node_name: str,
    all_nodes: bool,
    node_selector: dict | None,
) -> bool:
    """``NodeMatches``: a node name, all nodes, or a node selector (first one set wins)."""
    del features  # The same rule for every feature set.
    if node_name:
        return node is not None and _name(node) == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        if node is None:
            return False
        labels = (node.get("metadata") or {}).get("labels") or {}
        return NodeSelector(node_selector).matches(_name(node), labels)
    return False


def _name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def _spec(slice_: dict) -> dict:
    return slice_.get("spec") or {}


def _pool_ref(slice_: dict) -> dict:
    return _spec(slice_).get("pool") or {}


def _generation(slice_: dict) -> int:
    return int(_pool_ref(slice_).get("generation") or 0)


CounterSets = dict[str, dict[str, Quantity]]
"""Counter set name -> counter name -> value."""


@dataclass
class Pool:
    driver: str
    pool: str
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    # Slices with devices, sorted by name, that the node can use.
    device_slices: list[dict] = field(default_factory=list)
    # Slices of the same generation the node cannot use (their devices still consume counters).
    device_slices_not_targeting_node: list[dict] = field(default_factory=list)
    counter_sets: CounterSets = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.pool}"


def _slice_relevant(slice_: dict, node: dict | None, features: Features) -> bool | None:
    """Whether a slice serves the node; None for a slice of unknown kind (skipped)."""
    spec = _spec(slice_)
    if spec.get("sharedCounters"):
        # Counter sets are needed to use a pool, whatever node they are for.
        return True
    node_name = spec.get("nodeName") or ""
    all_nodes = bool(spec.get("allNodes"))
    selector = spec.get("nodeSelector")
    if node_name or all_nodes or selector is not None:
        return node_matches(features, node, node_name, all_nodes, selector)
    if spec.get("perDeviceNodeSelection"):
        for device in spec.get("devices") or ():
            if node_matches(
                features,
                node,
                device.get("nodeName") or "",
                bool(device.get("allNodes")),
                device.get("nodeSelector"),
            ):
                return True
        return False
    # Nothing known is set: some future extension that we cannot interpret.
    return None


def gather_pools(
    slices_for_node: Sequence[dict],
    node: dict | None,
    features: Features,
    all_slices: Sequence[dict],
    consulted: list[bool] | None = None,
) -> list[Pool]:
    """``GatherPools``: the pools with devices the node can reach, incomplete or invalid ones
    marked as such, in search order.

    ``consulted``, if given, gets ``True`` appended when the answer depended on
    ``all_slices`` (a pool with fewer slices for the node than ``resourceSliceCount``), so a
    caller that memoises per node knows the answer is not a function of the node's slices."""
    by_id: dict[tuple[str, str], list[dict]] = {}
    for slice_ in slices_for_node:
        spec = _spec(slice_)
        if not features.partitionable_devices and (
            spec.get("perDeviceNodeSelection") is not None or spec.get("sharedCounters")
        ):
            continue
        if _slice_relevant(slice_, node, features):
            _add_slice(by_id, slice_)

    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, pool_slices in by_id.items():
        first = _pool_ref(pool_slices[0])
        count = int(first.get("resourceSliceCount") or 0)
        all_for_pool: list[dict] | None = None
        if len(pool_slices) != count:
            if consulted is not None:
                consulted.append(True)
            # Slices that looked irrelevant for the node may belong to the same generation;
            # only all of them together say whether the pool is complete.
            obsolete, all_for_pool = _check_slices_in_pool(
                all_slices, pool_id, _generation(pool_slices[0])
            )
            if obsolete:
                # The driver is replacing this generation with one that has nothing for us.
                continue
            if len(all_for_pool) != count:
                result.append(Pool(pool_id[0], pool_id[1], is_incomplete=True))
                continue
        pool = _build_pool(pool_id, pool_slices, features, all_for_pool)
        if _has_binding_conditions(pool):
            with_binding_conditions.append(pool)
        else:
            result.append(pool)

    result.sort(key=lambda p: (p.driver, p.pool))
    with_binding_conditions.sort(key=lambda p: (p.driver, p.pool))
    return result + with_binding_conditions


def _add_slice(by_id: dict[tuple[str, str], list[dict]], slice_: dict) -> None:
    spec = _spec(slice_)
    pool_id = (spec.get("driver") or "", _pool_ref(slice_).get("name") or "")
    current = by_id.get(pool_id)
    if current is None:
        by_id[pool_id] = [slice_]
        return
    generation, current_generation = _generation(slice_), _generation(current[0])
    if generation < current_generation:
        return  # Out-dated.
    if generation > current_generation:
        by_id[pool_id] = [slice_]  # Newer, replaces all old slices.
        return
    current.append(slice_)


def _check_slices_in_pool(
    all_slices: Sequence[dict], pool_id: tuple[str, str], generation: int
) -> tuple[bool, list[dict]]:
    """``checkSlicesInPool``: (a newer generation exists, all slices of this generation)."""
    found: list[dict] = []
    for slice_ in all_slices:
        if (_spec(slice_).get("driver") or "", _pool_ref(slice_).get("name") or "") != pool_id:
            continue
        slice_generation = _generation(slice_)
        if slice_generation == generation:
            found.append(slice_)
        elif slice_generation > generation:
            return True, []
    return False, found


def _build_pool(
    pool_id: tuple[str, str],
    pool_slices: list[dict],
    features: Features,
    all_for_pool: list[dict] | None,
) -> Pool:
    slices_sorted = sorted(pool_slices, key=_name)
    if features.partitionable_devices:
        counter_slices = [s for s in slices_sorted if _spec(s).get("sharedCounters")]
        device_slices = [s for s in slices_sorted if not _spec(s).get("sharedCounters")]
    else:
        counter_slices, device_slices = [], slices_sorted
    driver, name = pool_id
    reason = _duplicate_device_name(device_slices)
    if reason:
        return Pool(driver, name, is_invalid=True, invalid_reason=reason)
    if not features.partitionable_devices:
        return Pool(driver, name, device_slices=device_slices)
    counter_sets, reason = _counter_sets(counter_slices)
    if not reason:
        reason = _invalid_counter_consumption(counter_sets, slices_sorted)
    if reason:
        return Pool(driver, name, is_invalid=True, invalid_reason=reason)
    if all_for_pool is None or len(slices_sorted) == len(all_for_pool):
        return Pool(driver, name, device_slices=device_slices, counter_sets=counter_sets)
    # Devices in slices for other nodes may consume counters of this pool: the allocator
    # needs them for the available counters.
    seen = {_name(s) for s in slices_sorted}
    not_targeting = [s for s in all_for_pool if _name(s) not in seen]
    reason = _invalid_counter_consumption(counter_sets, not_targeting)
    if reason:
        return Pool(driver, name, is_invalid=True, invalid_reason=reason)
    return Pool(
        driver,
        name,
        device_slices=device_slices,
        device_slices_not_targeting_node=not_targeting,
        counter_sets=counter_sets,
    )


def _duplicate_device_name(device_slices: list[dict]) -> str:
    names: set[str] = set()
    for slice_ in device_slices:
        for device in _spec(slice_).get("devices") or ():
            device_name = device.get("name") or ""
            if device_name in names:
                return f"duplicate device name {device_name}"
            names.add(device_name)
    return ""


def _counter_sets(counter_slices: list[dict]) -> tuple[CounterSets, str]:
    counter_sets: CounterSets = {}
    for slice_ in counter_slices:
        for counter_set in _spec(slice_).get("sharedCounters") or ():
            set_name = counter_set.get("name") or ""
            if set_name in counter_sets:
                return {}, f"duplicate counter set name {set_name}"
            counter_sets[set_name] = {
                counter: Quantity.parse((value or {}).get("value", "0"))
                for counter, value in (counter_set.get("counters") or {}).items()
            }
    return counter_sets, ""


def _invalid_counter_consumption(counter_sets: CounterSets, slices: list[dict]) -> str:
    for slice_ in slices:
        for device in _spec(slice_).get("devices") or ():
            for consumption in device.get("consumesCounters") or ():
                set_name = consumption.get("counterSet") or ""
                counters = counter_sets.get(set_name)
                if counters is None:
                    return f"counter set {set_name} not found"
                for counter in consumption.get("counters") or {}:
                    if counter not in counters:
                        return f"counter {counter} not found in counter set {set_name}"
    return ""


def _has_binding_conditions(pool: Pool) -> bool:
    for slice_ in pool.device_slices:
        for device in _spec(slice_).get("devices") or ():
            if device.get("bindingConditions") is not None:
                return True
    return False
