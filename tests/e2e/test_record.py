"""``kube-extender record --window`` against the real control plane: the real kube-scheduler
binds pods while the recorder watches; some pods are deleted during the window. The trace has
the initial state (bound and pending pods at 0), the arrivals, bindings and ends at the times
they happened (within the timestamps' second), and the nodes as they were."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from extender.controlplane import kube_extender
from extender.replay.record import parse_time
from extender.replay.trace import load

from .harness import Process, scheduler_config, wait_until
from .test_dra import (  # noqa: F401 (fixtures)
    claim_controller,
    claim_template,
    device_class,
    dra,
    gpu_pod,
    publish_slice,
)

WINDOW = 14.0
# Times the recorder writes come from the watch (sub-second) or from the objects' timestamps
# (whole seconds): allow the second plus scheduling on a loaded machine.
SLACK = 1.5


def start_recorder(control_plane, ns: str, window: float, out: Path, log_dir: Path) -> Process:
    recorder = Process(
        "record",
        [
            "record",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--window",
            f"{window:g}s",
            "-n",
            ns,
            "-o",
            str(out),
        ],  # fmt: skip
        log_dir,
    )
    wait_until(lambda: "pods" in recorder.log(), 30, "the recorder's first progress line")
    return recorder


def finish(recorder: Process, window: float, out: Path) -> dict:
    wait_until(lambda: not recorder.alive(), window + 30, "the recorder to exit")
    assert recorder.proc.returncode == 0, recorder.log()
    load(out)  # a valid trace (format v1)
    return json.loads(out.read_text())


def test_record_a_window_of_the_live_cluster(
    kube, control_plane, kube_scheduler, processes, tmp_path: Path
) -> None:
    ns = kube.namespace
    kube.scheduler_name = "default-scheduler"
    kube_scheduler(scheduler_config(None))
    a, b = f"{ns}-a", f"{ns}-b"
    kube.create_node(a, cpu="4", labels={"e2e.io/record": ns})
    kube.create_node(b, cpu="4", labels={"e2e.io/record": ns})
    kube.create_pod("old", cpu="1")
    old_node = kube.wait_bound("old")
    kube.create_pod("stuck", cpu="64")  # fits nowhere: pending all along
    out = tmp_path / "trace.json"

    launched = time.time()
    recorder = Process(
        "record",
        [
            "record",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--window",
            f"{WINDOW:g}s",
            "-n",
            ns,
            "-o",
            str(out),
        ],  # fmt: skip
        tmp_path,
    )
    processes.append(recorder)
    wait_until(lambda: "pods" in recorder.log(), 30, "the recorder's first progress line")
    listed = time.time()  # the recorder's start is between launched and listed

    times: dict[str, float] = {}

    def now(what: str) -> None:
        times[what] = time.time()

    time.sleep(1.0)
    now("first created")
    kube.create_pod("first", cpu="1")
    kube.wait_bound("first")
    now("first bound")
    time.sleep(1.0)
    now("never created")
    kube.create_pod("never", cpu="64")
    kube.create_pod("second", cpu="2")
    second_node = kube.wait_bound("second")
    time.sleep(2.0)
    now("first deleted")
    kube.delete_pod("first")
    now("old deleted")
    kube.delete_pod("old")
    time.sleep(1.0)
    now("never deleted")
    kube.delete_pod("never")

    trace = finish(recorder, WINDOW, out)
    assert (trace["apiVersion"], trace["kind"], trace["version"]) == (
        "kube-extender.dev/v1", "Trace", 1
    )  # fmt: skip
    assert trace["duration"] == WINDOW
    assert trace["metadata"]["createdBy"] == "kube-extender record"

    nodes = {n["metadata"]["name"]: n for n in trace["nodes"]}
    assert {a, b} <= set(nodes)
    assert nodes[a]["status"]["allocatable"]["cpu"] == "4"
    assert nodes[a]["metadata"]["labels"]["e2e.io/record"] == ns
    assert [o["metadata"]["name"] for o in trace["objects"] if o["kind"] == "Namespace"] == [ns]

    pods = {r["pod"]["metadata"]["name"]: r for r in trace["pods"]}
    assert set(pods) == {"old", "stuck", "first", "never", "second"}, list(pods)
    assert [r["arrival"] for r in trace["pods"]] == sorted(r["arrival"] for r in trace["pods"])
    for record in trace["pods"]:
        assert "nodeName" not in record["pod"]["spec"]
        assert "status" not in record["pod"]
        assert "uid" not in record["pod"]["metadata"]

    def between(value: float, low: float, high: float) -> None:
        assert low - SLACK <= value <= high + SLACK, (value, low, high)

    def since_start(what: str) -> tuple[float, float]:
        """When ``what`` happened in the trace's time: the start is not known closer."""
        return times[what] - listed, times[what] - launched

    # The initial state: old bound where the scheduler put it, stuck pending.
    old = pods["old"]
    assert old["arrival"] == 0 and old["node"] == old_node
    assert old["recorded"] == {"node": old_node, "scheduled": 0.0}
    assert old["abandon"] is None
    between(old["duration"], *since_start("old deleted"))
    stuck = pods["stuck"]
    assert stuck["arrival"] == 0 and stuck["node"] is None
    assert stuck["recorded"] == {"node": None, "scheduled": None}
    assert stuck["duration"] is None and stuck["abandon"] is None

    # Arrivals, bindings and ends during the window.
    first = pods["first"]
    assert first["node"] is None and first["recorded"]["node"] in (a, b)
    between(first["arrival"], *since_start("first created"))
    scheduled = first["recorded"]["scheduled"]
    assert first["arrival"] <= scheduled
    between(scheduled, since_start("first created")[0], since_start("first bound")[1])
    lived = times["first deleted"] - times["first bound"]
    between(first["duration"], lived, lived + times["first bound"] - times["first created"])
    second = pods["second"]
    assert second["recorded"]["node"] == second_node
    assert second["duration"] is None and second["abandon"] is None
    never = pods["never"]
    assert never["recorded"] == {"node": None, "scheduled": None}
    assert never["duration"] is None
    between(never["arrival"], *since_start("never created"))
    between(never["abandon"], *since_start("never deleted"))
    assert pods["first"]["arrival"] < pods["never"]["arrival"] <= pods["second"]["arrival"]
    assert pods["second"]["pod"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "2"}}

    # A dump of what is left, as kubectl get -o json writes it: the same from the timestamps.
    items = []
    for path in ("/api/v1/nodes", f"/api/v1/namespaces/{ns}/pods", "/api/v1/namespaces"):
        listed = kube.get(path)
        kind = listed["kind"].removesuffix("List")
        items += [{"apiVersion": "v1", "kind": kind, **item} for item in listed["items"]]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = tmp_path / "from-dump.json"
    done = subprocess.run(
        kube_extender("record", "--from-dump", str(dump), "-n", ns, "-o", str(out), "-q"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    dumped = {r["pod"]["metadata"]["name"]: r for r in load(out).to_json()["pods"]}
    assert set(dumped) == {"stuck", "second"}
    assert dumped["stuck"]["arrival"] == 0 and dumped["stuck"]["recorded"]["node"] is None
    assert dumped["second"]["recorded"]["node"] == second_node
    # The dump starts at the first creation; times are the timestamps' whole seconds.
    created = {n: parse_time(kube.pod(n)["metadata"]["creationTimestamp"]) for n in dumped}
    assert dumped["second"]["arrival"] == created["second"] - created["stuck"]
    waited = pods["second"]["recorded"]["scheduled"] - pods["second"]["arrival"]
    dumped_wait = dumped["second"]["recorded"]["scheduled"] - dumped["second"]["arrival"]
    assert abs(dumped_wait - waited) <= 1.0, (dumped_wait, waited)


def test_record_claims_with_their_pods(
    dra,  # noqa: F811
    control_plane,
    kube_scheduler,
    processes,
    tmp_path: Path,
) -> None:
    """The resource-claim controller generates each pod's claim from its template: the trace
    records it with its pod (allocated for the pod bound at the start, to be allocated for the
    arrivals), the pod names it directly, and the DRA objects are there from the start."""
    kube = dra
    ns = kube.namespace
    kube.scheduler_name = "default-scheduler"
    kube_scheduler(scheduler_config(None))
    gpu_node = f"{ns}-gpu"
    kube.create_node(gpu_node)
    publish_slice(kube, gpu_node, devices=2)
    class_name = device_class(kube)
    template = claim_template(kube, class_name)
    gpu_pod(kube, "before", template)
    assert kube.wait_bound("before", timeout=60) == gpu_node
    out = tmp_path / "trace.json"
    window = 8.0
    recorder = start_recorder(control_plane, ns, window, out, tmp_path)
    processes.append(recorder)
    gpu_pod(kube, "during", template)
    assert kube.wait_bound("during", timeout=60) == gpu_node
    gpu_pod(kube, "waiting", template)  # both devices taken: pending with its claim
    wait_until(lambda: kube.why_pending("waiting"), 30, "waiting to be tried")
    trace = finish(recorder, window, out)

    kinds = {(o["kind"], o["metadata"]["name"]) for o in trace["objects"]}
    assert ("DeviceClass", class_name) in kinds
    assert any(k == "ResourceSlice" and n.startswith(gpu_node) for k, n in kinds), kinds
    assert not any(k == "ResourceClaim" for k, _ in kinds), kinds  # all with their pods
    assert trace["metadata"]["gpuMapping"] == "dra"
    pods = {r["pod"]["metadata"]["name"]: r for r in trace["pods"]}
    assert set(pods) == {"before", "during", "waiting"}
    for name, record in pods.items():
        (claim,) = record["claims"]
        claim_name = claim["metadata"]["name"]
        assert claim_name.startswith(f"{name}-gpu"), claim_name
        assert record["pod"]["spec"]["resourceClaims"] == [
            {"name": "gpu", "resourceClaimName": claim_name}
        ]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == class_name
        assert "uid" not in claim["metadata"] and "resourceVersion" not in claim["metadata"]
    before = pods["before"]
    assert before["node"] == gpu_node and before["arrival"] == 0
    assert before["claims"][0]["status"]["allocation"]["devices"]["results"]
    assert pods["during"]["node"] is None and "status" not in pods["during"]["claims"][0]
    assert pods["during"]["recorded"]["node"] == gpu_node
    assert pods["waiting"]["recorded"] == {"node": None, "scheduled": None}
