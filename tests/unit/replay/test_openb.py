"""The openb importer: small CSVs written here become the trace issue 32 fixes (arrivals,
durations, abandonment, owners per shape, GPUs in both mappings), bad rows name their row and
column, pinned files are found in the cache or fetched, the pods schedule through the real
plugins (DynamicResources with consumable capacity, NodeResourcesFit with nvidia.com/gpu),
and the full default openb trace imports into 1523 nodes and 8152 pods."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from extender.cli import import_trace
from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.simulate import Simulation
from extender.offline import Cluster
from extender.replay import gpus
from extender.replay.importers import fetch, openb
from extender.replay.trace import load, save

NODES = """\
sn,cpu_milli,memory_mib,gpu,model
openb-node-0000,32000,262144,0,
openb-node-0001,64000,262144,2,V100M16
openb-node-0002,96000,786432,8,T4
"""

HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
PODS = HEADER + (
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,100,5000,100\n"
    "openb-pod-0001,6000,12288,1,460,,LS,Running,150,900,160\n"
    "openb-pod-0002,4000,8192,0,0,,BE,Failed,120,400,130\n"
    "openb-pod-0003,6000,12288,1,460,V100M16|V100M32,BE,Pending,200,700,\n"
    "openb-pod-0004,8000,32768,2,1000,T4,LS,Succeeded,300,600,300\n"
    "openb-pod-0005,6000,12288,1,460,,LS,Running,400,5100,400\n"
)


def _write(tmp_path: Path, nodes: str = NODES, pods: str = PODS) -> tuple[Path, Path]:
    nodes_csv, pods_csv = tmp_path / "nodes.csv", tmp_path / "openb_pod_list_small.csv"
    nodes_csv.write_text(nodes)
    pods_csv.write_text(pods)
    return nodes_csv, pods_csv


def _by_name(trace) -> dict:  # type: ignore[no-untyped-def]
    return {p.pod["metadata"]["name"]: p for p in trace.pods}


def test_times_become_arrivals_durations_and_abandonment(tmp_path: Path) -> None:
    trace = openb.import_openb(*_write(tmp_path))
    assert trace.name == "openb-small"
    assert trace.metadata["source"] == "openb:openb_pod_list_small.csv"
    assert "upstream" not in trace.metadata  # not the pinned files
    # Sorted by creation; arrivals from the earliest creation (100).
    assert [(p.pod["metadata"]["name"], p.arrival) for p in trace.pods] == [
        ("openb-pod-0000", 0.0),
        ("openb-pod-0002", 20.0),
        ("openb-pod-0001", 50.0),
        ("openb-pod-0003", 100.0),
        ("openb-pod-0004", 200.0),
        ("openb-pod-0005", 300.0),
    ]
    pods = _by_name(trace)
    assert (pods["openb-pod-0001"].duration, pods["openb-pod-0001"].abandon) == (740.0, None)
    assert pods["openb-pod-0001"].recorded == {"node": None, "scheduled": 60.0}
    # Never scheduled: abandoned at its deletion, no known duration.
    assert (pods["openb-pod-0003"].duration, pods["openb-pod-0003"].abandon) == (None, 600.0)
    assert pods["openb-pod-0003"].recorded == {"node": None, "scheduled": None}
    assert trace.duration == 5000.0  # the last deletion, 5100, from 100


def test_nodes_pods_and_owners(tmp_path: Path) -> None:
    trace = openb.import_openb(*_write(tmp_path))
    cpu_node, gpu_node, _ = trace.nodes
    assert cpu_node["metadata"]["labels"] == {
        "kubernetes.io/hostname": "openb-node-0000",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    assert cpu_node["status"]["allocatable"] == {"cpu": "32", "memory": "262144Mi", "pods": "110"}
    assert gpu_node["metadata"]["labels"][gpus.GPU_MODEL_LABEL] == "V100M16"
    pod = _by_name(trace)["openb-pod-0001"].pod
    assert pod["metadata"]["labels"] == {
        openb.WORKLOAD_LABEL: "openb-shape-2",
        openb.QOS_LABEL: "LS",
    }
    assert pod["metadata"]["annotations"] == {openb.PHASE_ANNOTATION: "Running"}
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "6000m",
        "memory": "12288Mi",
    }
    # Pods 1 and 5 have one shape, so one owner; its ReplicaSet selects them by the label.
    owners = {
        n: p.pod["metadata"]["ownerReferences"][0]["name"] for n, p in _by_name(trace).items()
    }
    assert owners["openb-pod-0001"] == owners["openb-pod-0005"]
    assert len(set(owners.values())) == 5
    replica_sets = {o["metadata"]["name"]: o for o in trace.objects if o["kind"] == "ReplicaSet"}
    assert sorted(replica_sets) == sorted(set(owners.values()))
    shared = replica_sets[owners["openb-pod-0001"]]
    assert shared["spec"]["replicas"] == 2
    assert shared["spec"]["selector"] == {"matchLabels": {openb.WORKLOAD_LABEL: "openb-shape-2"}}
    uid = pod["metadata"]["ownerReferences"][0]["uid"]
    assert shared["metadata"]["uid"] == uid


def test_the_dra_mapping(tmp_path: Path) -> None:
    trace = openb.import_openb(*_write(tmp_path), mapping="dra")
    assert trace.gpu_mapping == "dra"
    kinds = [o["kind"] for o in trace.objects]
    assert kinds.count("DeviceClass") == 1 and kinds.count("ResourceSlice") == 2
    slices = {o["spec"]["nodeName"]: o for o in trace.objects if o["kind"] == "ResourceSlice"}
    assert [len(s["spec"]["devices"]) for s in slices.values()] == [2, 8]
    assert all(gpus.GPU_RESOURCE not in n["status"]["allocatable"] for n in trace.nodes)
    pods = _by_name(trace)
    assert pods["openb-pod-0002"].claims == []  # CPU only
    (claim,) = pods["openb-pod-0003"].claims
    assert claim["metadata"] == {"name": "openb-pod-0003-gpu", "namespace": "default"}
    exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["count"] == 1 and exactly["capacity"] == {"requests": {"share": "460"}}
    assert exactly["selectors"][0]["cel"]["expression"] == (
        'device.attributes["gpu.kube-extender.dev"].model in ["V100M16", "V100M32"]'
    )
    assert pods["openb-pod-0003"].pod["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimName": "openb-pod-0003-gpu"}
    ]
    (multi,) = pods["openb-pod-0004"].claims
    assert multi["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


def test_the_extended_mapping(tmp_path: Path) -> None:
    trace = openb.import_openb(*_write(tmp_path), mapping="extended")
    assert not [o for o in trace.objects if o["kind"] in ("DeviceClass", "ResourceSlice")]
    assert [n["status"]["allocatable"].get(gpus.GPU_RESOURCE) for n in trace.nodes] == [
        None,
        "2",
        "8",
    ]
    pods = _by_name(trace)
    assert all(p.claims == [] for p in trace.pods)
    shared = pods["openb-pod-0003"].pod["spec"]
    assert shared["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    terms = shared["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": gpus.GPU_MODEL_LABEL, "operator": "In", "values": ["V100M16", "V100M32"]}
    ]
    assert (
        pods["openb-pod-0004"].pod["spec"]["containers"][0]["resources"]["requests"][
            "nvidia.com/gpu"
        ]
        == "2"
    )


def _simulate(trace) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    claims = [c for p in trace.pods for c in p.claims]
    cluster = Cluster.from_objects([*trace.nodes, *trace.objects, *claims])
    config, profile = pick_profile(None, "default-scheduler")
    sim = Simulation(dry_run_framework(config, profile, cluster), cluster)
    placements = sim.run([p.pod for p in trace.pods])
    return {p.pod["metadata"]["name"]: p.node or None for p in placements}


@pytest.mark.parametrize("mapping", ["dra", "extended"])
def test_the_pods_schedule_through_the_real_plugins(tmp_path: Path, mapping: str) -> None:
    # Four shared pods of 460 and one pinned to V100M32, which no node has.
    pods = HEADER + "".join(
        f"openb-pod-000{i},1000,1024,1,460,{spec},LS,Running,{i},100,{i}\n"
        for i, spec in enumerate(["V100M16", "V100M16", "V100M16", "V100M16", "V100M32"])
    )
    nodes = "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0001,64000,262144,2,V100M16\n"
    trace = openb.import_openb(*_write(tmp_path, nodes, pods), mapping=mapping)
    placed = _simulate(trace)
    if mapping == "dra":
        # 2 GPUs x 1000: two 460 shares on each, all four fit.
        assert [placed[f"openb-pod-000{i}"] for i in range(4)] == ["openb-node-0001"] * 4
    else:
        # Whole GPUs: two fit, sharing is lost.
        assert [placed[f"openb-pod-000{i}"] for i in range(4)] == ["openb-node-0001"] * 2 + [
            None
        ] * 2
    assert placed["openb-pod-0004"] is None


def test_a_pod_list_without_times(tmp_path: Path) -> None:
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-b,1000,1024,1,500\np-a,1000,1024,0,0\n"
    trace = openb.import_openb(*_write(tmp_path, pods=pods))
    assert [(p.key, p.arrival, p.duration, p.abandon) for p in trace.pods] == [
        ("default/p-b", 0.0, None, None),
        ("default/p-a", 1.0, None, None),
    ]
    assert trace.duration == 2.0
    assert "one a second" in trace.metadata["notes"]


def test_limit_pods_keeps_the_first_by_creation(tmp_path: Path) -> None:
    trace = openb.import_openb(*_write(tmp_path), limit_pods=2)
    assert [p.key for p in trace.pods] == ["default/openb-pod-0000", "default/openb-pod-0002"]
    assert trace.duration == 4900.0  # pod 0000's deletion
    assert {o["metadata"]["name"] for o in trace.objects if o["kind"] == "ReplicaSet"} == {
        "openb-shape-0",
        "openb-shape-1",
    }


BAD_PODS = [
    # (the row to put at row 3, what the message must say)
    ("p-x,12x,1024,0,0,,LS,Running,1,2,1", "row 3, column cpu_milli: '12x' is not a whole"),
    ("p-x,1000,-5,0,0,,LS,Running,1,2,1", "row 3, column memory_mib: '-5' is not a whole"),
    ("p-x,1000,1024,1,0,,LS,Running,1,2,1", "row 3, column gpu_milli: '0' is not in 1..1000"),
    ("p-x,1000,1024,1,1500,,LS,Running,1,2,1", "row 3, column gpu_milli: '1500'"),
    ("p-x,1000,1024,1,500,V100|,LS,Running,1,2,1", "row 3, column gpu_spec: 'V100|'"),
    ("p-x,1000,1024,0,0,,LS,Running,soon,2,1", "row 3, column creation_time: 'soon'"),
    ("p-x,1000,1024,0,0,,LS,Running,,2,1", "row 3, column creation_time: '' is required"),
    ("p-x,1000,1024,0,0,,LS,Running,5,9,3", "row 3, column scheduled_time: '3' is before"),
    ("p-x,1000,1024,0,0,,LS,Running,5,4,", "row 3, column deletion_time: '4' is before"),
    ("P_X,1000,1024,0,0,,LS,Running,1,2,1", "row 3, column name: 'P_X' is not a valid name"),
    ("p-ok,1000,1024,0,0,,LS,Running,1,2,1", "row 3, column name: 'p-ok' appears twice"),
    ("p-x,1000,1024", "row 3: 3 values for 11 columns"),
]


@pytest.mark.parametrize(("row", "message"), BAD_PODS, ids=[m for _, m in BAD_PODS])
def test_a_bad_pod_row_names_its_row_and_column(tmp_path: Path, row: str, message: str) -> None:
    pods = HEADER + "p-ok,1000,1024,0,0,,LS,Running,1,2,1\n" + row + "\n"
    with pytest.raises(openb.OpenbError) as caught:
        openb.import_openb(*_write(tmp_path, pods=pods))
    assert f"/openb_pod_list_small.csv, {message}" in str(caught.value), caught.value


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("n-x,32000,1024,2,", "row 3, column model: '' is not a GPU model (required when gpu > 0)"),
        ("n-x,32000,1024,two,T4", "row 3, column gpu: 'two' is not a whole number >= 0"),
        ('n-x,32000,1024,1,T4 "x"', "row 3, column model: 'T4 \"x\"' is not a GPU model"),
        ("n-0,32000,1024,0,", "row 3, column sn: 'n-0' appears twice"),
    ],
)
def test_a_bad_node_row_names_its_row_and_column(tmp_path: Path, row: str, message: str) -> None:
    nodes = "sn,cpu_milli,memory_mib,gpu,model\nn-0,1000,1024,0,\n" + row + "\n"
    with pytest.raises(openb.OpenbError) as caught:
        openb.import_openb(*_write(tmp_path, nodes=nodes))
    assert f"/nodes.csv, {message}" in str(caught.value), caught.value


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    with pytest.raises(openb.OpenbError, match=r"missing column\(s\) model"):
        openb.import_openb(*_write(tmp_path, nodes="sn,cpu_milli,memory_mib,gpu\nn,1,1,0\n"))
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1,1,0,0,1\n"
    with pytest.raises(openb.OpenbError, match=r"missing column\(s\) deletion_time, sched"):
        openb.import_openb(*_write(tmp_path, pods=pods))


# --- pinned files: the cache, --fetch ---------------------------------------------------------


def _pinned(tmp_path: Path, body: bytes = b"a,b\n1,2\n") -> dict[str, tuple[str, str]]:
    return {"f.csv": ("https://example.invalid/f.csv", hashlib.sha256(body).hexdigest())}


def test_a_pinned_file_in_the_cache_is_not_fetched(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_bytes(b"a,b\n1,2\n")

    def get(url: str) -> bytes:
        raise AssertionError("fetched")

    assert fetch.ensure(tmp_path, _pinned(tmp_path), fetch=True, get=get) == [tmp_path / "f.csv"]


def test_a_missing_file_is_fetched_only_with_fetch(tmp_path: Path) -> None:
    urls: list[str] = []

    def get(url: str) -> bytes:
        urls.append(url)
        return b"a,b\n1,2\n"

    directory = tmp_path / "cache" / "traces"
    with pytest.raises(fetch.FetchError, match=r"f\.csv: missing \(give --fetch"):
        fetch.ensure(directory, _pinned(tmp_path), fetch=False, get=get)
    assert urls == []
    assert fetch.ensure(directory, _pinned(tmp_path), fetch=True, get=get) == [directory / "f.csv"]
    assert urls == ["https://example.invalid/f.csv"]
    assert (directory / "f.csv").read_bytes() == b"a,b\n1,2\n"


def test_a_changed_file_is_refused_and_fetched_again_with_fetch(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_bytes(b"edited\n")
    with pytest.raises(fetch.FetchError, match=r"sha256 [0-9a-f]{64} is not the pinned"):
        fetch.ensure(tmp_path, _pinned(tmp_path), fetch=False)
    fetch.ensure(tmp_path, _pinned(tmp_path), fetch=True, get=lambda url: b"a,b\n1,2\n")
    assert (tmp_path / "f.csv").read_bytes() == b"a,b\n1,2\n"


def test_a_download_with_another_sha256_is_refused(tmp_path: Path) -> None:
    with pytest.raises(fetch.FetchError, match="downloaded sha256 .* is not the pinned"):
        fetch.ensure(tmp_path, _pinned(tmp_path), fetch=True, get=lambda url: b"tampered\n")
    assert not (tmp_path / "f.csv").exists()


def test_a_failed_download_says_where_to_put_the_file(tmp_path: Path) -> None:
    def get(url: str) -> bytes:
        raise fetch.FetchError(f"cannot download {url}: no network")

    with pytest.raises(fetch.FetchError, match="no network .or copy the pinned file into"):
        fetch.ensure(tmp_path, _pinned(tmp_path), fetch=True, get=get)


def test_the_cache_follows_kube_extender_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_EXTENDER_CACHE", "/somewhere")
    assert fetch.trace_cache("openb") == Path("/somewhere/traces/openb")
    monkeypatch.delenv("KUBE_EXTENDER_CACHE")
    assert fetch.trace_cache("openb") == Path.home() / ".cache/kube-extender/traces/openb"


def test_the_openb_urls_are_at_the_pinned_commit(tmp_path: Path) -> None:
    urls: list[str] = []

    def get(url: str) -> bytes:
        urls.append(url)
        raise fetch.FetchError("offline")

    with pytest.raises(fetch.FetchError):
        openb.ensure(["openb_pod_list_gpushare20.csv"], tmp_path, fetch_missing=True, get=get)
    assert urls == [
        "https://raw.githubusercontent.com/alibaba/clusterdata/"
        "7a6c496e4f4b6ce6150be8f881cb051bf2abff42/cluster-trace-gpu-v2023/csv/"
        "openb_pod_list_gpushare20.csv"
    ]
    assert len(openb.SHA256) == 26 and "default" in openb.POD_LISTS


# --- the command -----------------------------------------------------------------------------


def test_the_command_writes_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    nodes_csv, pods_csv = _write(tmp_path)
    out = tmp_path / "t.json.gz"
    argv = ["openb", "--nodes", str(nodes_csv), "--pods", str(pods_csv), "-o", str(out)]
    assert import_trace.main([*argv, "--gpu-mapping", "extended"]) == 0
    assert "3 nodes, 6 pods" in capsys.readouterr().out
    trace = load(out)
    assert trace.gpu_mapping == "extended" and len(trace.pods) == 6


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--pods", "PODS"], "--nodes"),
        (["--nodes", "NODES"], "--pods"),
        (["--nodes", "NODES", "--pods", "/nonexistent.csv"], "--pods: no such file"),
        (["--nodes", "NODES", "--pods", "PODS", "--fetch"], "--fetch"),
        (["--openb-dir", "DIR", "--nodes", "NODES", "--pods", "PODS"], "--openb-dir"),
        (["--openb-dir", "DIR"], "--openb-dir: no openb_node_list_all_node.csv"),
        (["--nodes", "NODES", "--pods", "PODS", "--limit-pods", "0"], "--limit-pods"),
        (["--nodes", "NODES", "--pods", "PODS", "--gpu-mapping", "mig"], "--gpu-mapping"),
        (["--nodes", "NODES", "--pods", "BAD"], "row 2, column num_gpu"),
    ],
)
def test_the_command_errors_are_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], named: str
) -> None:
    nodes_csv, pods_csv = _write(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "p,1,1,x,0,,LS,Running,1,2,1\n")
    paths = {"NODES": str(nodes_csv), "PODS": str(pods_csv), "BAD": str(bad), "DIR": "/tmp"}
    argv = ["openb", *[paths.get(a, a) for a in extra], "-o", str(tmp_path / "t.json")]
    try:
        code = import_trace.main(argv)
    except SystemExit as exc:  # argparse's errors
        code = int(exc.code or 0)
    assert code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("kube-extender import openb") and named in last, last
    assert not (tmp_path / "t.json").exists()


# --- the full trace ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openb_default() -> tuple[Path, Path]:
    """The pinned default lists, from the cache (or downloaded, where there is network)."""
    nodes_csv, pods_csv = openb.ensure(
        [openb.node_list_file("all_node"), openb.pod_list_file("default")], fetch_missing=True
    )
    return nodes_csv, pods_csv


@pytest.mark.parametrize("mapping", ["dra", "extended"])
def test_the_full_default_trace(
    openb_default: tuple[Path, Path], tmp_path: Path, mapping: str
) -> None:
    started = time.perf_counter()
    trace = openb.import_openb(*openb_default, mapping=mapping)
    elapsed = time.perf_counter() - started
    assert (len(trace.nodes), len(trace.pods)) == (1523, 8152)
    assert trace.name == "openb-default"
    assert trace.metadata["upstream"]["commit"] == openb.COMMIT
    assert all(p.pod["metadata"]["annotations"][openb.PHASE_ANNOTATION] for p in trace.pods)
    never = [p for p in trace.pods if p.recorded["scheduled"] is None]
    assert len(never) == 897 and all(p.abandon is not None for p in never)
    gpu_nodes = sum(1 for n in trace.nodes if gpus.GPU_MODEL_LABEL in n["metadata"]["labels"])
    assert gpu_nodes == 1213
    if mapping == "dra":
        assert sum(1 for p in trace.pods if p.claims) == 8152 - 1088  # num_gpu > 0
        assert sum(1 for o in trace.objects if o["kind"] == "ResourceSlice") == gpu_nodes
    else:
        assert not any(p.claims for p in trace.pods)
    out = tmp_path / "openb.json.gz"
    save(trace, out)
    assert load(out) == trace
    assert elapsed < 30, elapsed  # about 0.5 s on the 2-core CI machine
