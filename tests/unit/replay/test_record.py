"""``kube-extender record`` from dumps (plain dicts): the times, the initial state, claims,
the bounds, and the command's file and errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from extender.cli import record as cli
from extender.replay.anonymise import anonymise
from extender.replay.record import RecordError, clean_object, from_dump
from extender.replay.trace import load, parse

T0 = "2026-12-07T10:00:00Z"


def at(seconds: int) -> str:
    minutes, secs = divmod(seconds, 60)
    return f"2026-12-07T10:{minutes:02d}:{secs:02d}Z"


def node(name: str, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "managedFields": [{"manager": "kubelet"}],
            "labels": {"kubernetes.io/hostname": name, **labels},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(
    name: str,
    created: int,
    *,
    node_name: str | None = None,
    scheduled: int | None = None,
    deleted: int | None = None,
    phase: str = "Running",
    finished: int | None = None,
    namespace: str = "default",
    **meta: object,
) -> dict:
    conditions = []
    if scheduled is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(scheduled)}
        )
    status: dict = {"phase": phase, "conditions": conditions}
    if finished is not None:
        status["containerStatuses"] = [
            {"name": "main", "state": {"terminated": {"finishedAt": at(finished)}}}
        ]
    metadata = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": "9",
        "creationTimestamp": at(created),
        "managedFields": [{"manager": "kubectl"}],
        "labels": {"app": "web"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-1",
                "uid": "rs-uid",
                "controller": True,
            }  # fmt: skip
        ],
        **meta,
    }
    if deleted is not None:
        metadata["deletionTimestamp"] = at(deleted)
    spec: dict = {
        "schedulerName": "default-scheduler",
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "1"}},
                "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run"}],
            }
        ],
        "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": []}}],
        "serviceAccount": "default",
        "serviceAccountName": "default",
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": status}  # fmt: skip


def by_name(trace: dict) -> dict[str, dict]:
    return {r["pod"]["metadata"]["name"]: r for r in trace["pods"]}


def test_times_from_the_pods_timestamps() -> None:
    objects = [
        node("n-1"),
        node("n-2"),
        # Running before the start: there at 0, bound.
        pod("old", 0, node_name="n-1", scheduled=1),
        # Created before the start, bound after it: there at 0, scheduled at 5.
        pod("late", 5, node_name="n-2", scheduled=15),
        pod("bound", 20, node_name="n-1", scheduled=22, deleted=80),
        pod("pending", 30),
        pod("gave-up", 40, deleted=70),
        pod("job", 50, node_name="n-2", scheduled=51, phase="Succeeded", finished=61),
        pod("gone-before", 1, node_name="n-2", scheduled=2, deleted=8),
        pod("static", 60, node_name="n-2", annotations={"kubernetes.io/config.mirror": "x"}),
    ]
    trace = from_dump(objects, start=from_rfc3339(at(10)), source="dump:test")
    pods = by_name(trace)
    assert trace["apiVersion"] == "kube-extender.dev/v1" and trace["kind"] == "Trace"
    assert trace["version"] == 1 and trace["metadata"]["source"] == "dump:test"
    assert trace["metadata"]["gpuMapping"] == "none"
    assert set(pods) == {"old", "late", "bound", "pending", "gave-up", "job", "static"}
    assert [r["arrival"] for r in trace["pods"]] == sorted(r["arrival"] for r in trace["pods"])
    assert pods["old"]["arrival"] == 0 and pods["old"]["node"] == "n-1"
    assert pods["old"]["recorded"] == {"node": "n-1", "scheduled": 0.0}
    assert pods["old"]["duration"] is None and pods["old"]["abandon"] is None
    assert pods["late"]["arrival"] == 0 and pods["late"]["node"] is None
    assert pods["late"]["recorded"] == {"node": "n-2", "scheduled": 5.0}
    assert pods["bound"]["arrival"] == 10 and pods["bound"]["node"] is None
    assert pods["bound"]["recorded"] == {"node": "n-1", "scheduled": 12.0}
    assert pods["bound"]["duration"] == 58.0 and pods["bound"]["abandon"] is None
    assert pods["pending"]["arrival"] == 20
    assert pods["pending"]["recorded"] == {"node": None, "scheduled": None}
    assert pods["gave-up"]["abandon"] == 60 and pods["gave-up"]["duration"] is None
    assert pods["job"]["duration"] == 10.0
    assert pods["static"]["node"] == "n-2" and pods["static"]["arrival"] == 50
    assert trace["duration"] == 70.0  # the last thing any pod says: bound's deletion


def from_rfc3339(text: str) -> float:
    from extender.replay.record import parse_time

    value = parse_time(text)
    assert value is not None
    return value


def test_the_default_start_is_the_first_creation() -> None:
    trace = from_dump([node("n-1"), pod("b", 30), pod("a", 12, node_name="n-1", scheduled=14)])
    pods = by_name(trace)
    assert pods["a"]["arrival"] == 0 and pods["a"]["node"] is None
    assert pods["a"]["recorded"]["scheduled"] == 2.0
    assert pods["b"]["arrival"] == 18


def test_recorded_pods_can_be_created_again() -> None:
    trace = from_dump([node("n-1"), pod("a", 0, node_name="n-1", scheduled=1)])
    record = trace["pods"][0]
    meta, spec = record["pod"]["metadata"], record["pod"]["spec"]
    assert "status" not in record["pod"]
    assert not {"uid", "resourceVersion", "managedFields", "creationTimestamp"} & set(meta)
    assert meta["ownerReferences"][0]["name"] == "web-1"  # owners kept
    assert meta["labels"] == {"app": "web"}
    assert "nodeName" not in spec and "serviceAccount" not in spec
    assert spec["volumes"] == [] and spec["containers"][0]["volumeMounts"] == []
    pv = clean_object(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-1", "uid": "u", "resourceVersion": "3"},
            "spec": {"claimRef": {"name": "data", "namespace": "a", "uid": "c", "kind": "x"}},
            "status": {"phase": "Bound"},
        }
    )
    assert pv["spec"]["claimRef"] == {"name": "data", "namespace": "a", "kind": "x"}
    assert pv["status"] == {"phase": "Bound"} and pv["metadata"] == {"name": "pv-1"}
    n = trace["nodes"][0]
    assert n["status"]["allocatable"]["cpu"] == "4"
    assert not {"uid", "resourceVersion", "managedFields"} & set(n["metadata"])


def claim(name: str, owner: str | None = None, allocated: bool = False) -> dict:
    meta: dict = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }  # fmt: skip
        ]
    out = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
    }
    if allocated:
        out["status"] = {"allocation": {"devices": {"results": [{"pool": "n-1", "device": "d"}]}}}
    return out


def with_claims(p: dict) -> dict:
    p["spec"]["resourceClaims"] = [
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
        {"name": "shared", "resourceClaimName": "team-claim"},
    ]
    p["status"]["resourceClaimStatuses"] = [
        {"name": "gpu", "resourceClaimName": f"{p['metadata']['name']}-gpu-x1"}
    ]
    return p


def test_template_claims_are_created_with_their_pod() -> None:
    objects = [
        node("n-1"),
        with_claims(pod("a", 0, node_name="n-1", scheduled=1)),
        with_claims(pod("b", 5)),
        claim("a-gpu-x1", owner="a", allocated=True),
        claim("b-gpu-x1", owner="b"),
        claim("team-claim", allocated=True),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "g"}},
    ]
    trace = from_dump(objects, start=from_rfc3339(at(2)))
    pods = by_name(trace)
    a, b = pods["a"], pods["b"]
    assert a["node"] == "n-1" and b["arrival"] == 3
    assert [c["metadata"]["name"] for c in a["claims"]] == ["a-gpu-x1"]
    assert a["claims"][0]["status"]["allocation"]  # the initial state keeps its allocation
    assert [c["metadata"]["name"] for c in b["claims"]] == ["b-gpu-x1"]
    assert "status" not in b["claims"][0]  # an arrival's claim is allocated by the replay
    assert b["pod"]["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimName": "b-gpu-x1"},
        {"name": "shared", "resourceClaimName": "team-claim"},
    ]
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in trace["objects"])
    assert kinds == [("DeviceClass", "g"), ("ResourceClaim", "team-claim")]
    assert trace["metadata"]["gpuMapping"] == "none"


def test_namespace_filter() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace"}
    objects = [
        node("n-1"),
        pod("a", 0, namespace="team-a"),
        pod("b", 0, namespace="team-b"),
        {**ns, "metadata": {"name": "team-a"}},
        {**ns, "metadata": {"name": "team-b"}},
    ]
    trace = from_dump(objects, namespace="team-a")
    assert [r["pod"]["metadata"]["namespace"] for r in trace["pods"]] == ["team-a"]
    assert [o["metadata"]["name"] for o in trace["objects"]] == ["team-a"]
    assert len(trace["nodes"]) == 1


def test_a_name_used_again_is_renamed() -> None:
    first = pod("web-0", 0, node_name="n-1", scheduled=1, deleted=10)
    second = pod("web-0", 12, uid="uid-web-0-again")
    trace = from_dump([node("n-1"), first, second])
    assert [r["pod"]["metadata"]["name"] for r in trace["pods"]] == ["web-0", "web-0-2"]
    assert "renamed" in trace["metadata"]["notes"]


def test_bounds_and_bad_input_name_the_flag_or_field() -> None:
    pods = [pod(f"p-{i}", i) for i in range(5)]
    with pytest.raises(RecordError, match=r"^--max-pods: more than 3 pods"):
        from_dump([node("n-1"), *pods], max_pods=3)
    with pytest.raises(RecordError, match=r"^--max-objects: more than 1 nodes"):
        from_dump([node("n-1"), node("n-2")], max_objects=1)
    with pytest.raises(RecordError, match="no Node in the dump"):
        from_dump(pods)
    broken = pod("bad", 0)
    broken["metadata"]["creationTimestamp"] = "yesterday"
    with pytest.raises(RecordError, match=r"pod default/bad: 'yesterday' is not an RFC 3339"):
        from_dump([node("n-1"), broken])


def test_the_trace_is_valid_format_v1() -> None:
    objects = [
        node("n-1"),
        with_claims(pod("a", 0, node_name="n-1", scheduled=1)),
        with_claims(pod("b", 5, node_name="n-1", scheduled=6, deleted=9)),
        pod("c", 7, deleted=8),
    ]
    parsed = parse(from_dump(objects))
    assert [p.key for p in parsed.pods] == ["default/a", "default/b", "default/c"]
    anonymised = parse(anonymise(from_dump(objects), b"salt"))
    assert len(anonymised.pods) == 3 and anonymised.metadata["anonymised"] is True


# -- the command -------------------------------------------------------------------------------


def write_dump(path: Path, objects: list[dict]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def test_command_writes_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    objects = [node("n-1"), pod("a", 0, node_name="n-1", scheduled=1), pod("b", 3)]
    dump = write_dump(tmp_path / "dump.json", objects)
    out = tmp_path / "trace.json.gz"
    assert cli.main(["--from-dump", str(dump), "-o", str(out), "--name", "t1"]) == 0
    trace = json.loads(gzip.decompress(out.read_bytes()))
    assert trace["metadata"]["name"] == "t1"
    assert trace["metadata"]["source"] == "dump:dump.json"
    assert [r["pod"]["metadata"]["name"] for r in trace["pods"]] == ["a", "b"]
    assert "1 nodes, 0 objects, 2 pods (1 bound)" in capsys.readouterr().err
    assert [p.key for p in load(out).pods] == ["default/a", "default/b"]
    salted = tmp_path / "anonymised.json"
    argv = ["--from-dump", str(dump), "-o", str(salted), "--anonymise", "--salt", "s", "-q"]
    assert cli.main(argv) == 0
    anonymised = load(salted)
    assert anonymised.metadata["anonymised"] is True and anonymised.metadata["source"] == "dump"
    assert "default/a" not in {p.key for p in anonymised.pods}
    assert salted.read_bytes() != out.read_bytes()
    assert cli.main(argv) == 0 and load(salted).pods[0].key == anonymised.pods[0].key  # salted


def test_command_errors_name_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = str(tmp_path / "t.json")
    assert cli.main(["--from-dump", str(tmp_path / "none.json"), "-o", out]) == 2
    assert "--from-dump: " in capsys.readouterr().err
    dump = write_dump(tmp_path / "d.json", [node("n-1"), pod("a", 0), pod("b", 1)])
    assert cli.main(["--from-dump", str(dump), "-o", out, "--max-pods", "1"]) == 2
    assert "record: --max-pods: more than 1 pods" in capsys.readouterr().err
    for argv, said in (
        (["--window", "ten", "-o", out], "--window: invalid duration 'ten'"),
        (["--window", "0s", "-o", out], "--window: '0s' must be positive"),
        (["--from-dump", str(dump)], "-o/--output"),
        (["--from-dump", str(dump), "--window", "1m", "-o", out], "not allowed with"),
        (["--from-dump", str(dump), "-o", str(tmp_path / "x" / "t.json")], "--output: no such"),
    ):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert said in capsys.readouterr().err, argv
    assert cli.main(["--from-dump", str(dump), "-o", out, "--start", "noon"]) == 2
    assert "record: --start: 'noon' is not an RFC 3339 time" in capsys.readouterr().err


def test_a_recorded_trace_replays_the_same_anonymised(tmp_path: Path) -> None:
    """The replay engine takes a recorded trace; anonymised, it makes the same decisions
    (selectors, owners and node names still match)."""
    from extender.replay.engine import replay

    config = tmp_path / "default.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - schedulerName: default-scheduler\n"
    )
    big = pod("big", 30, deleted=50)
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "64"
    pinned = pod("pinned", 35)
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n-2"}
    objects = [
        node("n-1"),
        node("n-2"),
        pod("old", 0, node_name="n-1", scheduled=1),
        pod("a", 20, node_name="n-2", scheduled=21, deleted=60),
        big,
        pinned,
    ]
    plain = from_dump(objects, start=from_rfc3339(at(10)))
    hashed = anonymise(plain, b"salt")
    names = {r["pod"]["metadata"]["name"]: r["pod"]["metadata"]["name"] for r in plain["pods"]}
    for before, after in zip(plain["pods"], hashed["pods"], strict=True):
        names[after["pod"]["metadata"]["name"]] = before["pod"]["metadata"]["name"]
    nodes = {"n-1": "n-1", "n-2": "n-2"}
    for before, after in zip(plain["nodes"], hashed["nodes"], strict=True):
        nodes[after["metadata"]["name"]] = before["metadata"]["name"]

    def decisions(trace: dict) -> list[tuple]:
        log = replay(parse(trace), config)
        return [
            (e[0], e[1], names[e[2].split("/")[1]], *(nodes[e[3]] for e in [e] if len(e) > 3))
            for e in log["events"]
            if e[1] in ("bind", "fail", "abandon", "leave")
        ]

    ours = decisions(plain)
    assert (10.0, "bind", "a", "n-2") in ours
    assert (40.0, "abandon", "big") in ours
    assert (25.0, "bind", "pinned", "n-2") in ours
    assert (49.0, "leave", "a", "n-2") in ours
    assert decisions(hashed) == ours
