"""DRA throughput: our scheduler vs the real kube-scheduler, one after the other, with claims.

Modelled on upstream's ``SchedulingWithResourceClaimTemplate``
(``test/integration/scheduler_perf/dra/performance-config.yaml`` and its templates): every node
gets one ResourceSlice, as a node-local DRA driver publishes it (driver
``test-driver.cdi.k8s.io``, pool = node name, ``resourceSliceCount`` 1, ``--devices`` devices
``instance-<i>`` with upstream's attributes ``model``, ``family``, ``driverVersion``,
``dra.example.com/numa`` and capacity ``memory: 1Gi``); one DeviceClass ``test-class``
(``device.driver == "test-driver.cdi.k8s.io"``); one ResourceClaimTemplate asking for one
device of that class; pods (pause, one claim from the template). kube-controller-manager runs
with its resourceclaim-controller, which creates each pod's claim: the pods of a scheduler
are created and their claims waited for before that scheduler starts, so the rate is the
scheduling (PreEnqueue to bind, allocation and reservation written) and nothing else.

Same control plane, nodes, slices and pods for both (default profile both; kube-scheduler
with clientConnection qps/burst 5000). After each run every bound pod's claim is checked:
allocated (``status.allocation``) on the pod's node, reserved for the pod (``reservedFor``),
and no device allocated to two claims. A run that fails a check raises.

    python bench/dra.py [--nodes 500,5000] [--pods 500] [--devices 8] [--profile]
                        [--profile-clock wall|cpu] [--base TREE]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    BENCH_NAMESPACE,
    create_nodes,
    delete_all_nodes,
    ensure_namespace,
    kube_for,
    start_control_plane,
)
from bench.dra_objects import claim_spec, device_class, resource_slice
from bench.progress import steps
from bench.throughput import Hooks, print_profile, run_kube_scheduler, run_ours
from extender.scenario.kube import Kube

TEMPLATE = "test-claim-template"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{BENCH_NAMESPACE}/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def claim_template() -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE, "namespace": BENCH_NAMESPACE},
        "spec": {"spec": claim_spec()},
    }


def dra_pod(name: str, scheduler_name: str) -> dict:
    """upstream's ``pod-with-claim-template.yaml``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": BENCH_NAMESPACE, "labels": {"app": "dra"}},
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.1",
                    "resources": {"claims": [{"name": "resource"}]},
                }
            ],
            "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": TEMPLATE}],
        },
    }


def publish_slices(kube: Kube, count: int, devices: int) -> None:
    def create(i: int) -> None:
        kube.request("POST", SLICES, resource_slice(f"node-{i:05d}", devices))

    with ThreadPoolExecutor(16) as pool:
        list(steps(pool.map(create, range(count)), "publishing slices", count, "slice"))


