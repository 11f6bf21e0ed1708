"""Start-up: from process start to caches synced and to the first bind, ours vs kube-scheduler.

Same control plane, same nodes, same pods: for each node count, first without DRA objects
(the nodes and ``--pods`` pending pods of the one-spec workload), then with them: DeviceClass
``test-class``, one ResourceSlice of ``--devices`` devices per node (``bench/dra_objects.py``,
upstream's node-local driver), ``--claims`` ResourceClaims of which all but ``--pods`` are
allocated on a node and reserved for a pod already bound there (namespace ``bench-bound``),
and ``--pods`` pending pods each with its own pending claim (namespace ``bench``). Each
scheduler starts on that cluster in turn (kube-scheduler, ``--base``'s ``kube-extender run``,
this tree's), its pods created before it starts; printed for each:

* ``synced``: process start to its ``/readyz`` answering 200: kube-scheduler's
  ``sched-handler-sync`` check (informers synced and their initial lists delivered to the
  handlers: ``WaitForCacheSync`` then ``WaitForHandlersSync``), ours: every informer synced;
* ``first bind``: process start to the first pod with a node (a watch sees it);
* ``then``: process start to the ``--until``-th bind (then the scheduler is stopped and the
  pods left are deleted).

With ``--profile`` a last run per row runs ours under cProfile in every thread
(``bench/profiled.py``) and prints where the start-up went (the run is short: the profile is
mostly start-up).

    python bench/startup.py [--nodes 500,5000] [--pods 1000] [--until 50] [--claims 2000]
                            [--devices 8]
                            [--base TREE] [--profile] [--skip-peer]
"""

from __future__ import annotations

import argparse
import compileall
import ssl
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cluster import (
    BENCH_NAMESPACE,
    BindRecorder,
    create_nodes,
    create_pods,
    delete_all_nodes,
    delete_all_pods,
    ensure_namespace,
    kube_for,
    single_pod,
    start_control_plane,
)
from bench.dra import CLAIMS, SLICES, DRAWorkload, publish_slices
from bench.dra_objects import allocation, device_class, resource_claim
from bench.progress import steps
from bench.throughput import Hooks, print_profile, run_kube_scheduler, run_ours
from extender.controlplane import free_port
from extender.scenario.kube import Kube

BOUND_NAMESPACE = "bench-bound"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


def claims_path(namespace: str) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"


def claim_pod(name: str, namespace: str, scheduler_name: str, claim: str) -> dict:
    """The one-spec pod with one claim of its own (``resourceClaimName``)."""
    pod = single_pod(0, name, namespace, scheduler_name)
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
    pod["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimName": claim}]
    return pod


def create_dra_objects(kube: Kube, nodes: int, devices: int, allocated: int) -> None:
    """The DeviceClass, a slice per node, and ``allocated`` claims allocated and reserved for
    pods bound to the claim's node (claim j: device ``instance-(j // nodes)`` of node
    ``j % nodes``)."""
    if allocated > nodes * devices:
        raise SystemExit(f"{allocated} allocated claims > {nodes} nodes x {devices} devices")
    kube.request("POST", CLASSES, device_class())
    publish_slices(kube, nodes, devices)
    try:
        kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": BOUND_NAMESPACE}})
    except Exception:
        pass

    def create(j: int) -> None:
        node, device = f"node-{j % nodes:05d}", f"instance-{j // nodes}"
        name = f"bound-{j:05d}"
        pod = single_pod(j, name, BOUND_NAMESPACE, "nobody")
        pod["spec"]["nodeName"] = node
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
        pod["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimName": name}]
        created = kube.request("POST", f"/api/v1/namespaces/{BOUND_NAMESPACE}/pods", pod)
        kube.request("POST", claims_path(BOUND_NAMESPACE), resource_claim(name, BOUND_NAMESPACE))
        reserved = {"resource": "pods", "name": name, "uid": created["metadata"]["uid"]}
        kube.request(
            "PATCH",
            f"{claims_path(BOUND_NAMESPACE)}/{name}/status",
            {"status": {"allocation": allocation(node, device), "reservedFor": [reserved]}},
            content_type="application/merge-patch+json",
        )

    with ThreadPoolExecutor(16) as pool:
        list(steps(pool.map(create, range(allocated)), "allocated claims", allocated, "claim"))


