"""kube-extender explain and simulate on gangs (PodGroups, feature gates GenericWorkload and
GangScheduling): the scheduler's pod group cycle, the quorum, the blocking member, whole
gangs placed or none."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from extender.config import default_config
from extender.explain import gang, render
from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.engine import Explainer
from extender.explain.simulate import Simulation, max_gangs
from extender.framework.features import Features
from extender.framework.podgroups import PODGROUPS
from extender.testing import Cluster, node, pod

GATES = "GenericWorkload=true,GangScheduling=true"
FEATURES = Features.parse(GATES)


def pod_group(name: str, min_count: int | None, namespace: str = "default") -> dict:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": policy},
    }


def member(name: str, group: str, cpu: str = "1", **kwargs) -> dict:
    p = pod(name, cpu=cpu, **kwargs)
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def framework(cluster: Cluster, features: Features = FEATURES):
    config, profile = pick_profile(None, "default-scheduler", features)
    return dry_run_framework(config, profile, cluster)


def explain(cluster: Cluster, key=("default", "g"), focus: str | None = None):
    explainer = Explainer(framework(cluster))
    return gang.explain_group(explainer, key, cluster.pods, cluster.snapshot(), focus=focus)


def test_a_gang_that_fits_meets_its_quorum_and_every_member_would_be_bound() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[member(f"w{i}", "g", cpu="1") for i in range(4)],
    ).add(pod_group("g", 4))
    cycle, focus, _ = explain(cluster)
    assert cycle.verdict == gang.SCHEDULABLE and cycle.message == ""
    assert cycle.placeable_now == 4 and cycle.fit_in_cycle == 4
    assert [m.outcome for m in cycle.members] == [gang.PLACED] * 4
    # each member saw the ones before it: two a node
    assert sorted(m.node for m in cycle.members) == ["a", "a", "b", "b"]
    assert cycle.blocking is None
    assert focus is not None and focus.verdict == "Schedulable"


def test_a_gang_that_does_not_fit_places_none_and_names_the_blocking_member() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[member(f"w{i}", "g", cpu="1500m") for i in range(3)],
    ).add(pod_group("g", 3))
    cycle, focus, title = explain(cluster)
    assert cycle.verdict == gang.GROUP_UNSCHEDULABLE
    assert cycle.message == "pod group is unschedulable"
    assert cycle.placeable_now == 0 and cycle.fit_in_cycle == 2 and cycle.short_by == 1
    assert [m.outcome for m in cycle.members] == [gang.FITS, gang.FITS, gang.UNSCHEDULABLE]
    blocking = cycle.blocking
    assert blocking is not None and blocking.key == "default/w2"
    assert blocking.reasons == {"Insufficient cpu": 2}
    # the blocker is explained per node on the cycle's snapshot at its turn (w0, w1 assumed)
    assert focus is not None and focus.pod["name"] == "w2"
    assert focus.reason_counts() == {"Insufficient cpu": 2}
    assert "tried 3rd" in title
    text = render.gang_table(cycle, focus, title)
    assert "Blocked by default/w2: no node: 2 Insufficient cpu" in text
    assert "0 could be placed now" in text and "REJECTED 2/2 nodes" in text
    assert max(len(line) for line in text.splitlines()) <= 80, text


def test_min_count_below_the_size_goes_with_the_members_that_fit() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[member(f"w{i}", "g", cpu="1500m") for i in range(3)],
    ).add(pod_group("g", 2))
    cycle, _, _ = explain(cluster)
    assert cycle.verdict == gang.SCHEDULABLE
    assert [m.outcome for m in cycle.members] == [gang.PLACED, gang.PLACED, gang.UNSCHEDULABLE]
    assert cycle.placeable_now == 2 and cycle.blocking is None


def test_bound_and_waiting_members_count_toward_the_quorum() -> None:
    waiting = member("w1", "g", cpu="1")
    waiting["status"]["nominatedNodeName"] = "b"
    cluster = Cluster(
        nodes=[node("a", cpu="1"), node("b", cpu="1"), node("c", cpu="1")],
        pods=[member("w0", "g", node_name="a"), waiting, member("w2", "g"), member("w3", "g")],
    ).add(pod_group("g", 4))
    cycle, focus, _ = explain(cluster, focus="default/w3")
    assert (cycle.count(gang.BOUND), cycle.count(gang.WAITING), cycle.count(gang.PENDING)) == (
        1,
        1,
        2,
    )
    assert not cycle.quorum_met
    # the waiting member holds b (as the scheduler's cache holds it): w2 takes c, w3 nothing
    assert [(m.key, m.outcome) for m in cycle.members if m.state == gang.PENDING] == [
        ("default/w2", gang.FITS),
        ("default/w3", gang.UNSCHEDULABLE),
    ]
    assert focus is not None and focus.pod["name"] == "w3"


def test_too_few_members_are_gated_at_pre_enqueue() -> None:
    cluster = Cluster(nodes=[node("a")], pods=[member("w0", "g")]).add(pod_group("g", 2))
    cycle, focus, title = explain(cluster)
    assert cycle.verdict == gang.ALL_GATED and cycle.result is None
    assert cycle.blocking is not None and cycle.blocking.plugin == "GangScheduling"
    assert "waiting for minCount pods from a gang" in cycle.message
    assert focus is not None and "is not tried" in title


def test_the_documented_json_shape() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2")], pods=[member(f"w{i}", "g", cpu="1500m") for i in range(2)]
    ).add(pod_group("g", 2))
    cycle, focus, _ = explain(cluster)
    data = render.pod_group_document(cycle, focus)
    assert data["kind"] == "PodGroupExplanation" and data["version"] == 1
    group = data["podGroup"]
    assert set(group) == {
        "namespace", "name", "exists", "policy", "minCount", "verdict", "message", "quorum",
        "fitInCycle", "placeableNow", "shortBy", "blocking", "members", "podGroupScheduled",
        "groupVictims",
    }  # fmt: skip
    assert group["quorum"] == {"minCount": 2, "bound": 0, "waiting": 0, "pending": 2, "met": False}
    assert group["policy"] == "Gang" and group["verdict"] == "Unschedulable"
    assert group["blocking"]["pod"] == "default/w1"
    assert group["blocking"]["plugin"] == "NodeResourcesFit"
    assert group["blocking"]["reasonCounts"] == {"Insufficient cpu": 1}
    assert set(group["members"][0]) == {
        "pod", "priority", "state", "node", "outcome", "plugin", "message", "reasonCounts",
        "victims",
    }  # fmt: skip
    assert data["explanation"]["pod"]["name"] == "w1"
    assert json.loads(render.dumps(data, "json")) == data


# -- simulate ----------------------------------------------------------------------------------


def simulation(cluster: Cluster) -> Simulation:
    return Simulation(framework(cluster), cluster, features=FEATURES)


def test_simulate_places_a_gang_whole_or_not_at_all() -> None:
    cluster = Cluster(nodes=[node("a", cpu="2"), node("b", cpu="2")])
    cluster.add(pod_group("fits", 2)).add(pod_group("big", 3))
    sim = simulation(cluster)
    new = [member(f"f{i}", "fits", cpu="1") for i in range(2)]
    new += [member(f"b{i}", "big", cpu="1") for i in range(3)]
    placements = {p.key: p for p in sim.run(new)}
    assert all(placements[f"default/f{i}"].node for i in range(2))
    # big: 2 cpu left for 3 pods of 1 cpu, so none of them is placed
    assert [placements[f"default/b{i}"].node for i in range(3)] == ["", "", ""]
    assert placements["default/b2"].why_not is not None
    assert placements["default/b2"].why_not.reason_counts() == {"Insufficient cpu": 2}
    assert placements["default/b0"].group_verdict == gang.GROUP_UNSCHEDULABLE
    assert placements["default/b0"].outcome == gang.FITS
    assert sum(len(info.pods) for info in sim.snapshot.node_info_list) == 2


def test_simulate_max_counts_whole_gangs() -> None:
    cluster = Cluster(nodes=[node(f"n{i}", cpu="4") for i in range(3)])
    sim = simulation(cluster)
    # 12 cpus, gangs of 3 x 1500m: 2 per node, so 6 members; 2 whole gangs, the third is not
    result = max_gangs(sim, pod_group("train", 3), [member("t", "train", cpu="1500m")] * 3)
    assert (result.gangs, result.pods) == (2, 6)
    assert result.stopped_verdict == gang.GROUP_UNSCHEDULABLE
    assert result.blocking == "default/train-2-0"
    assert result.why is not None and result.why.reason_counts() == {"Insufficient cpu": 3}
    # the gang that did not fit left nothing behind
    assert sum(len(info.pods) for info in sim.snapshot.node_info_list) == 6


def test_cli_simulate_json_with_gangs(tmp_path) -> None:
    dump = [node("a", cpu="2"), node("b", cpu="2")]
    (tmp_path / "dump.yaml").write_text(yaml.safe_dump_all(dump))
    (tmp_path / "pods.yaml").write_text(
        yaml.safe_dump_all([pod_group("g", 2), member("g0", "g"), member("g1", "g")])
    )
    (tmp_path / "max.yaml").write_text(
        yaml.safe_dump_all([pod_group("m", 2), member("m", "m", cpu="500m")])
    )
    done = subprocess.run(
        [sys.executable, "-m", "extender", "simulate", "--cluster", str(tmp_path / "dump.yaml"),
         "--pods", str(tmp_path / "pods.yaml"), "--max", str(tmp_path / "max.yaml"),
         "--feature-gates", GATES, "-o", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(p["pod"], p["podGroup"], p["outcome"]) for p in report["placements"]] == [
        ("default/g0", "default/g", "placed"),
        ("default/g1", "default/g", "placed"),
    ]
    m = report["max"]
    # 2 cpu left: 4 pods of 500m, two gangs of 2
    assert (m["podGroup"], m["gangSize"], m["minCount"], m["gangs"], m["replicas"]) == (
        "m", 2, 2, 2, 4
    )  # fmt: skip
    assert m["stoppedByGroup"]["verdict"] == "Unschedulable"
    assert m["stoppedByPlugins"] == {"NodeResourcesFit": 2}
    # without the gates a PodGroup in --max is refused, one line
    done = subprocess.run(
        [sys.executable, "-m", "extender", "simulate", "--cluster", str(tmp_path / "dump.yaml"),
         "--max", str(tmp_path / "max.yaml")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "GenericWorkload" in done.stderr
    assert done.stderr.count("\n") == 1


# -- the explain command (a client that answers from a Cluster; nothing is written) ------------


class ListingClient:
    """What ``explain`` reads through a KubeClient: ``get_pod`` and ``list``."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def get_pod(self, namespace: str, name: str) -> dict | None:
        for p in self.cluster.pods:
            if p["metadata"]["name"] == name and p["metadata"]["namespace"] == namespace:
                return p
        return None

    def list(self, path: str):  # type: ignore[no-untyped-def]
        if path == "/api/v1/nodes":
            return list(self.cluster.nodes), "1"
        if path == "/api/v1/pods" or path.endswith("/pods") and "/namespaces/" in path:
            return list(self.cluster.pods), "1"
        if path == "/apis/scheduling.k8s.io/v1alpha2/podgroups":
            return [dict(g) for g in self.cluster.objects.get(PODGROUPS.name, [])], "1"
        return [], "1"


