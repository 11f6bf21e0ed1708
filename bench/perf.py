"""Upstream scheduler_perf's workloads: kube-scheduler vs ``kube-extender run``, in one run.

The workloads of kubernetes v1.36.3 ``test/integration/scheduler_perf`` (``bench/
perf_workloads.py`` says how each is modelled and what differs), at upstream's 500Nodes and
5000Nodes sizes, on one control plane (etcd, kube-apiserver; kube-controller-manager's
resourceclaim-controller for the DRA workloads). For each workload and node count: its nodes
are created (DRA: with one ResourceSlice each), its init pods bound (or, for DRA, its init
claims allocated), then each scheduler in turn gets the same measured pods, created before
it starts, and schedules them; its pods are deleted after it (``bench/throughput.py``).

Printed per workload and size, for kube-scheduler v1.36.3 (clientConnection qps/burst 5000)
and ``kube-extender run`` (default profile both): pods/s between the first and the last bind
of the measured pods (PreemptionBasic: from launching the scheduler, its first bind waiting
for the preemptions), the ratio ours / kube-scheduler, the scheduler process's CPU ms per pod
(over the same window, from /proc), the time from launching the process to
its first bind, and its peak RSS (VmHWM, read just before it is stopped). With
``--extender``, for the workloads an extender can serve (not DRA, not gangs), also
kube-scheduler + the null extender (``bench/null_extender.py``) and kube-scheduler + ours
(``kube-extender serve``, ``bench/extender_overhead.py``'s profile), and the ratio ours /
null. Ends with a markdown table for ``docs/benchmarks.md``: date (UTC), git head, load
average at start and end.

Pod counts follow upstream; a size may carry a scale factor (PreemptionBasic at 5000 nodes:
0.2 of the measured pods), printed with it; ``--scale F`` sets the factor for every size
(measured pods, and init pods where that keeps the workload's shape). ``--quick``: 20 nodes,
each workload's 500-node pod counts x 20/500 (a smoke run).

    python bench/perf.py [--workloads A,B] [--nodes 500,5000] [--scale F] [--quick]
                         [--extender] [--workers 1] [--threads 4] [--base TREE]
                         [--profile] [--no-kube-scheduler]

``--base TREE`` also runs ``kube-extender run`` from another checkout (e.g. a ``git worktree
add --detach`` of main) after ours, on the same pods, and prints ours / base;
``--profile`` also runs ours under cProfile in every thread (``bench/profiled.py``; its
figures are printed, not compared) and prints the top functions per thread
(``--profile-clock cpu``: by each thread's CPU time);
``--no-kube-scheduler`` skips kube-scheduler's run (iterating on ours against ``--base``).
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import perf_workloads as pw
from bench.cluster import (
    BENCH_NAMESPACE,
    create_nodes,
    delete_all_nodes,
    delete_all_pods,
    ensure_namespace,
    kube_for,
    post_all,
    start_control_plane,
)
from bench.dra import SLICES, DRAWorkload, claim_template, publish_slices
from bench.dra_objects import allocation, device_class
from bench.extender_overhead import start_extender, start_null_extender
from bench.gang import GangWorkload, scenario
from bench.throughput import Hooks, Run, measure_kube_scheduler, measure_ours, print_profile
from extender.controlplane import apiserver_args_for_gates, stop_pid
from extender.scenario.kube import Kube

ROOT = Path(__file__).resolve().parents[1]
PODS = f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods"
INIT_PODS = f"/api/v1/namespaces/{pw.INIT_NAMESPACE}/pods"
INIT_CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{pw.INIT_NAMESPACE}/resourceclaims"
SERVICES = f"/api/v1/namespaces/{BENCH_NAMESPACE}/services"
QUICK_NODES = 20


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def git_head() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    )
    return out.stdout.strip()[:80] or "unknown"


class Churn:
    """upstream's churn op while a scheduler runs: ``create`` posts a 9-CPU priority-10 pod
    every 200 ms (they pile up, unschedulable); ``recreate`` replaces a node with room for no
    pod, such a pod and a service every 1 s."""

    def __init__(self, kube: Kube, mode: str, scheduler: str) -> None:
        self.kube = kube
        self.mode = mode
        self.scheduler = scheduler
        self.stopped = threading.Event()
        self.created = 0
        self.live: list[str] = []  # paths of the recreate mode's current objects
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _pod(self, k: int) -> dict:
        name = f"churn-{self.scheduler}-{k:05d}"
        return pw.high_priority_large_cpu_pod(name, BENCH_NAMESPACE, self.scheduler)

    def _loop(self) -> None:
        interval = 0.2 if self.mode == "create" else 1.0
        due = time.monotonic()
        while True:  # on a fixed beat, as upstream's ticker, however long a round took
            due += interval
            if self.stopped.wait(max(due - time.monotonic(), 0.0)):
                return
            try:
                k = self.created
                if self.mode == "create":
                    self.kube.request("POST", PODS, self._pod(k))
                else:
                    self._delete_live()
                    node = self.kube.request("POST", "/api/v1/nodes", pw.churn_node(k))
                    self.kube.request(
                        "PATCH",
                        f"/api/v1/nodes/{node['metadata']['name']}/status",
                        {"status": pw.churn_node(k)["status"]},
                        content_type="application/merge-patch+json",
                    )
                    pod = self.kube.request("POST", PODS, self._pod(k))
                    service = self.kube.request("POST", SERVICES, pw.churn_service(k))
                    self.live = [
                        f"/api/v1/nodes/{node['metadata']['name']}",
                        f"{PODS}/{pod['metadata']['name']}",
                        f"{SERVICES}/{service['metadata']['name']}",
                    ]
                self.created += 1
            except Exception as exc:  # reported once, at stop()
                self.error = exc

    def _delete_live(self) -> None:
        for path in self.live:
            try:
                self.kube.request("DELETE", path, query={"gracePeriodSeconds": "0"})
            except Exception:
                pass  # gone already
        self.live = []

    def stop(self) -> None:
        if self.stopped.is_set():
            return
        self.stopped.set()
        self.thread.join(10)
        self._delete_live()
        what = "pods" if self.mode == "create" else "node/pod/service sets"
        note = f" (an error on the way: {self.error})" if self.error else ""
        print(f"    churn: {self.created} {what} created{note}", flush=True)


@dataclass
class Setup:
    """One workload at one size on the cluster: its init objects and each scheduler's Hooks."""

    kube: Kube
    workload: pw.Workload
    size: pw.Size
    nodes: int
    init_done: bool = False
    churn: Churn | None = None
    gang: GangWorkload | None = field(default=None, repr=False)

    @property
    def measured_pods(self) -> int:
        if self.workload.kind == "gang":
            return (self.size.measure // pw.GANG_SIZE) * pw.GANG_SIZE
        return self.size.measure

    # -- init -----------------------------------------------------------------------------

    def ensure_init(self) -> None:
        if self.init_done and not self.workload.init_consumed:
            return
        if self.init_done:
            delete_all_pods(self.kube, pw.INIT_NAMESPACE)
        kind = self.workload.kind
        if kind == "pods" and self.size.init:
            bodies = [
                pw.init_pod(self.workload, i, self.size.init, self.nodes)
                for i in range(self.size.init)
            ]
            post_all(self.kube, INIT_PODS, bodies, "init pod")
        elif kind in ("dra-template", "dra-steady"):
            self._init_claims(with_pods=kind == "dra-template")
        self.init_done = True

    def _init_claims(self, with_pods: bool) -> None:
        """Init claims allocated to a device each (round-robin over the nodes); with
        ``with_pods``, each with a pod bound to that node that the claim is reserved for."""
        if self.size.init > self.nodes * pw.DRA_DEVICES:
            raise SystemExit(f"{self.size.init} init claims > {self.nodes} nodes' devices")
        claims = [pw.init_claim(f"init-claim-{i:05d}") for i in range(self.size.init)]
        post_all(self.kube, INIT_CLAIMS, claims, "init claim")
        uids: dict[int, str] = {}
        if with_pods:
            lock = threading.Lock()

            def create(i: int) -> dict:
                node, _ = pw.dra_device(i, self.nodes)
                body = pw.init_claim_pod(f"init-{i:05d}", f"init-claim-{i:05d}")
                body["spec"]["nodeName"] = node
                created = self.kube.request("POST", INIT_PODS, body)
                with lock:
                    uids[i] = created["metadata"]["uid"]
                return created

            _parallel(create, range(self.size.init), "init pod")

        def allocate(i: int) -> None:
            node, device = pw.dra_device(i, self.nodes)
            status: dict = {"allocation": allocation(node, device)}
            if with_pods:
                status["reservedFor"] = [
                    {"resource": "pods", "name": f"init-{i:05d}", "uid": uids[i]}
                ]
            self.kube.request(
                "PATCH",
                f"{INIT_CLAIMS}/init-claim-{i:05d}/status",
                {"status": status},
                content_type="application/merge-patch+json",
            )

        _parallel(allocate, range(self.size.init), "claim allocation")

    def teardown(self) -> None:
        delete_all_pods(self.kube, pw.INIT_NAMESPACE)
        if self.workload.kind.startswith("dra"):
            self.kube.request("DELETE", INIT_CLAIMS)

    # -- each scheduler's run -------------------------------------------------------------

    def hooks(self) -> Hooks:
        kind = self.workload.kind
        if kind == "gang":
            if self.gang is None:
                gangs = self.size.measure // pw.GANG_SIZE
                sc = scenario("all", self.nodes, gangs, pw.GANG_SIZE, pw.GANG_SIZE)
                self.gang = GangWorkload(self.kube, sc, settle=1.0)
            return self.gang.hooks()
        if kind.startswith("dra"):
            dra = DRAWorkload(self.kube, self.size.measure).hooks()

            def prepare_dra(name: str) -> None:
                self.ensure_init()
                dra.prepare(name)

            return Hooks(prepare=prepare_dra, check=dra.check, cleanup=dra.cleanup)

        def prepare(name: str) -> None:
            self.ensure_init()
            assert self.workload.measured_pod is not None
            bodies = [
                self.workload.measured_pod(f"{name}-{i:05d}", name)
                for i in range(self.size.measure)
            ]
            post_all(self.kube, PODS, bodies, "pod")
            if self.workload.churn:
                self.churn = Churn(self.kube, self.workload.churn, name)

        def stop_churn(name: str = "", recorder: object = None) -> None:
            if self.churn is not None:
                self.churn.stop()
                self.churn = None

        return Hooks(prepare=prepare, measured=stop_churn, cleanup=stop_churn)


def _parallel(fn, items, what: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from bench.progress import steps

    items = list(items)
    with ThreadPoolExecutor(16) as pool:
        list(steps(pool.map(fn, items), f"creating {what}s", len(items), what))


class DRASetup:
    """kube-controller-manager's resourceclaim-controller, the DeviceClass and the claim
    template, while DRA workloads run (the controller-manager is stopped for the others: it
    watches pods, and its CPU would weigh on their figures)."""

    NAME = "kube-controller-manager"

    def __init__(self, cp, kube: Kube) -> None:
        self.cp = cp
        self.kube = kube
        self.objects = False
        self.running = False

    def need(self, dra: bool) -> None:
        if dra and not self.running:
            # Its default client limit (20 qps) would make creating the claims take minutes.
            self.cp.start_controller_manager(
                controllers="resourceclaim-controller",
                name=self.NAME,
                extra_args=["--kube-api-qps=1000", "--kube-api-burst=1000"],
            )
            self.running = True
        elif not dra and self.running:
            self.cp.stop_component(self.NAME)
            self.running = False
        if dra and not self.objects:
            self.kube.request("POST", "/apis/resource.k8s.io/v1/deviceclasses", device_class())
            self.kube.request(
                "POST",
                f"/apis/resource.k8s.io/v1/namespaces/{BENCH_NAMESPACE}/resourceclaimtemplates",
                claim_template(),
            )
            self.objects = True


@dataclass
class Row:
    workload: str
    nodes: int
    size: pw.Size
    ks: Run | None = None
    ours: Run | None = None
    base: Run | None = None
    null_ext: Run | None = None
    our_ext: Run | None = None
    error: str = ""


def _f(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def _ratio(a: Run | None, b: Run | None) -> str:
    if a is None or b is None or not b.pods_per_s:
        return "-"
    return f"{a.pods_per_s / b.pods_per_s:.2f}"


def describe(run: Run) -> str:
    return (
        f"{run.pods_per_s:7.1f} pods/s, CPU {_f(run.cpu_ms_per_pod, '.2f')} ms/pod, first bind "
        f"{run.first_bind:.2f} s, last {run.last_bind:.2f} s, peak RSS {_f(run.peak_rss_mib)} MiB"
        + (
            f", extender CPU {_f(run.extender_cpu_ms_per_pod, '.2f')} ms/pod"
            if run.extender_cpu_ms_per_pod is not None
            else ""
        )
    )


def markdown(
    rows: list[Row], with_extender: bool, started: str, head: str, loads: tuple[str, str]
) -> str:
    lines = [
        f"`bench/perf.py`, {started} UTC, head {head}, load average {loads[0]} at "
        f"start, {loads[1]} at end. pods/s: first to last bind of the measured pods "
        "(PreemptionBasic: launch to last bind); CPU: the scheduler process, ms per pod over "
        "that window; first bind: s from launching the process; "
        "RSS: peak (VmHWM), MiB.",
        "",
    ]
    header = (
        "| workload | nodes | init / measured (scale) | kube-scheduler | `kube-extender run` "
        "| ratio | CPU ms/pod (ks / ours) | first bind s (ks / ours) | peak RSS MiB (ks / ours) |"
    )
    rule = "| --- | ---: | --- | ---: | ---: | ---: | --- | --- | --- |"
    if with_extender:
        header += " ks + null extender | ks + our extender | ratio |"
        rule += " ---: | ---: | ---: |"
    lines += [header, rule]
    for row in rows:
        ks, ours = row.ks, row.ours
        cells = [
            row.workload,
            str(row.nodes),
            f"{row.size.init} / {row.size.measure}"
            + (f" ({row.size.scale:g})" if row.size.scale != 1 else ""),
            _f(ks.pods_per_s if ks else None),
            _f(ours.pods_per_s if ours else None),
            _ratio(ours, ks),
            f"{_f(ks.cpu_ms_per_pod if ks else None, '.2f')} / "
            f"{_f(ours.cpu_ms_per_pod if ours else None, '.2f')}",
            f"{_f(ks.first_bind if ks else None, '.2f')} / "
            f"{_f(ours.first_bind if ours else None, '.2f')}",
            f"{_f(ks.peak_rss_mib if ks else None, '.0f')} / "
            f"{_f(ours.peak_rss_mib if ours else None, '.0f')}",
        ]
        if with_extender:
            cells += [
                _f(row.null_ext.pods_per_s if row.null_ext else None),
                _f(row.our_ext.pods_per_s if row.our_ext else None),
                _ratio(row.our_ext, row.null_ext),
            ]
        if row.error:
            cells[0] += f" (failed: {row.error[:60]})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(w: pw.Workload, pods: int, run: Run) -> Run:
    """``run`` with pods/s from launch to the last bind where the workload says so
    (PreemptionBasic: the first bind comes only after preempting, which first-to-last
    would leave out)."""
    if w.rate_from_launch:
        run.pods_per_s = pods / max(run.last_bind, 1e-9)
    return run


def run_workload(cp, kube: Kube, setup: Setup, args: argparse.Namespace) -> Row:
    w, size = setup.workload, setup.size
    row = Row(w.name, setup.nodes, size)
    tag = f"{w.name.lower()}-{setup.nodes}"
    gates = w.feature_gates or None
    pods = setup.measured_pods
    print(f"  load average before kube-scheduler: {load_average()}", flush=True)
    fl = w.rate_from_launch
    if fl:
        print("  pods/s and CPU: from launching the scheduler to its last bind", flush=True)
    if not args.no_kube_scheduler:
        row.ks = _rate(
            w,
            pods,
            measure_kube_scheduler(
                cp, kube, pods, tag, "perf", hooks=setup.hooks(), feature_gates=gates
            ),
        )
        print(f"  {w.name} {setup.nodes}: kube-scheduler      {describe(row.ks)}", flush=True)
    print(f"  load average before kube-extender run: {load_average()}", flush=True)
    row.ours = _rate(
        w,
        pods,
        measure_ours(
            cp, kube, pods, tag, "perf", hooks=setup.hooks(), feature_gates=gates, from_launch=fl
        ),
    )
    print(f"  {w.name} {setup.nodes}: kube-extender run   {describe(row.ours)}", flush=True)
    print(f"  {w.name} {setup.nodes}: ratio {_ratio(row.ours, row.ks)}", flush=True)
    if args.base is not None:
        print(f"  load average before base: {load_average()}", flush=True)
        row.base = _rate(
            w,
            pods,
            measure_ours(
                cp,
                kube,
                pods,
                f"base-{tag}",
                "perf",
                tree=args.base,
                hooks=setup.hooks(),
                feature_gates=gates,
                from_launch=fl,
            ),
        )
        print(f"  {w.name} {setup.nodes}: base                {describe(row.base)}", flush=True)
        print(f"  {w.name} {setup.nodes}: ours / base {_ratio(row.ours, row.base)}", flush=True)
    if args.profile:
        profile_dir = cp.directory / f"profile-{tag}"
        profiled = measure_ours(
            cp,
            kube,
            pods,
            f"prof-{tag}",
            "perf",
            profile_dir,
            cpu_clock=args.profile_clock == "cpu",
            hooks=setup.hooks(),
            feature_gates=gates,
            from_launch=fl,
        )
        print(f"  {w.name} {setup.nodes}: under cProfile      {describe(profiled)}", flush=True)
        print_profile(profile_dir)
    if args.extender and w.extender:
        for label, start in (("null", start_null_extender), ("our", start_extender)):
            proc, url = start(cp, args.workers, args.threads)
            try:
                run = measure_kube_scheduler(
                    cp,
                    kube,
                    pods,
                    f"{label}ext-{tag}",
                    "perf",
                    hooks=setup.hooks(),
                    feature_gates=gates,
                    extender=(url, proc.pid),
                    from_launch=fl,
                )
            finally:
                stop_pid(proc.pid)
            run = _rate(w, pods, run)
            if label == "null":
                row.null_ext = run
            else:
                row.our_ext = run
            print(f"  {w.name} {setup.nodes}: ks + {label} extender {describe(run)}", flush=True)
        print(f"  {w.name} {setup.nodes}: ours/null {_ratio(row.our_ext, row.null_ext)}")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = ",".join(w.name for w in pw.WORKLOADS)
    parser.add_argument("--workloads", default=names, help=f"comma-separated (default: {names})")
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument(
        "--scale", type=float, help="factor for the pod counts of every size (default: its own)"
    )
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_NODES} nodes")
    parser.add_argument(
        "--extender",
        action="store_true",
        help="also kube-scheduler + the null extender and + ours (kube-extender serve)",
    )
    parser.add_argument("--workers", type=int, default=1, help="extenders' gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="extenders' gunicorn threads")
    parser.add_argument(
        "--base", type=Path, help="also run `kube-extender run` from this tree (ours / base)"
    )
    parser.add_argument("--profile", action="store_true", help="also a cProfiled run of ours")
    parser.add_argument(
        "--profile-clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: time each thread by its own CPU time (bench/profiled.py --cpu)",
    )
    parser.add_argument(
        "--no-kube-scheduler", action="store_true", help="skip kube-scheduler's run"
    )
    args = parser.parse_args()
    workloads = []
    for name in args.workloads.split(","):
        if name not in pw.BY_NAME:
            raise SystemExit(f"--workloads: unknown workload {name!r} (known: {names})")
        workloads.append(pw.BY_NAME[name])
    sizes = [QUICK_NODES] if args.quick else [int(n) for n in args.nodes.split(",")]

    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    load_start = load_average()
    head = git_head()  # the tree `kube-extender run` starts from, read before any run
    print(f"{started} UTC, head {head}, load average {load_start}", flush=True)
    gates: dict[str, bool] = {}
    for w in workloads:
        gates.update(w.feature_gates)
    cp = start_control_plane(apiserver_args_for_gates(gates) if gates else None)
    rows: list[Row] = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        ensure_namespace(kube, pw.INIT_NAMESPACE)
        kube.create_priority_class(pw.HIGH_PRIORITY_CLASS, pw.HIGH_PRIORITY)
        dra = DRASetup(cp, kube)
        current: tuple[object, int] | None = None  # the node shape and count in the cluster
        for nodes in sizes:
            for w in workloads:
                if nodes not in w.sizes and not args.quick:
                    print(f"{w.name}: no {nodes}-node case upstream, skipped", flush=True)
                    continue
                size, factor = w.size(nodes, args.scale)
                print(
                    f"\n{w.name}, {nodes} nodes: {size.init} init, {size.measure} measured "
                    f"(after upstream's {size.source}; pod count factor {factor:g})"
                    + (f"; {w.notes}" if w.notes else ""),
                    flush=True,
                )
                if current != (w.node, nodes) or w.churn == "recreate":
                    kube.request("DELETE", SLICES)
                    delete_all_nodes(kube)
                    t0 = time.monotonic()
                    create_nodes(kube, nodes, make=lambda i, rng, w=w: w.node(i))
                    if w.kind.startswith("dra"):
                        publish_slices(kube, nodes, pw.DRA_DEVICES)
                    print(f"  {nodes} nodes created in {time.monotonic() - t0:.1f} s", flush=True)
                    current = (w.node, nodes)
                dra.need(w.kind.startswith("dra"))
                setup = Setup(kube, w, size, nodes)
                try:
                    rows.append(run_workload(cp, kube, setup, args))
                except Exception as exc:  # one workload failing does not lose the table
                    print(f"  {w.name} {nodes}: FAILED: {exc}", flush=True)
                    rows.append(Row(w.name, nodes, size, error=str(exc)))
                    current = None
                finally:
                    setup.teardown()
    finally:
        cp.down()
    load_end = load_average()
    print("\n" + markdown(rows, args.extender, started, head, (load_start, load_end)))
    return 1 if any(row.error for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
