"""``python -m tests.chaos --minutes N``: one soak, its summary printed; exit 1 on a violation.
On a terminal a progress bar (tqdm, on stderr) shows the phase, the planned time done and the
counts so far; the soak's own lines print above it."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from .soak import Options, run


def _bar(options: Options) -> tuple[Callable, Callable | None, Callable[[], None]]:
    """(out, progress, close): a bar only when stderr is a terminal, plain prints otherwise."""
    if not sys.stderr.isatty():
        return (lambda *a: print(*a, flush=True)), None, lambda: None
    bar = tqdm(
        total=round(options.minutes * 60 + options.settle),
        desc="starting",
        unit="s",
        file=sys.stderr,
        dynamic_ncols=True,
        # tqdm puts ", " before the postfix (the counts).
        bar_format="{desc}: {percentage:3.0f}%|{bar:20}| {n:.0f}/{total} s planned "
        "[{elapsed}{postfix}]",
    )

    def progress(phase: str, done: float, counts: str) -> None:
        bar.set_description_str(phase, refresh=False)
        bar.set_postfix_str(counts, refresh=False)
        bar.update(min(done, bar.total) - bar.n)

    def out(*args: object) -> None:
        bar.write(" ".join(map(str, args)), file=sys.stdout)

    return out, progress, bar.close


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="churn time (default 30)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--ops-per-second", type=float, default=3.0)
    parser.add_argument("--fault-every", type=float, default=20.0, help="seconds between faults")
    parser.add_argument("--settle", type=float, default=90.0, help="seconds to settle at the end")
    parser.add_argument(
        "--gangs", type=int, default=8, help="live gangs in the sa pool at most (default 8)"
    )
    parser.add_argument("--dir", type=Path, help="working directory (default: a temporary one)")
    args = parser.parse_args(argv)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="kube-extender-chaos-"))
    options = Options(
        minutes=args.minutes,
        seed=args.seed,
        ops_per_second=args.ops_per_second,
        fault_every=args.fault_every,
        settle=args.settle,
        gangs=args.gangs,
    )
    out, progress, close = _bar(options)
    try:
        report = run(directory, options, out=out, progress=progress)
    finally:
        close()
    return 1 if report.findings.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