def _cli(monkeypatch, capsys, tmp_path, cluster: Cluster, *argv: str) -> tuple[int, str, str]:
    from extender.cli import explain as cli

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    monkeypatch.setattr(cli, "connect", lambda prog, path: ListingClient(cluster))
    code = cli.main([*argv, "--kubeconfig", str(kubeconfig)])
    out, err = capsys.readouterr()
    return code, out, err


def _stuck_gang() -> Cluster:
    return Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[member(f"w{i}", "g", cpu="1500m") for i in range(3)],
    ).add(pod_group("g", 3))


def test_cli_explain_a_member_and_a_pod_group(monkeypatch, capsys, tmp_path) -> None:
    cluster = _stuck_gang()
    code, out, _ = _cli(monkeypatch, capsys, tmp_path, cluster, "w0", "--feature-gates", GATES)
    assert code == 0
    assert out.startswith("Pod group default/g (Gang, minCount 3, 3 members): Unschedulable")
    assert "Blocked by default/w2" in out and "Member default/w0, tried 1st" in out
    code, out, _ = _cli(
        monkeypatch, capsys, tmp_path, cluster, "w0", "--feature-gates", GATES, "-o", "json"
    )
    data = json.loads(out)
    assert data["kind"] == "SchedulingExplanation" and data["pod"]["name"] == "w0"
    assert data["verdict"] == "Schedulable"  # w0 fits; its group does not
    assert data["podGroup"]["verdict"] == "Unschedulable"
    assert data["podGroup"]["blocking"]["pod"] == "default/w2"
    code, out, _ = _cli(
        monkeypatch, capsys, tmp_path, cluster, "podgroup/g", "--feature-gates", GATES, "-o", "json"
    )
    data = json.loads(out)
    assert code == 0 and data["kind"] == "PodGroupExplanation"
    assert data["explanation"]["pod"]["name"] == "w2"
    assert data["podGroup"]["placeableNow"] == 0


