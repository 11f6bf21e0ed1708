"""Out-of-tree plugins against the real control plane, in both shells.

* RackSpread (``examples/rack-spread``, installed: found by its entry point) behind a real
  kube-scheduler as an extender, and as a profile of the standalone scheduler, with the
  example's own config files.
* Raising (``fixtures/raising_plugin.py``, a file loaded through ``pluginModules``): the
  failure contract as a user sees it, in both shells.
"""

from __future__ import annotations

import collections
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

from extender.config.plugins import ENTRY_POINT_GROUP
from extender.controlplane import ControlPlane, free_port
from extender.scenario.kube import Kube

from .harness import Extender, Served, Standalone, events_for, scheduler_config, wait_until

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rack-spread"
RAISING = Path(__file__).resolve().parent / "fixtures" / "raising_plugin.py"
RACK = "example.com/rack"
MAINTENANCE = "example.com/maintenance"

# node suffix -> rack; "a1" is put under maintenance.
RACKS = {"a1": "a", "a2": "a", "b1": "b", "c1": "c"}


@pytest.fixture
def rack_spread_installed() -> None:
    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert "RackSpread" in names, (
        "examples/rack-spread is not installed in this environment: run `make setup` "
        "(or pip install -e examples/rack-spread)"
    )


def make_racks(kube: Kube) -> dict[str, str]:
    """Four nodes in three racks, ``<ns>-a1`` under maintenance; node name -> rack."""
    racks = {}
    for suffix, rack in RACKS.items():
        name = f"{kube.namespace}-{suffix}"
        kube.create_node(name, cpu="4", labels={RACK: rack})
        racks[name] = rack
    kube.update_node(f"{kube.namespace}-a1", {"metadata": {"annotations": {MAINTENANCE: "true"}}})
    return racks


def rack_counts(kube: Kube, names: list[str], racks: dict[str, str]) -> dict[str, int]:
    return dict(collections.Counter(racks[kube.node_of(n)] for n in names))


def test_rack_spread_as_an_extender(
    rack_spread_installed, kube, control_plane, processes, kube_scheduler
):
    racks = make_racks(kube)
    ext = Extender(control_plane, (EXAMPLE / "extender.yaml").read_text(), name="rack-extender")
    processes.append(ext)
    ext.wait_ready()
    kube_scheduler(scheduler_config(ext))
    ns = kube.namespace
    candidates = [n for n in racks if n != f"{ns}-a1"]
    probe = {"metadata": {"name": "probe", "namespace": ns, "labels": {"app": "web"}}}

    def extender_prefers(nodes: set[str]) -> bool:
        """The extender's own prioritize answer ranks exactly ``nodes`` first (its pod
        watch has seen every bound pod)."""
        status, reply = ext.post("prioritize", {"Pod": probe, "NodeNames": candidates})
        assert status == 200, reply
        best = max(entry["Score"] for entry in reply)
        return {entry["Host"] for entry in reply if entry["Score"] == best} == nodes

    names = [f"web-{i}" for i in range(1, 7)]
    for i, name in enumerate(names):
        kube.create_pod(name, cpu="100m", labels={"app": "web"})
        assert kube.wait_bound(name) != f"{ns}-a1", "landed on the node under maintenance"
        # The next pod goes by the extender's counts: wait until they include this one.
        counts = rack_counts(kube, names[: i + 1], racks)
        low = min(counts.get(r, 0) for r in ("a", "b", "c"))
        wait_until(
            lambda low=low, counts=counts: extender_prefers(
                {n for n in candidates if counts.get(racks[n], 0) == low}
            ),
            10,
            "the extender to count the bound pods",
        )
    assert rack_counts(kube, names, racks) == {"a": 2, "b": 2, "c": 2}
    assert ext.metric("extender_requests_total", verb="filter", outcome="ok") >= 6
    assert ext.metric("extender_requests_total", verb="prioritize", outcome="ok") >= 6


def test_rack_spread_standalone(rack_spread_installed, kube, control_plane, processes):
    racks = make_racks(kube)
    config = yaml.safe_load((EXAMPLE / "config.yaml").read_text())
    sched = Standalone(control_plane, config, name="rack-standalone")
    processes.append(sched)
    sched.wait_ready()
    kube.scheduler_name = config["profiles"][0]["schedulerName"]
    ns = kube.namespace
    names = [f"web-{i}" for i in range(1, 7)]
    for name in names:
        kube.create_pod(name, cpu="100m", labels={"app": "web"})
    for name in names:
        assert kube.wait_bound(name) != f"{ns}-a1", "landed on the node under maintenance"
    # The standalone scheduler counts the pods it assumed: no waiting between pods.
    assert rack_counts(kube, names, racks) == {"a": 2, "b": 2, "c": 2}

    # The reason reaches the pod; the end of maintenance (an annotation update, which
    # RackSpread registers for) requeues it.
    kube.create_pod("pinned", cpu="100m", nodeSelector={"kubernetes.io/hostname": f"{ns}-a1"})
    message = kube.expect_pending("pinned", seconds=2)
    assert message == (
        "0/4 nodes are available: 1 node(s) were under maintenance, "
        "3 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, "  # DynamicResources' PostFilter, as v1.36 writes it
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    ), message
    kube.update_node(f"{ns}-a1", {"metadata": {"annotations": {MAINTENANCE: "false"}}})
    assert kube.wait_bound("pinned", timeout=15) == f"{ns}-a1"


