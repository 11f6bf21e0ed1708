"""Standalone throughput: our scheduler vs the real kube-scheduler, one after the other.

Same control plane, same nodes, same pods (default profile both), for each workload:
``single`` (every pod alike: 10m CPU, 16Mi), ``mixed`` (20 workloads of five kinds, see
``bench/workload.py``; its exact shape is printed), ``spread`` and ``spread-soft`` (upstream
scheduler_perf's TopologySpreading and PreferredTopologySpreading pods: one zone constraint,
maxSkew 5, DoNotSchedule / ScheduleAnyway, all selecting each other). kube-scheduler runs
with clientConnection qps/burst 5000 (its default 50/100 caps it near 50 pods/s); ours has no
client-side rate limit.
Prints pods/s for each and the ratio ours/kube-scheduler.

With ``--profile`` a third run per row runs ``kube-extender run`` under cProfile in every
thread (``bench/profiled.py``; slower, its pods/s is printed but not compared) and prints the
top functions of the scheduling thread and of the other threads (``--profile-clock cpu``:
timed by each thread's own CPU time). Every unprofiled run also prints where the CPU went
between the first and the last bind: the machine, etcd, kube-apiserver, the scheduler and,
for ours, its scheduling thread against its other threads (from /proc).

With ``--base TREE`` each row also runs ``kube-extender run`` from another checkout (its own
``extender`` package: the process starts in TREE), for a before/after under the same load.

    python bench/throughput.py [--nodes 500,5000] [--pods 2000] [--workloads single,mixed]
                               [--profile] [--profile-clock wall|cpu] [--base TREE]
"""

from __future__ import annotations

import argparse
import os
import pstats
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    BindRecorder,
    create_nodes,
    create_pods,
    delete_all_nodes,
    delete_all_pods,
    ensure_namespace,
    kube_for,
    kube_scheduler_config,
    start_control_plane,
)
from bench.workload import describe_mixed
from extender.controlplane import (
    feature_gates_value,
    free_port,
    kube_extender,
    spawn,
    stop_pid,
)

PROFILED = Path(__file__).resolve().parent / "profiled.py"
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid``, from /proc (Linux)."""
    cpu = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu[int(task.name)] = _cpu_seconds(task / "stat")
        except OSError:
            continue  # the thread ended meanwhile
    return cpu


def _sample(pids: dict[str, int], ours: int | None) -> tuple[float, dict, dict]:
    busy = 0.0
    with open("/proc/stat") as f:
        cpu = [int(v) for v in f.readline().split()[1:]]
        busy = (sum(cpu) - cpu[3] - cpu[4]) / TICKS  # all but idle and iowait
    procs = {}
    for name, pid in pids.items():
        try:
            procs[name] = _cpu_seconds(Path(f"/proc/{pid}/stat"))
        except OSError:
            pass
    return busy, procs, thread_cpu(ours) if ours is not None else {}


@dataclass
class CpuUsage:
    """CPU used between the first and the last bind: ``seconds`` per named process, the
    machine's busy seconds, and for ours its main (scheduling) thread and its other threads."""

    wall: float
    pods: int
    machine: float
    seconds: dict[str, float]
    main_thread: float | None = None
    other_threads: float | None = None

    def ms_per_pod(self, name: str) -> float | None:
        used = self.seconds.get(name)
        return None if used is None else 1000 * used / self.pods

    def describe(self) -> str:
        parts = [f"machine {100 * self.machine / self.wall:.0f} % of {os.cpu_count()} cores"]
        parts += [
            f"{name} {1000 * used / self.pods:.2f} ms/pod" for name, used in self.seconds.items()
        ]
        if self.main_thread is not None and self.other_threads is not None:
            parts.append(
                f"scheduling thread {1000 * self.main_thread / self.pods:.2f} ms/pod "
                f"({100 * self.main_thread / self.wall:.0f} % busy), its other threads "
                f"{1000 * self.other_threads / self.pods:.2f} ms/pod"
            )
        return ", ".join(parts)


