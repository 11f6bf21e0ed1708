"""Hostile cluster objects, timed (issue 28): how long a canary pod waits behind each.

The cases of ``tests/e2e/test_hostile.py`` (``bench/hostile_objects.py``), on one control
plane, each case's objects created once and both schedulers run on them one after the other:
the real kube-scheduler (its default profile, clientConnection qps/burst 5000), then
``kube-extender run`` from this tree. For each scheduler: start it, create the hostile pods,
one second later the canary (a small pod on a clean node of its own), and time the canary from
its creation to its binding (polled every 20 ms), capped at ``--cap`` seconds (then ``>cap``
is printed and the scheduler is stopped, whatever it was doing). Also the hostile pods' first
scheduling attempt: the first increment of ``scheduler_scheduling_attempt_duration_seconds``
with a result other than ``scheduled`` (both schedulers export it, ours on its metrics port,
kube-scheduler on its secure port with the admin's certificate), and what became of the first
hostile pod (its FailedScheduling message or the node it was bound to).

    python -m bench.hostile [--cases class-selector,claim-selector,taints,...] [--cap 120]
                            [--storm 2000]
"""

from __future__ import annotations

import argparse
import ssl
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import hostile_objects as hostile
from bench.cluster import kube_scheduler_config, start_control_plane
from extender.controlplane import (
    ControlPlane,
    free_port,
    kube_extender,
    spawn,
    stop_pid,
    wait_http_ok,
)
from extender.kube import api_client
from extender.scenario.kube import Kube

REPO = Path(__file__).resolve().parents[1]
ATTEMPTS = "scheduler_scheduling_attempt_duration_seconds"


def cases(storm: int) -> dict[str, hostile.Case]:
    chosen = [
        hostile.CLASS_SELECTOR,
        hostile.CLAIM_SELECTOR,
        hostile.TAINTS_CASE,
        hostile.QUANTITY,
        hostile.ANNOTATIONS_CASE,
        hostile.LABELS_CASE,
        hostile.storm(storm),
    ]
    return {case.name: case for case in chosen}


@dataclass
class Result:
    canary: float | None  # seconds, None: not bound within the cap
    # Seconds of the hostile pods' first failed attempt(s) (their mean if several ended
    # between two reads); None: none ended within the cap; NaN: not measured.
    first_attempt: float | None
    outcome: str
    rss_mib: float | None = None


class Metrics:
    """A scheduler's Prometheus endpoint: the sum and count of its failed attempts."""

    def __init__(self, url: str, context: ssl.SSLContext | None = None) -> None:
        self.url = url
        self.context = context

    def failed_attempts(self) -> tuple[float, int] | None:
        try:
            with urllib.request.urlopen(self.url, timeout=5, context=self.context) as response:
                text = response.read().decode()
        except OSError:
            return None  # busy past the timeout (ours is one process): asked again later
        total, count = 0.0, 0
        for line in text.splitlines():
            name, _, value = line.rpartition(" ")
            if not name.startswith(ATTEMPTS) or 'result="scheduled"' in name:
                continue
            if name.startswith(ATTEMPTS + "_sum"):
                total += float(value)
            elif name.startswith(ATTEMPTS + "_count"):
                count += int(float(value))
        return total, count


def kube_scheduler_metrics(cp: ControlPlane, name: str) -> Metrics:
    """kube-scheduler's secure port (from its command line), as the cluster's admin."""
    cmdline = Path(f"/proc/{cp.state.pids[name]}/cmdline").read_bytes().split(b"\0")
    port = next(a.split(b"=")[1].decode() for a in cmdline if a.startswith(b"--secure-port="))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(str(cp.certs.admin_cert), str(cp.certs.admin_key))
    return Metrics(f"https://127.0.0.1:{port}/metrics", context)


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def renamed(bodies: list[dict], prefix: str) -> list[dict]:
    for body in bodies:
        body["metadata"]["name"] = f"{prefix}-{body['metadata']['name']}"
    return bodies


