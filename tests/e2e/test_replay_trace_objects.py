"""The objects an imported openb trace holds are what the real kube-apiserver accepts: each is
created with ``dryRun=All`` (full validation and admission, nothing stored) and comes back with
the fields the replay relies on, in both GPU mappings. The ResourceSlice's consumable capacity
(``allowMultipleAllocations``, the ``share`` request policy) and the claims'
``capacity.requests`` are dropped by the apiserver when DRAConsumableCapacity is off, so their
presence in the answer shows the gate is on (v1.36's default) and the policy valid; a policy
that breaks upstream's rules is refused, so the check can fail."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from extender.kube.errors import ApiError
from extender.replay import gpus
from extender.replay.importers import openb
from extender.scenario.kube import Kube

NODES = """\
sn,cpu_milli,memory_mib,gpu,model
openb-node-0000,32000,262144,0,
openb-node-0001,64000,262144,2,V100M16
"""
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,100,5000,100\n"
    "openb-pod-0001,6000,12288,1,460,V100M16|V100M32,BE,Pending,200,700,\n"
    "openb-pod-0002,8000,32768,2,1000,,LS,Succeeded,300,600,300\n"
    "openb-pod-0003,4000,8192,0,0,,BE,Failed,120,400,130\n"
)

COLLECTIONS = {
    "Node": ("/api/v1/nodes", False),
    "Namespace": ("/api/v1/namespaces", False),
    "Pod": ("/api/v1/namespaces/{ns}/pods", True),
    "ReplicaSet": ("/apis/apps/v1/namespaces/{ns}/replicasets", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1/deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1/resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", True),
}


def _dry_run(kube: Kube, obj: dict) -> dict:
    """Create ``obj`` with ``dryRun=All`` (in the test's namespace when namespaced)."""
    collection, namespaced = COLLECTIONS[obj["kind"]]
    obj = copy.deepcopy(obj)
    if namespaced:
        obj["metadata"]["namespace"] = kube.namespace
    if obj["kind"] == "Namespace":
        obj["metadata"]["name"] = f"{kube.namespace}-dry"
    return kube.request("POST", collection.format(ns=kube.namespace), obj, query={"dryRun": "All"})


def _trace(tmp_path: Path, mapping: str):  # type: ignore[no-untyped-def]
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    return openb.import_openb(tmp_path / "nodes.csv", tmp_path / "pods.csv", mapping=mapping)


@pytest.mark.parametrize("mapping", ["dra", "extended"])
def test_the_apiserver_accepts_every_object_of_the_trace(
    kube: Kube, tmp_path: Path, mapping: str
) -> None:
    trace = _trace(tmp_path, mapping)
    objects = [
        *trace.nodes,
        *trace.objects,
        *(c for p in trace.pods for c in p.claims),
        *(p.pod for p in trace.pods),
    ]
    stored = {}
    for obj in objects:
        stored[(obj["kind"], obj["metadata"]["name"])] = _dry_run(kube, obj)
    kinds = sorted({kind for kind, _ in stored})
    if mapping == "dra":
        assert kinds == [
            "DeviceClass",
            "Namespace",
            "Node",
            "Pod",
            "ReplicaSet",
            "ResourceClaim",
            "ResourceSlice",
        ]
        device = stored[("ResourceSlice", gpus.slice_name("openb-node-0001"))]["spec"]["devices"][0]
        assert device["allowMultipleAllocations"] is True
        assert device["capacity"][gpus.SHARE]["requestPolicy"] == {
            "default": "1k",
            "validRange": {"min": "1", "max": "1k"},
        }
        claim = stored[("ResourceClaim", "openb-pod-0001-gpu")]
        exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
        assert exactly["capacity"] == {"requests": {gpus.SHARE: "460"}}
        assert "selectors" in exactly
        pod = stored[("Pod", "openb-pod-0001")]
        assert pod["spec"]["resourceClaims"] == [
            {"name": "gpu", "resourceClaimName": "openb-pod-0001-gpu"}
        ]
    else:
        assert kinds == ["Namespace", "Node", "Pod", "ReplicaSet"]
        pod = stored[("Pod", "openb-pod-0002")]
        assert pod["spec"]["containers"][0]["resources"]["limits"] == {gpus.GPU_RESOURCE: "2"}


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"default": "1001", "validRange": {"min": "1", "max": "1000"}}, "default"),
        ({"default": "1000", "validRange": {"min": "1", "max": "2000"}}, "max"),
        ({"default": "1000", "validRange": {"min": "1", "step": "1000"}}, "step"),
    ],
)
def test_a_request_policy_upstream_rejects_is_refused(kube: Kube, policy: dict, field: str) -> None:
    resource_slice = gpus.resource_slice("openb-node-0001", 1, "T4")
    resource_slice["spec"]["devices"][0]["capacity"][gpus.SHARE]["requestPolicy"] = policy
    with pytest.raises(ApiError) as caught:
        _dry_run(kube, resource_slice)
    assert caught.value.status == 422, caught.value
    assert "requestPolicy" in str(caught.value), caught.value
