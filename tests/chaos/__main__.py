"""``python -m tests.chaos --minutes N``: one soak, its summary printed; exit 1 on a violation."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .soak import Options, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="churn time (default 30)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--ops-per-second", type=float, default=3.0)
    parser.add_argument("--fault-every", type=float, default=20.0, help="seconds between faults")
    parser.add_argument("--settle", type=float, default=90.0, help="seconds to settle at the end")
    parser.add_argument("--dir", type=Path, help="working directory (default: a temporary one)")
    args = parser.parse_args(argv)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="kube-extender-chaos-"))
    options = Options(
        minutes=args.minutes,
        seed=args.seed,
        ops_per_second=args.ops_per_second,
        fault_every=args.fault_every,
        settle=args.settle,
    )
    report = run(directory, options, out=lambda *a: print(*a, flush=True))
    return 1 if report.findings.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