def test_cli_explain_without_the_gates(monkeypatch, capsys, tmp_path) -> None:
    cluster = _stuck_gang()
    code, out, _ = _cli(monkeypatch, capsys, tmp_path, cluster, "w2", "-o", "json")
    data = json.loads(out)
    assert code == 0 and "podGroup" not in data
    assert "belongs to pod group g" in data["notes"][0]
    try:
        _cli(monkeypatch, capsys, tmp_path, cluster, "podgroup/g")
    except SystemExit as exc:
        assert exc.code == 2
    assert "GenericWorkload" in capsys.readouterr().err
    code, _, err = _cli(
        monkeypatch, capsys, tmp_path, cluster, "podgroup/nope", "--feature-gates", GATES
    )
    assert code == 2 and 'podgroup "nope" not found' in err


def test_a_member_that_needs_preemption_and_the_group_that_waits_for_it() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[
            pod("low", cpu="2", node_name="b", priority=0),
            member("m0", "g", cpu="2", priority=100),
            member("m1", "g", cpu="2", priority=100),
        ],
    ).add(pod_group("g", 2))
    cycle, _, _ = explain(cluster)
    assert cycle.verdict == gang.WAITING_ON_PREEMPTION
    assert [(m.key, m.outcome, m.node) for m in cycle.members if m.state == gang.PENDING] == [
        ("default/m0", gang.FITS, "a"),
        ("default/m1", gang.NEEDS_PREEMPTION, "b"),
    ]
    assert cycle.member("default/m1").victims == ["default/low"]
    assert [p["metadata"]["name"] for p in cluster.pods][0] == "low"  # nothing evicted
    # simulate evicts the victim and tries the group again: both placed
    sim_cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[pod("low", cpu="2", node_name="b", priority=0)],
    ).add(pod_group("g", 2))
    sim = simulation(sim_cluster)
    placements = sim.run([member(f"m{i}", "g", cpu="2", priority=100) for i in range(2)])
    # Once low is gone a and b tie for each member: which member lands where is a random pick.
    assert [p.key for p in placements] == ["default/m0", "default/m1"]
    assert sorted(p.node for p in placements) == ["a", "b"]
    assert sorted(v for p in placements for v in p.victims) == ["default/low"]


