"""GPUBinPack: pack GPU pods onto GPUs and nodes already in use; keep CPU-only pods off GPU nodes.

Contract (what a scheduler running this plugin can rely on):

* **Score** (0..100, no normalization), for each feasible node, from the node's GPUs as
  :mod:`gpu_policies.gpus` reads them (extended resource ``nvidia.com/gpu``, or DRA devices
  with a consumable ``share``) and the GPUs the pod would take there (the allocator's choice,
  assumed to be the first GPUs that fit in device order):

  - a **GPU pod** scores ``50 * device + 50 * node`` (each term rounded down), where
    ``device`` is the mean used fraction of the GPUs it would take, and ``node`` the used
    fraction of all the node's GPUs, both after placing it. A shared pod (a part of a GPU,
    DRA) thus prefers a GPU that is already partly used, then a node whose GPUs are busier; a
    pod of whole GPUs (``device`` is then 1) prefers the node with the fewest GPUs left. A
    node without GPUs, or where the pod's GPUs do not fit, scores 0 (Filter normally removed
    it);
  - a **CPU-only pod** scores 100 on a node without GPUs and ``50 * used`` on a node with GPUs
    (``used``: the fraction of its GPUs already in use, before the pod), so it goes to a
    CPU-only node first, then to a GPU node whose GPUs are taken anyway, last to a node with
    idle GPUs it would keep from GPU pods.

  This is the usual GPU-packing heuristic (share used GPUs first, then use free GPUs of used
  nodes, then open a free node; e.g. the GPU-packing baseline in Weng et al., "Beware of
  Fragmentation", USENIX ATC'23), as one linear score.
* No Filter, no PreFilter: the plugin never rejects a node. The GPUs' fit is checked by
  NodeResourcesFit (extended resource) or DynamicResources (DRA) in the same profile.

Args (``pluginConfig``), validated by :class:`GPUBinPackArgs` when the config loads: where
the GPUs are (:class:`~gpu_policies.gpus.GPUArgs`: ``gpuResource``, ``modelLabel``,
``driver``, ``deviceClass``, ``capacity``, ``modelAttribute``), all optional.

Reads ``reads = (PODS, RESOURCE_SLICES, RESOURCE_CLAIMS)``: the pods on each node (their GPU
requests and claims), the ResourceSlices (the node's GPUs) and the ResourceClaims (what is
allocated). Imports only ``extender.framework``, the stable plugin API. Mutates nothing but its
own CycleState key; across cycles it keeps the parsed slices and nodes' GPUs
(:class:`~gpu_policies.gpus.GPUView`); within a cycle, nodes of one GPU shape are scored once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.framework import (
    MAX_NODE_SCORE,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    CycleState,
    Handle,
    Lister,
    NodeInfo,
    Status,
)

from .gpus import MILLI, Device, GPUArgs, GPUConfig, GPUView, NodeGPUs, PodGPUs, pod_gpus

STATE_KEY = "PreScoreGPUBinPack"


class GPUBinPackArgs(GPUArgs):
    """GPUBinPack's args: where the GPUs are, nothing else."""


@dataclass
class _State:
    """Per cycle: the pod's demand and the DRA devices of each node."""

    pod: PodGPUs
    devices: dict[str, list[Device]]
    claims: Lister
    # Nodes of one shape score alike: shape -> score.
    memo: dict[tuple, int] = field(default_factory=dict)

    def clone(self) -> _State:
        return self  # read-only after PreScore


class GPUBinPack:
    name = "GPUBinPack"
    args_schema = GPUBinPackArgs
    reads = (PODS, RESOURCE_SLICES, RESOURCE_CLAIMS)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.config = GPUConfig.from_args(args)
        self.handle = handle
        self.view = GPUView(self.config)

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        self._prepare(state, pod)
        return None

    def _prepare(self, state: CycleState, pod: dict) -> _State:
        claims = self.handle.lister(RESOURCE_CLAIMS)
        devices = self.view.devices(self.handle.lister(RESOURCE_SLICES).list())
        data = _State(pod_gpus(pod, claims, self.config), devices, claims)
        state.write(STATE_KEY, data)
        return data

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, None]:
        # PreScore left it; a profile that enables Score alone gets it here.
        data: _State = state.get(STATE_KEY) or self._prepare(state, pod)
        node = self.view.node(node_info, data.devices, data.claims)
        if data.pod.allocated:
            return self._score(data.pod, node), None
        key = node.shape()
        known = data.memo.get(key)
        if known is None:
            known = data.memo[key] = self._score(data.pod, node)
        return known, None

    @staticmethod
    def _score(pod: PodGPUs, node: NodeGPUs) -> int:
        if not pod.wants_gpus:
            if not node.free:
                return MAX_NODE_SCORE
            used = node.total - node.free_total
            return MAX_NODE_SCORE * used // (2 * node.total)
        chosen = node.place(pod) if node.free else None
        if not chosen:
            return 0
        free = node.after(pod, chosen)
        # 50 * device + 50 * node, in integers: device = sum(used of chosen) / (n * MILLI).
        device_used = sum(MILLI - free[i] for i in chosen)
        node_used = node.total - sum(free)
        half = MAX_NODE_SCORE // 2
        return half * device_used // (len(chosen) * MILLI) + half * node_used // node.total

    def score_extensions(self) -> None:
        return None
