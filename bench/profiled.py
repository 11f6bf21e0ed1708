"""Run ``python -m extender ...`` under cProfile in *every* thread, for the benchmarks.

    python bench/profiled.py [--cpu] OUT_DIR run --config ... --kubeconfig ...

Each thread gets its own ``cProfile.Profile``; at exit (SIGTERM makes ``kube-extender run``
return from its loop) the stats are written as ``OUT_DIR/<thread name>.prof`` (marshal, the
``pstats`` format), so the scheduling thread (``MainThread`` when leader election is off)
can be read apart from the binding pool and the informers.

``--cpu`` times each thread by its own CPU time (``time.thread_time``) instead of the wall
clock: waiting on the network, a lock or the GIL then costs nothing, so the figures say which
thread burns the CPU that the scheduling thread competes for.
"""

from __future__ import annotations

import cProfile
import marshal
import sys
import threading
import time
from pathlib import Path

PROFILES: list[tuple[str, cProfile.Profile]] = []
_lock = threading.Lock()


def _dump(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    merged: dict[str, dict] = {}
    with _lock:
        profiles = list(PROFILES)
    for name, profile in profiles:
        profile.snapshot_stats()  # no disable(): it acts on the calling thread only
        # Group pool threads ("bind_3", "Thread-7 (...)") under their prefix.
        group = name.split("_")[0].split(" ")[0] if name != "MainThread" else name
        stats = merged.setdefault(group, {})
        for func, (cc, nc, tt, ct, callers) in profile.stats.items():
            if func in stats:
                a = stats[func]
                merged_callers = dict(a[4])
                for k, v in callers.items():
                    if k in merged_callers and isinstance(v, tuple):
                        old = merged_callers[k]
                        merged_callers[k] = tuple(x + y for x, y in zip(old, v, strict=True))
                    elif k in merged_callers:
                        merged_callers[k] += v
                    else:
                        merged_callers[k] = v
                stats[func] = (a[0] + cc, a[1] + nc, a[2] + tt, a[3] + ct, merged_callers)
            else:
                stats[func] = (cc, nc, tt, ct, callers)
    for group, stats in merged.items():
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in group)
        with open(out / f"{safe}.prof", "wb") as f:
            marshal.dump(stats, f)


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's extender
    args = sys.argv[1:]
    timer = time.perf_counter
    if args and args[0] == "--cpu":
        timer, args = time.thread_time, args[1:]
    out = Path(args[0])
    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profile = cProfile.Profile(timer)
        with _lock:
            PROFILES.append((self.name, profile))
        profile.enable()
        try:
            original_run(self)
        finally:
            profile.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    from extender.cli.main import main as extender_main

    profile = cProfile.Profile(timer)
    with _lock:
        PROFILES.append(("MainThread", profile))
    profile.enable()
    try:
        code = extender_main(args[1:])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        profile.disable()
        _dump(out)
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