def outcome(kube: Kube, names: list[str]) -> str:
    """What became of the hostile pods: how many bound where, how many pending and why."""
    pods = kube.get(f"/api/v1/namespaces/{kube.namespace}/pods")["items"]
    found: dict[str, int] = {}
    for pod in pods:
        if pod["metadata"]["name"] not in names:
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            key = f"bound to {node}"
        else:
            conditions = (pod.get("status") or {}).get("conditions") or ()
            messages = [c.get("message", "") for c in conditions if c["type"] == "PodScheduled"]
            key = f"pending: {messages[0] if messages else 'not tried yet'}"
        found[key] = found.get(key, 0) + 1
    return "; ".join(f"{count} {key}" for key, count in found.items())


def measure(
    kube: Kube, case: hostile.Case, scheduler: str, metrics: Metrics, pid: int | None, cap: float
) -> Result:
    """Hostile pods, then the canary; the canary's wait and the first failed attempt."""
    tag = kube.namespace
    before = None
    while before is None:
        before = metrics.failed_attempts()
    bodies = renamed(case.hostile(tag, scheduler), scheduler)
    hostile.create_pods(kube, bodies)
    time.sleep(1)  # the first hostile pod is being tried when the canary comes
    canary = f"{scheduler}-{hostile.CANARY}"
    created = time.monotonic()
    hostile.create_pod(kube, hostile.canary_pod(tag, scheduler, name=canary))
    canary_wait: float | None = None
    # The first failed attempt, if the hostile pods are to fail (else: not waited for).
    first: float | None = None if case.reasons else float("nan")
    rss: float | None = None
    next_metrics = next_bound = 0.0
    names = [body["metadata"]["name"] for body in bodies]
    while time.monotonic() - created < cap and (canary_wait is None or first is None):
        now = time.monotonic()
        if canary_wait is None and kube.node_of(canary):
            canary_wait = now - created
        if canary_wait is not None and first is None and now >= next_bound:
            next_bound = now + 1
            if all_bound(kube, names):
                first = float("nan")  # no attempt failed: the scheduler bound them all
        if first is None and now >= next_metrics:
            seen = metrics.failed_attempts()
            next_metrics = time.monotonic() + 0.2
            if seen is not None and seen[1] > before[1]:
                # One attempt more: its duration; several (the storm): their mean.
                first = (seen[0] - before[0]) / (seen[1] - before[1])
        if pid is not None:
            rss = max(rss or 0.0, rss_mib(pid) or 0.0)
        time.sleep(0.02)
    return Result(canary_wait, first, outcome(kube, names), rss)


def all_bound(kube: Kube, names: list[str]) -> bool:
    pods = kube.get(f"/api/v1/namespaces/{kube.namespace}/pods")["items"]
    bound = {p["metadata"]["name"] for p in pods if (p.get("spec") or {}).get("nodeName")}
    return bound >= set(names)


def delete_pods(kube: Kube, prefix: str) -> None:
    """The pods of one scheduler's run, named ``prefix-...`` (the case's own stay: a node's
    resident pod)."""
    names = [name for name in kube.created_pods if name.startswith(prefix + "-")]
    kube.created_pods = [name for name in kube.created_pods if name not in names]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(kube.delete_pod, names))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        items = kube.get(f"/api/v1/namespaces/{kube.namespace}/pods")["items"]
        if not {p["metadata"]["name"] for p in items} & set(names):
            return
        time.sleep(0.2)


def run_kube_scheduler(cp: ControlPlane, kube: Kube, case: hostile.Case, cap: float) -> Result:
    name = f"ks-{case.name}"
    cp.start_scheduler(kube_scheduler_config(name), name=name)
    try:
        return measure(kube, case, name, kube_scheduler_metrics(cp, name), None, cap)
    finally:
        cp.stop_component(name)
        delete_pods(kube, name)


