"""kube-extender replay: replay a trace under one or more scheduling policies, in virtual time,
and compare them.

Each ``--config`` is a KubeSchedulerConfiguration (a policy); the trace (``kube-extender
import`` or ``kube-extender record`` writes one) is replayed through the scheduler's own loop
once per policy and seed (``extender.replay.engine``). The report (``--out``, default
``replay-report``): ``report.json`` (every policy's metrics), ``report.html`` (plots, no
network needed), one replay log per run (``logs/<policy>-seed<N>.json.gz``) and a summary on
the terminal. ``--jobs N`` runs the replays in N local processes, ``--dask ADDRESS`` on a
Dask cluster's workers (the trace path must be readable there).
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import orjson
from tqdm import tqdm

from extender.cli.common import add_feature_gates_flag
from extender.config import ConfigError
from extender.framework.features import DEFAULT_FEATURES
from extender.replay import metrics, report
from extender.replay.engine import replay
from extender.replay.sweep import Job, SweepError, run_jobs
from extender.replay.trace import (
    Trace,
    TraceError,
    compress_arrivals,
    load,
    save,
    without_departures,
)

PROG = "kube-extender replay"


def _policy(value: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH`` (the name is the file's stem)."""
    name, sep, path = value.partition("=")
    if not sep:
        name, path = Path(value).stem, value
    if not name:
        raise argparse.ArgumentTypeError(f"{value!r}: the policy name before '=' is empty")
    if not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"{path}: no such file")
    return name, Path(path)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: must be at least 1")
    return number


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--trace", required=True, help="the trace (.json or .json.gz)")
    p.add_argument(
        "--config",
        dest="configs",
        action="append",
        required=True,
        type=_policy,
        metavar="[NAME=]FILE",
        help="a KubeSchedulerConfiguration to replay under (repeat to compare policies)",
    )
    p.add_argument("--seed", type=int, default=0, help="the first seed (ties, DRA's order)")
    p.add_argument("--seeds", type=_positive, default=1, help="replay each policy N seeds")
    p.add_argument("--jobs", type=_positive, default=1, help="local processes")
    p.add_argument("--dask", metavar="ADDRESS", help="run the replays on this Dask scheduler")
    p.add_argument("--out", default="replay-report", help="the report's directory")
    p.add_argument(
        "--compress-arrivals",
        type=float,
        metavar="FACTOR",
        help="pods arrive FACTOR times as fast after --measure-from, durations unchanged "
        "(about FACTOR times the load; the replayed trace is written to the report)",
    )
    p.add_argument(
        "--no-departures",
        action="store_true",
        help="pods run to the end and are never abandoned: the cluster fills up in the "
        "trace's order (the FGD paper's experiment)",
    )
    p.add_argument(
        "--cycle-seconds",
        type=float,
        default=0.0,
        help="virtual time one scheduling attempt takes (default 0)",
    )
    p.add_argument(
        "--measure-from",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the report's time series and means start here (trace seconds; default 0)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_feature_gates_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    names = [name for name, _ in args.configs]
    if len(set(names)) != len(names):
        print(f"{PROG}: --config: two policies are named alike: {names}", file=sys.stderr)
        return 2
    if args.cycle_seconds < 0:
        print(f"{PROG}: --cycle-seconds: must be >= 0", file=sys.stderr)
        return 2
    try:
        trace = load(args.trace)
    except TraceError as exc:
        print(f"{PROG}: --trace: {exc}", file=sys.stderr)
        return 2
    if not 0 <= args.measure_from <= trace.duration:
        print(
            f"{PROG}: --measure-from: must be between 0 and the trace's end "
            f"({trace.duration:g} s), not {args.measure_from:g}",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    trace_path = Path(args.trace)
    if args.compress_arrivals is not None:
        try:
            trace = compress_arrivals(trace, args.compress_arrivals, after=args.measure_from)
        except TraceError as exc:
            print(f"{PROG}: --compress-arrivals: {exc}", file=sys.stderr)
            return 2
    if args.no_departures:
        trace = without_departures(trace)
    if args.compress_arrivals is not None or args.no_departures:
        out.mkdir(parents=True, exist_ok=True)
        trace_path = out / "trace.json.gz"  # what the replays (maybe elsewhere) read
        save(trace, trace_path)
    jobs = [
        Job(
            trace_path=str(trace_path),
            config_path=str(path),
            seed=args.seed + i,
            policy=name,
            features=args.feature_gates or DEFAULT_FEATURES,
            cycle_seconds=args.cycle_seconds,
        )
        for name, path in args.configs
        for i in range(args.seeds)
    ]
    print(
        f"{PROG}: {trace.name or args.trace}: {len(trace.nodes)} nodes, {len(trace.pods)} pods, "
        f"{trace.duration:.0f} s of trace; {len(jobs)} replay(s)",
        file=sys.stderr,
    )
    try:
        if len(jobs) == 1 and not args.dask:
            logs = [_run_here(jobs[0], trace, args.quiet)]
        else:
            with tqdm(
                total=len(jobs), unit="replay", disable=args.quiet or None, file=sys.stderr
            ) as bar:

                def progress(done: int, total: int) -> None:
                    bar.n = done
                    bar.refresh()

                logs = run_jobs(jobs, workers=args.jobs, dask=args.dask, progress=progress)
    except (ConfigError, SweepError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    (out / "logs").mkdir(parents=True, exist_ok=True)
    for log in logs:
        path = out / "logs" / f"{log['policy']}-seed{log['seed']}.json.gz"
        path.write_bytes(gzip.compress(orjson.dumps(log)))
    try:
        results = [metrics.compute(log, start=args.measure_from) for log in logs]
    except metrics.MetricsError as exc:
        print(f"{PROG}: --measure-from: {exc}", file=sys.stderr)
        return 2
    print(report.write(results, out))
    for log in logs:
        print(
            f"{log['policy']} seed {log['seed']}: {log['cycles']} scheduling attempts in "
            f"{log['wall_seconds']:.1f} s ({log['end'] / max(log['wall_seconds'], 1e-9):.0f} "
            "s of trace a second)",
            file=sys.stderr,
        )
    print(f"report: {out / 'report.html'}", file=sys.stderr)
    return 0


def _run_here(job: Job, trace: Trace, quiet: bool) -> dict:
    """One replay in this process, with a progress bar over the trace's time."""
    with tqdm(total=100, unit="%", desc=job.policy, disable=quiet or None, file=sys.stderr) as bar:

        def progress(now: float, end: float) -> None:
            bar.n = min(100, round(100 * now / end)) if end else 100
            bar.refresh()

        return replay(
            trace,
            job.config_path,
            seed=job.seed,
            policy=job.policy,
            features=job.features,
            cycle_seconds=job.cycle_seconds,
            progress=progress,
        )
