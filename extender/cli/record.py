"""kube-extender record: write a trace (format v1) of a live cluster or of a dump.

Live (``--window``): everything is listed at the start (read-only), then pods are watched for
the window: their creations, bindings and deletions. A dump (``--from-dump``, a ``kubectl get
-o json`` List or what ``explain``/``simulate`` read): times come from the pods' timestamps.
``--anonymise`` hashes names and labels under a salt (consistently, so selectors and owners
still match); docs/record.md says what is recorded and what is kept.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from extender.cli.common import check_kubeconfig, connect
from extender.kube import DurationError, parse_duration
from extender.replay.record import (
    DEFAULT_MAX_OBJECTS,
    DEFAULT_MAX_PODS,
    RecordError,
    from_dump,
    parse_time,
    record_live,
)
from extender.replay.trace import TraceError, parse, save

PROG = "kube-extender record"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--window", metavar="DURATION", help="record the live cluster this long (10m, 1h30m)"
    )
    source.add_argument(
        "--from-dump",
        metavar="FILE",
        help="a dump (kubectl get -o json/yaml List, multi-document YAML, or a directory)",
    )
    p.add_argument("--kubeconfig", help="cluster (default: KUBECONFIG or in-cluster)")
    p.add_argument("-n", "--namespace", help="only this namespace's pods and objects")
    p.add_argument(
        "--start",
        metavar="TIME",
        help="with --from-dump: the trace's start (RFC 3339); default: the first pod's creation",
    )
    p.add_argument("--anonymise", action="store_true", help="hash names and labels")
    p.add_argument(
        "--salt",
        help="the anonymisation salt, for the same hashes across traces "
        "(default: $KUBE_EXTENDER_SALT, else a random one)",
    )
    p.add_argument("--name", default="recorded", help="the trace's metadata.name")
    p.add_argument("--max-pods", type=int, default=DEFAULT_MAX_PODS, metavar="N")
    p.add_argument("--max-objects", type=int, default=DEFAULT_MAX_OBJECTS, metavar="N")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="trace (.json[.gz])")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    for flag in ("max_pods", "max_objects"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')}: must be at least 1")
    window = None
    if args.window is not None:
        try:
            window = parse_duration(args.window)
        except DurationError as exc:
            p.error(f"--window: {exc}")
        if window <= 0:
            p.error(f"--window: {args.window!r} must be positive")
        if args.start:
            p.error("--start: only with --from-dump (a live window starts now)")
        check_kubeconfig(p, args.kubeconfig)
    output = Path(args.output)
    if not output.parent.is_dir():
        p.error(f"--output: no such directory: {output.parent}")
    salt = _salt(args.salt)
    try:
        if window is not None:
            trace = _live(args, window)
            if trace is None:
                return 2
        else:
            trace = _dump(args)
    except RecordError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted, nothing written", file=sys.stderr)
        return 130
    if args.anonymise:
        from extender.replay.anonymise import anonymise

        trace = anonymise(trace, salt)
    try:
        save(parse(trace), output)
    except TraceError as exc:  # a recorder's bug: say which field, write nothing
        print(f"{PROG}: the trace is not valid, not written: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        pods = trace["pods"]
        bound = sum(1 for r in pods if r["recorded"]["node"])
        print(
            f"{PROG}: {len(trace['nodes'])} nodes, {len(trace['objects'])} objects, "
            f"{len(pods)} pods ({bound} bound) over {trace['duration']:.1f} s -> {output}",
            file=sys.stderr,
        )
        notes = trace["metadata"].get("notes") or ""
        if notes:
            print(f"{PROG}: notes: {notes}", file=sys.stderr)
    return 0


def _salt(flag: str | None) -> bytes:
    value = flag or os.environ.get("KUBE_EXTENDER_SALT")
    return value.encode() if value else os.urandom(32)


def _live(args: argparse.Namespace, window: float) -> dict[str, Any] | None:
    client = connect(PROG, args.kubeconfig)
    if client is None:
        return None
    quiet = args.quiet
    told: list[float] = []

    def progress(elapsed: float, pods: int) -> None:
        if not quiet:
            print(f"\r{PROG}: {elapsed:.0f}/{window:.0f} s, {pods} pods", end="", file=sys.stderr)
            told.append(elapsed)

    source = f"live (window {args.window})"
    try:
        trace = record_live(
            client,
            window,
            namespace=args.namespace,
            max_pods=args.max_pods,
            max_objects=args.max_objects,
            name=args.name,
            source=source,
            progress=progress,
        )
    except RecordError:
        raise
    except Exception as exc:  # the API refused or went away: one line
        raise RecordError(f"recording the cluster failed: {exc}") from None
    finally:
        if told:
            print(file=sys.stderr)  # end the progress line
    return trace


def _dump(args: argparse.Namespace) -> dict[str, Any]:
    from extender.explain.cluster import InputError, load_objects

    try:
        objects = load_objects(args.from_dump)
    except InputError as exc:
        raise RecordError(f"--from-dump: {exc}") from None
    start = parse_time(args.start, "--start") if args.start else None
    source = "dump" if args.anonymise else f"dump:{Path(args.from_dump).name}"
    return from_dump(
        objects,
        namespace=args.namespace,
        start=start,
        max_pods=args.max_pods,
        max_objects=args.max_objects,
        name=args.name,
        source=source,
    )