def _list(kube: Kube, path: str) -> list[dict]:
    items: list[dict] = []
    token = None
    while True:
        query = {"limit": "2000", **({"continue": token} if token else {})}
        page = kube.get(path, **query)
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def _pods(kube: Kube, prefix: str) -> list[dict]:
    pods = _list(kube, f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods")
    return [p for p in pods if p["metadata"]["name"].startswith(prefix)]


class DRAWorkload:
    """The pods of one scheduler, their claims awaited before it starts, checked after."""

    def __init__(self, kube: Kube, pods: int) -> None:
        self.kube = kube
        self.pods = pods

    def prepare(self, name: str) -> None:
        names = [f"{name}-{i:05d}" for i in range(self.pods)]

        def create(pod: str) -> None:
            self.kube.request(
                "POST", f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods", dra_pod(pod, name)
            )

        with ThreadPoolExecutor(16) as pool:
            list(steps(pool.map(create, names), "creating pods", len(names), "pod"))
        # The resourceclaim-controller creates each claim and names it in the pod's status.
        started = time.monotonic()
        while True:
            ready = sum(
                1
                for pod in _pods(self.kube, name)
                if any(
                    s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
                )
            )
            if ready >= self.pods:
                break
            if time.monotonic() - started > 600:
                raise TimeoutError(f"only {ready}/{self.pods} pods have their claim")
            time.sleep(1)
        print(
            f"    {name}: {self.pods} claims created by resourceclaim-controller "
            f"in {time.monotonic() - started:.1f} s",
            flush=True,
        )

    def check(self, name: str) -> None:
        """Every bound pod's claim allocated on its node and reserved for it; no device twice."""
        claims = {c["metadata"]["name"]: c for c in _list(self.kube, CLAIMS)}
        owners: dict[tuple[str, str, str], str] = {}
        problems: list[str] = []
        checked = 0
        for pod in _pods(self.kube, name):
            meta, node = pod["metadata"], pod["spec"].get("nodeName")
            if not node:
                problems.append(f"{meta['name']}: not bound")
                continue
            statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
            for status in statuses:
                claim = claims.get(status.get("resourceClaimName") or "")
                if claim is None:
                    problems.append(f"{meta['name']}: claim {status} missing")
                    continue
                cstatus = claim.get("status") or {}
                allocation = cstatus.get("allocation")
                if not allocation:
                    problems.append(f"{meta['name']}: claim not allocated")
                    continue
                if not any(r.get("uid") == meta["uid"] for r in cstatus.get("reservedFor") or ()):
                    problems.append(f"{meta['name']}: claim not reserved for it")
                results = (allocation.get("devices") or {}).get("results") or []
                if len(results) != 1:
                    problems.append(f"{meta['name']}: {len(results)} devices allocated, want 1")
                for result in results:
                    if result.get("pool") != node:
                        problems.append(f"{meta['name']}: device of {result['pool']} on {node}")
                    key = (result["driver"], result["pool"], result["device"])
                    if key in owners:
                        problems.append(f"{key} allocated to {owners[key]} and {meta['name']}")
                    owners[key] = meta["name"]
                checked += 1
        if checked != self.pods:
            problems.append(f"{checked} claims checked, want {self.pods}")
        if problems:
            raise AssertionError(f"{name}: {len(problems)} problems: " + "; ".join(problems[:10]))
        print(
            f"    {name}: checked {checked} pods: claims allocated on the pod's node and reserved"
            f" for it, {len(owners)} distinct devices",
            flush=True,
        )

    def cleanup(self) -> None:
        """Claims gone (the finalizer a scheduler put on them removed), devices free again."""
        self.kube.request("DELETE", CLAIMS)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            left = _list(self.kube, CLAIMS)
            if not left:
                return
            for claim in left:
                if claim["metadata"].get("finalizers"):
                    try:
                        self.kube.request(
                            "PATCH",
                            f"{CLAIMS}/{claim['metadata']['name']}",
                            {"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json",
                        )
                    except Exception:
                        pass  # gone meanwhile
            time.sleep(0.5)
        raise TimeoutError("resource claims not deleted in 120 s")

    def hooks(self) -> Hooks:
        return Hooks(prepare=self.prepare, check=self.check, cleanup=self.cleanup)


def _uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8, help="devices per node (one slice)")
    parser.add_argument("--profile", action="store_true", help="also a cProfiled run per row")
    parser.add_argument("--profile-clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--base", type=lambda path: Path(path).resolve())
    parser.add_argument("--skip-peer", action="store_true", help="ours only (for profiling)")
    args = parser.parse_args()
    cp = start_control_plane()
    rows = []
    try:
        # Its default client limit (20 qps) would make creating the claims take minutes.
        cp.start_controller_manager(
            controllers="resourceclaim-controller",
            extra_args=["--kube-api-qps=1000", "--kube-api-burst=1000"],
        )
        kube = kube_for(cp)
        ensure_namespace(kube)
        kube.request("POST", "/apis/resource.k8s.io/v1/deviceclasses", device_class())
        kube.request(
            "POST",
            f"/apis/resource.k8s.io/v1/namespaces/{BENCH_NAMESPACE}/resourceclaimtemplates",
            claim_template(),
        )
        workload = DRAWorkload(kube, args.pods)
        for count in (int(n) for n in args.nodes.split(",")):
            if count * args.devices < args.pods:
                raise SystemExit(f"{count} nodes x {args.devices} devices < {args.pods} pods")
            started = time.monotonic()
            create_nodes(kube, count)
            publish_slices(kube, count, args.devices)
            print(
                f"{count} nodes, {count} slices of {args.devices} devices created in "
                f"{time.monotonic() - started:.1f} s",
                flush=True,
            )
            tag = f"dra-{count}"
            theirs = None
            if not args.skip_peer:
                print(f"  load average before kube-scheduler: {_uptime()}", flush=True)
                theirs = run_kube_scheduler(cp, kube, args.pods, tag, "dra", hooks=workload.hooks())
                print(f"  dra: kube-scheduler: {theirs:7.1f} pods/s", flush=True)
            base = None
            if args.base is not None:
                print(f"  load average before base: {_uptime()}", flush=True)
                base = run_ours(
                    cp,
                    kube,
                    args.pods,
                    f"base-{tag}",
                    "dra",
                    tree=args.base,
                    hooks=workload.hooks(),
                )
                print(f"  dra: kube-extender (base): {base:7.1f} pods/s", flush=True)
            print(f"  load average before kube-extender: {_uptime()}", flush=True)
            ours = run_ours(cp, kube, args.pods, tag, "dra", hooks=workload.hooks())
            print(f"  dra: kube-extender:  {ours:7.1f} pods/s", flush=True)
            rows.append((count, theirs, ours, base))
            if args.profile:
                profile_dir = cp.directory / f"profile-{tag}"
                profiled = run_ours(
                    cp,
                    kube,
                    args.pods,
                    f"prof-{tag}",
                    "dra",
                    profile_dir,
                    cpu_clock=args.profile_clock == "cpu",
                    hooks=workload.hooks(),
                )
                print(f"  dra: kube-extender under cProfile: {profiled:.1f} pods/s")
                print_profile(profile_dir)
            kube.request("DELETE", SLICES)
            delete_all_nodes(kube)
    finally:
        cp.down()
    print(
        f"\n{'nodes':>6} {'devices':>8} {'pods':>6} {'kube-scheduler':>15} "
        f"{'kube-extender':>14} {'ratio':>6}" + (f" {'base':>14} {'ratio':>6}" if args.base else "")
    )
    for count, theirs, ours, base in rows:
        theirs_text = f"{theirs:>11.1f} p/s" if theirs else f"{'-':>15}"
        ratio = f"{ours / theirs:>6.2f}" if theirs else f"{'-':>6}"
        print(
            f"{count:>6} {count * args.devices:>8} {args.pods:>6} {theirs_text} "
            f"{ours:>10.1f} p/s {ratio}"
            + (f" {base:>10.1f} p/s {base / theirs:>6.2f}" if base and theirs else "")
        )
    print("kube-scheduler: clientConnection qps/burst 5000; kube-extender: no client rate limit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
