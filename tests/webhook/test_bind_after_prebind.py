"""The bind verb after kube-scheduler's PreBind: kube-scheduler runs DynamicResources' PreBind
(claims allocated and reserved, the extended-resource claim created) before it calls an
extender's bind. The bind verb checks the claims as PreBind left them instead of filtering
the pod again: DynamicResources' Filter takes the extended-resource claim PreBind just wrote
for one left by an earlier cycle and rejects it ("cannot schedule extended resource claim"),
which used to refuse every such pod kube-scheduler bound through us."""

from __future__ import annotations

import copy

import pytest

from extender.config import default_profile
from extender.framework.handle import DEVICE_CLASSES, RESOURCE_CLAIMS, Services
from extender.framework.runtime import Framework
from extender.plugins import in_tree_registry
from extender.plugins.dynamicresources.extended import EXTENDED_RESOURCE_CLAIM_ANNOTATION
from extender.webhook.service import ExtenderService
from tests.unit.builders import make_listers
from tests.unit.plugins.dynamicresources.fixtures import (
    NODE_NAME,
    POD_UID,
    allocated,
    claim,
    device_class,
    node,
    pod_with_claim_name,
    reserved_for,
)
from tests.webhook.test_contract import FakeBinder, FakeCache

GPU = "example.com/gpu"


def extended_pod() -> dict:
    """A pod asking for an extended resource a DeviceClass provides, after PreBind: its
    status names the claim PreBind created."""
    pod = pod_with_claim_name()
    del pod["spec"]["resourceClaims"]
    pod["spec"]["containers"][0]["resources"] = {"requests": {GPU: "1"}, "limits": {GPU: "1"}}
    pod["status"] = {
        "extendedResourceClaimStatus": {
            "resourceClaimName": "my-pod-extended-resources-x",
            "requestMappings": [
                {"containerName": "c", "resourceName": GPU, "requestName": "container-0-request-0"}
            ],
        }
    }
    return pod


def extended_claim(pod: dict, node_name: str = NODE_NAME) -> dict:
    c = claim("my-pod-extended-resources-x", owner=pod)
    c["metadata"]["annotations"] = {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    c["spec"]["devices"]["requests"][0]["name"] = "container-0-request-0"
    c = allocated(c, node_name=node_name)
    c["status"]["allocation"]["devices"]["results"][0]["request"] = "container-0-request-0"
    return reserved_for(c, pod)


def service(pod: dict, claims: list[dict]) -> tuple[ExtenderService, FakeBinder]:
    gpu_class = device_class()
    gpu_class["spec"]["extendedResourceName"] = GPU
    listers = make_listers({RESOURCE_CLAIMS: claims, DEVICE_CLASSES: [gpu_class]})
    fwk = Framework(default_profile(), in_tree_registry(), Services(listers=listers))
    binder = FakeBinder(pods={("default", pod["metadata"]["name"]): pod})
    nodes = [node(NODE_NAME), node("other")]
    return ExtenderService(fwk, cache=FakeCache(nodes), client=binder), binder


def bind(svc: ExtenderService, pod: dict, node_name: str = NODE_NAME) -> str:
    args = {
        "pod_name": pod["metadata"]["name"],
        "pod_namespace": "default",
        "pod_uid": POD_UID,
        "node": node_name,
    }
    return svc.bind(args)["Error"]


def test_a_pod_with_its_extended_resource_claim_allocated_by_prebind_is_bound() -> None:
    pod = extended_pod()
    svc, binder = service(pod, [extended_claim(pod)])
    assert bind(svc, pod) == ""
    assert [name for _, name in binder.calls] == [NODE_NAME]


def test_a_pod_whose_claim_prebind_allocated_and_reserved_is_bound() -> None:
    pod = pod_with_claim_name()
    svc, binder = service(pod, [reserved_for(allocated(claim()), pod)])
    assert bind(svc, pod) == ""
    assert [name for _, name in binder.calls] == [NODE_NAME]


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ("pending", "is not allocated (kube-scheduler's DynamicResources PreBind allocates it"),
        ("elsewhere", "is allocated to other nodes"),
        ("unreserved", "is not reserved for the pod"),
        ("missing", 'could not find ResourceClaim "default/my-pod-my-resource"'),
    ],
)
def test_claims_not_as_prebind_leaves_them_are_refused(state: str, why: str) -> None:
    """Without PreBind (or after a failed one) the pod would be bound with claims kubelet
    cannot use: refused, with the claim and the reason, nothing written."""
    pod = pod_with_claim_name()
    made = {
        "pending": [claim()],
        "elsewhere": [reserved_for(allocated(claim(), node_name="other"), pod)],
        "unreserved": [allocated(claim())],
        "missing": [],
    }[state]
    svc, binder = service(pod, copy.deepcopy(made))
    error = bind(svc, pod)
    assert "the pod's claims are not ready for this node" in error, error
    assert why in error, error
    assert binder.calls == []
