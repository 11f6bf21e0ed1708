"""Benchmark: the start-up of ``kube-extender run`` in process, up to the first scheduling cycle.

``bench/startup.py``'s cluster without a control plane: ``--nodes`` realistic nodes
(``bench/workload.py``), DeviceClass ``test-class``, one ResourceSlice of ``--devices``
devices per node, ``--claims`` ResourceClaims of which all but ``--pods`` are allocated and
reserved for a pod bound to the claim's node, and ``--pods`` pending pods with a pending
claim each (``--no-dra``: the nodes and the pending pods only, no claims). A fake client
serves the lists (the watches stay silent), so what is timed is what the process does with
them: ``build_standalone``, the informers' start and sync (``start_informers``), and the
first scheduling cycle (``schedule_one`` without the bind's API writes). Prints the
CPU seconds of each step; ``--profile`` prints cProfile's top functions over all of them.

    python bench/startup_core.py [--nodes 500] [--pods 1000] [--claims 2000] [--devices 8]
                                 [--no-dra] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.dra_objects import allocation, device_class, resource_claim, resource_slice
from bench.workload import make_cluster

SCHEDULER = "default-scheduler"


def _pod(name: str, namespace: str, claim: str | None, node: str | None = None) -> dict:
    pod: dict = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
    if claim:
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
        pod["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimName": claim}]
    return pod


def cluster(nodes: int, pods: int, claims: int, devices: int, dra: bool) -> dict[str, list]:
    """The objects of each collection path, as the API lists them."""
    node_objs, _ = make_cluster(nodes)
    rv = iter(range(10, 10**9))
    objects: dict[str, list] = {"nodes": node_objs, "pods": [], "resourceclaims": []}
    if dra:
        objects["deviceclasses"] = [device_class()]
        objects["resourceslices"] = [
            resource_slice(n["metadata"]["name"], devices) for n in node_objs
        ]
        for j in range(claims - pods):
            node = node_objs[j % nodes]["metadata"]["name"]
            name = f"bound-{j:05d}"
            pod = _pod(name, "bound", name, node)
            claim = resource_claim(name, "bound")
            claim["metadata"]["uid"] = f"claim-{name}"
            claim["status"] = {
                "allocation": allocation(node, f"instance-{j // nodes}"),
                "reservedFor": [{"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}],
            }
            objects["pods"].append(pod)
            objects["resourceclaims"].append(claim)
    for i in range(pods):
        name = f"pending-{i:05d}"
        objects["pods"].append(_pod(name, "bench", name if dra else None))
        if dra:
            claim = resource_claim(name, "bench")
            claim["metadata"]["uid"] = f"claim-{name}"
            objects["resourceclaims"].append(claim)
    for items in objects.values():
        for obj in items:
            obj["metadata"]["resourceVersion"] = str(next(rv))
    return objects


class _Silent:
    """A watch that brings nothing until closed."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.closed.wait()
        return iter(())

    def close(self) -> None:
        self.closed.set()


class FakeClient:
    """Lists from ``objects`` by the path's last segment; silent watches; writes answered."""

    def __init__(self, objects: dict[str, list]) -> None:
        self.objects = objects

    def list(self, path: str, query: dict | None = None, *, page_size: int = 500):  # type: ignore[no-untyped-def]
        items = self.objects.get(path.rstrip("/").rsplit("/", 1)[-1], [])
        # A fresh copy per list, as decoding the API's answer gives.
        import orjson

        return orjson.loads(orjson.dumps(items)), "1"

    def watch(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return _Silent()

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        def answer(*args, **kwargs):  # type: ignore[no-untyped-def]
            return {}

        return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--no-dra", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    objects = cluster(args.nodes, args.pods, args.claims, args.devices, not args.no_dra)
    profile = cProfile.Profile() if args.profile else None
    steps: list[tuple[str, float]] = []

    def step(label: str, t0: float) -> float:
        now = time.process_time()
        steps.append((label, now - t0))
        return now

    t0 = time.process_time()
    if profile is not None:
        profile.enable()
    from extender.config import default_config
    from extender.wiring import build_standalone

    t0 = step("imports", t0)
    runtime = build_standalone(default_config(SCHEDULER), FakeClient(objects))
    t0 = step("build_standalone", t0)
    runtime.start_informers()
    t0 = step("start_informers (lists delivered, synced)", t0)
    runtime.leading.set()
    runtime.scheduler.schedule_one(1.0)
    t0 = step("first scheduling cycle", t0)
    if profile is not None:
        profile.disable()
    runtime.stop()
    for label, seconds in steps:
        print(f"{label:>45}: {seconds:6.3f} s CPU")
    if profile is not None:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(35)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
