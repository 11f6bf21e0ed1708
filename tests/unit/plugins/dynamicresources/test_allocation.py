"""DynamicResources Filter, Reserve, Unreserve, PreBind, PostFilter and Score with the real
structured allocator (``extender.dra.structured``) and CEL: the cases of upstream
``dynamicresources_test.go`` (``structured-no-resources``, ``structured-with-resources``,
``structured-allocation-already-in-flight``, ``deallocate-for-postfilter``, the
binding-condition cases), with upstream's messages and codes."""

from __future__ import annotations

import copy

from extender.framework.status import Code, Status

from .fixtures import (
    CLAIM_NAME,
    DRIVER,
    NODE_NAME,
    POD_UID,
    FakeHandle,
    allocated,
    claim,
    cycle,
    device_class,
    node,
    node_info,
    node_slice,
    plugin,
    pod_with_claim_name,
    reserved_for,
)


def run_filter(pl, pod, nodes):
    state = cycle()
    result, status = pl.pre_filter(state, pod, [])
    assert status is None, status
    return state, {n["metadata"]["name"]: pl.filter(state, pod, node_info(n)) for n in nodes}


def test_no_slices_cannot_allocate_all_claims() -> None:
    handle = FakeHandle([claim()], [device_class()])
    _, statuses = run_filter(plugin(handle), pod_with_claim_name(), [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("cannot allocate all claims",)


def test_filter_reserve_prebind_allocate_and_reserve_the_claim() -> None:
    handle = FakeHandle([claim()], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, statuses = run_filter(pl, pod, [node(), node("other")])
    assert statuses[NODE_NAME] is None
    other = statuses["other"]
    assert other is not None and other.reasons == ("cannot allocate all claims",)
    assert pl.score(state, pod, node_info(node())) == (0, None)

    assert pl.reserve(state, pod, NODE_NAME) is None
    assert pl.tracker.in_flight_count() == 1
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    assert pl.tracker.in_flight_count() == 0
    (stored,) = handle.claims
    assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    results = stored["status"]["allocation"]["devices"]["results"]
    assert [(r["request"], r["driver"], r["pool"], r["device"]) for r in results] == [
        ("req-1", DRIVER, NODE_NAME, "instance-1")
    ]
    assert stored["status"]["reservedFor"] == [
        {"resource": "pods", "name": "my-pod", "uid": POD_UID}
    ]
    assert stored["status"]["allocation"]["allocationTimestamp"].endswith("Z")
    # The finalizer in a normal update, then the status.
    assert [verb for verb, _ in handle.client.writes] == ["update", "update-status"]
    # The API's answer is assumed until the informer catches up.
    assert pl.tracker.get("default", CLAIM_NAME) == stored


def test_in_flight_devices_are_not_given_to_the_next_pod() -> None:
    # Two pods, one device: the second pod's cycle runs before the first one's PreBind.
    first, second = claim("first", uid="first"), claim("second", uid="second")
    handle = FakeHandle([first, second], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod1 = pod_with_claim_name("first")
    state1, statuses = run_filter(pl, pod1, [node()])
    assert statuses[NODE_NAME] is None
    assert pl.reserve(state1, pod1, NODE_NAME) is None

    pod2 = pod_with_claim_name("second")
    pod2["metadata"].update(name="pod-2", uid="5678")
    _, statuses = run_filter(pl, pod2, [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.reasons == ("cannot allocate all claims",)

    # Unreserve frees the device.
    pl.unreserve(state1, pod1, NODE_NAME)
    assert pl.tracker.in_flight_count() == 0
    _, statuses = run_filter(pl, pod2, [node()])
    assert statuses[NODE_NAME] is None


def test_devices_of_allocated_claims_are_taken() -> None:
    other = allocated(claim("other", uid="other"))
    handle = FakeHandle([claim(), other], [device_class()], [node_slice()])
    _, statuses = run_filter(plugin(handle), pod_with_claim_name(), [node()])
    assert statuses[NODE_NAME] is not None
    assert statuses[NODE_NAME].reasons == ("cannot allocate all claims",)


def test_allocated_claim_elsewhere_is_not_available_and_postfilter_deallocates() -> None:
    # Allocated for node "other" and reserved for nobody: PostFilter deallocates it.
    c = allocated(claim(), node_name="other")
    handle = FakeHandle([c], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, statuses = run_filter(pl, pod, [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("resourceclaim not available on the node",)
    result, status = pl.post_filter(state, pod, {NODE_NAME: status})
    assert result is None and status == Status(
        Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed"
    )
    ((verb, written),) = handle.client.writes
    assert verb == "update-status"
    assert "allocation" not in written["status"] and "reservedFor" not in written["status"]


def test_postfilter_keeps_a_claim_reserved_for_another_pod() -> None:
    other_pod = {"metadata": {"name": "other", "uid": "other-uid"}}
    c = reserved_for(allocated(claim(), node_name="other"), other_pod)
    handle = FakeHandle([c], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, statuses = run_filter(pl, pod, [node()])
    _, status = pl.post_filter(state, pod, statuses)
    assert status == Status(Code.UNSCHEDULABLE, "still not schedulable")
    assert handle.client.writes == []


def test_postfilter_without_claims() -> None:
    pod = pod_with_claim_name()
    del pod["spec"]["resourceClaims"]
    pl = plugin(FakeHandle())
    state = cycle()
    pl.pre_filter(state, pod, [])
    assert pl.post_filter(state, pod, {}) == (
        None,
        Status(Code.UNSCHEDULABLE, "no new claims to deallocate"),
    )
    # Another PreFilter plugin rejected the pod first: upstream's ErrNotFound ends PostFilter
    # (no preemption) and is the FitError's tail.
    _, status = pl.post_filter(cycle(), pod, {})
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.reasons == ("not found",)


def test_allocated_claim_on_this_node_is_reserved_in_prebind() -> None:
    handle = FakeHandle([allocated(claim())], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, statuses = run_filter(pl, pod, [node()])
    assert statuses[NODE_NAME] is None
    assert pl.reserve(state, pod, NODE_NAME) is None
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    # Only the status: the finalizer is there and the allocation is kept.
    assert [verb for verb, _ in handle.client.writes] == ["update-status"]
    assert handle.claims[0]["status"]["reservedFor"][0]["uid"] == POD_UID


def test_prebind_retries_a_conflict_with_a_fresh_claim() -> None:
    handle = FakeHandle([allocated(claim())], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    handle.client.conflicts = 2
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    assert [verb for verb, _ in handle.client.writes] == ["update-status"] * 3


def test_prebind_claim_allocated_elsewhere_meanwhile() -> None:
    handle = FakeHandle([claim()], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    pl.reserve(state, pod, NODE_NAME)
    handle.claims[0] = allocated(handle.claims[0], device="instance-9")
    handle.client.conflicts = 1  # our stale write conflicts, the fresh claim is allocated
    status = pl.pre_bind(state, pod, NODE_NAME)
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (
        f"claim default/{CLAIM_NAME} got allocated elsewhere in the meantime",
    )
    assert pl.tracker.in_flight_count() == 0


def test_unreserve_removes_the_pod_from_reserved_for() -> None:
    c = reserved_for(allocated(claim()), pod_with_claim_name())
    handle = FakeHandle([c], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    pl.unreserve(state, pod, NODE_NAME)
    assert handle.client.writes == [
        (
            "patch-status",
            {
                "metadata": {"uid": f"uid-{CLAIM_NAME}"},
                "status": {"reservedFor": [{"$patch": "delete", "uid": POD_UID}]},
            },
        )
    ]


def prioritized_claim() -> dict:
    c = claim()
    c["spec"]["devices"]["requests"] = [
        {
            "name": "req-1",
            "firstAvailable": [
                {
                    "name": "big",
                    "deviceClassName": "my-resource-class",
                    "allocationMode": "ExactCount",
                    "count": 2,
                },
                {
                    "name": "small",
                    "deviceClassName": "my-resource-class",
                    "allocationMode": "ExactCount",
                    "count": 1,
                },
            ],
        }
    ]
    return c


def test_score_prefers_the_earlier_subrequest() -> None:
    handle = FakeHandle(
        [prioritized_claim()],
        [device_class()],
        [node_slice(devices=2), node_slice("worker-2", devices=1)],
    )
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, statuses = run_filter(pl, pod, [node(), node("worker-2")])
    assert statuses == {NODE_NAME: None, "worker-2": None}
    # 8 - 0 for "big" on worker, 8 - 1 for "small" on worker-2.
    assert pl.score(state, pod, node_info(node())) == (8, None)
    assert pl.score(state, pod, node_info(node("worker-2"))) == (7, None)


def binding_claim(conditions: list[dict] | None) -> dict:
    c = reserved_for(allocated(claim()), pod_with_claim_name())
    result = c["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["attached"]
    result["bindingFailureConditions"] = ["failed"]
    c["status"]["allocation"]["allocationTimestamp"] = "2026-01-01T00:00:00Z"
    if conditions is not None:
        c["status"]["devices"] = [
            {"driver": DRIVER, "pool": NODE_NAME, "device": "instance-1", "conditions": conditions}
        ]
    return c


def test_binding_conditions() -> None:
    pl = plugin(FakeHandle())
    assert pl.is_claim_ready_for_binding(binding_claim(None)) is False
    assert pl.is_claim_ready_for_binding(binding_claim([{"type": "attached", "status": "True"}]))
    assert not pl.is_claim_ready_for_binding(
        binding_claim([{"type": "attached", "status": "False"}])
    )
    from extender.plugins.dynamicresources.dynamic_resources import BindingFailed

    failed = binding_claim(
        [{"type": "failed", "status": "True", "reason": "Broken", "message": "no link"}]
    )
    try:
        pl.is_claim_ready_for_binding(failed)
    except BindingFailed as exc:
        assert str(exc) == (
            f'device binding failed: claim={CLAIM_NAME}, reason=Broken, message="no link"'
        )
    else:
        raise AssertionError("no BindingFailed")
    # Allocated 2026-01-01, binding timeout 600 s: timed out long ago.
    assert pl.is_claim_timeout(binding_claim(None))


def test_filter_marks_a_claim_whose_binding_failed_unavailable() -> None:
    failed = binding_claim([{"type": "failed", "status": "True"}])
    handle = FakeHandle([failed], [device_class()], [node_slice()])
    pl = plugin(handle)
    _, statuses = run_filter(pl, pod_with_claim_name(), [node()])
    assert statuses[NODE_NAME] is not None
    assert statuses[NODE_NAME].reasons == ("resourceclaim not available on the node",)


def test_prebind_waits_for_binding_conditions() -> None:
    ready = binding_claim([{"type": "attached", "status": "True"}])
    pending = copy.deepcopy(ready)
    pending["status"]["devices"][0]["conditions"] = []
    pending["status"]["reservedFor"] = []
    handle = FakeHandle([pending], [device_class()], [node_slice()])
    pl = plugin(handle)
    pl.binding_poll_interval = 0.01
    pl.clock = lambda: __import__("datetime").datetime(  # before the timeout
        2026, 1, 1, 0, 1, tzinfo=__import__("datetime").UTC
    )
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    polls = []
    real_get = pl.tracker.get

    def get(namespace: str, name: str):
        polls.append(name)
        if len(polls) >= 3:
            return ready
        return real_get(namespace, name)

    pl.tracker.get = get  # type: ignore[method-assign]
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    assert len(polls) >= 3
    assert handle.event_recorder.events == [
        (
            "BindingConditionsPending",
            f"waiting for binding conditions for device on node {NODE_NAME}",
        )
    ]


BROKEN = {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}


def test_cel_runtime_error_in_the_claim_is_an_error() -> None:
    # upstream "claim-parameters-CEL-runtime-error": the pod stays pending, with the error.
    c = claim()
    c["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [BROKEN]
    handle = FakeHandle([c], [device_class()], [node_slice()])
    _, statuses = run_filter(plugin(handle), pod_with_claim_name(), [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (
        f"claim default/{CLAIM_NAME}: selector #0: CEL runtime error: no such key: healthy",
    )


def test_cel_runtime_error_in_the_class_is_an_error() -> None:
    # upstream "class-parameters-CEL-runtime-error".
    broken = device_class()
    broken["spec"]["selectors"] = [BROKEN]
    handle = FakeHandle([claim()], [broken], [node_slice()])
    _, statuses = run_filter(plugin(handle), pod_with_claim_name(), [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (
        "class my-resource-class: selector #0: CEL runtime error: no such key: healthy",
    )


def test_filter_timeout_is_an_error_naming_the_node() -> None:
    # upstream "timeout": the allocator past its deadline.
    handle = FakeHandle([claim()], [device_class()], [node_slice()])
    pl = plugin(handle, {"filterTimeout": "1ns"})
    from extender.dra.structured import AllocationTimeout

    class Slow:
        def allocate(self, node, claims, deadline):
            assert deadline is not None
            raise AllocationTimeout("deadline")

    pl.new_allocator = lambda *args: Slow()
    _, statuses = run_filter(pl, pod_with_claim_name(), [node()])
    status = statuses[NODE_NAME]
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (f"node {NODE_NAME}: timed out trying to allocate devices",)


def test_filter_timeout_zero_disables_the_deadline() -> None:
    handle = FakeHandle([claim()], [device_class()], [node_slice()])
    pl = plugin(handle, {"filterTimeout": "0s"})
    seen = []
    real = pl.new_allocator

    def spy(*args):
        allocator = real(*args)

        class Spy:
            def allocate(self, node, claims, deadline):
                seen.append(deadline)
                return allocator.allocate(node, claims, deadline)

        return Spy()

    pl.new_allocator = spy
    _, statuses = run_filter(pl, pod_with_claim_name(), [node()])
    assert statuses[NODE_NAME] is None and seen == [None]


def test_tainted_device_is_not_allocated() -> None:
    # upstream "tainted-device-enabled": a NoSchedule taint without a toleration.
    tainted = node_slice()
    tainted["spec"]["devices"][0]["taints"] = [
        {"key": "example.com/taint", "value": "tainted", "effect": "NoSchedule"}
    ]
    handle = FakeHandle([claim()], [device_class()], [tainted])
    _, statuses = run_filter(plugin(handle), pod_with_claim_name(), [node()])
    assert statuses[NODE_NAME] is not None
    assert statuses[NODE_NAME].reasons == ("cannot allocate all claims",)


def test_pre_bind_pre_flight() -> None:
    pl = plugin(FakeHandle([claim()], [device_class()], [node_slice()]))
    state, _ = run_filter(pl, pod_with_claim_name(), [node()])
    assert pl.pre_bind_pre_flight(state, pod_with_claim_name(), NODE_NAME) is None
    pod = pod_with_claim_name()
    del pod["spec"]["resourceClaims"]
    empty = cycle()
    pl.pre_filter(empty, pod, [])
    status = pl.pre_bind_pre_flight(empty, pod, NODE_NAME)
    assert status is not None and status.code == Code.SKIP


def test_prebind_claim_deallocated_meanwhile() -> None:
    # upstream "bind-failure-concurrent-deallocation": an allocated claim's allocation is gone
    # when PreBind reserves it.
    handle = FakeHandle([allocated(claim())], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    fresh = claim()
    fresh["metadata"]["resourceVersion"] = "2"
    handle.claims[0] = fresh
    status = pl.pre_bind(state, pod, NODE_NAME)
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (
        f"claim default/{CLAIM_NAME} got deallocated elsewhere in the meantime",
    )


def test_prebind_keeps_an_allocation_timestamp() -> None:
    # upstream "dont-add-allocation-timestamp".
    c = allocated(claim())
    c["status"]["allocation"]["allocationTimestamp"] = "2026-01-02T03:04:05Z"
    handle = FakeHandle([c], [device_class()], [node_slice()])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    assert pl.pre_bind(state, pod, NODE_NAME) is None
    assert handle.claims[0]["status"]["allocation"]["allocationTimestamp"] == (
        "2026-01-02T03:04:05Z"
    )
