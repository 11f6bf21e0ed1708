"""A/B in one run: ``bench/core.py --workload mixed`` against two trees of ``extender``,
alternating, each in a fresh interpreter (so both share the machine's load).

    git archive <base> extender | tar -x -C /tmp/ab-base
    python bench/ab.py /tmp/ab-base . --nodes 5000 --pods 40 --rounds 2
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
SNIPPET = """
import sys
sys.path.insert(0, {tree!r})
import extender, extender.config, extender.framework, extender.plugins
assert extender.__file__.startswith({tree!r}), extender.__file__
sys.path.insert(0, {bench!r})
from bench.core import main_mixed
main_mixed({sizes!r}, {pods})
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--nodes", default="5000")
    parser.add_argument("--pods", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    for r in range(args.rounds):
        for label, tree in (("A", args.a), ("B", args.b)):
            code = SNIPPET.format(
                tree=str(Path(tree).resolve()), bench=str(BENCH), sizes=sizes, pods=args.pods
            )
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
            rows = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
            for row in rows:
                print(f"round {r + 1} {label} ({tree}): {row}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
