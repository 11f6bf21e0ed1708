"""DRA CEL selectors: evaluations per second (extender.dra.cel on cel-expr-python).

A selector is compiled once and evaluated per device: a scheduling cycle of a pod with claims
evaluates each class and request selector against every candidate device of every node. This
prints evaluations/s for selectors shaped like the DRA example driver's and upstream's
scheduler_perf DRA workloads, on a device with a realistic attribute set, with the share spent
building the device's CEL value. If ``cel-python`` (``celpy``, pure Python) is installed it is
measured on the same expressions it supports, as the peer.

    .venv/bin/python bench/cel.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.dra import cel
from extender.dra.cel import device as cel_device

DRIVER = "gpu.example.com"
DEVICE = cel.CELDevice(
    driver=DRIVER,
    attributes={
        "model": {"string": "LATEST-GPU-MODEL"},
        "uuid": {"string": "gpu-18db0e85-99e9-c746-8531-ffeb86328b39"},
        "driverVersion": {"version": "1.2.3"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "dra.k8s.io/pcieRoot": {"string": "pci0000:00"},
    },
    capacity={"memory": {"value": "80Gi"}, "cores": {"value": "132"}},
)

SELECTORS = {
    "driver": f'device.driver == "{DRIVER}"',
    "string attribute": f'device.attributes["{DRIVER}"].model == "LATEST-GPU-MODEL"',
    "capacity": f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    "semver": f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.0.0"))',
    "combined": (
        f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].healthy && '
        f'device.attributes["{DRIVER}"].index < 8 && '
        f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("16Gi"))'
    ),
    "missing domain": '"x" in device.attributes["other.example.com"]',
}


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds``."""
    fn()
    count, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            fn()
        count += 100
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def celpy_peer(seconds: float) -> dict[str, float]:
    try:
        import celpy  # type: ignore[import-not-found]
    except ImportError:
        return {}
    env = celpy.Environment()
    activation = {
        "device": celpy.json_to_cel(
            {
                "driver": DRIVER,
                "attributes": {DRIVER: {"model": "LATEST-GPU-MODEL", "index": 3, "healthy": True}},
            }
        )
    }
    rates = {}
    for name in ("driver", "string attribute"):
        program = env.program(env.compile(SELECTORS[name]))
        rates[name] = rate(lambda p=program: p.evaluate(activation), seconds)
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    peer = celpy_peer(args.seconds)
    convert = rate(lambda: cel_device._device_maps(DEVICE), args.seconds)
    print(f"building the device's CEL value: {convert:,.0f}/s ({1e6 / convert:.1f} us)")
    cache = cel.CELCache()
    print("selector           first evaluation of a device     again (the answer is kept)")
    for name, expression in SELECTORS.items():
        result = cache.get_or_compile(expression)
        assert result.error is None, result.error
        result.device_matches(DEVICE)

        def fresh(r: cel.CompilationResult = result) -> bool:
            # A new device object each time: nothing of it is cached yet.
            device = cel.CELDevice(DEVICE.driver, DEVICE.attributes, DEVICE.capacity)
            return r.device_matches(device)

        first = rate(fresh, args.seconds)
        again = rate(lambda r=result: r.device_matches(DEVICE), args.seconds / 2)
        line = f"{name:18} {first:>10,.0f}/s ({1e6 / first:5.1f} us)   {again:>12,.0f}/s"
        if name in peer:
            line += f"   celpy {peer[name]:>7,.0f}/s (first: {first / peer[name]:.0f}x)"
        print(line)
    compile_rate = rate(lambda: cel.compile_expression(SELECTORS["combined"]), args.seconds / 2)
    print(f"compiling 'combined': {compile_rate:,.0f}/s (cached after the first)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
