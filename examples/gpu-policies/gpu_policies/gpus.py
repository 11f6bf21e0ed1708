"""The GPUs of a node and the GPU demand of a pod, in the two ways a cluster offers GPUs.

Shared by :mod:`gpu_policies.bin_pack` and :mod:`gpu_policies.fragmentation`. Everything is in
milli-GPUs: a GPU has 1000, a pod asks ``count`` GPUs with ``milli`` of each (1000: whole).

* **Extended resource** (``gpuResource``, default ``nvidia.com/gpu``): a node offers whole
  GPUs on its allocatable, a pod asks for whole GPUs in its requests. The node tells only how
  many are requested, not which: its GPUs are listed used first, then free (a device plugin
  hands out whole GPUs, which one does not matter to a score). The model is the node label
  ``modelLabel`` (default ``kube-extender.dev/gpu-model``); a pod's accepted models are those
  its ``nodeSelector`` or required node affinity (``In``) names for that label.
* **DRA** (``driver``, default ``gpu.kube-extender.dev``): a node's GPUs are the devices of
  that driver in the ResourceSlices whose ``spec.nodeName`` is the node, in slice order
  (slices sorted by pool and name, devices as listed). A device with the consumable capacity
  ``capacity`` (default ``share``) is shared: a GPU's used part is the sum over the allocated
  ResourceClaims of the node's pods of ``status.allocation.devices.results[].consumedCapacity``
  on that device (a result without it takes the whole device), as a fraction of the device's
  capacity. A claim of a pod on the node that has no allocation yet (the scheduler assumed the
  pod, the API has not seen the claim's status) is placed as the allocator would place it. A
  pod's demand is the requests of its claims whose ``exactly.deviceClassName`` is
  ``deviceClass``: ``count`` devices (``allocationMode: All``: every GPU of the node) with
  ``capacity.requests[capacity]`` of each (absent: a whole device). The model is the device
  attribute ``modelAttribute`` (default ``model``); a pod's accepted models are the string
  literals of its request's CEL selectors other than the driver and attribute names, e.g.
  ``device.attributes["gpu.kube-extender.dev"].model in ["V100M32", "A100"]`` (a heuristic:
  the selectors are not evaluated here; DynamicResources' Filter does that).

Which GPUs a pod would take on a node: the allocator's choice, assumed to be the first GPUs
that fit, in device order (the structured allocator tries devices in slice order and keeps the
first that fits; a device plugin hands out the first free whole GPUs). A pod whose claim is
already allocated takes the allocated devices. A node with devices of several models, or of
different capacities, is read as if they were all like its first device.

Reads through the public plugin API only: ``NodeInfo`` (allocatable, requested, the pods on
the node, hence ``PODS`` in ``reads``), ``handle.lister(RESOURCE_SLICES)`` and
``handle.lister(RESOURCE_CLAIMS)``. Claims in flight (allocated by the scheduler, not yet
written back) are seen through the pods the scheduler assumed, as said above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from marshmallow import Schema, fields, validate

from extender.framework import Lister, NodeInfo, PodInfo, ResourceAmounts

MILLI = 1000

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_MODEL_LABEL = "kube-extender.dev/gpu-model"
DEFAULT_DRIVER = "gpu.kube-extender.dev"
DEFAULT_DEVICE_CLASS = "gpu.kube-extender.dev"
DEFAULT_CAPACITY = "share"
DEFAULT_MODEL_ATTRIBUTE = "model"

_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')


class GPUArgs(Schema):
    """Where the GPUs are: the args both plugins take (all optional)."""

    gpu_resource = fields.String(
        data_key="gpuResource", load_default=DEFAULT_GPU_RESOURCE, validate=validate.Length(min=1)
    )
    model_label = fields.String(
        data_key="modelLabel", load_default=DEFAULT_MODEL_LABEL, validate=validate.Length(min=1)
    )
    driver = fields.String(
        data_key="driver", load_default=DEFAULT_DRIVER, validate=validate.Length(min=1)
    )
    device_class = fields.String(
        data_key="deviceClass", load_default=DEFAULT_DEVICE_CLASS, validate=validate.Length(min=1)
    )
    capacity = fields.String(
        data_key="capacity", load_default=DEFAULT_CAPACITY, validate=validate.Length(min=1)
    )
    model_attribute = fields.String(
        data_key="modelAttribute",
        load_default=DEFAULT_MODEL_ATTRIBUTE,
        validate=validate.Length(min=1),
    )


@dataclass(frozen=True)
class GPUConfig:
    """The loaded :class:`GPUArgs`."""

    gpu_resource: str = DEFAULT_GPU_RESOURCE
    model_label: str = DEFAULT_MODEL_LABEL
    driver: str = DEFAULT_DRIVER
    device_class: str = DEFAULT_DEVICE_CLASS
    capacity: str = DEFAULT_CAPACITY
    model_attribute: str = DEFAULT_MODEL_ATTRIBUTE

    @classmethod
    def from_args(cls, args: dict) -> GPUConfig:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in args.items() if k in names})


# -- quantities --------------------------------------------------------------------------------


_PARSED: dict[str, int | None] = {}


def milli_units(quantity: object) -> int | None:
    """A quantity (``"1000"``, ``"460"``, ``"500m"``, ``2``) in thousandths; ``None`` if it is
    not one (the entry is then ignored). Strings are parsed once (they repeat: the same few
    shares and capacities on every device and claim)."""
    if isinstance(quantity, str):
        if quantity in _PARSED:
            return _PARSED[quantity]
        value = _parse(quantity)
        if len(_PARSED) < 4096:
            _PARSED[quantity] = value
        return value
    return _parse(quantity)


def memory_bytes(quantity: object) -> int | None:
    """A memory quantity (``"16Gi"``, ``"512Mi"``) in bytes; ``None`` if it is not one."""
    try:
        return ResourceAmounts.from_list({"memory": quantity}).memory
    except (ValueError, TypeError, ArithmeticError):
        return None


def _parse(quantity: object) -> int | None:
    try:
        return ResourceAmounts.from_list({"cpu": quantity}).milli_cpu
    except (ValueError, TypeError, ArithmeticError):
        return None


# -- pods --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodGPUs:
    """A pod's GPU demand: ``count`` GPUs, ``milli`` of each (0 GPUs: a CPU-only pod).

    ``units``: in the DRA mapping, the capacity asked of each device in its own units (times
    1000, as :func:`milli_units` reads it; ``None``: a whole device), converted to milli-GPUs
    per node by :meth:`NodeGPUs.milli_of`. ``every``: ``allocationMode: All``. ``models``: the
    GPU models the pod accepts (empty: any). ``allocated``: the devices ``(pool, device)`` of
    an already allocated claim, with the units taken on each."""

    count: int = 0
    milli: int = MILLI
    units: int | None = None
    dra: bool = False
    every: bool = False
    models: frozenset[str] = frozenset()
    allocated: tuple[tuple[str, str, int | None], ...] = ()

    @property
    def wants_gpus(self) -> bool:
        return self.count > 0 or self.every or bool(self.allocated)


CPU_ONLY = PodGPUs()


def pod_claims(pod: dict, claims: Lister) -> list[dict]:
    """The ResourceClaims the pod names (``resourceClaimName``, or the claim generated from a
    template as ``status.resourceClaimStatuses`` names it) that the lister has."""
    spec = pod.get("spec") or {}
    entries = spec.get("resourceClaims") or ()
    if not entries:
        return []
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    generated = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    found = []
    for entry in entries:
        name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if not name:
            continue
        claim = claims.get(namespace, name)
        if claim is not None:
            found.append(claim)
    return found


def _selector_models(request: dict, config: GPUConfig) -> frozenset[str]:
    ignored = {config.driver, config.model_attribute}
    models: set[str] = set()
    for selector in request.get("selectors") or ():
        expression = (selector.get("cel") or {}).get("expression") or ""
        if config.model_attribute not in expression:
            continue
        for double, single in _LITERAL.findall(expression):
            literal = double or single
            if literal and literal not in ignored:
                models.add(literal)
    return frozenset(models)


def claim_demand(claim: dict, config: GPUConfig) -> PodGPUs:
    """The GPU part of one claim (``CPU_ONLY`` if it asks for no GPU of ``deviceClass``)."""
    count = 0
    units: int | None = None
    first = True
    every = False
    models: frozenset[str] = frozenset()
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        exactly = request.get("exactly") or {}
        if exactly.get("deviceClassName") != config.device_class:
            continue
        if exactly.get("allocationMode") == "All":
            every = True
        else:
            count += int(exactly.get("count") or 1)
        if first:
            asked = ((exactly.get("capacity") or {}).get("requests") or {}).get(config.capacity)
            units = None if asked is None else milli_units(asked)
            models = _selector_models(exactly, config)
            first = False
    if first:
        return CPU_ONLY
    allocated: tuple[tuple[str, str, int | None], ...] = ()
    allocation = (claim.get("status") or {}).get("allocation")
    if allocation is not None:
        allocated = tuple(
            (r.get("pool", ""), r.get("device", ""), consumed(r, config))
            for r in (allocation.get("devices") or {}).get("results") or ()
            if r.get("driver") == config.driver
        )
    return PodGPUs(
        count=count, units=units, dra=True, every=every, models=models, allocated=allocated
    )


def consumed(result: dict, config: GPUConfig) -> int | None:
    """The units an allocation result takes of its device (``None``: the whole device)."""
    amount = (result.get("consumedCapacity") or {}).get(config.capacity)
    return None if amount is None else milli_units(amount)


def _affinity_models(spec: dict, label: str) -> frozenset[str]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    models: set[str] = set()
    for term in required.get("nodeSelectorTerms") or ():
        named = [
            e.get("values") or ()
            for e in term.get("matchExpressions") or ()
            if e.get("key") == label and e.get("operator") == "In"
        ]
        if not named:
            return frozenset()  # a term that does not constrain the model: any model
        models.update(named[0])
    return frozenset(models)


def pod_gpus(pod: dict, claims: Lister, config: GPUConfig, info: PodInfo | None = None) -> PodGPUs:
    """The pod's GPU demand: its DRA claims' GPU requests if it has any, else its extended
    resource request (whole GPUs)."""
    for claim in pod_claims(pod, claims):
        demand = claim_demand(claim, config)
        if demand is not CPU_ONLY:
            return demand
    info = info if info is not None else PodInfo(pod)
    count = info.requests.scalar.get(config.gpu_resource, 0)
    if count <= 0:
        return CPU_ONLY
    spec = pod.get("spec") or {}
    chosen = (spec.get("nodeSelector") or {}).get(config.model_label)
    models = frozenset({chosen}) if chosen else _affinity_models(spec, config.model_label)
    return PodGPUs(count=count, milli=MILLI, models=models)


# -- nodes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    """One GPU of a ResourceSlice: where it is, its capacity in units (``None``: not shared)
    and its model."""

    pool: str
    name: str
    capacity: int | None
    model: str


def _attribute(device: dict, config: GPUConfig) -> str:
    attributes = device.get("attributes") or {}
    value = attributes.get(config.model_attribute)
    if value is None:
        value = attributes.get(f"{config.driver}/{config.model_attribute}")
    if not isinstance(value, dict):
        return ""
    return str(value.get("string") or value.get("version") or value.get("int") or "")


def slice_devices(resource_slice: dict, config: GPUConfig) -> tuple[str, list[Device]] | None:
    """The node and the GPUs of one ResourceSlice of ``driver`` (``None``: another driver's,
    or not a node's)."""
    spec = resource_slice.get("spec") or {}
    node_name = spec.get("nodeName")
    if not node_name or spec.get("driver") != config.driver:
        return None
    pool = (spec.get("pool") or {}).get("name", "")
    out = []
    for device in spec.get("devices") or ():
        capacity = (device.get("capacity") or {}).get(config.capacity)
        units = milli_units(capacity.get("value")) if isinstance(capacity, dict) else None
        out.append(Device(pool, device.get("name", ""), units or None, _attribute(device, config)))
    return node_name, out


def _slice_order(resource_slice: dict) -> tuple[str, str]:
    spec = resource_slice.get("spec") or {}
    return (
        (spec.get("pool") or {}).get("name", ""),
        (resource_slice.get("metadata") or {}).get("name", ""),
    )


def devices_by_node(slices: Iterable[dict], config: GPUConfig) -> dict[str, list[Device]]:
    """Node name -> its GPUs of ``driver``, in slice order (slices sorted by pool, name)."""
    found: dict[str, list[Device]] = {}
    for resource_slice in sorted(slices, key=_slice_order):
        parsed = slice_devices(resource_slice, config)
        if parsed is not None:
            found.setdefault(parsed[0], []).extend(parsed[1])
    return found


@dataclass
class NodeGPUs:
    """A node's GPUs: ``free`` milli-GPUs of each, in device order, its model, its free CPU
    (milli) and memory (bytes). ``devices``: the DRA devices behind ``free`` (empty: extended
    mapping)."""

    free: list[int] = field(default_factory=list)
    model: str = ""
    cpu_free: int = 0
    memory_free: int = 0
    devices: list[Device] = field(default_factory=list)

    @property
    def total(self) -> int:
        return MILLI * len(self.free)

    def shape(self) -> tuple[str, int | None, tuple[int, ...]]:
        """What a score of a pod without allocated devices depends on, CPU aside: nodes of one
        shape score alike (a memo key)."""
        return (self.model, self.devices[0].capacity if self.devices else None, tuple(self.free))

    @property
    def free_total(self) -> int:
        return sum(self.free)

    def milli_of(self, pod: PodGPUs) -> int:
        """The pod's share of one of this node's GPUs, in milli-GPUs (1..1000)."""
        if not pod.dra or pod.units is None:
            return pod.milli
        capacity = self.devices[0].capacity if self.devices else None
        if not capacity:
            return MILLI
        return max(1, min(MILLI, -(-pod.units * MILLI // capacity)))

    def place(self, pod: PodGPUs) -> list[int] | None:
        """The GPUs (indexes into ``free``) the pod would take: its allocated devices, else the
        first ones that fit in device order; ``None`` when it does not fit."""
        if pod.allocated:
            where = {(d.pool, d.name): i for i, d in enumerate(self.devices)}
            taken = [where.get((pool, name)) for pool, name, _ in pod.allocated]
            return None if any(i is None for i in taken) else [i for i in taken if i is not None]
        need = len(self.free) if pod.every else pod.count
        if need <= 0 or need > len(self.free):
            return None
        milli = self.milli_of(pod)
        chosen: list[int] = []
        for index, free in enumerate(self.free):
            if free >= milli:
                chosen.append(index)
                if len(chosen) == need:
                    return chosen
        return None

    def after(self, pod: PodGPUs, chosen: list[int]) -> list[int]:
        """``free`` once the pod took the ``chosen`` GPUs."""
        free = list(self.free)
        if pod.allocated:
            for index, (_, _, units) in zip(chosen, pod.allocated, strict=True):
                free[index] -= self._milli_units(index, units)
        else:
            milli = self.milli_of(pod)
            for index in chosen:
                free[index] -= milli
        return [max(0, f) for f in free]

    def _milli_units(self, index: int, units: int | None) -> int:
        capacity = self.devices[index].capacity if index < len(self.devices) else None
        if units is None or not capacity:
            return MILLI
        return min(MILLI, -(-units * MILLI // capacity))


def node_gpus(
    info: NodeInfo,
    devices: dict[str, list[Device]],
    claims: Lister,
    config: GPUConfig,
    in_flight: list[bool] | None = None,
) -> NodeGPUs:
    """The node's GPUs as the cluster has them now (see the module docstring). A claim in
    flight appends ``True`` to ``in_flight``."""
    cpu_free = info.allocatable.milli_cpu - info.requested.milli_cpu
    memory_free = info.allocatable.memory - info.requested.memory
    mine = devices.get(info.name)
    if mine:
        return _dra_node(info, mine, claims, config, cpu_free, memory_free, in_flight)
    count = info.allocatable.scalar.get(config.gpu_resource, 0)
    if count <= 0:
        return NodeGPUs(cpu_free=cpu_free, memory_free=memory_free)
    used = min(count, max(0, info.requested.scalar.get(config.gpu_resource, 0)))
    return NodeGPUs(
        free=[0] * used + [MILLI] * (count - used),
        model=info.labels.get(config.model_label, ""),
        cpu_free=cpu_free,
        memory_free=memory_free,
    )


def _dra_node(
    info: NodeInfo,
    devices: list[Device],
    claims: Lister,
    config: GPUConfig,
    cpu_free: int,
    memory_free: int,
    flags: list[bool] | None,
) -> NodeGPUs:
    node = NodeGPUs(
        free=[MILLI] * len(devices),
        model=devices[0].model,
        cpu_free=cpu_free,
        memory_free=memory_free,
        devices=devices,
    )
    where = {(d.pool, d.name): i for i, d in enumerate(devices)}
    seen: set[tuple[str, str]] = set()
    in_flight: list[PodGPUs] = []
    for pod_info in info.pods:
        for claim in pod_claims(pod_info.pod, claims):
            meta = claim.get("metadata") or {}
            key = (meta.get("namespace") or "", meta.get("name") or "")
            if key in seen:
                continue  # a claim shared by several pods takes its devices once
            seen.add(key)
            allocation = (claim.get("status") or {}).get("allocation")
            if allocation is None:
                demand = claim_demand(claim, config)
                if demand.wants_gpus:
                    in_flight.append(demand)
                    if flags is not None:
                        flags.append(True)
                continue
            for result in (allocation.get("devices") or {}).get("results") or ():
                if result.get("driver") != config.driver:
                    continue
                index = where.get((result.get("pool", ""), result.get("device", "")))
                if index is not None:
                    node.free[index] = max(
                        0, node.free[index] - node._milli_units(index, consumed(result, config))
                    )
    for demand in in_flight:
        chosen = node.place(demand)
        if chosen is not None:
            node.free = node.after(demand, chosen)
    return node


class GPUView:
    """:func:`devices_by_node` and :func:`node_gpus` with memos, for a plugin to keep across
    cycles (the values are the same, only cheaper when little changed).

    * The ResourceSlices are parsed once per slice object (the informer replaces an object
      when it changes, so an unchanged slice is the same object); the node -> devices map is
      rebuilt only when a slice changed, was added or removed.
    * A node's GPUs are kept for its ``NodeInfo.generation`` (it changes with the node and
      its pods) and its devices, unless one of its pods' claims was in flight: an allocation
      of a pod already on the node does not change while the pod stays. Bounded: a node's
      entry is replaced, never accumulated.
    """

    def __init__(self, config: GPUConfig) -> None:
        self.config = config
        self._slices: dict[int, tuple[dict, tuple[str, list[Device]] | None]] = {}
        self._devices: dict[str, list[Device]] = {}
        self._nodes: dict[str, tuple[int, object, NodeGPUs]] = {}

    def devices(self, slices: list[dict]) -> dict[str, list[Device]]:
        old = self._slices
        if len(old) == len(slices) and all(old.get(id(s), (None,))[0] is s for s in slices):
            return self._devices
        fresh: dict[int, tuple[dict, tuple[str, list[Device]] | None]] = {}
        for resource_slice in slices:
            hit = old.get(id(resource_slice))
            if hit is not None and hit[0] is resource_slice:
                fresh[id(resource_slice)] = hit
            else:
                fresh[id(resource_slice)] = (
                    resource_slice,
                    slice_devices(resource_slice, self.config),
                )
        found: dict[str, list[Device]] = {}
        for resource_slice in sorted(slices, key=_slice_order):
            parsed = fresh[id(resource_slice)][1]
            if parsed is not None:
                found.setdefault(parsed[0], []).extend(parsed[1])
        self._slices, self._devices = fresh, found
        return found

    def node(self, info: NodeInfo, devices: dict[str, list[Device]], claims: Lister) -> NodeGPUs:
        mine = devices.get(info.name)
        hit = self._nodes.get(info.name)
        if hit is not None and hit[0] == info.generation and hit[1] is mine:
            return hit[2]
        in_flight: list[bool] = []
        node = node_gpus(info, devices, claims, self.config, in_flight)
        if not in_flight:
            self._nodes[info.name] = (info.generation, mine, node)
        return node
