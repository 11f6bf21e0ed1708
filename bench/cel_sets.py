"""Issue 28's hostile DRA selector: ``sets.intersects`` of two 990-element lists of lists.

990 elements is the most the API server takes (991 exceed the estimated cost limit); the two
lists share no element, so every device is a no. This prints the time to evaluate it over one
node's devices, through the structured allocator as the scheduler's Filter does (a claim for
one device of a class with that selector), and per device.

    .venv/bin/python bench/cel_sets.py [--devices 128]

Figures (2-core machine, loaded; the selector compiles in ~0.34 s of each): before hashed
membership (pairwise comparison) 7.9 s for 3 devices, ~2.5 s a device (issue 28: ~195 s for
the pod's first attempt on a node of 128 devices; kube-scheduler v1.36.3: 6.6 s); after 0.5
to 0.85 s for 128 devices, ~1.5 to 4 ms a device.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.dra import cel
from extender.dra.structured import AllocatedState, Allocator, Features


def _pairs(n: int, sign: int, offset: int) -> str:
    return (
        "[" + ", ".join(f"[{sign * i + offset}, {sign * i + offset + 1}]" for i in range(n)) + "]"
    )


SELECTOR = f"sets.intersects({_pairs(990, 1, 0)}, {_pairs(990, -1, -1)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=128)
    args = parser.parse_args()
    device_class = {
        "metadata": {"name": "hostile"},
        "spec": {"selectors": [{"cel": {"expression": SELECTOR}}]},
    }
    claim = {
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "r",
                        "exactly": {
                            "deviceClassName": "hostile",
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    }
                ]
            }
        },
    }
    slice_ = {
        "metadata": {"name": "slice"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
                for i in range(args.devices)
            ],
        },
    }
    node = {"metadata": {"name": "node-1"}}
    allocator = Allocator(
        Features(False, False, False, False, False, False, False),
        AllocatedState(),
        {"hostile": device_class}.get,
        [slice_],
        cel.CELCache(10),
    )
    start = time.perf_counter()
    compiled = cel.compile_expression(SELECTOR)
    compile_seconds = time.perf_counter() - start
    print(f"selector: {len(SELECTOR)} characters, estimated cost {compiled.max_cost}")
    print(f"compile: {compile_seconds * 1000:.0f} ms")
    start = time.perf_counter()
    result = allocator.allocate(node, [claim])
    seconds = time.perf_counter() - start
    assert result is None, "no device matches"
    print(
        f"allocate over {args.devices} devices: {seconds:.2f} s "
        f"({seconds / args.devices * 1000:.1f} ms a device, compile included)"
    )


if __name__ == "__main__":
    main()
