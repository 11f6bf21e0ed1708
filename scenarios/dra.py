"""DRA: two GPUs on node-1 for three pods; the third waits until node-2 publishes its GPUs.

The GPUs are published as the dra-example-driver
(https://github.com/kubernetes-sigs/dra-example-driver) publishes them: one ResourceSlice per
node for the driver gpu.example.com. Without a kubelet nothing runs, but the scheduling side is
the real one:

* the resource-claim controller of kube-controller-manager creates each pod's ResourceClaim
  from the ResourceClaimTemplate single-gpu and names it in the pod's
  status.resourceClaimStatuses (until then the scheduler leaves the pod alone);
* the scheduler's DynamicResources plugin (upstream
  pkg/scheduler/framework/plugins/dynamicresources) picks a free device, writes it to the
  claim's status.allocation, reserves the claim for the pod in status.reservedFor, then binds
  the pod;
* a pod for which no node has a free device stays Pending (`cannot allocate all claims`); a new
  ResourceSlice requeues it.

Needs kube-controller-manager (`kube-extender cluster up --controller-manager`) and a scheduler
for the pods' schedulerName: docs/dra.md, "Try it with a sample driver's slices", has the
commands and these objects as YAML.
"""

from extender.scenario.kube import RESOURCE_API, Kube

DRIVER = "gpu.example.com"

# Every device of the driver is a GPU of this class.
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}

# One GPU of that class; each pod gets its own claim made from this template.
CLAIM_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "single-gpu"},
    "spec": {
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}
    },
}

POD_CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]


def gpu_slice(node: str, gpus: int = 2) -> dict:
    """What the driver's kubelet plugin on ``node`` publishes: its GPUs, as one pool."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"index": {"int": i}, "model": {"string": "LATEST-GPU-MODEL"}},
                }
                for i in range(gpus)
            ],
        },
    }


def gpu_device(kube: Kube, pod: str) -> str:
    """The one device allocated to the pod's claim, once the scheduler wrote it."""
    claims = kube.wait_allocated(pod, timeout=30)
    (device,) = kube.allocated_devices(claims["gpu"])
    return device


def scenario(kube: Kube) -> None:
    kube.create(f"{RESOURCE_API}/deviceclasses", DEVICE_CLASS)
    kube.create_node("node-1")
    kube.create(f"{RESOURCE_API}/resourceslices", gpu_slice("node-1"))
    kube.create(kube.namespaced(RESOURCE_API, "resourceclaimtemplates"), CLAIM_TEMPLATE)

    # One after the other, so the first pod takes the first GPU.
    kube.create_pod("gpu-pod-1", resource_claims=POD_CLAIMS)
    assert kube.wait_bound("gpu-pod-1", timeout=60) == "node-1"
    kube.create_pod("gpu-pod-2", resource_claims=POD_CLAIMS)
    assert kube.wait_bound("gpu-pod-2", timeout=60) == "node-1"
    first, second = gpu_device(kube, "gpu-pod-1"), gpu_device(kube, "gpu-pod-2")
    assert {first, second} == {f"{DRIVER}/node-1/gpu-0", f"{DRIVER}/node-1/gpu-1"}, (
        f"two pods, two GPUs: each its own, got {first} and {second}"
    )

    # Both GPUs are allocated: the third pod fits nowhere until another node publishes GPUs.
    kube.create_pod("gpu-pod-3", resource_claims=POD_CLAIMS)
    why = kube.wait_pending("gpu-pod-3", "cannot allocate all claims", timeout=60)
    kube.out(f"  gpu-pod-3 is pending while both GPUs are allocated: {why}")
    kube.create_node("node-2")
    kube.create(f"{RESOURCE_API}/resourceslices", gpu_slice("node-2"))
    assert kube.wait_bound("gpu-pod-3", timeout=60) == "node-2"
    assert gpu_device(kube, "gpu-pod-3") == f"{DRIVER}/node-2/gpu-0"
    kube.report()
