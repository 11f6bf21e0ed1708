"""DynamicResources PreEnqueue, PreFilter, args and the queueing hints: the cases of upstream
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go`` that need no
allocator (messages and status codes as upstream)."""

from __future__ import annotations

import copy

import pytest

from extender.config.defaults import DEFAULT_MULTI_POINT, UPSTREAM_ONLY_PLUGINS, default_args
from extender.framework.events import ActionType, QueueingHint, Resource
from extender.framework.status import Code

from .fixtures import (
    CLAIM_NAME,
    CLASS_NAME,
    FakeHandle,
    allocated,
    claim,
    cycle,
    device_class,
    plugin,
    pod_with_claim_name,
    pod_with_claim_template,
)


def pre_filter(handle: FakeHandle, pod: dict):
    pl = plugin(handle)
    pl.new_allocator = lambda *args: object()  # PreFilter only builds it
    state = cycle()
    return pl.pre_filter(state, pod, [])


# -- the profile and args --------------------------------------------------------------------


def test_in_the_default_profile_before_default_preemption_with_weight_2() -> None:
    names = [spec.name for spec in DEFAULT_MULTI_POINT]
    assert names.index("DynamicResources") == names.index("DefaultPreemption") - 1
    assert next(s.weight for s in DEFAULT_MULTI_POINT if s.name == "DynamicResources") == 2
    assert "DynamicResources" not in UPSTREAM_ONLY_PLUGINS


def test_args_defaults_and_validation() -> None:
    assert default_args("DynamicResources") == {
        "filterTimeout": "10s",
        "bindingTimeout": "10m0s",
    }
    pl = plugin(FakeHandle(), default_args("DynamicResources"))
    assert (pl.filter_timeout, pl.binding_timeout) == (10.0, 600.0)
    assert plugin(FakeHandle(), {"filterTimeout": "0s"}).filter_timeout == 0
    with pytest.raises(ValueError, match=r'^filterTimeout: Invalid value: "-1s": must be zero'):
        plugin(FakeHandle(), {"filterTimeout": "-1s"})
    with pytest.raises(ValueError, match=r"^bindingTimeout: .*must be at least 1 second$"):
        plugin(FakeHandle(), {"bindingTimeout": "500ms"})
    with pytest.raises(ValueError, match="filterTimeout"):
        plugin(FakeHandle(), {"filterTimeout": 10})


# -- PreEnqueue ------------------------------------------------------------------------------


def test_pre_enqueue_pod_without_claims_passes() -> None:
    pod = pod_with_claim_name()
    del pod["spec"]["resourceClaims"]
    assert plugin(FakeHandle()).pre_enqueue(pod) is None


def test_pre_enqueue_waits_for_the_generated_claim() -> None:
    status = plugin(FakeHandle()).pre_enqueue(pod_with_claim_template(generated=None))
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ('pod "default/my-pod": ResourceClaim not created yet',)


def test_pre_enqueue_missing_claim() -> None:
    status = plugin(FakeHandle()).pre_enqueue(pod_with_claim_name())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f'could not find ResourceClaim "default/{CLAIM_NAME}"',)


def test_pre_enqueue_existing_claim_passes() -> None:
    handle = FakeHandle([claim()], [device_class()])
    assert plugin(handle).pre_enqueue(pod_with_claim_name()) is None


def test_pre_enqueue_generated_claim_needs_no_name() -> None:
    # The controller decided no claim is needed: a nil name is skipped.
    pod = pod_with_claim_template(generated=None)
    pod["status"] = {"resourceClaimStatuses": [{"name": "my-resource"}]}
    assert plugin(FakeHandle()).pre_enqueue(pod) is None


# -- PreFilter -------------------------------------------------------------------------------


def test_pre_filter_skips_pods_without_claims() -> None:
    pod = pod_with_claim_name()
    del pod["spec"]["resourceClaims"]
    result, status = pre_filter(FakeHandle(), pod)
    assert result is None and status is not None and status.code == Code.SKIP


def test_pre_filter_claim_being_deleted() -> None:
    c = claim()
    c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    _, status = pre_filter(FakeHandle([c], [device_class()]), pod_with_claim_name())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f'resourceclaim "{CLAIM_NAME}" is being deleted',)


def test_pre_filter_generated_claim_not_owned_by_the_pod() -> None:
    _, status = pre_filter(FakeHandle([claim()], [device_class()]), pod_with_claim_template())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        f"ResourceClaim default/{CLAIM_NAME} was not created for Pod default/my-pod "
        "(Pod is not owner)",
    )


def test_pre_filter_generated_claim_owned_by_the_pod() -> None:
    pod = pod_with_claim_template()
    handle = FakeHandle([claim(owner=pod)], [device_class()])
    assert pre_filter(handle, pod) == (None, None)


def test_pre_filter_missing_class() -> None:
    _, status = pre_filter(FakeHandle([claim()]), pod_with_claim_name())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f"request req-1: device class {CLASS_NAME} does not exist",)