def cpu_usage(
    recorder: BindRecorder,
    pids: dict[str, int],
    ours: int | None = None,
    from_launch: str | None = None,
) -> CpuUsage:
    """Where CPU went between the first and the last bind: the whole machine, the processes of
    ``pids`` and, for ours (``ours``: its pid), the scheduling thread (the main thread, leader
    election being off) against the process's other threads (the GIL lets one run Python at
    a time). Returns once every expected pod is bound (or the recorder gives up).
    ``from_launch``: the name of the scheduler just launched: from now rather than its first
    bind, and that process's CPU since it started (kube-scheduler is sampled once its
    /healthz answers: its start-up counts as ours does)."""
    while not from_launch and not recorder.bound and not recorder.done.is_set():
        time.sleep(0.005)
    busy0, procs0, threads0 = _sample(pids, ours)
    if from_launch:
        procs0.pop(from_launch, None)
        threads0 = {}
    started = time.monotonic()
    recorder.done.wait(1800)
    busy1, procs1, threads1 = _sample(pids, ours)
    usage = CpuUsage(
        wall=max(time.monotonic() - started, 1e-9),
        pods=max(len(recorder.bound) - (0 if from_launch else 1), 1),
        machine=busy1 - busy0,
        seconds={name: procs1[name] - procs0.get(name, 0.0) for name in procs1},
    )
    if ours is not None:
        usage.main_thread = threads1.get(ours, 0.0) - threads0.get(ours, 0.0)
        usage.other_threads = sum(
            v - threads0.get(t, 0.0) for t, v in threads1.items() if t != ours
        )
    return usage


