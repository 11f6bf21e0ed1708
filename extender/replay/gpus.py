"""How a trace's GPUs are expressed in the API: the constants and objects the importers write
and the metrics read back.

Two mappings (``metadata.gpuMapping`` of a trace):

* ``extended``: whole GPUs as the extended resource ``nvidia.com/gpu`` (what NVIDIA's device
  plugin advertises); nodes carry the model in the label ``kube-extender.dev/gpu-model``. A pod
  that shares a GPU (``gpu_milli < 1000``) asks one whole GPU: sharing is lost, and a model
  constraint becomes a required node affinity on the label.
* ``dra``: Dynamic Resource Allocation (``resource.k8s.io/v1``) with consumable capacity
  (``DRAConsumableCapacity``, beta and on by default in v1.36): driver and DeviceClass
  ``gpu.kube-extender.dev``; one ResourceSlice per node (pool = node name, ``nodeName`` set)
  with devices ``gpu-0`` .. ``gpu-<n-1>``, each with the string attribute ``model``,
  ``allowMultipleAllocations: true`` and the capacity ``share`` = 1000 (thousandths of the GPU),
  whose request policy takes 1..1000 and 1000 by default (no ``step``: shares are whole
  numbers already, and a step costs the allocator a rounding on every fit check, about half
  of its time per GPU node). A pod gets one
  ResourceClaim with one request ``gpu``: ``count`` GPUs of the class, each consuming
  ``share`` = its ``gpu_milli`` (1000: whole), and a CEL selector on the model when the trace
  constrains it. Sharing is kept; what it loses is in ``docs/replay.md``.

Upstream types: ``k8s.io/api/resource/v1`` (``Device.AllowMultipleAllocations``,
``DeviceCapacity.RequestPolicy``, ``CapacityRequestPolicyRange``); validation:
``pkg/apis/resource/validation/validation.go`` (``validateRequestPolicyRange``).
"""

from __future__ import annotations

from collections.abc import Sequence

MAPPINGS = ("dra", "extended")

# The extended mapping.
GPU_RESOURCE = "nvidia.com/gpu"
GPU_MODEL_LABEL = "kube-extender.dev/gpu-model"

# The DRA mapping.
DRIVER = "gpu.kube-extender.dev"
DEVICE_CLASS = DRIVER
MODEL_ATTRIBUTE = "model"
SHARE = "share"
# A whole GPU in ``share`` units (and in the replay log's per-GPU milli).
GPU_MILLI = 1000
CLAIM_REQUEST = "gpu"
# The pod's name for its claim (``spec.resourceClaims[].name``, ``resources.claims[].name``).
POD_CLAIM = "gpu"


def device_name(index: int) -> str:
    return f"gpu-{index}"


def device_id(node: str, index: int) -> str:
    """A GPU's id in a replay log: ``<node>/gpu-<index>``."""
    return f"{node}/{device_name(index)}"


def slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def claim_name(pod: str) -> str:
    return f"{pod}-{CLAIM_REQUEST}"


# --- extended resources ----------------------------------------------------------------------


def extended_gpus(num_gpu: int, gpu_milli: int) -> int:
    """Whole GPUs a pod asks in the extended mapping: ``num_gpu`` whatever ``gpu_milli`` says,
    as a device plugin cannot split a GPU (a shared GPU, ``gpu_milli < 1000``, is a whole
    one)."""
    del gpu_milli  # the part the extended mapping loses
    return max(num_gpu, 0)


def model_affinity(models: Sequence[str]) -> dict:
    """The extended mapping's model constraint: a required node affinity on the label."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": GPU_MODEL_LABEL, "operator": "In", "values": list(models)}
                        ]
                    }
                ]
            }
        }
    }


# --- DRA -------------------------------------------------------------------------------------


def device_class() -> dict:
    """The DeviceClass every GPU claim names: the driver's devices."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def _share_capacity() -> dict:
    return {
        "value": str(GPU_MILLI),
        "requestPolicy": {
            "default": str(GPU_MILLI),
            "validRange": {"min": "1", "max": str(GPU_MILLI)},
        },
    }


def resource_slice(node: str, count: int, model: str) -> dict:
    """The node's ResourceSlice: ``count`` shareable GPUs of ``model`` (pool = node name)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": slice_name(node)},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [
                {
                    "name": device_name(i),
                    "attributes": {MODEL_ATTRIBUTE: {"string": model}},
                    "capacity": {SHARE: _share_capacity()},
                    "allowMultipleAllocations": True,
                }
                for i in range(count)
            ],
        },
    }


def model_selector(models: Sequence[str]) -> str:
    """The CEL expression that admits GPUs of ``models`` only."""
    attribute = f'device.attributes["{DRIVER}"].{MODEL_ATTRIBUTE}'
    if len(models) == 1:
        return f'{attribute} == "{models[0]}"'
    listed = ", ".join(f'"{m}"' for m in models)
    return f"{attribute} in [{listed}]"


def resource_claim(
    name: str, namespace: str, num_gpu: int, gpu_milli: int, models: Sequence[str] = ()
) -> dict:
    """A pod's claim: ``num_gpu`` GPUs, each consuming ``gpu_milli`` of its ``share``."""
    exactly: dict = {
        "deviceClassName": DEVICE_CLASS,
        "allocationMode": "ExactCount",
        "count": num_gpu,
        "capacity": {"requests": {SHARE: str(min(gpu_milli, GPU_MILLI) or GPU_MILLI)}},
    }
    if models:
        exactly["selectors"] = [{"cel": {"expression": model_selector(models)}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": CLAIM_REQUEST, "exactly": exactly}]}},
    }


def slice_gpus(resource_slice: dict) -> list[tuple[str, str, int]]:
    """``(device id, model, share capacity)`` of each GPU of one of our ResourceSlices, in
    device order (what a replay log's node lists)."""
    # Imported here: the allocator's package (and its CEL runtime) is not needed to write.
    from extender.dra.structured import Quantity, QuantityError

    spec = resource_slice.get("spec") or {}
    node = spec.get("nodeName") or (spec.get("pool") or {}).get("name") or ""
    gpus = []
    for device in spec.get("devices") or ():
        model = ((device.get("attributes") or {}).get(MODEL_ATTRIBUTE) or {}).get("string", "")
        value = ((device.get("capacity") or {}).get(SHARE) or {}).get("value", GPU_MILLI)
        try:
            share = Quantity.parse(value).int_value()
        except QuantityError:
            share = GPU_MILLI
        gpus.append((f"{node}/{device.get('name')}", model, share))
    return gpus
