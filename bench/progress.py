"""Progress bars for the benchmarks' long steps (tqdm): on a terminal only, on stderr, so
the figures on stdout stay as they are; each bar is gone once its step is done."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")

# No monitor thread beside what is measured (tqdm's default wakes one every 10 s).
tqdm.monitor_interval = 0


def bar(desc: str, total: int | None = None, unit: str = "it") -> tqdm:
    """A bar to ``update``; disabled (a no-op) when stderr is not a terminal."""
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        leave=False,
        disable=None,  # None: off when not a TTY (CI logs, `> file`)
        file=sys.stderr,
        dynamic_ncols=True,
    )


def steps(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """``items`` as they come, counted on a bar."""
    with bar(desc, total, unit) as b:
        for item in items:
            yield item
            b.update()
