"""The DRA GPU mapping is something the structured allocator (``extender.dra``, what the
DynamicResources plugin runs) allocates: shared GPUs by their ``share`` capacity, several
claims on one GPU until its 1000 are used, multi-GPU claims on distinct GPUs, the model
selector; and the slice's request policy is one upstream validation accepts."""

from __future__ import annotations

import pytest

from extender.dra.cel import CELCache
from extender.dra.structured import AllocatedState, Allocator, Features, Quantity
from extender.replay import gpus

NODE = {"metadata": {"name": "n-1", "labels": {"kubernetes.io/hostname": "n-1"}}}


def _allocator(count: int = 2, model: str = "V100M16", state: AllocatedState | None = None):
    slices = [gpus.resource_slice("n-1", count, model)]
    classes = {gpus.DEVICE_CLASS: gpus.device_class()}
    return Allocator(Features(), state or AllocatedState(), classes.get, slices, CELCache(10))


def _claim(name: str, num_gpu: int, milli: int, models: tuple[str, ...] = ()) -> dict:
    claim = gpus.resource_claim(name, "default", num_gpu, milli, models)
    claim["metadata"]["uid"] = f"uid-{name}"
    return claim


def _results(allocation: dict) -> list[tuple[str, str | None]]:
    return [
        (r["device"], (r.get("consumedCapacity") or {}).get(gpus.SHARE))
        for r in allocation["devices"]["results"]
    ]


def test_a_shared_claim_consumes_its_share_of_one_gpu() -> None:
    allocation = _allocator().allocate(NODE, [_claim("p", 1, 460)])
    assert allocation is not None
    assert _results(allocation[0]) == [("gpu-0", "460")]
    assert allocation[0]["devices"]["results"][0]["shareID"]  # a shared allocation


def test_shares_add_up_on_one_gpu_and_spill_to_the_next() -> None:
    # Three claims in one call: 460 + 460 fit gpu-0's 1000, the third goes to gpu-1.
    claims = [_claim(f"p{i}", 1, 460) for i in range(3)]
    allocation = _allocator().allocate(NODE, claims)
    assert allocation is not None
    assert [_results(a) for a in allocation] == [
        [("gpu-0", "460")],
        [("gpu-0", "460")],
        [("gpu-1", "460")],
    ]


def test_consumed_capacity_in_use_is_respected() -> None:
    # 600 of gpu-0 already consumed (a claim in the API): 460 does not fit there any more.
    state = AllocatedState()
    state.aggregated_capacity[(gpus.DRIVER, "n-1", "gpu-0")] = {gpus.SHARE: Quantity.parse("600")}
    allocation = _allocator(state=state).allocate(NODE, [_claim("p", 1, 460)])
    assert allocation is not None and _results(allocation[0]) == [("gpu-1", "460")]


def test_a_whole_gpu_claim_needs_an_untouched_gpu() -> None:
    state = AllocatedState()
    state.aggregated_capacity[(gpus.DRIVER, "n-1", "gpu-0")] = {gpus.SHARE: Quantity.parse("1")}
    state.aggregated_capacity[(gpus.DRIVER, "n-1", "gpu-1")] = {gpus.SHARE: Quantity.parse("1")}
    assert _allocator(state=state).allocate(NODE, [_claim("p", 1, 1000)]) is None


def test_a_multi_gpu_claim_takes_distinct_gpus() -> None:
    allocation = _allocator(count=4).allocate(NODE, [_claim("p", 2, 1000)])
    assert allocation is not None
    # The API's canonical form of 1000 is "1k".
    assert _results(allocation[0]) == [("gpu-0", "1k"), ("gpu-1", "1k")]
    assert _allocator(count=1).allocate(NODE, [_claim("p", 2, 1000)]) is None


@pytest.mark.parametrize(
    ("models", "fits"),
    [(("V100M16",), True), (("V100M16", "V100M32"), True), (("T4",), False), (("T4", "G2"), False)],
)
def test_the_model_selector(models: tuple[str, ...], fits: bool) -> None:
    allocation = _allocator(model="V100M16").allocate(NODE, [_claim("p", 1, 500, models)])
    assert (allocation is not None) is fits


def test_the_share_request_policy_is_valid_upstream() -> None:
    """``validateRequestPolicyRange`` (pkg/apis/resource/validation): default within
    [min, max], min and max within the value, min + step within the value, default and max
    multiples of step from min."""
    capacity = gpus.resource_slice("n-1", 1, "T4")["spec"]["devices"][0]["capacity"][gpus.SHARE]
    value = int(capacity["value"])
    policy = capacity["requestPolicy"]
    default, valid = int(policy["default"]), policy["validRange"]
    low, high, step = int(valid["min"]), int(valid["max"]), int(valid.get("step", 1))
    assert 0 <= low <= default <= high <= value
    assert low + step <= value
    assert (default - low) % step == 0 and (high - low) % step == 0


def test_slice_gpus_reads_back_what_resource_slice_wrote() -> None:
    assert gpus.slice_gpus(gpus.resource_slice("n-7", 2, "G2")) == [
        ("n-7/gpu-0", "G2", 1000),
        ("n-7/gpu-1", "G2", 1000),
    ]
    assert gpus.device_id("n-7", 1) == "n-7/gpu-1"


def test_the_model_selector_expression() -> None:
    attribute = 'device.attributes["gpu.kube-extender.dev"].model'
    assert gpus.model_selector(["T4"]) == f'{attribute} == "T4"'
    assert gpus.model_selector(["P100", "T4"]) == f'{attribute} in ["P100", "T4"]'
