"""Coscheduling (scheduler-plugins ``pkg/coscheduling``, v0.34.7) on plain dicts: the profile is
loaded as a user writes it (Coscheduling enabled by name, swapped in as queueSort) and run by
the real runtime, so Permit's waits and rejections go through the waiting-pods map."""

from __future__ import annotations

import threading
import time

import pytest

from extender.config import ConfigError, loads
from extender.framework import CycleState, Framework, Snapshot
from extender.framework.events import ActionType, Resource
from extender.framework.pod_info import QueuedPodInfo
from extender.framework.status import Code, Status
from extender.plugins.coscheduling.coscheduling import (
    MSG_REJECTED_IN_POST_FILTER,
    MSG_REJECTED_IN_UNRESERVE,
    Coscheduling,
)
from extender.plugins.coscheduling.podgroup import POD_GROUP_LABEL
from extender.testing import Cluster, node, pod

PROFILE = "gang"
PODGROUP_KIND = "podgroups.scheduling.x-k8s.io"
CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {PROFILE}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
"""


def pod_group(
    name: str = "pg",
    min_member: int = 3,
    *,
    namespace: str = "default",
    min_resources: dict | None = None,
    timeout: int | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> dict:
    spec: dict = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": spec,
    }


def member(name: str, group: str = "pg", **kwargs) -> dict:
    return pod(name, labels={POD_GROUP_LABEL: group}, scheduler_name=PROFILE, **kwargs)


def profile(cluster: Cluster, args: dict | None = None) -> tuple[Framework, Coscheduling]:
    text = CONFIG
    if args:
        lines = "".join(f"      {k}: {v}\n" for k, v in args.items())
        text += f"  pluginConfig:\n  - name: Coscheduling\n    args:\n{lines}"
    config = loads(text, "<test>")
    fwk = Framework(config.profiles[0], config.registry, cluster.services())
    plugin = fwk.plugin("Coscheduling")
    assert isinstance(plugin, Coscheduling)
    return fwk, plugin


def gang(n: int = 3, min_member: int = 3, **group) -> tuple[Cluster, list[dict]]:
    pods = [member(f"p{i}") for i in range(1, n + 1)]
    cluster = Cluster(
        nodes=[node("n1")],
        pods=pods,
        objects={PODGROUP_KIND: [pod_group(min_member=min_member, **group)]},
    )
    return cluster, pods


def permit(fwk: Framework, p: dict, state: CycleState | None = None) -> Status | None:
    return fwk.run_permit_plugins(state or CycleState(), p, "n1")


def wait_in_thread(fwk: Framework, p: dict) -> dict:
    """wait_on_permit in a thread, as the binding cycle does; the answer lands in the dict."""
    box: dict = {}

    def run() -> None:
        box["status"] = fwk.wait_on_permit(p)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    box["thread"] = thread
    return box


def result(box: dict, timeout: float = 5) -> Status | None:
    box["thread"].join(timeout)
    assert not box["thread"].is_alive(), "still waiting at Permit"
    return box["status"]


# -- Permit ----------------------------------------------------------------------------


def test_quorum_reached_allows_every_member() -> None:
    cluster, (p1, p2, p3) = gang()
    fwk, _ = profile(cluster)
    assert permit(fwk, p1).code == Code.WAIT
    assert permit(fwk, p2).code == Code.WAIT
    waiting = [wait_in_thread(fwk, p) for p in (p1, p2)]
    assert permit(fwk, p3) is None  # the third member makes the quorum: no wait
    assert [result(box) for box in waiting] == [None, None]
    assert fwk.get_waiting_pod(p1["metadata"]["uid"]) is None


def test_bound_members_count_towards_the_quorum() -> None:
    cluster, (p1, p2, p3) = gang()
    p1["spec"]["nodeName"] = "n1"  # bound earlier (e.g. before a restart)
    p2["spec"]["nodeName"] = "n1"
    fwk, _ = profile(cluster)
    assert permit(fwk, p3) is None


def test_first_waiting_member_activates_its_siblings() -> None:
    cluster, (p1, p2, p3) = gang()
    fwk, _ = profile(cluster)
    state = CycleState()
    assert permit(fwk, p1, state).code == Code.WAIT
    assert sorted(state.pods_to_activate) == ["default/p2", "default/p3"]
    later = CycleState()
    assert permit(fwk, p2, later).code == Code.WAIT
    assert later.pods_to_activate == {}  # only the first member asks


def test_timeout_rejects_with_the_message_and_unreserve_rejects_the_siblings() -> None:
    cluster, (p1, p2, _) = gang(timeout=1)
    fwk, _ = profile(cluster)
    state1, state2 = CycleState(), CycleState()
    assert permit(fwk, p1, state1).code == Code.WAIT
    box1 = wait_in_thread(fwk, p1)
    time.sleep(0.3)
    assert permit(fwk, p2, state2).code == Code.WAIT
    box2 = wait_in_thread(fwk, p2)
    status = result(box1)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("rejected due to timeout after waiting 1s at plugin Coscheduling",)
    # The binding cycle of the timed-out pod runs Unreserve: its waiting sibling goes too.
    fwk.run_reserve_plugins_unreserve(state1, p1, "n1")
    sibling = result(box2)
    assert sibling.code == Code.UNSCHEDULABLE
    assert sibling.reasons == (MSG_REJECTED_IN_UNRESERVE,)
    assert sibling.plugin == "Coscheduling"


def test_wait_falls_back_to_the_args_then_to_60_seconds() -> None:
    cluster, (p1, *_) = gang()
    _, plugin = profile(cluster, {"permitWaitingTimeSeconds": 7})
    assert plugin.permit(CycleState(), p1, "n1") == (Status(Code.WAIT), 7.0)
    cluster, (p1, *_) = gang(timeout=3)
    _, plugin = profile(cluster, {"permitWaitingTimeSeconds": 7})
    assert plugin.permit(CycleState(), p1, "n1")[1] == 3.0
    cluster, (p1, *_) = gang()
    _, plugin = profile(cluster, {"permitWaitingTimeSeconds": 0})
    assert plugin.permit(CycleState(), p1, "n1")[1] == 60.0


def test_unreserve_rejects_waiting_siblings_only() -> None:
    cluster, (p1, p2, p3) = gang()
    other = member("q1", group="other")
    cluster.pods.append(other)
    cluster.objects[PODGROUP_KIND].append(pod_group("other", 2))
    fwk, _ = profile(cluster)
    assert permit(fwk, p1).code == Code.WAIT
    assert permit(fwk, other).code == Code.WAIT
    box1, box_other = wait_in_thread(fwk, p1), wait_in_thread(fwk, other)
    fwk.run_reserve_plugins_unreserve(CycleState(), p2, "n1")  # p2 failed after Reserve
    assert result(box1).reasons == (MSG_REJECTED_IN_UNRESERVE,)
    assert fwk.get_waiting_pod(other["metadata"]["uid"]) is not None  # another group
    fwk.reject_waiting_pod(other["metadata"]["uid"])
    result(box_other)


def test_unreserve_forgets_the_member() -> None:
    cluster, (p1, p2, p3) = gang()
    fwk, _ = profile(cluster)
    state = CycleState()
    assert permit(fwk, p1, state).code == Code.WAIT
    box = wait_in_thread(fwk, p1)
    fwk.reject_waiting_pod(p1["metadata"]["uid"])
    result(box)
    fwk.run_reserve_plugins_unreserve(state, p1, "n1")
    assert permit(fwk, p2).code == Code.WAIT
    boxes = [wait_in_thread(fwk, p2)]
    assert permit(fwk, p3).code == Code.WAIT  # p1 no longer counts: 2 of 3
    boxes.append(wait_in_thread(fwk, p3))
    for p in (p2, p3):
        fwk.reject_waiting_pod(p["metadata"]["uid"])
    for box in boxes:
        result(box)


def test_permit_without_its_pod_group_is_rejected_and_a_pod_without_label_passes() -> None:
    cluster = Cluster(nodes=[node("n1")], pods=[member("lonely", group="missing")])
    fwk, _ = profile(cluster)
    status = permit(fwk, cluster.pods[0])
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("PodGroup not found",)
    assert permit(fwk, pod("plain", scheduler_name=PROFILE)) is None


# -- PreFilter -------------------------------------------------------------------------


def pre_filter(fwk: Framework, cluster: Cluster, p: dict) -> Status | None:
    state = CycleState()
    snapshot = Snapshot.from_objects(
        cluster.nodes, [x for x in cluster.pods if x["spec"].get("nodeName")]
    )
    state.snapshot = snapshot
    _, status, _ = fwk.run_pre_filter_plugins(state, p, snapshot.node_info_list)
    return status


def test_too_few_pods_rejected_with_upstreams_message() -> None:
    cluster, (p1, _) = gang(n=2, min_member=3)
    fwk, _ = profile(cluster)
    status = pre_filter(fwk, cluster, p1)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        "pre-filter pod p1 cannot find enough sibling pods, "
        "current pods number: 2, minMember of group: 3",
    )
    assert status.plugin == "Coscheduling"
    cluster.pods.append(member("p3"))
    assert pre_filter(fwk, cluster, p1) is None


def test_finished_pods_do_not_count() -> None:
    cluster, (p1, p2, p3) = gang()
    p3["status"]["phase"] = "Succeeded"
    fwk, _ = profile(cluster)
    assert "current pods number: 2" in pre_filter(fwk, cluster, p1).message


def test_gated_siblings_beyond_the_spare_pods_reject() -> None:
    cluster, (p1, p2, p3) = gang(n=3, min_member=2)
    p2["spec"]["schedulingGates"] = [{"name": "wait"}]
    fwk, _ = profile(cluster)
    assert pre_filter(fwk, cluster, p1) is None  # one spare pod covers one gated one
    p3["spec"]["schedulingGates"] = [{"name": "wait"}]
    status = pre_filter(fwk, cluster, p1)
    assert status.reasons == (
        "pre-filter pod p1 cannot proceed due to gated pods in the same PodGroup",
    )


def test_min_resources_not_available() -> None:
    cluster, (p1, *_) = gang(min_resources={"cpu": "10", "memory": "1Gi"})
    cluster.nodes.append(node("n2", cpu="4"))
    fwk, _ = profile(cluster)
    status = pre_filter(fwk, cluster, p1)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("resource gap: map[cpu:2]",)
    cluster.nodes.append(node("n3", cpu="2"))
    assert pre_filter(fwk, cluster, p1) is None


def test_min_resources_do_not_count_the_groups_own_pods_but_count_others() -> None:
    cluster, (p1, p2, p3) = gang(min_resources={"cpu": "3"})
    p2["spec"]["nodeName"] = "n1"
    p2["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    stranger = pod("stranger", cpu="2", node_name="n1")
    cluster.pods.append(stranger)
    fwk, _ = profile(cluster)
    # n1 has 4 CPUs: the stranger's 2 count, the member's 2 do not: 2 free for 3 wanted.
    assert pre_filter(fwk, cluster, p1).reasons == ("resource gap: map[cpu:1]",)
    cluster.pods.remove(stranger)
    assert pre_filter(fwk, cluster, p1) is None


def test_min_resources_include_a_pod_slot_per_member() -> None:
    cluster, (p1, *_) = gang(min_resources={"cpu": "1"})
    cluster.nodes[0] = node("n1", pods="2")
    fwk, _ = profile(cluster)
    assert pre_filter(fwk, cluster, p1).reasons == ("resource gap: map[pods:1]",)


def test_a_pod_whose_group_is_missing_passes_prefilter() -> None:
    cluster = Cluster(nodes=[node("n1")], pods=[member("lonely", group="missing")])
    fwk, _ = profile(cluster)
    assert pre_filter(fwk, cluster, cluster.pods[0]) is None


# -- PostFilter ------------------------------------------------------------------------


def test_post_filter_rejects_the_waiting_members_and_marks_the_group() -> None:
    cluster, (p1, p2, p3) = gang()
    fwk, plugin = profile(cluster, {"podGroupBackoffSeconds": 30})
    assert permit(fwk, p1).code == Code.WAIT
    box = wait_in_thread(fwk, p1)
    _, status = plugin.post_filter(CycleState(), p3, {})
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == (
        "PodGroup default/pg gets rejected due to Pod p3 is unschedulable even after PostFilter",
    )
    assert result(box).reasons == (MSG_REJECTED_IN_POST_FILTER,)
    # Backed off: the next member is turned away at PreFilter.
    assert pre_filter(fwk, cluster, p2).reasons == ("podGroup default/pg failed recently",)


def test_post_filter_spares_the_group_when_the_gap_is_small_or_met() -> None:
    pods = [member(f"p{i}") for i in range(1, 11)]
    cluster = Cluster(
        nodes=[node("n1")],
        pods=pods,
        objects={PODGROUP_KIND: [pod_group(min_member=10)]},
    )
    fwk, plugin = profile(cluster)
    for p in pods[:9]:
        p["spec"]["nodeName"] = "n1"  # 9 of 10 placed: 10 % missing, at the threshold
    _, status = plugin.post_filter(CycleState(), pods[9], {})
    assert status == Status(Code.UNSCHEDULABLE)
    pods[8]["spec"].pop("nodeName")  # 20 % missing: over it
    _, status = plugin.post_filter(CycleState(), pods[9], {})
    assert "gets rejected" in status.message


def test_post_filter_without_a_group() -> None:
    cluster = Cluster(nodes=[node("n1")])
    _, plugin = profile(cluster)
    _, status = plugin.post_filter(CycleState(), pod("plain"), {})
    assert status.reasons == ("can not find pod group",)


# -- QueueSort -------------------------------------------------------------------------


def queued(p: dict, at: float) -> QueuedPodInfo:
    info = QueuedPodInfo(p, time.monotonic() - at)
    return info


def test_queue_sort_order() -> None:
    old = pod_group("old", 1, created="2020-01-01T00:00:00Z")
    new = pod_group("new", 1, created="2030-01-01T00:00:00Z")  # in the future: after any pod
    cluster = Cluster(nodes=[node("n1")], objects={PODGROUP_KIND: [old, new]})
    _, plugin = profile(cluster)
    a_old = queued(member("a", group="old"), at=0)
    b_old = queued(member("b", group="old"), at=100)
    c_new = queued(member("c", group="new"), at=1000)
    plain = queued(pod("plain"), at=10)
    urgent = queued(member("z", group="new", priority=10), at=0)
    order = [urgent, a_old, b_old, plain, c_new]
    for i, first in enumerate(order):
        for second in order[i + 1 :]:
            assert plugin.less(first, second), (first, second)
            assert not plugin.less(second, first), (second, first)


def test_a_failed_group_goes_behind_by_its_failure_time() -> None:
    old = pod_group("old", 2, created="2020-01-01T00:00:00Z")
    cluster = Cluster(nodes=[node("n1")], objects={PODGROUP_KIND: [old]})
    _, plugin = profile(cluster)
    member_info = queued(member("a", group="old"), at=0)
    plain = queued(pod("plain"), at=5)
    assert plugin.less(member_info, plain)
    plugin.post_filter(CycleState(), member_info.pod, {})  # the group fails now
    assert plugin.less(plain, member_info)
    plugin.manager.clear_failure("default/old")  # a later quorum clears it
    assert plugin.less(member_info, plain)


# -- events, args, config --------------------------------------------------------------


def test_events_to_register() -> None:
    _, plugin = profile(Cluster())
    events = [(r.event.resource, r.event.action) for r in plugin.events_to_register()]
    assert events == [
        (Resource.POD, ActionType.ADD),
        ("podgroups.v1alpha1.scheduling.x-k8s.io", ActionType.ADD | ActionType.UPDATE),
    ]


def test_args_defaults_and_validation() -> None:
    config = loads(CONFIG, "<test>")
    assert config.profiles[0].plugin_config["Coscheduling"] == {
        "permitWaitingTimeSeconds": 60,
        "podGroupBackoffSeconds": 0,
        "podGroupRejectPercentage": 10,
    }
    bad = CONFIG + (
        "  pluginConfig:\n  - name: Coscheduling\n    args:\n"
        "      permitWaitingTimeSeconds: -1\n      podGroupRejectPercentage: 101\n"
    )
    with pytest.raises(ConfigError) as err:
        loads(bad, "<test>")
    text = str(err.value)
    assert "permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0" in text
    assert "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100" in text


def test_off_unless_a_profile_enables_it() -> None:
    config = loads(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n", "<t>"
    )
    assert "Coscheduling" not in config.profiles[0].plugin_names()
    assert "Coscheduling" in config.registry


def test_a_malformed_pod_group_is_an_error_naming_the_field() -> None:
    group = pod_group()
    group["spec"]["minMember"] = "three"
    cluster = Cluster(nodes=[node("n1")], pods=[member("p1")], objects={PODGROUP_KIND: [group]})
    fwk, _ = profile(cluster)
    status = permit(fwk, cluster.pods[0])
    assert status.code == Code.ERROR
    assert "PodGroup default/pg: spec.minMember: must be an integer" in status.message