# -- the raising plugin ---------------------------------------------------------------------

RAISING_STANDALONE = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
  - schedulerName: raising
    plugins:
      filter: {{enabled: [{{name: Raising}}]}}
  - schedulerName: healthy
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
pluginModules: ["{RAISING}:Raising"]
"""

RAISING_EXTENDER = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: raising-extender
    plugins:
      multiPoint:
        disabled: [{{name: "*"}}]
      queueSort: {{enabled: [{{name: PrioritySort}}]}}
      filter: {{enabled: [{{name: Raising}}]}}
      bind: {{enabled: [{{name: DefaultBinder}}]}}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: raising-extender
pluginModules: ["{RAISING}:Raising"]
"""

RAISED = 'running "Raising" filter plugin: integer division or modulo by zero'


class StandaloneText(Served):
    """``kube-extender run`` with a config given as text (several YAML documents)."""

    def __init__(self, cp: ControlPlane, text: str, name: str) -> None:
        self.port = free_port()
        path = cp.directory / f"{name}-config.yaml"
        path.write_text(text)
        args = ["run", "--config", str(path), "--kubeconfig", str(cp.kubeconfig)]
        args += ["--metrics-bind", f"127.0.0.1:{self.port}", "--log-level", "debug"]
        super().__init__(name, args, cp.directory / "logs")


def test_raising_plugin_standalone(kube, control_plane, processes):
    sched = StandaloneText(control_plane, RAISING_STANDALONE, name="raising-standalone")
    processes.append(sched)
    sched.wait_ready()
    kube.create_node(f"{kube.namespace}-n1")
    kube.scheduler_name = "raising"
    kube.create_pod("boom")
    failed = wait_until(lambda: events_for(kube, "boom", "FailedScheduling"), 15, "the event")
    assert failed[0]["note"].startswith(RAISED), failed[0]["note"]
    assert kube.why_pending("boom").startswith(RAISED)
    assert sched.metric("kube_extender_plugin_errors_total", plugin="Raising") > 0
    # Requeued with backoff (1 s, then 2 s), not dropped.
    wait_until(
        lambda: sched.metric("scheduler_schedule_attempts_total", result="error") >= 2,
        15,
        "a second attempt",
    )
    assert sched.alive()
    # The other profile of the same process schedules as ever.
    kube.scheduler_name = "healthy"
    kube.create_pod("fine")
    assert kube.wait_bound("fine") == f"{kube.namespace}-n1"
    assert kube.node_of("boom") is None
    assert sched.alive()


def test_raising_plugin_in_the_extender(kube, control_plane, processes, kube_scheduler):
    ext = Extender(control_plane, RAISING_EXTENDER, name="raising-extender")
    processes.append(ext)
    ext.wait_ready()
    kube.create_node(f"{kube.namespace}-n1")
    kube_scheduler(scheduler_config(ext))
    kube.create_pod("boom")
    wait_until(lambda: "Raising" in kube.why_pending("boom"), 20, "FailedScheduling")
    message = kube.why_pending("boom")
    assert RAISED in message, message
    failed = wait_until(lambda: events_for(kube, "boom", "FailedScheduling"), 10, "the event")
    assert RAISED in failed[0]["note"]
    # The extender's own answer: the plugin error in the filter result's Error field.
    status, reply = ext.post(
        "filter", {"Pod": kube.pod("boom"), "NodeNames": [f"{kube.namespace}-n1"]}
    )
    assert status == 200 and reply["Error"].startswith(RAISED), reply
    assert ext.metric("kube_extender_plugin_errors_total", plugin="Raising") >= 2
    assert ext.alive() and ext.get("/readyz")[0] == 200


def test_example_kube_scheduler_config_loads(control_plane, kube_scheduler):
    """The example's kube-scheduler config (extenders: ... RackSpread) starts kube-scheduler."""
    config = yaml.safe_load((EXAMPLE / "kube-scheduler.yaml").read_text())
    config["leaderElection"] = {"leaderElect": False}
    kube_scheduler(config)
