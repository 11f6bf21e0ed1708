"""The spread of a burst of one workload's pods when our extender binds (issue 27).

N pods of one workload (one label, a soft hostname spread: ``topologySpreadConstraints``
maxSkew 1, ``ScheduleAnyway``) are created at once on M identical nodes, then the real
kube-scheduler starts and places them all. Three placements, in one run:

- ``kube-scheduler alone``: its default profile, no extender (the peer);
- ``extender, assume off``: our extender registered for filter, prioritize and bind
  (``nodeCacheCapable: true``, over mTLS as ``bind.enabled`` requires), its profile scoring
  PodTopologySpread, with ``bind.assume: false``: it learns of each placement from its pod
  watch only, as before issue 27;
- ``extender, assume on``: the same with ``bind.assume: true`` (the default): the pod it bound
  counts in its cache at once.

Each runs ``--runs`` times, the three in turn (a new workload label each time). Per run:
skew = max - min pods per node, and the population standard deviation of the per-node
counts; printed per run, then the mean and the worst of each placement. For the extender,
also the mean time its bind verb took and the binds in flight while the burst was placed
(Little's law: that time x pods/s). kube-scheduler binds in a goroutine of its own (upstream
``pkg/scheduler/schedule_one.go``, ``runBindingCycle``) and sends the next pods' filter and
prioritize meanwhile, so those pods are scored before the extender has bound, and so
assumed, the ones in flight.

    python bench/burst_skew.py [--nodes 4] [--pods 24] [--runs 5] [--weight 5]
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    BENCH_NAMESPACE,
    BindRecorder,
    delete_all_pods,
    ensure_namespace,
    kube_for,
    start_control_plane,
)
from extender.controlplane import free_port, kube_extender, spawn, stop_pid
from extender.controlplane.certs import generate, issue_serving_cert

REPO = Path(__file__).resolve().parents[1]
CLIENT = "kube-scheduler-bench"

# The extender's policy: spread the pods of a workload over nodes (its PodTopologySpread
# scores the pods' own soft constraint); the filters bind also runs are the node's taints.
EXTENDER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: burst-extender
    plugins:
      multiPoint:
        disabled: [{{name: "*"}}]
      queueSort: {{enabled: [{{name: PrioritySort}}]}}
      filter: {{enabled: [{{name: TaintToleration}}]}}
      preScore: {{enabled: [{{name: PodTopologySpread}}]}}
      score: {{enabled: [{{name: PodTopologySpread, weight: 1}}]}}
      bind: {{enabled: [{{name: DefaultBinder}}]}}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: burst-extender
allowedClients: [{client}]
bind: {{enabled: true, assume: {assume}}}
"""


def burst_pod(name: str, scheduler: str, app: str) -> dict:
    labels = {"app": app}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": BENCH_NAMESPACE, "labels": labels},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": labels},
                }
            ],
        },
    }


def spread(counts: list[int]) -> tuple[int, float]:
    """(max - min, population standard deviation) of the pods per node."""
    return max(counts) - min(counts), statistics.pstdev(counts)