def cpu_split(recorder: BindRecorder, pids: dict[str, int], ours: int | None = None) -> str:
    """:func:`cpu_usage`, as one line."""
    return cpu_usage(recorder, pids, ours).describe()


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (e.g. gunicorn's arbiter and its workers), from /proc."""
    out = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            out += process_tree(int(child))
    return out


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident set (``VmHWM`` of /proc/PID/status), in MiB; None once it
    is gone. Read it before stopping the process."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


@dataclass
class Hooks:
    """How a workload other than plain pods is run (``bench/dra.py``): ``prepare(name)``
    creates the pods of scheduler ``name`` (and waits for whatever they need), ``check(name)``
    verifies the outcome once every pod is bound (raising if it is wrong), ``cleanup()`` runs
    after the pods are deleted. ``expected``: how many pods must bind (default: all of them;
    fewer when only part of the workload fits, ``bench/gang.py``); ``measured(name, recorder)``
    sees the bind times once they are all in (before ``check``)."""

    prepare: Callable[[str], None]
    check: Callable[[str], None] = lambda name: None
    cleanup: Callable[[], None] = lambda: None
    expected: int | None = None
    measured: Callable[[str, BindRecorder], None] = lambda name, recorder: None


@dataclass
class Run:
    """One scheduler's figures on one workload: pods/s between the first and the last bind;
    s from launching the scheduler to its first bind; CPU ms per pod of the scheduler process
    (and of the extender process, if any) between the first and the last bind; the scheduler
    process's peak RSS (VmHWM, MiB) read just before it was stopped. ``last_bind``: s from
    launching it to its last bind."""

    name: str
    pods_per_s: float
    first_bind: float
    last_bind: float
    cpu: CpuUsage
    cpu_ms_per_pod: float | None
    peak_rss_mib: float | None
    extender_cpu_ms_per_pod: float | None = None


def _figures(
    name: str,
    recorder: BindRecorder,
    rate: float,
    usage: CpuUsage,
    pid: int | None,
    rss: float | None,
    extender: str | None = None,
) -> Run:
    launched = recorder.launched or min(recorder.bound.values())
    return Run(
        name=name,
        pods_per_s=rate,
        first_bind=min(recorder.bound.values()) - launched,
        last_bind=max(recorder.bound.values()) - launched,
        cpu=usage,
        cpu_ms_per_pod=usage.ms_per_pod(name) if pid is not None else None,
        peak_rss_mib=rss,
        extender_cpu_ms_per_pod=usage.ms_per_pod(extender) if extender else None,
    )


def _hooks(kube, pods: int, workload: str, hooks: Hooks | None) -> Hooks:
    if hooks is not None:
        return hooks

    def prepare(name: str) -> None:
        create_pods(kube, pods, name, name, workload)

    return Hooks(prepare=prepare)


def measure_kube_scheduler(
    cp,
    kube,
    pods: int,
    tag: str,
    workload: str,
    content_type: str | None = None,
    hooks: Hooks | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    extender: tuple[str, int] | None = None,
    from_launch: bool = False,
) -> Run:
    """kube-scheduler ``ks-TAG`` on the workload. ``feature_gates``: its ``--feature-gates``
    (none: the release's defaults); ``extender``: (URL, pid) of an extender registered for
    filter + prioritize (``bench/extender_overhead.py``), whose CPU is measured too;
    ``from_launch``: CPU measured from the launch, not the first bind."""
    name = f"ks-{tag}"
    hooks = _hooks(kube, pods, workload, hooks)
    hooks.prepare(name)
    recorder = BindRecorder(kube, name, hooks.expected or pods)
    recorder.launched = time.monotonic()
    cp.start_scheduler(
        kube_scheduler_config(name, extender[0] if extender else None, content_type=content_type),
        name=name,
        feature_gates=feature_gates,
    )
    try:
        pids = dict(cp.state.pids)
        if extender is not None:  # the extender's processes, summed after the window
            pids.update({f"extender {p}": p for p in process_tree(extender[1])})
        usage = cpu_usage(recorder, pids, from_launch=name if from_launch else None)
        if extender is not None:
            parts = [k for k in usage.seconds if k.startswith("extender ")]
            usage.seconds["extender"] = sum(usage.seconds.pop(k) for k in parts)
        print(f"    {name}: {usage.describe()}", flush=True)
        rate = recorder.wait(900)
        pid = cp.state.pids.get(name)
        rss = peak_rss_mib(pid) if pid else None
        hooks.measured(name, recorder)
        hooks.check(name)
        return _figures(name, recorder, rate, usage, pid, rss, "extender" if extender else None)
    finally:
        cp.stop_component(name)
        delete_all_pods(kube)
        hooks.cleanup()


def run_kube_scheduler(
    cp,
    kube,
    pods: int,
    tag: str,
    workload: str,
    content_type: str | None = None,
    hooks: Hooks | None = None,
    feature_gates: Mapping[str, bool] | None = None,
) -> float:
    """:func:`measure_kube_scheduler`'s pods/s."""
    return measure_kube_scheduler(
        cp, kube, pods, tag, workload, content_type, hooks, feature_gates
    ).pods_per_s


def measure_ours(
    cp,
    kube,
    pods: int,
    tag: str,
    workload: str,
    profile_dir: Path | None = None,
    cpu_clock: bool = False,
    tree: Path | None = None,
    hooks: Hooks | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    metrics_port: int | None = None,
    from_launch: bool = False,
) -> Run:
    """``kube-extender run`` as ``ours-TAG`` on the workload. ``feature_gates``: its
    ``--feature-gates`` (none: its defaults); ``metrics_port``: its ``--metrics-bind`` port on
    loopback (/readyz; default: a free one); ``from_launch``: CPU measured from the launch,
    not the first bind."""
    name = f"ours-{tag}"
    hooks = _hooks(kube, pods, workload, hooks)
    config = cp.directory / f"{name}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": name}],
            }
        )
    )
    hooks.prepare(name)
    recorder = BindRecorder(kube, name, hooks.expected or pods)
    args = [
        "run",
        "--config",
        str(config),
        "--kubeconfig",
        str(cp.kubeconfig),
        "--metrics-bind",
        f"127.0.0.1:{metrics_port or free_port()}",
        "--log-level",
        "warning",
    ]
    if feature_gates:
        args += ["--feature-gates", feature_gates_value(feature_gates)]
    argv = kube_extender(*args)
    if profile_dir is not None:
        clock = ["--cpu"] if cpu_clock else []
        argv = [sys.executable, str(PROFILED), *clock, str(profile_dir), *args]
    # cwd = this checkout: `python -m extender` imports its tree, not the venv's install.
    recorder.launched = time.monotonic()
    proc = spawn(argv, cp.logs / f"{name}.log", cwd=tree or PROFILED.parents[1])
    try:
        pids = {**cp.state.pids, name: proc.pid}
        usage = cpu_usage(recorder, pids, proc.pid, name if from_launch else None)
        if profile_dir is None:
            print(f"    {name}: {usage.describe()}", flush=True)
        rate = recorder.wait(1800)
        rss = peak_rss_mib(proc.pid)
        hooks.measured(name, recorder)
        hooks.check(name)
        return _figures(name, recorder, rate, usage, proc.pid, rss)
    finally:
        stop_pid(proc.pid, timeout=60)
        delete_all_pods(kube)
        hooks.cleanup()


