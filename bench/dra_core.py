"""Benchmark: one pod with a DRA claim through PreFilter + Filter + Score, in process.

The workload of ``bench/dra.py`` (upstream's ``SchedulingWithResourceClaimTemplate``) without a
control plane: the realistic nodes of ``bench/workload.py``, one ResourceSlice of ``--devices``
devices per node, DeviceClass ``test-class``, ``--claims`` claims already allocated (claim j:
device ``instance-(j // nodes)`` of node ``j % nodes``), and pods with one claim from the
template (a 1-device request), each claim created before its pod is scheduled. Listers are
informers' stores fed with ``ADDED``/``MODIFIED`` events (``extender.kube.Informer``), as in
the standalone scheduler; after each pod its claim is allocated on the chosen node as PreBind
writes it (in the assume cache, then the informer's copy of that version), so the allocated
state grows as it does in a run.

For each node count it prints CPU ms per pod (p50, mean) with the default profile and the
default percentageOfNodesToScore, after pods enough to filter every node once (the per-node
memos warm, as in a long run), then the split: DynamicResources PreFilter, Filter (and its
CPU us per node filtered), Score, and the rest of the cycle (from a second pass with the
plugin's methods timed in CPU time; the timing adds to each). ``--base TREE`` also measures
another checkout of ``extender`` (``git archive <commit> extender | tar -x -C TREE``) in a
fresh interpreter, alternating with this tree, and prints the ratio base / this.

    python bench/dra_core.py [--nodes 500,5000] [--pods 40] [--claims 500] [--base TREE]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import dra_objects  # noqa: E402
from bench.dra_objects import CLASS  # noqa: E402

NAMESPACE = "bench"


def resource_slice(node: str, devices: int) -> dict:
    """``bench/dra.py``'s slice (upstream's node-local one), as an informer holds it."""
    obj = dra_objects.resource_slice(node, devices)
    obj["metadata"]["resourceVersion"] = "1"
    return obj


def device_class() -> dict:
    obj = dra_objects.device_class()
    obj["metadata"]["resourceVersion"] = "1"
    return obj


def dra_pod(i: int) -> dict:
    """Upstream's ``pod-with-claim-template.yaml``, its claim already generated."""
    name = f"dra-pod-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.1",
                    "resources": {"claims": [{"name": "resource"}]},
                }
            ],
            "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "tmpl"}],
        },
        "status": {
            "resourceClaimStatuses": [{"name": "resource", "resourceClaimName": f"{name}-res"}]
        },
    }


def claim_for(pod: dict, rv: int) -> dict:
    """The claim the resource-claim controller creates from the template."""
    m = pod["metadata"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{m['name']}-res",
            "namespace": NAMESPACE,
            "uid": f"claim-{m['uid']}",
            "resourceVersion": str(rv),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": m["name"], "uid": m["uid"]}
                | {"controller": True}
            ],
        },
        # As the API server stores it (allocationMode and count defaulted).
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "req-0",
                        "exactly": {
                            "deviceClassName": CLASS,
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    }
                ]
            }
        },
    }


def allocated(claim: dict, node: str, device: str, rv: int) -> dict:
    out = json.loads(json.dumps(claim))
    out["metadata"]["resourceVersion"] = str(rv)
    out["status"] = {"allocation": dra_objects.allocation(node, device)}
    return out


class Timed:
    """Wraps a plugin class's methods, summing their time (the split pass only)."""

    def __init__(self, cls: type, names: tuple[str, ...]) -> None:
        self.cls = cls
        self.saved = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
        self.seconds = dict.fromkeys(self.saved, 0.0)
        self.calls = dict.fromkeys(self.saved, 0)

    def __enter__(self) -> Timed:
        for name, fn in self.saved.items():
            setattr(self.cls, name, self._wrap(name, fn))
        return self

    def _wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.process_time() - t0
                self.calls[name] += 1

        return timed

    def __exit__(self, *exc: object) -> None:
        for name, fn in self.saved.items():
            setattr(self.cls, name, fn)


