"""Benchmark: the replay's metrics and report on synthetic logs of the full openb size (1523
nodes, 8152 pods: ``bench/replay_logs.py``), one log a policy. Prints the log's size, the wall
and CPU seconds of ``metrics.compute`` per log and of ``report.write`` for all of them, and the
files' sizes.

    python bench/replay_report.py [--nodes 1523] [--pods 8152] [--policies 2] [--shapes 100]
                                [--out DIR]
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.replay_logs import synthetic_log
from extender.replay.metrics import compute
from extender.replay.report import write

T = TypeVar("T")


def _timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1523)
    parser.add_argument("--pods", type=int, default=8152)
    parser.add_argument("--policies", type=int, default=2)
    parser.add_argument("--shapes", type=int, default=100, help="distinct pod shapes")
    parser.add_argument(
        "--out", default=None, help="where to write the report (default: a tmp dir)"
    )
    args = parser.parse_args(argv)
    logs = [
        synthetic_log(args.nodes, args.pods, seed=i, policy=f"policy-{i}", shapes=args.shapes)
        for i in range(args.policies)
    ]
    kinds = collections.Counter(e[1] for e in logs[0]["events"])
    print(
        f"log: {args.nodes} nodes, {args.pods} pods, {len(logs[0]['events'])} events "
        f"({', '.join(f'{k} {n}' for k, n in kinds.most_common())})"
    )
    results = []
    for log in logs:
        metrics, wall, cpu = _timed(functools.partial(compute, log))
        results.append(metrics)
        print(
            f"compute {log['policy']}: {wall:.2f} s wall, {cpu:.2f} s CPU "
            f"({metrics['fragmentation']['task_types']} task types)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        text, wall, cpu = _timed(lambda: write(results, out))
        sizes = {name: (out / name).stat().st_size / 1e6 for name in ("report.json", "report.html")}
        print(
            f"write ({args.policies} policies): {wall:.2f} s wall, {cpu:.2f} s CPU; "
            + ", ".join(f"{name} {mb:.1f} MB" for name, mb in sizes.items())
        )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
