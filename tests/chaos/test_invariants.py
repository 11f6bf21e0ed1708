"""The gang helpers of the soak's checker (invariants.py) on hand-made snapshots: no control
plane, so they run with the unit tests."""

from __future__ import annotations

from tests.chaos import workload
from tests.chaos.invariants import Snapshot, gangs, place_gang, quorum_fits


def node(name: str, cpu: str = "4", pods: str = "12", **labels: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {workload.POOL: "sa", **labels}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}},
    }


def pod(name: str, cpu: str, node_name: str = "", group: str = "", **spec: object) -> dict:
    body = {
        "metadata": {
            "name": name,
            "namespace": "chaos",
            "uid": name,
            "labels": {workload.POOL: "sa"},
        },
        "spec": {
            "nodeSelector": {workload.POOL: "sa"},
            "containers": [{"resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            **spec,
        },
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    if group:
        body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


def snapshot(nodes: list[dict], pods: list[dict], groups: list[dict] = ()) -> Snapshot:
    return Snapshot(
        {n["metadata"]["name"]: n for n in nodes},
        {p["metadata"]["uid"]: p for p in pods},
        {g["metadata"]["name"]: g for g in groups},
    )


def test_place_gang_counts_the_free_room_per_node() -> None:
    # 1.5 CPUs free on each of two nodes: two 1-CPU members fit, a third does not.
    nodes = [node("n1"), node("n2")]
    used = [pod("u1", "2500m", "n1"), pod("u2", "2500m", "n2")]
    members = [pod(f"m{i}", "1", group="g") for i in range(3)]
    snap = snapshot(nodes, used + members)
    placed = place_gang(members, snap)
    assert sorted(n for _, n in placed) == ["n1", "n2"]


def test_place_gang_respects_cordons_taints_and_pod_count() -> None:
    cordoned = node("n1")
    cordoned["spec"]["unschedulable"] = True
    tainted = node("n2")
    tainted["spec"]["taints"] = [{"key": workload.TAINT, "value": "sa", "effect": "NoSchedule"}]
    full = node("n3", pods="1")
    snap = snapshot([cordoned, tainted, full], [pod("u", "100m", "n3")])
    assert place_gang([pod("m", "100m", group="g")], snap) == []


def test_place_gang_proves_nothing_for_pods_it_cannot_model() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}
    member = pod("m", "100m", group="g", affinity=anti)
    assert place_gang([member], snapshot([node("n1")], [member])) == []


def test_quorum_fits_needs_only_the_missing_members() -> None:
    group = workload.pod_group_object("g", "chaos", min_count=3, size=4)
    nodes = [node("n1", cpu="2")]
    members = [pod("m0", "1", "n1", group="g")] + [pod(f"m{i}", "1", group="g") for i in (1, 2, 3)]
    snap = snapshot(nodes, members, [group])
    gang = gangs(snap)["g"]
    assert (gang.min_count, gang.size, len(gang.bound), gang.missing()) == (3, 4, 1, 2)
    assert gang.partly_bound()
    # One CPU left for two missing members: no proof.
    assert quorum_fits(gang, snap) == []
    nodes.append(node("n2", cpu="1"))
    snap = snapshot(nodes, members, [group])
    assert sorted(n for _, n in quorum_fits(gangs(snap)["g"], snap)) == ["n1", "n2"]
