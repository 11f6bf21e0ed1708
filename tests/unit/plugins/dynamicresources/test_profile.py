"""DynamicResources in the whole default profile, through the testing kit (the path
``simulate`` and ``explain`` take): DRA objects in a cluster dump are read by kind."""

from __future__ import annotations

from extender.testing import Cluster, run_profile

from .fixtures import claim, device_class, node, node_slice, pod_with_claim_name


def dump(*slices: dict) -> Cluster:
    return Cluster.from_objects([node("worker"), node("other"), device_class(), claim(), *slices])


def test_only_the_node_with_devices_is_feasible() -> None:
    result = run_profile(pod_with_claim_name(), dump(node_slice("worker")))
    assert result.feasible == ["worker"]
    assert result.reasons("other") == ("cannot allocate all claims",)
    assert result.rejected_by("other") == "DynamicResources"


def test_no_slice_no_node() -> None:
    result = run_profile(pod_with_claim_name(), dump())
    assert result.fit_error == "0/2 nodes are available: 2 cannot allocate all claims."


def test_missing_claim_rejects_every_node_at_prefilter() -> None:
    cluster = Cluster.from_objects([node("worker"), device_class()])
    result = run_profile(pod_with_claim_name(), cluster)
    assert result.fit_error == (
        '0/1 nodes are available: could not find ResourceClaim "default/my-pod-my-resource".'
    )
