#!/usr/bin/env python3
"""`go build` with progress, for the hack/build-*.sh scripts (standard library only: it runs
before and without the project's venv).

    python3 hack/gobuild.py --label NAME [go build flags, as -flag=value] -o OUT PACKAGE...

Two phases, each shown with its elapsed time:

1. ``go list -deps`` with the same flags resolves the packages (downloading the modules on a
   cold cache: its ``go: downloading`` lines are counted) and names the packages that are
   stale, i.e. that this build will compile (the build cache has the others).
2. ``go build -v`` prints each package as it compiles it: counted against that total, then
   "linking" once all are compiled.

On a terminal (stderr) one line is updated in place; otherwise (CI logs, ``make`` piped to a
file) a plain line is printed every ``--every`` seconds and at each phase change. Any other
line go prints (a compile error, a warning) is passed through as is. The exit status is go's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable


def _width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 100
    except OSError:
        return 100


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """One status line: rewritten in place on a terminal, printed every ``every`` seconds (and
    on a phase change) otherwise."""

    def __init__(self, label: str, every: float, tty: bool | None = None) -> None:
        self.label = label
        self.every = every
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.phase = ""
        self.detail = ""
        self.lock = threading.Lock()
        self.last_plain = 0.0
        self.shown = False  # a terminal line is on screen and must be cleared before output
        self.stop = threading.Event()
        self.ticker = threading.Thread(target=self._tick, daemon=True)
        self.ticker.start()

    def _tick(self) -> None:
        while not self.stop.wait(1.0):
            self.show()

    def _line(self) -> str:
        elapsed = _clock(time.monotonic() - self.start)
        detail = f": {self.detail}" if self.detail else ""
        return f"[{self.label}] {self.phase} ({elapsed}){detail}"

    def set(self, phase: str, detail: str = "") -> None:
        changed = phase != self.phase
        self.phase, self.detail = phase, detail
        self.show(force=changed)

    def show(self, force: bool = False) -> None:
        with self.lock:
            if not self.phase:
                return
            if self.tty:
                width = _width()
                sys.stderr.write("\r\033[K" + self._line()[: max(width - 1, 20)])
                self.shown = True
            elif force or time.monotonic() - self.last_plain >= self.every:
                sys.stderr.write(self._line() + "\n")
                self.last_plain = time.monotonic()
            sys.stderr.flush()

    def passthrough(self, line: str) -> None:
        """A line of go's own output, printed above the status line."""
        with self.lock:
            if self.shown:
                sys.stderr.write("\r\033[K")
                self.shown = False
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        self.show()

    def close(self) -> None:
        self.stop.set()
        with self.lock:
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
                self.shown = False


def run(argv: list[str], on_line: Callable[[str], None]) -> tuple[int, str]:
    """Run ``argv``; each stderr line to ``on_line``; returns (exit status, stdout)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    for line in proc.stderr:  # type: ignore[union-attr]
        on_line(line.rstrip("\n"))
    code = proc.wait()
    reader.join()
    return code, "".join(out)


def build(label: str, flags: list[str], output: str, packages: list[str], every: float) -> int:
    progress = Progress(label, every)
    downloads = 0

    def listing(line: str) -> None:
        nonlocal downloads
        if line.startswith("go: downloading "):
            downloads += 1
            progress.set("resolving packages", f"{downloads} modules downloaded")
        else:
            progress.passthrough(line)

    try:
        progress.set("resolving packages")
        template = "{{if .Stale}}{{.ImportPath}}{{end}}"
        code, listed = run(["go", "list", "-deps", "-f", template, *flags, *packages], listing)
        if code != 0:
            return code
        stale = {line for line in listed.splitlines() if line}
        total = len(stale)
        compiled = 0
        if total:
            progress.set("compiling", f"0/{total} packages ({downloads} modules downloaded)")
        else:
            progress.set("linking", "every package is in the build cache")

        def building(line: str) -> None:
            nonlocal compiled
            if line in stale:
                compiled += 1
                if compiled < total:
                    percent = 100 * compiled // max(total, 1)
                    progress.set("compiling", f"{compiled}/{total} packages ({percent}%), {line}")
                else:
                    progress.set("linking", f"{total}/{total} packages compiled")
            else:
                progress.passthrough(line)

        code, _ = run(["go", "build", "-v", *flags, "-o", output, *packages], building)
        elapsed = _clock(time.monotonic() - progress.start)
        progress.close()
        if code == 0:
            print(f"[{label}] go build: {compiled} packages compiled, {elapsed}", file=sys.stderr)
        return code
    finally:
        progress.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="go")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between plain lines")
    parser.add_argument("-o", dest="output", required=True)
    args, rest = parser.parse_known_args(argv)
    flags = [a for a in rest if a.startswith("-")]
    packages = [a for a in rest if not a.startswith("-")]
    if not packages:
        parser.error("no package to build")
    return build(args.label, flags, args.output, packages, args.every)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