def measure(n: int, pods: int, claims: int, devices: int) -> dict:
    """CPU ms per pod and the split, for this interpreter's ``extender``."""
    from bench.workload import make_cluster
    from extender.cache.informers import StoreLister
    from extender.config import default_profile
    from extender.framework import (
        DEVICE_CLASSES,
        RESOURCE_CLAIMS,
        RESOURCE_SLICES,
        CycleState,
        Framework,
        SchedulingAlgorithm,
        Snapshot,
    )
    from extender.framework.handle import EmptyLister, Services
    from extender.kube import Informer
    from extender.plugins import in_tree_registry
    from extender.plugins.dynamicresources.dynamic_resources import DynamicResources

    nodes, running = make_cluster(n)
    snapshot = Snapshot.from_objects(nodes, running)
    informers = {
        kind: Informer(None, kind.path)
        for kind in (DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS)
    }
    rv = 1

    def event(kind: Any, obj: dict) -> None:
        informers[kind]._apply("ADDED", obj)  # ADDED of a known key is a MODIFIED

    event(DEVICE_CLASSES, device_class())
    names = [node["metadata"]["name"] for node in nodes]
    for name in names:
        event(RESOURCE_SLICES, resource_slice(name, devices))
    for j in range(claims):
        rv += 1
        pod = dra_pod(-1 - j)
        event(
            RESOURCE_CLAIMS,
            allocated(claim_for(pod, rv), names[j % n], f"instance-{(j // n) % devices}", rv),
        )

    def framework() -> Framework:
        def listers(kind: Any) -> Any:
            informer = informers.get(kind)
            return EmptyLister() if informer is None else StoreLister(informer)

        services = Services(listers=listers)
        return Framework(default_profile(), in_tree_registry(), services)

    algo = SchedulingAlgorithm()
    counter = [0]

    def one(fwk: Framework, cpu: list[float]) -> None:
        nonlocal rv
        i = counter[0]
        counter[0] += 1
        pod = dra_pod(i)
        rv += 1
        claim = claim_for(pod, rv)
        event(RESOURCE_CLAIMS, claim)
        c0 = time.process_time()
        result = algo.schedule_pod(fwk, CycleState(), pod, snapshot)
        cpu.append((time.process_time() - c0) * 1000)
        # PreBind's write: allocated on the chosen node (device from the pod counter, so the
        # state grows as in a run), assumed as the API answered it, then the informer's copy
        # of the same version.
        rv += 1
        written = allocated(claim, result.suggested_host, f"instance-{i % devices}", rv)
        fwk.plugin("DynamicResources").tracker.assume_claim_after_api_call(written)
        event(RESOURCE_CLAIMS, json.loads(json.dumps(written)))

    fwk = framework()
    warm: list[float] = []
    # Every node filtered once first (each pod filters the next nodes in turn): the per-node
    # memos (pools, CEL inputs and answers) are warm, as in a long run.
    for _ in range(max(3, n // 200)):
        one(fwk, warm)
    gc.collect()
    cpu: list[float] = []
    for _ in range(pods):
        one(fwk, cpu)

    with Timed(DynamicResources, ("pre_filter", "filter", "score", "score_batch")) as timed:
        fwk = framework()
        split: list[float] = []
        for _ in range(pods):
            one(fwk, split)
    total = sum(split) / pods
    phases = {k: v * 1000 / pods for k, v in timed.seconds.items()}
    filter_calls = timed.calls.get("filter", 0) / pods
    return {
        "p50": statistics.median(cpu),
        "mean": statistics.mean(cpu),
        "pre_filter": phases.get("pre_filter", 0.0),
        "filter": phases.get("filter", 0.0),
        "filter_calls": filter_calls,
        "score": phases.get("score", 0.0) + phases.get("score_batch", 0.0),
        "split_total": total,
    }


SNIPPET = """
import json, sys
sys.path.insert(0, {tree!r})
import extender
assert extender.__file__.startswith({tree!r}), extender.__file__
sys.path.insert(1, {root!r})
from bench.dra_core import measure
print(json.dumps(measure({n}, {pods}, {claims}, {devices})))
"""


def measure_in(tree: Path, n: int, pods: int, claims: int, devices: int) -> dict:
    code = SNIPPET.format(
        tree=str(tree.resolve()), root=str(ROOT), n=n, pods=pods, claims=claims, devices=devices
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(label: str, n: int, m: dict) -> str:
    rest = m["split_total"] - m["pre_filter"] - m["filter"] - m["score"]
    per_node = m["filter"] * 1000 / m["filter_calls"] if m["filter_calls"] else 0.0
    return (
        f"{n:>6} {label:>5} {m['p50']:>8.2f} {m['mean']:>7.2f} {m['pre_filter']:>9.2f} "
        f"{m['filter']:>7.2f} {m['filter_calls']:>6.0f} {per_node:>8.1f} {m['score']:>6.2f} "
        f"{rest:>6.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=40, help="pods timed per configuration")
    parser.add_argument("--claims", type=int, default=500, help="claims allocated up front")
    parser.add_argument("--devices", type=int, default=8, help="devices per node's slice")
    parser.add_argument("--base", type=Path, help="another tree of `extender` to compare")
    parser.add_argument("--rounds", type=int, default=1, help="alternations with --base")
    args = parser.parse_args()
    print(
        f"{args.claims} claims allocated up front, {args.devices} devices per node; "
        "CPU ms per pod (DynamicResources phases: CPU in a second pass with them timed)"
    )
    print(
        f"{'nodes':>6} {'tree':>5} {'cpu p50':>8} {'mean':>7} {'preFilter':>9} {'filter':>7} "
        f"{'nodes':>6} {'us/node':>8} {'score':>6} {'rest':>6}"
    )
    for n in (int(x) for x in args.nodes.split(",")):
        if args.base is None:
            sys.path.insert(0, str(ROOT))
            print(row("this", n, measure(n, args.pods, args.claims, args.devices)), flush=True)
            continue
        ratios = []
        for _ in range(args.rounds):
            base = measure_in(args.base, n, args.pods, args.claims, args.devices)
            this = measure_in(ROOT, n, args.pods, args.claims, args.devices)
            print(row("base", n, base), flush=True)
            print(row("this", n, this), flush=True)
            ratios.append(base["p50"] / this["p50"])
        print(f"{'':>6} base / this (cpu p50): {statistics.median(ratios):.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
