"""GPU policies: example out-of-tree kube-extender Score plugins for GPU clusters.

* :class:`GPUBinPack` (:mod:`gpu_policies.bin_pack`): pack GPU pods onto used GPUs and nodes,
  keep CPU-only pods off GPU nodes.
* :class:`GPUFragmentation` (:mod:`gpu_policies.fragmentation`): FGD, minimise the increase of
  the node's expected GPU fragmentation (Weng et al., USENIX ATC'23).

Both read GPUs as an extended resource (``nvidia.com/gpu``) or as DRA devices with a
consumable capacity (:mod:`gpu_policies.gpus`).
"""

from .bin_pack import GPUBinPack, GPUBinPackArgs
from .fragmentation import GPUFragmentation, GPUFragmentationArgs, TaskType, node_fragmentation
from .gpus import GPUArgs, NodeGPUs, PodGPUs

__all__ = [
    "GPUArgs",
    "GPUBinPack",
    "GPUBinPackArgs",
    "GPUFragmentation",
    "GPUFragmentationArgs",
    "NodeGPUs",
    "PodGPUs",
    "TaskType",
    "node_fragmentation",
]
