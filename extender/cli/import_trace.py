"""kube-extender import: a public cluster trace into a replay trace (``docs/replay.md``).

``kube-extender import openb`` reads Alibaba's ``cluster-trace-gpu-v2023`` ("openb"): by default
the pinned ``openb_node_list_all_node.csv`` and ``openb_pod_list_default.csv`` from
``$KUBE_EXTENDER_CACHE/traces/openb`` (sha256-checked; ``--fetch`` downloads them when they are
missing), or the files of ``--openb-dir DIR``, or ``--nodes CSV --pods CSV``. GPUs become DRA
devices with consumable capacity (``--gpu-mapping dra``, the default) or the extended resource
``nvidia.com/gpu`` (``extended``). Writes ``-o FILE`` (gzip when it ends in ``.gz``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

PROG = "kube-extender import"


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number >= 1")
    return int(value)


def parser() -> argparse.ArgumentParser:
    from extender.replay.gpus import MAPPINGS
    from extender.replay.importers.openb import NODE_LISTS, POD_LISTS

    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sources = p.add_subparsers(dest="source", metavar="SOURCE", required=True)
    o = sources.add_parser(
        "openb",
        prog=f"{PROG} openb",
        help="Alibaba cluster-trace-gpu-v2023 (openb)",
        description="Alibaba's cluster-trace-gpu-v2023 (openb) as a replay trace.",
    )
    o.add_argument(
        "--openb-dir",
        metavar="DIR",
        help="directory of the openb CSV files (default: $KUBE_EXTENDER_CACHE/traces/openb, "
        "sha256-checked)",
    )
    o.add_argument("--nodes", metavar="CSV", help="a node list (with --pods)")
    o.add_argument("--pods", metavar="CSV", help="a pod list (with --nodes)")
    o.add_argument(
        "--node-list",
        default="all_node",
        choices=NODE_LISTS,
        help="the node list of the openb directory (default: all_node)",
    )
    o.add_argument(
        "--pod-list",
        default="default",
        choices=POD_LISTS,
        metavar="NAME",
        help=f"the pod list of the openb directory: {', '.join(POD_LISTS)} (default: default)",
    )
    o.add_argument(
        "--gpu-mapping",
        default="dra",
        choices=MAPPINGS,
        help="dra: devices with consumable capacity, shared GPUs kept (default); extended: "
        "whole nvidia.com/gpu",
    )
    o.add_argument(
        "--fetch",
        action="store_true",
        help="download the pinned CSV files that are missing (into the cache or --openb-dir)",
    )
    o.add_argument(
        "--limit-pods", type=_positive, metavar="N", help="only the first N pods by creation"
    )
    o.add_argument("-o", "--output", required=True, metavar="FILE", help="the trace to write")
    o.set_defaults(subparser=o)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return _openb(args.subparser, args)


def _openb(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from extender.replay.importers import openb
    from extender.replay.importers.fetch import FetchError
    from extender.replay.trace import TraceError, save

    prog = f"{PROG} openb"
    if bool(args.nodes) != bool(args.pods):
        missing = "--pods" if args.nodes else "--nodes"
        p.error(f"--nodes and --pods go together ({missing} is missing)")
    if args.nodes and args.openb_dir:
        p.error("give --openb-dir DIR or --nodes CSV --pods CSV, not both")
    if args.nodes and args.fetch:
        p.error("--fetch downloads the pinned files: give it with --openb-dir or alone")
    started = time.perf_counter()
    try:
        if args.nodes:
            nodes_csv, pods_csv = Path(args.nodes), Path(args.pods)
            for flag, path in (("--nodes", nodes_csv), ("--pods", pods_csv)):
                if not path.is_file():
                    print(f"{prog}: {flag}: no such file: {path}", file=sys.stderr)
                    return 2
        else:
            files = [openb.node_list_file(args.node_list), openb.pod_list_file(args.pod_list)]
            directory = Path(args.openb_dir).expanduser() if args.openb_dir else None
            if directory is not None and not args.fetch:
                # A directory of the user's: its files as they are (no sha256 pin).
                nodes_csv, pods_csv = (directory / f for f in files)
                for path in (nodes_csv, pods_csv):
                    if not path.is_file():
                        print(
                            f"{prog}: --openb-dir: no {path.name} in {directory} (give --fetch "
                            "to download the pinned file)",
                            file=sys.stderr,
                        )
                        return 2
            else:
                nodes_csv, pods_csv = openb.ensure(files, directory, fetch_missing=args.fetch)
        trace = openb.import_openb(
            nodes_csv, pods_csv, mapping=args.gpu_mapping, limit_pods=args.limit_pods
        )
        save(trace, args.output)
    except (FetchError, openb.OpenbError, TraceError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{prog}: -o: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(
        f"{args.output}: {len(trace.nodes)} nodes, {len(trace.pods)} pods, "
        f"{len(trace.objects)} other objects, {trace.duration:.0f} s of trace "
        f"(gpu mapping {args.gpu_mapping}; {time.perf_counter() - started:.1f} s)"
    )
    return 0