def test_pre_filter_missing_class_of_a_subrequest() -> None:
    c = claim()
    c["spec"]["devices"]["requests"] = [
        {
            "name": "req-1",
            "firstAvailable": [{"name": "subreq-1", "deviceClassName": "does-not-exist"}],
        }
    ]
    _, status = pre_filter(FakeHandle([c], [device_class()]), pod_with_claim_name())
    assert status is not None
    assert status.reasons == ("request req-1/subreq-1: device class does-not-exist does not exist",)


def test_pre_filter_unknown_request_type() -> None:
    c = claim()
    c["spec"]["devices"]["requests"] = [{"name": "req-1"}]
    _, status = pre_filter(FakeHandle([c], [device_class()]), pod_with_claim_name())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        f"resource claim default/{CLAIM_NAME}, request req-1: unknown request type",
    )


def test_pre_filter_claim_in_flight_for_another_pod() -> None:
    handle = FakeHandle([claim()], [device_class()])
    pl = plugin(handle)
    pl.new_allocator = lambda *args: object()
    pl.tracker.signal_claim_pending_allocation(f"uid-{CLAIM_NAME}", allocated(claim()))
    _, status = pl.pre_filter(cycle(), pod_with_claim_name(), [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        f"resource claim default/{CLAIM_NAME} is in the process of being allocated",
    )


def test_pre_filter_allocated_claim_builds_no_allocator() -> None:
    handle = FakeHandle([allocated(claim())], [device_class()])
    pl = plugin(handle)
    built = []
    pl.new_allocator = lambda *args: built.append(args)
    state = cycle()
    assert pl.pre_filter(state, pod_with_claim_name(), []) == (None, None)
    assert built == []


def test_pre_filter_gives_the_allocator_the_taken_devices() -> None:
    other = allocated(claim("other", uid="other"), device="instance-2")
    admin = allocated(claim("admin", uid="admin"), device="instance-3")
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    handle = FakeHandle([claim(), other, admin], [device_class()])
    pl = plugin(handle)
    seen = []
    pl.new_allocator = lambda features, taken, classes, slices, cel: seen.append(taken)
    pl._cel = lambda: None  # type: ignore[method-assign]
    assert pl.pre_filter(cycle(), pod_with_claim_name(), []) == (None, None)
    (taken,) = seen
    # Admin access does not take the device (foreachAllocatedDevice).
    assert taken.devices == {("some-driver", "worker", "instance-2")}


# -- events and queueing hints ---------------------------------------------------------------


def test_events_to_register() -> None:
    events = {(e.event.resource, e.event.action) for e in plugin(FakeHandle()).events_to_register()}
    assert events == {
        (
            Resource.NODE,
            ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
        ),
        (Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
        (Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        (Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        (Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE),
    }


def test_claim_change_hints() -> None:
    pending = claim()
    handle = FakeHandle([pending], [device_class()])
    hint = plugin(handle).is_schedulable_after_claim_change
    pod = pod_with_claim_name()
    # Our claim was created.
    assert hint(pod, None, pending) == QueueingHint.QUEUE
    # Another claim was created: not ours.
    other = claim("other", uid="other")
    assert hint(pod, None, other) == QueueingHint.QUEUE_SKIP
    # Another claim was deallocated: its devices are free.
    assert hint(pod, allocated(other), other) == QueueingHint.QUEUE
    # Our claim got a finalizer only: the status did not change.
    finalized = copy.deepcopy(pending)
    finalized["metadata"]["finalizers"] = ["x"]
    assert hint(pod, pending, finalized) == QueueingHint.QUEUE_SKIP
    # Our claim's status changed.
    assert hint(pod, pending, allocated(pending)) == QueueingHint.QUEUE
    # The pod still misses a claim: nothing helps yet.
    assert hint(pod_with_claim_template(None), None, pending) == QueueingHint.QUEUE_SKIP


def test_pod_change_hint() -> None:
    pod = pod_with_claim_template(None)
    generated = pod_with_claim_template()
    handle = FakeHandle([claim(owner=pod)], [device_class()])
    hint = plugin(handle).is_schedulable_after_pod_change
    assert hint(pod, pod, generated) == QueueingHint.QUEUE
    # Still not created.
    assert hint(pod, pod, pod) == QueueingHint.QUEUE_SKIP
    # Another pod.
    other = copy.deepcopy(generated)
    other["metadata"]["uid"] = "other"
    assert hint(pod, None, other) == QueueingHint.QUEUE_SKIP


def test_profiles_of_one_scheduler_share_the_claim_tracker() -> None:
    # Upstream has one DRA manager per scheduler: in-flight devices are seen by every profile.
    from extender.config.loader import loads
    from extender.framework.handle import Services
    from extender.framework.runtime import Framework
    from extender.plugins import in_tree_registry

    config = loads(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - schedulerName: a\n  - schedulerName: b\n",
        source="test",
    )
    services, registry = Services(), in_tree_registry()
    a, b = (Framework(p, registry, services).plugins["DynamicResources"] for p in config.profiles)
    assert a.tracker is b.tracker
    other = Framework(config.profiles[0], registry, Services()).plugins["DynamicResources"]
    assert other.tracker is not a.tracker
