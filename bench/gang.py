"""Gang scheduling throughput: our scheduler vs the real kube-scheduler, one after the other.

Upstream's scheduler_perf (kubernetes v1.36.3, ``test/integration/scheduler_perf``) has no
gang or PodGroup test case yet: its only workload-API hook is ``mustSetupCluster`` serving
``scheduling.k8s.io/v1alpha2`` when GenericWorkload is on. The scenarios are modelled on its
shape (create nodes, create pods unscheduled, measure the scheduler from first to last bind)
and on the integration tests of ``test/integration/scheduler/podgroup/podgroup_test.go`` (a
PodGroup with ``spec.schedulingPolicy.gang.minCount``, created before its pods; pods naming
it in ``spec.schedulingGroup.podGroupName``):

- ``all``: G gangs of S pods, minCount = S, pods of 10m CPU and 16Mi: every gang fits.
- ``min``: the same with minCount = ``--min-count`` (default S // 2): every gang fits.
- ``saturated``: G gangs of S pods, minCount = S, each pod asking 10 CPUs of a node's 16, so
  a node holds one: only ``usable nodes // S`` gangs fit (nodes tainted
  ``dedicated=gpu:NoSchedule``, one in ten, are not usable). The run lasts until the fitting
  gangs are bound; then, after ``--settle`` seconds, every gang must be bound whole or not at
  all, and no more pods than fit may be bound: the others stay pending.

Every scheduler gets the same fresh state: the same nodes (``bench/cluster.py``), its own
PodGroups and pods created before it starts (with its schedulerName), all deleted after it
(pods with grace 0; no kube-controller-manager runs). kube-apiserver, kube-scheduler v1.36.3
and ``kube-extender run`` all get ``--feature-gates=GenericWorkload=true,GangScheduling=true``
(kube-apiserver also ``--runtime-config=scheduling.k8s.io/v1alpha2=true``); default profile
both, kube-scheduler with clientConnection qps/burst 5000 (``bench/throughput.py``).

Prints per scheduler: pods/s between the first and the last bind, gangs/s between the first
and the last gang completed (its last pod bound), the time from launching the scheduler to
its first bind and to its last, and the ratio ours / kube-scheduler of pods/s; with each run,
where the CPU went (``bench/throughput.py``), kube-apiserver's requests per bound pod (its
``apiserver_request_total``) and the binds in each second from launch. ``--rounds N``: N
alternations, the table shows medians. ``--base TREE``: also ``kube-extender run`` from another
tree, for a before/after; ``--profile``: a cProfiled run of ours per scenario.

    python bench/gang.py [--quick] [--nodes 500] [--gangs 100] [--size 10] [--min-count 5]
                         [--scenarios all,min,saturated] [--settle 5] [--profile]
                         [--profile-clock wall|cpu] [--skip-peer] [--rounds 1] [--base TREE]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    BENCH_NAMESPACE,
    BindRecorder,
    create_nodes,
    delete_all_nodes,
    ensure_namespace,
    kube_for,
    single_pod,
    start_control_plane,
)
from bench.progress import steps
from bench.throughput import Hooks, print_profile, run_kube_scheduler, run_ours
from extender.controlplane import WORKLOAD_RUNTIME_CONFIG, apiserver_args
from extender.scenario.kube import Kube

# The same gates for kube-apiserver, kube-scheduler and kube-extender run.
GANG_FEATURE_GATES = {"GenericWorkload": True, "GangScheduling": True}
PODGROUPS = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{BENCH_NAMESPACE}/podgroups"
PODS = f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods"
SCENARIOS = ("all", "min", "saturated")
# `saturated`: one such pod fills a node of `bench/workload.py` (16 CPUs allocatable).
SATURATED_CPU = "10"
# `bench/workload.py`'s nodes: one in ten is tainted dedicated=gpu:NoSchedule.
TAINTED_EVERY = 10


def usable_nodes(nodes: int) -> int:
    """The nodes a pod without tolerations may use (``make_node`` taints node i when
    i % 10 == 0)."""
    return nodes - (nodes + TAINTED_EVERY - 1) // TAINTED_EVERY


@dataclass(frozen=True)
class Scenario:
    name: str
    gangs: int
    size: int
    min_count: int
    cpu: str | None  # None: single_pod's 10m
    fitting_gangs: int  # how many gangs must end bound

    @property
    def pods(self) -> int:
        return self.gangs * self.size

    @property
    def expected(self) -> int:
        """Pods that must bind: every pod of a fitting gang (all are created up front)."""
        return self.fitting_gangs * self.size


def scenario(name: str, nodes: int, gangs: int, size: int, min_count: int) -> Scenario:
    if name == "all":
        return Scenario(name, gangs, size, size, None, gangs)
    if name == "min":
        return Scenario(name, gangs, size, min_count, None, gangs)
    if name == "saturated":
        fitting = min(gangs, usable_nodes(nodes) // size)
        if fitting == gangs:
            raise SystemExit(f"saturated: all {gangs} gangs of {size} fit {nodes} nodes")
        return Scenario(name, gangs, size, size, SATURATED_CPU, fitting)
    raise SystemExit(f"--scenarios: unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")


def pod_group(name: str, min_count: int) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": BENCH_NAMESPACE},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def gang_pod(name: str, group: str, scheduler_name: str, cpu: str | None) -> dict:
    pod = single_pod(0, name, BENCH_NAMESPACE, scheduler_name)
    pod["metadata"]["labels"]["pod-group"] = group
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    if cpu is not None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return pod


@dataclass
class Figures:
    pods_per_s: float
    gangs_per_s: float
    first_bind: float  # s from launching the scheduler
    last_bind: float
    bound: int
    gangs_bound: int
    pending: int = 0


_REQUEST_TOTAL = re.compile(r"^apiserver_request_total\{(.*)\} (\S+)$")


def api_requests(kube: Kube) -> Counter[str]:
    """kube-apiserver's ``apiserver_request_total`` by verb, resource and subresource (from
    its /metrics; watches counted when they open)."""
    status, payload = kube.client.transport.request(
        "GET", "/metrics", None, [], "text/plain", (5.0, 30.0)
    )
    counts: Counter[str] = Counter()
    if status != 200:
        return counts
    for line in payload.decode().splitlines():
        match = _REQUEST_TOTAL.match(line)
        if match is None:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        counts[f"{labels.get('verb', '')} {resource}"] += int(float(match.group(2)))
    return counts


def _gang_of(pod_name: str) -> str:
    return pod_name.rsplit("-", 1)[0]


class GangWorkload:
    """The Hooks of one scenario: its PodGroups and pods, the figures, the all-or-nothing
    check and the clean-up."""

    def __init__(self, kube: Kube, sc: Scenario, settle: float) -> None:
        self.kube = kube
        self.sc = sc
        self.settle = settle
        self.figures: dict[str, Figures] = {}
        self._requests: Counter[str] = Counter()

    def prepare(self, name: str) -> None:
        groups = [f"{name}-g{g:04d}" for g in range(self.sc.gangs)]
        for group in groups:
            self.kube.request("POST", PODGROUPS, pod_group(group, self.sc.min_count))
        pods = [(f"{group}-{i:03d}", group) for group in groups for i in range(self.sc.size)]

        def create(item: tuple[str, str]) -> None:
            pod_name, group = item
            self.kube.request("POST", PODS, gang_pod(pod_name, group, name, self.sc.cpu))

        with ThreadPoolExecutor(16) as pool:
            list(steps(pool.map(create, pods), "creating gang pods", len(pods), "pod"))
        self._requests = api_requests(self.kube)

    def measured(self, name: str, recorder: BindRecorder) -> None:
        requests = api_requests(self.kube)
        requests.subtract(self._requests)
        busiest = ", ".join(
            f"{what} {n / len(recorder.bound):.2f}"
            for what, n in requests.most_common(6)
            if n > 0 and not what.startswith("WATCH")
        )
        print(f"    {name}: API requests per bound pod until the last bind: {busiest}")
        launched = recorder.launched or min(recorder.bound.values())
        per_second = Counter(int(at - launched) for at in recorder.bound.values())
        series = " ".join(str(per_second[t]) for t in range(max(per_second) + 1))
        print(f"    {name}: binds in each second from launch: {series}", flush=True)
        times = sorted(recorder.bound.values())
        gang_done: dict[str, float] = {}
        for pod_name, at in recorder.bound.items():
            gang = _gang_of(pod_name)
            gang_done[gang] = max(gang_done.get(gang, at), at)
        done = sorted(gang_done.values())
        self.figures[name] = Figures(
            pods_per_s=(len(times) - 1) / max(times[-1] - times[0], 1e-9),
            gangs_per_s=(len(done) - 1) / max(done[-1] - done[0], 1e-9) if len(done) > 1 else 0,
            first_bind=times[0] - launched,
            last_bind=times[-1] - launched,
            bound=len(times),
            gangs_bound=len(done),
        )

    def check(self, name: str) -> None:
        """After ``--settle`` s: every gang bound whole (``all``, ``min``: every pod, since all
        fit) or not at all, and no more gangs than fit (``saturated``)."""
        time.sleep(self.settle)
        items = self.kube.get(PODS, labelSelector="app=single")["items"]
        bound: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for pod in items:
            pod_name = pod["metadata"]["name"]
            if not pod_name.startswith(f"{name}-g"):
                continue
            total[_gang_of(pod_name)] += 1
            if pod["spec"].get("nodeName"):
                bound[_gang_of(pod_name)] += 1
        partial = {g: n for g, n in bound.items() if 0 < n < self.sc.min_count}
        if partial:
            raise AssertionError(f"{name}: gangs bound below minCount: {partial}")
        whole = [g for g in total if bound[g] == total[g]]
        if len(whole) != self.sc.fitting_gangs or sum(bound.values()) != self.sc.expected:
            raise AssertionError(
                f"{name}: {len(whole)} gangs / {sum(bound.values())} pods bound after "
                f"{self.settle} s; expected {self.sc.fitting_gangs} / {self.sc.expected}"
            )
        self.figures[name].pending = sum(total.values()) - sum(bound.values())

    def cleanup(self) -> None:
        """Delete the PodGroups. kube-apiserver's PodGroupProtection admission gives each the
        finalizer ``scheduling.k8s.io/podgroup-protection``, which kube-controller-manager's
        podgroup-protection controller lifts once no pod uses the group; none runs here, so
        the pods being gone, the finalizers are lifted here."""
        self.kube.request("DELETE", PODGROUPS)

        def release(group: dict) -> None:
            self.kube.request(
                "PATCH",
                f"{PODGROUPS}/{group['metadata']['name']}",
                {"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(release, self.kube.get(PODGROUPS)["items"]))
        deadline = time.monotonic() + 120
        while self.kube.get(PODGROUPS, limit="1")["items"]:
            if time.monotonic() >= deadline:
                raise TimeoutError("pod groups not deleted in 120 s")
            time.sleep(0.5)

    def hooks(self) -> Hooks:
        return Hooks(
            prepare=self.prepare,
            check=self.check,
            cleanup=self.cleanup,
            expected=self.sc.expected,
            measured=self.measured,
        )


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _row(label: str, f: Figures, sc: Scenario) -> str:
    return (
        f"  {label:<15} {f.pods_per_s:>7.1f} p/s {f.gangs_per_s:>6.1f} g/s "
        f"first {f.first_bind:>5.1f} s  last {f.last_bind:>6.1f} s  "
        f"{f.gangs_bound}/{sc.gangs} gangs, {f.bound} pods bound, {f.pending} pending"
    )


def median(runs: list[Figures]) -> Figures:
    """The run of the median pods/s (the lower one of an even count)."""
    return sorted(runs, key=lambda f: f.pods_per_s)[(len(runs) - 1) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke size: 50 nodes, 20 x 5")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--size", type=int, default=10, help="pods per gang")
    parser.add_argument("--min-count", type=int, help="minCount of `min` (default size // 2)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="kube-scheduler then ours this many times per scenario; the table shows medians",
    )
    parser.add_argument(
        "--settle", type=float, default=5.0, help="s to wait after the last expected bind"
    )
    parser.add_argument("--profile", action="store_true", help="also a cProfiled run of ours")
    parser.add_argument("--profile-clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--skip-peer", action="store_true", help="ours only (for profiling)")
    parser.add_argument(
        "--base",
        type=lambda path: Path(path).resolve(),
        help="also run `kube-extender run` from this tree (a `git worktree` of another "
        "commit), after kube-scheduler and before this tree: a before/after in one run",
    )
    args = parser.parse_args()
    if args.quick:
        args.nodes, args.gangs, args.size = 50, 20, 5
    min_count = args.min_count or max(args.size // 2, 1)
    scenarios = [
        scenario(n, args.nodes, args.gangs, args.size, min_count) for n in args.scenarios.split(",")
    ]
    gates = GANG_FEATURE_GATES
    cp = start_control_plane(apiserver_args(gates, WORKLOAD_RUNTIME_CONFIG))
    rows: list[tuple[Scenario, list[Figures], list[Figures], list[Figures]]] = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        started = time.monotonic()
        create_nodes(kube, args.nodes)
        print(f"{args.nodes} nodes created in {time.monotonic() - started:.1f} s", flush=True)
        for sc in scenarios:
            print(
                f"{sc.name}: {sc.gangs} gangs x {sc.size} pods, minCount {sc.min_count}, "
                f"cpu {sc.cpu or '10m'}: {sc.fitting_gangs} gangs fit",
                flush=True,
            )
            workload = GangWorkload(kube, sc, args.settle)
            theirs: list[Figures] = []
            ours: list[Figures] = []
            base: list[Figures] = []
            for r in range(args.rounds):
                tag = f"{sc.name}-{args.nodes}" + (f"-r{r}" if args.rounds > 1 else "")
                if not args.skip_peer:
                    print(f"  before kube-scheduler: {uptime()}", flush=True)
                    run_kube_scheduler(
                        cp, kube, sc.pods, tag, "gang", hooks=workload.hooks(), feature_gates=gates
                    )
                    theirs.append(workload.figures[f"ks-{tag}"])
                    print(_row("kube-scheduler", theirs[-1], sc), flush=True)
                if args.base is not None:
                    print(f"  before kube-extender (base): {uptime()}", flush=True)
                    run_ours(
                        cp,
                        kube,
                        sc.pods,
                        f"base-{tag}",
                        "gang",
                        tree=args.base,
                        hooks=workload.hooks(),
                        feature_gates=gates,
                    )
                    base.append(workload.figures[f"ours-base-{tag}"])
                    print(_row("base", base[-1], sc), flush=True)
                print(f"  before kube-extender: {uptime()}", flush=True)
                run_ours(
                    cp, kube, sc.pods, tag, "gang", hooks=workload.hooks(), feature_gates=gates
                )
                ours.append(workload.figures[f"ours-{tag}"])
                print(_row("kube-extender", ours[-1], sc), flush=True)
            rows.append((sc, theirs, ours, base))
            if args.profile:
                tag = f"prof-{sc.name}-{args.nodes}"
                profile_dir = cp.directory / f"profile-{tag}"
                run_ours(
                    cp,
                    kube,
                    sc.pods,
                    tag,
                    "gang",
                    profile_dir,
                    cpu_clock=args.profile_clock == "cpu",
                    hooks=workload.hooks(),
                    feature_gates=gates,
                )
                profiled = workload.figures[f"ours-{tag}"]
                print(f"  kube-extender under cProfile: {profiled.pods_per_s:.1f} pods/s")
                print_profile(profile_dir)
        delete_all_nodes(kube)
    finally:
        cp.down()
    print(
        f"\n{args.nodes} nodes, {args.rounds} round(s), medians; pods/s and gangs/s between the "
        "first and the last bind; first/last: s from launching the scheduler to its first/last "
        "bind"
    )
    print(
        f"{'scenario':>9} {'gangs':>9} {'min':>4} {'fit':>4} {'kube-scheduler':>35} "
        f"{'kube-extender':>35} {'ratio':>6}" + (f" {'base':>35} {'ratio':>6}" if args.base else "")
    )
    for sc, theirs, ours, base in rows:

        def cell(f: Figures | None) -> str:
            if f is None:
                return f"{'-':>35}"
            return (
                f"{f.pods_per_s:>6.1f} p/s {f.gangs_per_s:>5.1f} g/s "
                f"{f.first_bind:>4.1f}/{f.last_bind:>4.1f} s"
            )

        peer = median(theirs) if theirs else None
        mine = median(ours)
        ratio = f"{mine.pods_per_s / peer.pods_per_s:>6.2f}" if peer else f"{'-':>6}"
        before = ""
        if base:
            old = median(base)
            old_ratio = f"{old.pods_per_s / peer.pods_per_s:>6.2f}" if peer else f"{'-':>6}"
            before = f" {cell(old)} {old_ratio}"
        print(
            f"{sc.name:>9} {sc.gangs:>4} x {sc.size:<2} {sc.min_count:>4} {sc.fitting_gangs:>4} "
            f"{cell(peer)} {cell(mine)} {ratio}{before}"
        )
    print(f"feature gates {gates} for all; kube-scheduler qps/burst 5000")
    return 0


if __name__ == "__main__":
    sys.exit(main())