class Extender:
    """``kube-extender serve`` with bind on (mTLS), and what kube-scheduler needs to call it."""

    def __init__(self, cp, pki, pki_dir: Path, assume: bool) -> None:
        label = "on" if assume else "off"
        config = cp.directory / f"burst-extender-assume-{label}.yaml"
        config.write_text(EXTENDER_CONFIG.format(client=CLIENT, assume=str(assume).lower()))
        cert, key = issue_serving_cert(pki, pki_dir, f"extender-{label}", ["127.0.0.1"])
        client = issue_serving_cert(pki, pki_dir, CLIENT, [CLIENT])
        port, health = free_port(), free_port()
        self.log = cp.logs / f"burst-extender-assume-{label}.log"
        self.proc = spawn(
            kube_extender(
                "serve",
                "--config",
                str(config),
                "--kubeconfig",
                str(cp.kubeconfig),
                "--bind",
                f"127.0.0.1:{port}",
                "--health-bind",
                f"127.0.0.1:{health}",
                "--certfile",
                str(cert),
                "--keyfile",
                str(key),
                "--ca-certs",
                str(pki.ca_cert),
                "--log-level",
                "warning",
            ),
            self.log,
            cwd=REPO,  # this checkout's extender, not the venv's
        )
        self.url = f"https://127.0.0.1:{port}"
        self.context = ssl.create_default_context(cafile=str(pki.ca_cert))
        self.context.load_cert_chain(str(client[0]), str(client[1]))
        self.tls = {
            "caFile": str(pki.ca_cert),
            "certFile": str(client[0]),
            "keyFile": str(client[1]),
        }
        self._wait_ready(f"http://127.0.0.1:{health}/readyz")

    def _wait_ready(self, url: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the extender exited; see {self.log}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the extender was not ready in {timeout:.0f} s; see {self.log}")

    def stop(self) -> None:
        stop_pid(self.proc.pid)

    def bind_seconds(self) -> tuple[float, float]:
        """(sum, count) of the bind verb's successful request durations so far."""
        with urllib.request.urlopen(self.url + "/metrics", context=self.context) as response:
            text = response.read().decode()
        found = {"sum": 0.0, "count": 0.0}
        for line in text.splitlines():
            name, _, value = line.rpartition(" ")
            part = name.partition("{")[0].removeprefix("extender_request_duration_seconds_")
            if part in found and 'verb="bind"' in name and 'outcome="ok"' in name:
                found[part] = float(value)
        return found["sum"], found["count"]

    def registration(self, weight: int) -> dict:
        return {
            "urlPrefix": self.url,
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "bindVerb": "bind",
            "weight": weight,
            "nodeCacheCapable": True,
            "httpTimeout": "5s",
            "enableHTTPS": True,
            "tlsConfig": self.tls,
        }


def place_burst(
    cp, kube, nodes: list[str], pods: int, name: str, extender: dict | None
) -> tuple[list[int], float]:
    """Create the burst (pods first, for a profile nobody serves yet), start kube-scheduler,
    wait until every pod has a node; the pods per node (in ``nodes`` order) and pods/s."""
    names = [f"{name}-{i:03d}" for i in range(pods)]

    def create(pod: str) -> None:
        kube.request(
            "POST", f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods", burst_pod(pod, name, name)
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, names))
    config: dict = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name}],
    }
    if extender is not None:
        config["extenders"] = [extender]
    recorder = BindRecorder(kube, name, pods)
    cp.start_scheduler(config, name=name)
    try:
        rate = recorder.wait(120)
        items = kube.get(f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods", labelSelector=f"app={name}")[
            "items"
        ]
        placed = [(p.get("spec") or {}).get("nodeName") for p in items]
    finally:
        cp.stop_component(name)
        delete_all_pods(kube)
    return [placed.count(node) for node in nodes], rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="identical nodes (M)")
    parser.add_argument("--pods", type=int, default=24, help="pods in the burst (N)")
    parser.add_argument("--runs", type=int, default=5, help="bursts per placement")
    parser.add_argument("--weight", type=int, default=5, help="the extender's weight")
    args = parser.parse_args()
    if min(args.nodes, args.pods, args.runs, args.weight) < 1:
        parser.error("--nodes, --pods, --runs and --weight must be at least 1")
    print(
        f"{args.pods} pods (soft hostname spread, maxSkew 1) on {args.nodes} identical nodes,"
        f" {args.runs} runs per placement; extender weight {args.weight}, its profile scores"
        " PodTopologySpread; kube-scheduler's default profile"
    )
    cp = start_control_plane()
    results: dict[str, list[tuple[int, float, float | None]]] = {}
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        nodes = [f"burst-node-{i}" for i in range(args.nodes)]
        for node in nodes:
            kube.create_node(node, cpu="8", memory="32Gi")
        pki_dir = cp.directory / "burst-pki"
        pki = generate(pki_dir)
        # Both extenders serve from the start and the placements take turns in each run, so
        # that a drift of the machine or the apiserver during the run weighs on all three.
        extenders = {assume: Extender(cp, pki, pki_dir, assume) for assume in (False, True)}
        placements: list[tuple[str, str, Extender | None]] = [
            ("kube-scheduler alone", "alone", None),
            ("extender, assume off", "off", extenders[False]),
            ("extender, assume on", "on", extenders[True]),
        ]
        try:
            for run in range(args.runs):
                for label, tag, extender in placements:
                    registration = None if extender is None else extender.registration(args.weight)
                    before = extender.bind_seconds() if extender else (0.0, 0.0)
                    counts, rate = place_burst(
                        cp, kube, nodes, args.pods, f"burst-{tag}-{run}", registration
                    )
                    skew, stdev = spread(counts)
                    line = (
                        f"{label:<22} run {run + 1}: per node {counts} skew {skew} sd {stdev:.2f}"
                    )
                    in_flight = None
                    if extender is not None:
                        total, count = (
                            a - b for a, b in zip(extender.bind_seconds(), before, strict=True)
                        )
                        bind = total / max(count, 1)
                        in_flight = bind * rate
                        line += f"; bind verb {bind * 1000:.1f} ms, {rate:.0f} pods/s"
                        line += f", binds in flight {in_flight:.1f}"
                    results.setdefault(label, []).append((skew, stdev, in_flight))
                    print(line, flush=True)
        finally:
            for extender in extenders.values():
                extender.stop()
    finally:
        cp.down()
    print(
        f"\n{'placement':<22} {'mean skew':>9} {'worst skew':>10} {'mean sd':>8} {'worst sd':>8}"
        f" {'binds in flight':>15}"
    )
    for label, rows in results.items():
        skews = [s for s, _, _ in rows]
        sds = [d for _, d, _ in rows]
        flights = [f for _, _, f in rows if f is not None]
        flight = f"{statistics.mean(flights):>15.1f}" if flights else f"{'-':>15}"
        print(
            f"{label:<22} {statistics.mean(skews):>9.2f} {max(skews):>10} "
            f"{statistics.mean(sds):>8.2f} {max(sds):>8.2f} {flight}"
        )
    # Where the skew comes from: the extender runs split by the binds in flight.
    runs = [(f, s) for rows in results.values() for s, _, f in rows if f is not None]
    for name, chosen in (
        ("< 1.5", [s for f, s in runs if f < 1.5]),
        (">= 1.5", [s for f, s in runs if f >= 1.5]),
    ):
        if chosen:
            print(
                f"extender runs with binds in flight {name}: {len(chosen)}, mean skew "
                f"{statistics.mean(chosen):.2f}, skewed (> 0) {sum(1 for s in chosen if s)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