def delete_dra_objects(kube: Kube) -> None:
    kube.request(
        "DELETE",
        f"/api/v1/namespaces/{BOUND_NAMESPACE}/pods",
        query={"gracePeriodSeconds": "0"},
    )
    kube.request("DELETE", claims_path(BOUND_NAMESPACE))
    kube.request("DELETE", SLICES)
    kube.request("DELETE", CLASSES)


@dataclass
class Run:
    """One scheduler's start: what it is polled at, what was seen."""

    readyz: object  # () -> URL or None (not known yet)
    synced: float | None = None
    first_bind: float | None = None
    last_bind: float | None = None
    launched: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        """Time of the first 200 of /readyz (polled every 10 ms)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        while not self.stop.is_set():
            url = self.readyz()  # type: ignore[operator]
            if url:
                try:
                    with urllib.request.urlopen(url, timeout=1, context=context) as answer:
                        if answer.status == 200:
                            self.synced = time.monotonic()
                            return
                except Exception:
                    pass
            time.sleep(0.01)


class StartupWorkload:
    """The pods (and, with DRA, their pending claims) of one scheduler; its start timed."""

    def __init__(self, kube: Kube, pods: int, dra: bool, until: int) -> None:
        self.kube = kube
        self.pods = pods
        self.dra = dra
        self.until = min(until, pods)
        self.runs: dict[str, Run] = {}

    def hooks(self, readyz: object) -> Hooks:
        def prepare(name: str) -> None:
            if self.dra:
                self._create_claim_pods(name)
            else:
                create_pods(self.kube, self.pods, name, name)
            run = self.runs[name] = Run(readyz)
            threading.Thread(target=run.poll, daemon=True).start()

        def measured(name: str, recorder: BindRecorder) -> None:
            run = self.runs[name]
            run.stop.set()
            times = sorted(recorder.bound.values())
            run.launched = recorder.launched
            run.first_bind, run.last_bind = times[0], times[-1]

        def cleanup() -> None:
            if self.dra:
                DRAWorkload(self.kube, self.pods).cleanup()

        return Hooks(prepare=prepare, measured=measured, cleanup=cleanup, expected=self.until)

    def _create_claim_pods(self, name: str) -> None:
        def create(i: int) -> None:
            pod = f"{name}-{i:05d}"
            self.kube.request("POST", CLAIMS, resource_claim(pod, BENCH_NAMESPACE))
            self.kube.request(
                "POST",
                f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods",
                claim_pod(pod, BENCH_NAMESPACE, name, pod),
            )

        with ThreadPoolExecutor(16) as pool:
            list(steps(pool.map(create, range(self.pods)), "claims and pods", self.pods, "pod"))

    def line(self, name: str) -> str:
        run = self.runs[name]
        start = run.launched or 0.0

        def since(t: float | None) -> str:
            return f"{t - start:6.2f} s" if t is not None else f"{'-':>8}"

        return (
            f"synced {since(run.synced)}  first bind {since(run.first_bind)}  "
            f"then {since(run.last_bind)}"
        )

    def figures(self, name: str) -> tuple[float | None, float]:
        run = self.runs[name]
        start = run.launched or 0.0
        synced = run.synced - start if run.synced is not None else None
        return synced, (run.first_bind or 0.0) - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--pods", type=int, default=1000, help="pending pods per scheduler")
    parser.add_argument("--until", type=int, default=50, help="binds awaited per run")
    parser.add_argument("--claims", type=int, default=2000, help="claims in all (with DRA)")
    parser.add_argument("--devices", type=int, default=8, help="devices per node (one slice)")
    parser.add_argument("--base", type=lambda path: Path(path).resolve())
    parser.add_argument("--profile", action="store_true", help="also a cProfiled run of ours")
    parser.add_argument("--skip-peer", action="store_true", help="no kube-scheduler run")
    parser.add_argument(
        "--cases", default="plain,dra", help="plain (no DRA objects), dra (with them)"
    )
    args = parser.parse_args()
    cases = args.cases.split(",")
    # The trees' bytecode written first, as an install has it: with PYTHONDONTWRITEBYTECODE
    # (or a read-only tree) every start would compile the sources again.
    for tree in [Path(__file__).resolve().parents[1], *([args.base] if args.base else [])]:
        compileall.compile_dir(str(tree / "extender"), quiet=1)
    cp = start_control_plane()
    rows = []
    try:
        kube = kube_for(cp)
        ensure_namespace(kube)
        for count in (int(n) for n in args.nodes.split(",")):
            started = time.monotonic()
            create_nodes(kube, count)
            print(f"{count} nodes created in {time.monotonic() - started:.1f} s", flush=True)
            for case in cases:
                dra = case == "dra"
                if dra:
                    started = time.monotonic()
                    create_dra_objects(kube, count, args.devices, args.claims - args.pods)
                    print(
                        f"{count} slices of {args.devices} devices, {args.claims - args.pods} "
                        f"claims allocated and reserved, {args.pods} pending (with their pods) "
                        f"created in {time.monotonic() - started:.1f} s",
                        flush=True,
                    )
                workload = StartupWorkload(kube, args.pods, dra, args.until)
                tag = f"startup-{case}-{count}"
                figures = {}

                def ks_readyz(name: str = f"ks-{tag}") -> str | None:
                    command = cp.commands.get(name) or []
                    for arg in command:
                        if arg.startswith("--secure-port="):
                            return f"https://127.0.0.1:{arg.split('=', 1)[1]}/readyz"
                    return None

                if not args.skip_peer:
                    run_kube_scheduler(
                        cp, kube, args.pods, tag, "single", hooks=workload.hooks(ks_readyz)
                    )
                    print(f"  {case}: kube-scheduler:  {workload.line(f'ks-{tag}')}", flush=True)
                    figures["kube-scheduler"] = workload.figures(f"ks-{tag}")
                trees = [("base", args.base)] if args.base is not None else []
                for label, tree in [*trees, ("ours", None)]:
                    port = free_port()
                    sub = f"base-{tag}" if label == "base" else tag
                    run_ours(
                        cp,
                        kube,
                        args.pods,
                        sub,
                        "single",
                        tree=tree,
                        hooks=workload.hooks(lambda p=port: f"http://127.0.0.1:{p}/readyz"),
                        metrics_port=port,
                    )
                    print(f"  {case}: kube-extender ({label}): {workload.line(f'ours-{sub}')}")
                    figures[label] = workload.figures(f"ours-{sub}")
                rows.append((count, case, figures))
                if args.profile:
                    profile_dir = cp.directory / f"profile-{tag}"
                    run_ours(
                        cp,
                        kube,
                        args.pods,
                        f"prof-{tag}",
                        "single",
                        profile_dir,
                        hooks=workload.hooks(lambda: None),
                    )
                    line = workload.line(f"ours-prof-{tag}")
                    print(f"  {case}: kube-extender under cProfile: {line}")
                    print_profile(profile_dir, top=40)
                if dra:
                    delete_dra_objects(kube)
            delete_all_pods(kube)
            delete_all_nodes(kube)
    finally:
        cp.down()
    labels = (
        (["kube-scheduler"] if not args.skip_peer else [])
        + (["base"] if args.base else [])
        + ["ours"]
    )
    print(
        f"\n{'nodes':>6} {'DRA':>4} "
        + " ".join(f"{label + ' synced/first':>28}" for label in labels)
        + f" {'ratio':>6}"
    )
    for count, case, figures in rows:
        cells = []
        for label in labels:
            synced, first = figures[label]
            cells.append(f"{(f'{synced:.2f}' if synced is not None else '-'):>17} / {first:6.2f} s")
        ratio = (
            f"{figures['ours'][1] / figures['kube-scheduler'][1]:>6.2f}"
            if "kube-scheduler" in figures
            else f"{'-':>6}"
        )
        print(f"{count:>6} {'yes' if case == 'dra' else 'no':>4} " + " ".join(cells) + f" {ratio}")
    print("times from process start; ratio: ours' first bind / kube-scheduler's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
