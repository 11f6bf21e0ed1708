"""Longer differential runs: ``python -m tests.conformance --seeds N --pods-per-seed M``.

Starts its own control plane (etcd, kube-apiserver, kube-scheduler; with ``--dra`` also
kube-controller-manager's resourceclaim-controller) in a temporary directory,
runs seeds ``first .. first+N-1`` and prints the agreement per plugin and every disagreement
(with a JSON reproduction under ``--repro-dir``). Exit status 1 if anything disagreed.

``--workloads``: gang scheduling end to end (:mod:`tests.conformance.workloads`), kube-apiserver
and both schedulers with upstream's workload feature gates; one case per family per seed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from extender.controlplane import ControlPlane

from .generator import clear_choice_cases
from .harness import Conformance, missing_plugins, run_seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance", description=__doc__)
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    parser.add_argument("--first-seed", type=int, default=1000, help="first seed (default 1000)")
    parser.add_argument("--pods-per-seed", type=int, default=25, help="pending pods per seed")
    parser.add_argument("--max-nodes", type=int, default=8, help="most nodes in a case (>= 3)")
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="also compare every plugin on its own (single-plugin profiles) for every pod",
    )
    parser.add_argument(
        "--scores",
        type=int,
        default=2,
        metavar="K",
        help="per seed, bind up to K pods whose best node is clear and compare the node "
        "kube-scheduler picked with ours (default 2; 0: off)",
    )
    parser.add_argument(
        "--no-clear-choice",
        action="store_true",
        help="skip the hand-made clear-choice scoring cases",
    )
    parser.add_argument(
        "--volumes",
        action="store_true",
        help="the volume cases (StorageClasses, PVs, PVCs, CSINodes; tests/conformance/volumes.py) "
        "instead of the general ones; no score checks",
    )
    parser.add_argument(
        "--dra",
        action="store_true",
        help="the DRA cases (DeviceClasses, ResourceSlices, claims and templates; "
        "tests/conformance/dra.py) instead of the general ones: messages compared too",
    )
    parser.add_argument(
        "--devices",
        type=int,
        default=2,
        metavar="K",
        help="DRA cases: per seed, bind up to K pods with claims through kube-scheduler and "
        "compare the devices allocated with ours (default 2; 0: off)",
    )
    parser.add_argument(
        "--paths",
        action="store_true",
        help="the path differential (tests/conformance/paths.py): each seed's plain, volume and "
        "DRA cases and the scoring cases through the standalone algorithm and the served "
        "extender's verbs, explain, simulate and kube-scheduler with our prioritize",
    )
    parser.add_argument(
        "--binds",
        type=int,
        default=2,
        metavar="K",
        help="--paths: per case, pods bound by kube-scheduler with our extender prioritizing",
    )
    parser.add_argument(
        "--workloads",
        action="store_true",
        help="gang scheduling (tests/conformance/workloads.py): PodGroups and their pods through "
        "kube-scheduler and kube-extender run, both with the workload feature gates, compared "
        "end to end; one case per family per seed",
    )
    parser.add_argument(
        "--families",
        help="--workloads: only these case families, comma-separated (default: all)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="--workloads: print every case's outcome on each side (messages verbatim)",
    )
    parser.add_argument(
        "--kube-scheduler-only",
        action="store_true",
        help="--workloads: record the real kube-scheduler alone, with all of upstream's "
        "workload gates (print it with --verbose)",
    )
    parser.add_argument(
        "--scheduler-v",
        type=int,
        default=1,
        metavar="N",
        help="--workloads: kube-scheduler's --v (default 1; from 2 on, a pending gang logs "
        "thousands of lines a second)",
    )
    parser.add_argument(
        "--keep-logs",
        type=Path,
        metavar="DIR",
        help="--workloads: copy both schedulers' logs into DIR at the end",
    )
    parser.add_argument("--repro-dir", type=Path, default=Path("conformance-repro"))
    parser.add_argument(
        "--attach",
        type=Path,
        help="use the control plane already running from this directory (kube-extender cluster up)",
    )
    args = parser.parse_args(argv)
    if args.workloads:
        return _workloads(args)

    missing = missing_plugins(dra=args.dra)
    if missing:
        for name, why in missing.items():
            print(f"plugin {name} not usable yet: {why}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        started = time.monotonic()
        if args.attach:
            cp = ControlPlane(args.attach)
            cp.attach()
        else:
            cp = ControlPlane(Path(tmp) / "cp")
            cp.up()
        runner = Conformance(cp, repro_dir=args.repro_dir)
        if args.paths:
            return _paths(runner, args, cp, Path(tmp), started)
        try:
            runner.start()
            seeds = range(args.first_seed, args.first_seed + args.seeds)
            tally = run_seeds(
                runner,
                seeds,
                pods_per_seed=args.pods_per_seed,
                max_nodes=args.max_nodes,
                isolate=args.isolate,
                scores=args.scores,
                volumes=args.volumes,
                dra=args.dra,
                devices=args.devices,
            )
            if not args.no_clear_choice and not args.volumes and not args.dra:
                for case, best in clear_choice_cases():
                    check = runner.run_score_case(case)
                    print(f"{case.case_id}: expected {best}, {check.describe().strip()}")
                    tally.add_scores([check])
        finally:
            runner.stop()
            if not args.attach:
                cp.down()
        tally.seconds = time.monotonic() - started
        print(tally.report())
    failed = tally.disagreements or tally.score_disagreements or tally.device_disagreements
    return 1 if failed else 0


def _paths(
    runner: Conformance, args: argparse.Namespace, cp: ControlPlane, tmp: Path, started: float
) -> int:
    from .paths import PathDifferential, case_families, run_paths

    paths = None
    try:
        runner.start()
        paths = PathDifferential(runner, tmp).start()
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        cases = case_families(seeds, args.pods_per_seed, args.max_nodes)
        tally = run_paths(paths, cases, binds=args.binds)
    finally:
        if paths is not None:
            paths.stop()
        runner.stop()
        if not args.attach:
            cp.down()
    tally.seconds = time.monotonic() - started
    print(tally.report())
    return 1 if tally.mismatches else 0


def _workloads(args: argparse.Namespace) -> int:
    from extender.controlplane import (
        WORKLOAD_FEATURE_GATES,
        WORKLOAD_RUNTIME_CONFIG,
        apiserver_args,
    )

    from .workloads import (
        FAMILIES,
        KUBE_EXTENDER,
        KUBE_SCHEDULER,
        WorkloadRunner,
        generate,
        our_side_gates,
        our_side_missing,
        run_cases,
    )

    families = args.families.split(",") if args.families else list(FAMILIES)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        print(f"--families: unknown {unknown}; known: {', '.join(FAMILIES)}", file=sys.stderr)
        return 2
    missing = "--kube-scheduler-only" if args.kube_scheduler_only else our_side_missing()
    if missing:
        print(f"{KUBE_EXTENDER} not compared: {missing}", file=sys.stderr)
    sides = [KUBE_SCHEDULER] if missing else [KUBE_SCHEDULER, KUBE_EXTENDER]
    # Both sides get the gates ours takes; kube-scheduler alone gets all of them.
    gates, dropped = (WORKLOAD_FEATURE_GATES, []) if missing else our_side_gates()
    for why in dropped:
        print(f"left out on both sides: {why}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        if args.attach:
            cp = ControlPlane(args.attach)
            cp.attach()
        else:
            cp = ControlPlane(Path(tmp) / "cp")
            cp.up(apiserver_args(WORKLOAD_FEATURE_GATES, WORKLOAD_RUNTIME_CONFIG))
        runner = WorkloadRunner(cp, verbosity=args.scheduler_v, feature_gates=gates)
        try:
            runner.start(sides)
            seeds = range(args.first_seed, args.first_seed + args.seeds)
            cases = [case for seed in seeds for case in generate(seed, families)]
            tally = run_cases(runner, cases, verbose=args.verbose)
            tally.notes += [f"left out on both sides: {why}" for why in dropped]
        finally:
            runner.stop()
            if args.keep_logs:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for side in sides:
                    path = runner.log_path(side)
                    if path.exists():
                        shutil.copy(path, args.keep_logs / f"{side}.log")
            if not args.attach:
                cp.down()
    print(tally.report())
    return 1 if tally.disagreements or tally.violations or tally.unsettled else 0


if __name__ == "__main__":
    sys.exit(main())
