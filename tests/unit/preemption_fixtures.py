"""Shared fixtures of the preemption tests (the evaluator's and DefaultPreemption's).

The profile uses a small local CPU-fit plugin (PreFilter with AddPod/RemovePod extensions plus
Filter) so that the tests depend only on the framework runtime.
"""

from __future__ import annotations

import random

from extender.framework.cycle_state import CycleState
from extender.framework.features import Features
from extender.framework.handle import POD_DISRUPTION_BUDGETS, PODS, Services
from extender.framework.pod_info import PodInfo
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.plugins.default_preemption import (
    DefaultPreemption,
)
from extender.scheduler.queue import Nominator
from tests.unit.builders import make_listers, make_node, make_pod

FIT = "FakeCPUFit"


class _Removed:
    """PreFilter state: pods the extensions removed minus those added back."""

    def __init__(self) -> None:
        self.removed: set[str] = set()

    def clone(self) -> _Removed:
        copy = _Removed()
        copy.removed = set(self.removed)
        return copy


class FakeCPUFit:
    """Fits when the node's requested CPU plus the pod's stays within allocatable."""

    name = FIT

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def pre_filter(self, state, pod, nodes):
        state.write("PreFilter" + FIT, _Removed())
        return None, None

    def pre_filter_extensions(self):
        return self

    def add_pod(self, state, pod, pod_to_add, node_info):
        state.read("PreFilter" + FIT).removed.discard(pod_to_add.name)
        return None

    def remove_pod(self, state, pod, pod_to_remove, node_info):
        state.read("PreFilter" + FIT).removed.add(pod_to_remove.name)
        return None

    def filter(self, state, pod, node_info):
        need = PodInfo(pod).requests.milli_cpu
        if node_info.requested.milli_cpu + need > node_info.allocatable.milli_cpu:
            return Status(Code.UNSCHEDULABLE, "Insufficient cpu")
        return None


class FakeClient:
    def __init__(self) -> None:
        self.deleted: list[tuple[str, str, str]] = []
        self.patches: list[tuple[str, str, dict]] = []

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        self.deleted.append((namespace, name, uid))

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> None:
        self.patches.append((namespace, name, patch))


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def record_event(self, pod, event_type, reason, action, note) -> None:
        self.events.append((pod["metadata"]["name"], event_type, reason, note))


def make_framework(
    *,
    pdbs=(),
    client=None,
    nominator=None,
    recorder=None,
    args=None,
    extenders=(),
    async_preemption=False,
    pods=(),
):
    """A profile of FakeCPUFit and DefaultPreemption; the victims' API calls are made before
    PostFilter returns unless ``async_preemption`` (the gate SchedulerAsyncPreemption, on by
    default in the shells); ``pods``: what the PODS lister serves."""
    registry = Registry()
    registry.register(FIT, FakeCPUFit)
    registry.register("DefaultPreemption", DefaultPreemption)
    profile = Profile(
        plugins={
            "preFilter": [PluginSpec(FIT)],
            "filter": [PluginSpec(FIT)],
            "postFilter": [PluginSpec("DefaultPreemption")],
        },
        plugin_config={"DefaultPreemption": args or {}},
    )
    services = Services(
        client=client or FakeClient(),
        nominator=nominator or Nominator(),
        rng=random.Random(0),
        listers=make_listers({POD_DISRUPTION_BUDGETS: list(pdbs), PODS: list(pods)}),
        event_recorder=recorder or FakeRecorder(),
        extenders=extenders,
        features=Features.parse(f"SchedulerAsyncPreemption={str(async_preemption).lower()}"),
    )
    return Framework(profile, registry, services)


def pod(name, cpu, priority, *, node=None, start=None, labels=None, **spec):
    p = make_pod(name, cpu=cpu, priority=priority, node_name=node, labels=labels, **spec)
    if start is not None:
        p["status"]["startTime"] = start
    return p


def prefiltered(fwk, preemptor, snapshot) -> CycleState:
    state = CycleState()
    state.snapshot = snapshot
    _, status, _ = fwk.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    assert status is None
    return state


def names(infos) -> list[str]:
    return [i.name for i in infos]


def pdb(name, match_labels, allowed, namespace="default", disrupted=None):
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted or {}},
    }


T0 = "2024-01-01T00:00:00Z"
T1 = "2024-01-01T01:00:00Z"
T2 = "2024-01-01T02:00:00Z"


def three_nodes():
    nodes = [make_node(f"n{i}", cpu="2") for i in range(3)]
    pods = [
        pod("a", "2", 1, node="n0", start=T0),
        pod("b", "2", 3, node="n1", start=T0),
        pod("c", "2", 9, node="n2", start=T0),
    ]
    return Snapshot.from_objects(nodes, pods)


def post_filter(fwk, preemptor, snapshot):
    state = CycleState()
    feasible, diagnosis = SchedulingAlgorithm().find_nodes_that_fit(
        fwk, state, preemptor, snapshot, evaluate_all=True
    )
    assert feasible == []
    statuses = {
        info.name: diagnosis.status_of(info.name)
        for info in snapshot.node_info_list
        if diagnosis.status_of(info.name) is not None
    }
    return fwk.run_post_filter_plugins(state, preemptor, statuses)


class FakeExtender:
    name = "http://ext"
    ignorable = False

    def __init__(self, reply):
        self.reply = reply
        self.requests = []

    def supports_preemption(self):
        return True

    def is_interested(self, pod):
        return True

    def process_preemption(self, pod, node_to_victims):
        self.requests.append(
            {n: ([p["metadata"]["name"] for p in ps], v) for n, (ps, v) in node_to_victims.items()}
        )
        return self.reply(node_to_victims)