def run_ours(cp: ControlPlane, kube: Kube, case: hostile.Case, cap: float) -> Result:
    name = f"ours-{case.name}"
    config = cp.directory / f"{name}.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"leaderElection: {{leaderElect: false}}\nprofiles: [{{schedulerName: {name}}}]\n"
    )
    port = free_port()
    args = ["run", "--config", str(config), "--kubeconfig", str(cp.kubeconfig)]
    args += ["--metrics-bind", f"127.0.0.1:{port}", "--log-level", "warning"]
    log = cp.logs / f"{name}.log"
    # cwd = this checkout: `python -m extender` imports its tree, not the venv's install.
    proc = spawn(kube_extender(*args), log, cwd=REPO)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log)
        metrics = Metrics(f"http://127.0.0.1:{port}/metrics")
        return measure(kube, case, name, metrics, proc.pid, cap)
    finally:
        stop_pid(proc.pid, timeout=10)
        delete_pods(kube, name)


def seconds(value: float | None, cap: float) -> str:
    if value is None:
        return f">{cap:.0f} s"
    if value != value:  # NaN: not measured
        return "-"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.1f} s"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated, default all: " + ", ".join(cases(0)))
    parser.add_argument("--cap", type=float, default=120.0, help="seconds the canary may wait")
    parser.add_argument("--storm", type=int, default=2000, help="pods in the storm case")
    args = parser.parse_args()
    known = cases(args.storm)
    names = args.cases.split(",") if args.cases else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    if args.cap <= 0 or args.storm < 1:
        parser.error("--cap and --storm must be positive")
    cp = start_control_plane()
    rows: list[tuple[hostile.Case, Result, Result]] = []
    try:
        api = api_client(str(cp.kubeconfig))
        for name in names:
            case = known[name]
            kube = Kube(api, namespace=f"hostile-{name}", out=lambda *a: None)
            kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": kube.namespace}})
            started = time.monotonic()
            hostile.create_canary_node(kube, kube.namespace)
            case.setup(kube, kube.namespace)
            print(f"{name}: {case.what}; objects in {time.monotonic() - started:.1f} s", flush=True)
            try:
                print(f"  load average before kube-scheduler: {load()}", flush=True)
                theirs = run_kube_scheduler(cp, kube, case, args.cap)
                print(f"  kube-scheduler: canary {seconds(theirs.canary, args.cap)}", flush=True)
                print(f"  load average before kube-extender: {load()}", flush=True)
                ours = run_ours(cp, kube, case, args.cap)
                print(f"  kube-extender: canary {seconds(ours.canary, args.cap)}", flush=True)
                rows.append((case, ours, theirs))
            finally:
                kube.cleanup()
                kube.request("DELETE", f"/api/v1/namespaces/{kube.namespace}")
    finally:
        cp.down()
    print(
        f"\n{'case':<15} {'canary ours':>12} {'kube-sched.':>12} {'ratio':>7} "
        f"{'1st attempt ours':>17} {'kube-sched.':>12} {'ours RSS':>9}"
    )
    for case, ours, theirs in rows:
        ratio = "-"
        if ours.canary is not None and theirs.canary:
            ratio = f"{ours.canary / theirs.canary:.2g}"
        elif ours.canary is None and theirs.canary:
            ratio = f">{args.cap / theirs.canary:.0f}"
        rss = f"{ours.rss_mib:.0f} MiB" if ours.rss_mib else "-"
        print(
            f"{case.name:<15} {seconds(ours.canary, args.cap):>12} "
            f"{seconds(theirs.canary, args.cap):>12} {ratio:>7} "
            f"{seconds(ours.first_attempt, args.cap):>17} "
            f"{seconds(theirs.first_attempt, args.cap):>12} {rss:>9}"
        )
    print("\nthe hostile pods at the end, kube-extender, then kube-scheduler:")
    for case, ours, theirs in rows:
        print(f"  {case.name}:\n    {ours.outcome[:300]}\n    {theirs.outcome[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
