"""Benchmark: the policy replay (issue 32) over the openb trace, per policy, and a sweep's
speed-up on local processes.

The trace: ``--trace FILE``, or (default) openb's ``default`` pod list over the
``all_node`` node list (8152 pods, 1523 nodes) imported with ``--gpu-mapping`` (``extended``
by default, or ``dra``) from the pinned CSVs in ``$KUBE_EXTENDER_CACHE/traces/openb``
(``kube-extender import openb --fetch`` puts them there) into
``$KUBE_EXTENDER_CACHE/traces/bench/`` once. ``--quick [N]``: only its first N pods (default
1000) and the window up to the last one's arrival.

Per policy (``--config``, default ``scheduler-config/replay/default.yaml`` and
``most-allocated.yaml``), one replay in this process with seed 0, progress on stderr: wall and
CPU seconds, virtual seconds replayed per wall second, pods (arrivals) per second, scheduling
cycles per second, and where a cycle's time goes: the scheduler's own scheduling cycle
(``Scheduler.schedule_one``: the queue's pop, the snapshot, the framework's extension points,
assume; the cost ``bench/core.py`` measures in isolation), the binding cycles, the in-memory
API's watch events delivered to the informers (cache and queue handlers), and the driver
(the event heap, the replay log, the queue's timed flushes).

As the peer in the same run: the same replays as a sweep (``extender.replay.sweep.run_jobs``)
with ``workers=1`` (in this process, one after the other) and ``workers=2`` (two spawned
processes), their wall seconds, the speed-up and the CPU seconds they took (the processes'
start and their own trace load included), and whether the logs are the same (they must be:
the engine is deterministic per seed). ``--dask tcp://HOST:PORT`` adds the same sweep on
that Dask cluster's workers (same checks). ``--no-sweep`` skips it.

    python bench/replay.py [--quick [N]] [--gpu-mapping extended|dra] [--trace FILE]
                           [--config A.yaml ...] [--sweep-seeds K] [--no-sweep]
                           [--dask tcp://HOST:PORT]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.progress import bar
from extender.framework.features import DEFAULT_FEATURES
from extender.replay import engine
from extender.replay.sweep import Job, run_jobs
from extender.replay.trace import Trace, load, save

ROOT = Path(__file__).resolve().parent.parent
POLICIES = [
    ROOT / "scheduler-config/replay/default.yaml",
    ROOT / "scheduler-config/replay/most-allocated.yaml",
]


def cache_root() -> Path:
    root = os.environ.get("KUBE_EXTENDER_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "kube-extender"


def openb_trace(mapping: str) -> Path:
    """openb's default pod list over all nodes, imported once with ``mapping``."""
    path = cache_root() / "traces" / "bench" / f"openb-default-{mapping}.json.gz"
    if path.exists():
        return path
    try:
        from extender.replay.importers import openb
    except ImportError:
        sys.exit("the openb importer is not in this checkout: pass --trace FILE")
    files = openb.ensure(
        [openb.node_list_file("all_node"), openb.pod_list_file("default")], fetch_missing=False
    )
    trace = openb.import_openb(files[0], files[1], mapping=mapping)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(trace, path)
    return path


def sliced(trace: Trace, pods: int) -> Trace:
    """The first ``pods`` pods and the window up to the last one's arrival."""
    kept = trace.pods[:pods]
    end = kept[-1].arrival if kept else 0.0
    return Trace(
        metadata={**trace.metadata, "name": f"{trace.name}-first-{len(kept)}"},
        duration=end,
        nodes=trace.nodes,
        objects=trace.objects,
        pods=kept,
    )