def test_topology_aware_placements_reach_the_cycle(monkeypatch, capsys, tmp_path) -> None:
    """TopologyAwareWorkloadScheduling: the cycle is the scheduler's placement algorithm (one
    placement here: the PodGroup names no topology), in explain and in simulate."""
    gates = GATES + ",TopologyAwareWorkloadScheduling=true"
    code, out, _ = _cli(
        monkeypatch, capsys, tmp_path, _stuck_gang(), "podgroup/g", "--feature-gates", gates,
        "-o", "json",
    )  # fmt: skip
    group = json.loads(out)["podGroup"]
    assert code == 0 and group["verdict"] == "Unschedulable"
    assert group["message"].startswith("0/1 placements are available")
    features = Features.parse(gates)
    cluster = Cluster(nodes=[node("a", cpu="2")]).add(pod_group("g", 2))
    sim = Simulation(framework(cluster, features), cluster, features=features)
    placements = sim.run([member(f"w{i}", "g", cpu="1500m") for i in range(2)])
    assert [p.node for p in placements] == ["", ""]
    assert placements[0].group_message.startswith("0/1 placements are available")


def test_workload_aware_preemption_names_the_group_victims(monkeypatch, capsys, tmp_path) -> None:
    """WorkloadAwarePreemption: pod by pod preemption steps aside and the group preempts as a
    whole; explain names whom (nothing is evicted)."""
    group = pod_group("g", 2)
    group["spec"]["priority"] = 100
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[
            pod("low", cpu="2", node_name="b", priority=0),
            member("m0", "g", cpu="2", priority=100),
            member("m1", "g", cpu="2", priority=100),
        ],
    ).add(group)
    gates = GATES + ",WorkloadAwarePreemption=true"
    code, out, _ = _cli(
        monkeypatch, capsys, tmp_path, cluster, "podgroup/g", "--feature-gates", gates,
        "-o", "json",
    )  # fmt: skip
    result = json.loads(out)["podGroup"]
    assert code == 0 and result["verdict"] == gang.WAITING_ON_PREEMPTION
    assert result["groupVictims"] == ["default/low"]
    assert [p["metadata"]["name"] for p in cluster.pods][0] == "low"  # nothing evicted


def test_simulate_evicts_a_group_s_victims_then_places_it() -> None:
    group = pod_group("g", 2)
    group["spec"]["priority"] = 100
    cluster = Cluster(
        nodes=[node("a", cpu="2"), node("b", cpu="2")],
        pods=[pod("low", cpu="2", node_name="b", priority=0)],
    ).add(group)
    features = Features.parse(GATES + ",WorkloadAwarePreemption=true")
    config = default_config("default-scheduler", features)
    sim = Simulation(
        dry_run_framework(config, config.profiles[0], cluster), cluster, features=features
    )
    placements = sim.run([member(f"m{i}", "g", cpu="2", priority=100) for i in range(2)])
    assert sorted(p.node for p in placements) == ["a", "b"]
    assert all(p.victims == ["default/low"] for p in placements)
