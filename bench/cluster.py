"""Shared harness for the benchmarks that run on the real control plane.

Throughput is measured the same way for every scheduler: pods are created first (with a
schedulerName nobody serves yet), then the scheduler under test starts, and a watch records
when each pod gets its node. pods/s = (bound - 1) / (last bind - first bind), so start-up and
cache sync are not counted for anyone.
"""

from __future__ import annotations

import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.progress import bar, steps
from bench.workload import make_node, mixed_pod, preferred_spread_pod, spread_pod
from extender.controlplane import ControlPlane
from extender.kube import api_client
from extender.scenario.kube import Kube

BENCH_NAMESPACE = "bench"


def start_control_plane(apiserver_extra_args: list[str] | None = None) -> ControlPlane:
    """etcd and kube-apiserver in a fresh directory (``apiserver_extra_args``: e.g. the
    feature gates and runtime config of ``extender.controlplane.apiserver_args``)."""
    cp = ControlPlane(Path(tempfile.mkdtemp(prefix="kube-extender-bench-")))
    cp.up(apiserver_extra_args)
    return cp


def kube_for(cp: ControlPlane) -> Kube:
    return Kube(api_client(str(cp.kubeconfig)), namespace=BENCH_NAMESPACE, out=lambda *a: None)


def ensure_namespace(kube: Kube, name: str = BENCH_NAMESPACE) -> None:
    try:
        kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    except Exception:
        pass


def post_all(kube: Kube, path: str, bodies: list[dict], what: str) -> None:
    """POST every body to ``path`` from 16 threads, with a progress bar."""

    def create(body: dict) -> None:
        kube.request("POST", path, body)

    with ThreadPoolExecutor(16) as pool:
        list(steps(pool.map(create, bodies), f"creating {what}s", len(bodies), what))


def create_nodes(
    kube: Kube,
    count: int,
    seed: int = 1,
    make: Callable[[int, random.Random], dict] = make_node,
) -> None:
    """``count`` nodes, by default realistic ones (labels, taints, images; ``make``: another
    shape, node ``i`` of ``make(i, rng)``), status patched as a kubelet would."""
    rng = random.Random(seed)
    nodes = [make(i, rng) for i in range(count)]

    def create(node: dict) -> None:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": dict(node["metadata"])}
        body["metadata"].pop("uid", None)
        body["spec"] = node["spec"]
        kube.request("POST", "/api/v1/nodes", body)
        kube.request(
            "PATCH",
            f"/api/v1/nodes/{node['metadata']['name']}/status",
            {"status": node["status"]},
            content_type="application/merge-patch+json",
        )

    with ThreadPoolExecutor(16) as pool:
        list(steps(pool.map(create, nodes), "creating nodes", len(nodes), "node"))


def delete_all_nodes(kube: Kube) -> None:
    kube.request("DELETE", "/api/v1/nodes")


def single_pod(i: int, name: str, namespace: str, scheduler_name: str) -> dict:
    """The one-spec workload: every pod alike (10m CPU, 16Mi): the runtime memo at its best."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "single"}},
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


# `spread` / `spread-soft`: upstream scheduler_perf's TopologySpreading /
# PreferredTopologySpreading pods (zone, maxSkew 5, DoNotSchedule / ScheduleAnyway).
WORKLOADS = {
    "single": single_pod,
    "mixed": mixed_pod,
    "spread": spread_pod,
    "spread-soft": preferred_spread_pod,
}


def create_pods(
    kube: Kube, count: int, scheduler_name: str, prefix: str, workload: str = "single"
) -> list[str]:
    names = [f"{prefix}-{i:05d}" for i in range(count)]
    factory = WORKLOADS[workload]

    def create(i: int) -> None:
        pod = factory(i, names[i], BENCH_NAMESPACE, scheduler_name)
        pod["metadata"].pop("uid", None)
        kube.request("POST", f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods", pod)

    with ThreadPoolExecutor(16) as pool:
        list(steps(pool.map(create, range(count)), "creating pods", count, "pod"))
    return names


def delete_all_pods(kube: Kube, namespace: str = BENCH_NAMESPACE) -> None:
    kube.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": "0"}
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not kube.get(f"/api/v1/namespaces/{namespace}/pods", limit="1")["items"]:
            return
        time.sleep(0.5)


class BindRecorder:
    """Watches pods in the bench namespace and records when each one first has a node."""

    def __init__(self, kube: Kube, prefix: str, expected: int) -> None:
        self.kube = kube
        self.prefix = prefix
        self.expected = expected
        self.bound: dict[str, float] = {}
        # When the scheduler under test was launched (set by its runner): time to first bind.
        self.launched: float | None = None
        self.done = threading.Event()
        listing = kube.get(f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods")
        self.resource_version = listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self.done.is_set():
            stream = self.kube.client.watch(
                f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods",
                self.resource_version,
                timeout_seconds=60,
            )
            with stream:
                for kind, obj in stream:
                    self._event({"type": kind, "object": obj})
                    if self.done.is_set():
                        break

    def _event(self, event: dict) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if meta.get("resourceVersion"):
            self.resource_version = meta["resourceVersion"]
        name = meta.get("name", "")
        if not name.startswith(self.prefix) or name in self.bound:
            return
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound[name] = time.monotonic()
            if len(self.bound) >= self.expected:
                self.done.set()

    def wait(self, timeout: float) -> float:
        """pods/s between the first and the last bind; raises if not all bound in time."""
        deadline = time.monotonic() + timeout
        with bar("pods bound", self.expected, "pod") as shown:
            # The binds are timed by the watch thread: this loop only shows the count.
            while not self.done.wait(0.5 if not shown.disable else timeout):
                shown.update(len(self.bound) - shown.n)
                if time.monotonic() >= deadline:
                    break
        if not self.done.is_set():
            raise TimeoutError(f"only {len(self.bound)}/{self.expected} pods bound in {timeout} s")
        times = sorted(self.bound.values())
        return (len(times) - 1) / max(times[-1] - times[0], 1e-9)


def kube_scheduler_config(
    scheduler_name: str, extender_url: str | None = None, content_type: str | None = None
) -> dict:
    """``content_type``: the client's wire format (default protobuf; ``application/json`` to
    see what JSON, which kube-extender speaks, costs the apiserver)."""
    connection: dict = {"qps": 5000, "burst": 5000}
    if content_type:
        connection["contentType"] = content_type
    config: dict = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        # The default 50/100 caps kube-scheduler near 50 pods/s; raise it for a fair figure.
        "clientConnection": connection,
        "profiles": [{"schedulerName": scheduler_name}],
    }
    if extender_url:
        config["extenders"] = [
            {
                "urlPrefix": extender_url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "nodeCacheCapable": True,
                "httpTimeout": "5s",
            }
        ]
    return config