class Timed:
    """Wall seconds spent in a callable, accumulated."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.seconds = 0.0

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def replay_timed(trace: Trace, config: Path, seed: int) -> tuple[dict, dict]:
    """One replay with its time split between the loop's parts; the log and the figures."""
    run = engine._Replay(
        trace,
        config,
        seed=seed,
        policy=None,
        features=DEFAULT_FEATURES,
        registry=None,
        cycle_seconds=0.0,
    )
    schedule = run.scheduler.schedule_one = Timed(run.scheduler.schedule_one)
    binding = run.executor.run_pending = Timed(run.executor.run_pending)
    deliver = run.cluster.deliver = Timed(run.cluster.deliver)
    end = trace.duration
    with bar(f"{config.stem} (virtual s)", total=int(end), unit="s") as b:

        def progress(now: float, _end: float) -> None:
            b.update(int(now) - b.n)

        c0, t0 = time.process_time(), time.perf_counter()
        log = run.run(progress)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    figures = {
        "wall": wall,
        "cpu": cpu,
        "schedule": schedule.seconds,
        "binding": binding.seconds,
        "deliver": deliver.seconds,
    }
    return log, figures


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def without_wall(logs: list[dict]) -> list[dict]:
    return [{k: v for k, v in log.items() if k != "wall_seconds"} for log in logs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, help="a trace file (default: openb, imported)")
    parser.add_argument("--gpu-mapping", choices=("extended", "dra"), default="extended")
    parser.add_argument("--quick", nargs="?", type=int, const=1000, default=None, metavar="N")
    parser.add_argument("--config", type=Path, action="append", help="a policy (repeatable)")
    parser.add_argument("--sweep-seeds", type=int, default=1, help="seeds per policy in the sweep")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--dask", metavar="ADDR", help="also the sweep on this Dask scheduler")
    args = parser.parse_args()
    configs = args.config or POLICIES
    for config in configs:
        if not config.is_file():
            sys.exit(f"{config}: no such policy file (pass --config)")

    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, head {head}, "
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs"
    )
    trace_path = args.trace or openb_trace(args.gpu_mapping)
    t0 = time.perf_counter()
    trace = load(trace_path)
    load_seconds = time.perf_counter() - t0
    if args.quick:
        trace = sliced(trace, args.quick)
        trace_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-replay-{os.getpid()}.json.gz"
        save(trace, trace_path)
    print(
        f"trace {trace.name} ({trace.gpu_mapping}): {len(trace.nodes)} nodes, "
        f"{len(trace.pods)} pods, {trace.duration:,.0f} virtual s; loaded in {load_seconds:.2f} s"
    )

    print()
    print(
        f"{'policy':<24}{'wall s':>9}{'CPU s':>9}{'virt s/s':>11}{'pods/s':>9}{'cycles/s':>10}"
        f"{'cycles':>8}{'bound':>7}{'ms/cycle':>10}{'sched':>7}{'bind':>6}{'events':>8}{'driver':>8}"
    )
    logs = []
    try:
        for config in configs:
            log, f = replay_timed(trace, config, 0)
            logs.append(log)
            wall, cycles = f["wall"], log["cycles"]
            arrived = sum(1 for e in log["events"] if e[1] == "arrive")
            bound = sum(1 for e in log["events"] if e[1] == "bind")
            driver = wall - f["schedule"] - f["binding"] - f["deliver"]

            def share(seconds: float, wall: float = wall) -> str:
                return f"{100 * seconds / wall:.0f}%" if wall else "-"

            print(
                f"{config.stem:<24}{wall:>9.1f}{f['cpu']:>9.1f}{log['end'] / wall:>11,.0f}"
                f"{arrived / wall:>9.1f}{cycles / wall:>10.1f}{cycles:>8}{bound:>7}"
                f"{1000 * wall / max(cycles, 1):>10.2f}{share(f['schedule']):>7}"
                f"{share(f['binding']):>6}{share(f['deliver']):>8}{share(driver):>8}",
                flush=True,
            )
        print(
            "(sched: Scheduler.schedule_one, bind: binding cycles, events: watch events to the "
            "informers, driver: the rest; shares of wall)"
        )
        if args.no_sweep:
            return

        jobs = [
            Job(str(trace_path), str(config), seed)
            for config in configs
            for seed in range(args.sweep_seeds)
        ]
        print()
        print(f"sweep of {len(jobs)} jobs ({len(configs)} policies x {args.sweep_seeds} seeds):")
        results = {}
        for workers in (1, 2):
            c0, k0 = time.process_time(), children_cpu()
            t0 = time.perf_counter()
            with bar(f"sweep, workers={workers}", total=len(jobs), unit="job") as b:
                swept = run_jobs(
                    jobs, workers=workers, progress=lambda done, _t: b.update(done - b.n)
                )
            wall = time.perf_counter() - t0
            cpu = time.process_time() - c0 + children_cpu() - k0
            results[workers] = (wall, cpu, swept)
            print(f"  workers={workers}: {wall:7.1f} s wall, {cpu:7.1f} s CPU", flush=True)
        w1, w2 = results[1], results[2]
        same = without_wall(w1[2]) == without_wall(w2[2])
        first = without_wall(w1[2][:: args.sweep_seeds]) == without_wall(logs)
        print(
            f"  speed-up {w1[0] / w2[0]:.2f}x; logs identical across workers: "
            f"{'yes' if same else 'NO'}, and to the replays above: {'yes' if first else 'NO'}"
        )
        if args.dask:
            t0 = time.perf_counter()
            with bar("sweep, dask", total=len(jobs), unit="job") as b:
                swept = run_jobs(
                    jobs, dask=args.dask, progress=lambda done, _t: b.update(done - b.n)
                )
            wall = time.perf_counter() - t0
            on_dask = without_wall(swept) == without_wall(w1[2])
            same = same and on_dask
            print(
                f"  dask {args.dask}: {wall:7.1f} s wall, speed-up {w1[0] / wall:.2f}x; logs "
                f"identical to workers=1: {'yes' if on_dask else 'NO'}"
            )
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
        if not (same and first):
            sys.exit(1)
    finally:
        if args.quick:
            trace_path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