def run_ours(
    cp,
    kube,
    pods: int,
    tag: str,
    workload: str,
    profile_dir: Path | None = None,
    cpu_clock: bool = False,
    tree: Path | None = None,
    hooks: Hooks | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    metrics_port: int | None = None,
) -> float:
    """:func:`measure_ours`'s pods/s."""
    return measure_ours(
        cp,
        kube,
        pods,
        tag,
        workload,
        profile_dir,
        cpu_clock,
        tree,
        hooks,
        feature_gates,
        metrics_port,
    ).pods_per_s


def print_profile(profile_dir: Path, top: int = 25) -> None:
    for path in sorted(profile_dir.glob("*.prof")):
        stats = pstats.Stats(str(path))
        print(f"\n--- cProfile, threads {path.stem!r}: top {top} by own time ---", flush=True)
        stats.sort_stats("tottime").print_stats(top)
        if path.stem == "MainThread":
            print(f"--- threads {path.stem!r}: top {top} by cumulative time ---")
            stats.sort_stats("cumulative").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--workloads", default="single,mixed")
    parser.add_argument("--profile", action="store_true", help="also a cProfiled run per row")
    parser.add_argument(
        "--base",
        type=lambda path: Path(path).resolve(),
        help="also run `kube-extender run` from this tree (e.g. a `git worktree` of the base "
        "commit), between kube-scheduler and this tree: a before/after in one run",
    )
    parser.add_argument(
        "--profile-clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: time each thread by its own CPU time (GIL and network waits excluded)",
    )
    parser.add_argument(
        "--json-peer",
        action="store_true",
        help="also run kube-scheduler with clientConnection.contentType application/json "
        "(kube-extender's wire format): what protobuf saves the apiserver",
    )
    args = parser.parse_args()
    workloads = args.workloads.split(",")
    if "mixed" in workloads:
        print(describe_mixed(), flush=True)
    cp = start_control_plane()
    rows = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        for count in (int(n) for n in args.nodes.split(",")):
            started = time.monotonic()
            create_nodes(kube, count)
            print(f"{count} nodes created in {time.monotonic() - started:.1f} s", flush=True)
            for workload in workloads:
                tag = f"{workload}-{count}"
                theirs = run_kube_scheduler(cp, kube, args.pods, tag, workload)
                print(f"  {workload}: kube-scheduler: {theirs:7.1f} pods/s", flush=True)
                if args.json_peer:
                    json_peer = run_kube_scheduler(
                        cp, kube, args.pods, f"json-{tag}", workload, "application/json"
                    )
                    print(f"  {workload}: kube-scheduler (JSON): {json_peer:7.1f} pods/s")
                base = None
                if args.base is not None:
                    base = run_ours(cp, kube, args.pods, f"base-{tag}", workload, tree=args.base)
                    print(f"  {workload}: kube-extender (base): {base:7.1f} pods/s", flush=True)
                ours = run_ours(cp, kube, args.pods, tag, workload)
                print(f"  {workload}: kube-extender:  {ours:7.1f} pods/s", flush=True)
                rows.append((count, workload, theirs, ours, base))
                if args.profile:
                    profile_dir = cp.directory / f"profile-{tag}"
                    profiled = run_ours(
                        cp,
                        kube,
                        args.pods,
                        f"prof-{tag}",
                        workload,
                        profile_dir,
                        cpu_clock=args.profile_clock == "cpu",
                    )
                    print(f"  {workload}: kube-extender under cProfile: {profiled:.1f} pods/s")
                    print_profile(profile_dir)
            delete_all_nodes(kube)
    finally:
        cp.down()
    print(
        f"\n{'nodes':>6} {'workload':>8} {'pods':>6} {'kube-scheduler':>15} "
        f"{'kube-extender':>14} {'ratio':>6}" + (f" {'base':>14} {'ratio':>6}" if args.base else "")
    )
    for count, workload, theirs, ours, base in rows:
        print(
            f"{count:>6} {workload:>8} {args.pods:>6} {theirs:>11.1f} p/s {ours:>10.1f} p/s "
            f"{ours / theirs:>6.2f}"
            + (f" {base:>10.1f} p/s {base / theirs:>6.2f}" if base is not None else "")
        )
    print("kube-scheduler: clientConnection qps/burst 5000; kube-extender: no client rate limit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
