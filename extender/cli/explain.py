"""kube-extender explain: why a pod is Pending, and why it landed where it did.

Reads the cluster once (read-only: nodes, pods, namespaces and the kinds the profile's
plugins read), runs the pod's profile on the pod as it is now, and prints every node's
Filter verdict, the scores of the feasible nodes, the node(s) it would choose, and when
nothing fits the FitError and what preemption would do. A bound pod is explained with
itself taken out of its node. Nothing is written to the cluster. The config's ``extenders:``
are called with their read-only verbs (filter, prioritize), as kube-scheduler calls them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from extender.cli.common import check_kubeconfig, connect
from extender.config import ConfigError, SchedulerConfig, load
from extender.explain import render
from extender.explain.cluster import (
    InputError,
    dry_run_framework,
    find_pod,
    kinds_read,
    list_cluster,
    profile_for_pods,
    without,
)
from extender.explain.engine import Explainer, disagreement_note, unbind
from extender.scheduler.http_extender import HTTPExtender, build_extenders

PROG = "kube-extender explain"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("pod", metavar="POD", help="the pod's name")
    p.add_argument("-n", "--namespace", default="default")
    p.add_argument("--config", help="KubeSchedulerConfiguration (default: the default profile)")
    p.add_argument("--profile", help="profile to run (default: the pod's schedulerName)")
    p.add_argument("--kubeconfig", help="cluster (default: KUBECONFIG or in-cluster)")
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--all-nodes", action="store_true", help="every node, one line each")
    p.add_argument("--top", type=int, default=10, metavar="N", help="feasible nodes shown")
    p.add_argument("--node", metavar="NAME", help="one node in detail (raw scores)")
    p.add_argument("--timings", action="store_true", help="list and explain times on stderr")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.config and not Path(args.config).is_file():
        p.error(f"--config: no such file: {args.config}")
    check_kubeconfig(p, args.kubeconfig)
    try:
        config = load(args.config) if args.config else None
        # Before connecting, as `run`: a tlsConfig file that does not load is a config error.
        extenders = extenders_of(config)
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    client = connect(PROG, args.kubeconfig)
    if client is None:
        return 2
    try:
        return _explain(args, config, client, extenders)
    except InputError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


def extenders_of(config: SchedulerConfig | None) -> list[HTTPExtender]:
    """The config's ``extenders:``, as the standalone scheduler calls them (the same HTTP
    client); :class:`~extender.explain.engine.Explainer` uses their read-only verbs only.
    A tlsConfig that does not load raises
    :class:`~extender.scheduler.http_extender.ExtenderConfigError` (a ConfigError)."""
    return build_extenders(config) if config is not None else []


def _explain(args: argparse.Namespace, config, client, extenders) -> int:  # type: ignore[no-untyped-def]
    try:
        pod = client.get_pod(args.namespace, args.pod)
    except Exception as exc:  # no connection, no permission: one line
        raise InputError(f"reading pod {args.namespace}/{args.pod}: {exc}") from None
    if pod is None:
        raise InputError(f'pod "{args.pod}" not found in namespace "{args.namespace}"')
    config, profile, notes = profile_for_pods(config, [pod], args.profile)
    start = time.perf_counter()
    try:
        cluster, timings = list_cluster(client, kinds_read([profile], config.registry))
    except Exception as exc:
        raise InputError(f"listing the cluster failed: {exc}") from None
    listed = time.perf_counter() - start
    pod = find_pod(cluster, args.namespace, args.pod) if _listed(cluster, pod) else pod
    bound_to = (pod.get("spec") or {}).get("nodeName") or ""
    if bound_to:
        cluster, pod = without(cluster, pod), unbind(pod)
    fwk = dry_run_framework(config, profile, cluster)
    start = time.perf_counter()
    explanation = Explainer(fwk, extenders=extenders).explain(
        pod, cluster.snapshot(), bound_to=bound_to
    )
    explanation.notes[:0] = notes
    # First: a verdict the pod's own condition contradicts is what the reader must see.
    disagreement = disagreement_note(
        explanation, config.source if args.config else None, len(extenders)
    )
    if disagreement:
        explanation.notes.insert(0, disagreement)
    if bound_to and extenders:
        explanation.notes.append(
            f"the extenders were called about a pod bound to {bound_to}: an extender that "
            "reads pods from its own cache still counts it there"
        )
    elapsed = time.perf_counter() - start
    if args.timings:
        print(
            f"listed {len(cluster.nodes)} nodes, {len(cluster.pods)} pods in {listed:.3f} s "
            f"({', '.join(f'{k} {v:.3f}' for k, v in timings.items())}); "
            f"explained in {elapsed:.3f} s",
            file=sys.stderr,
        )
    if args.output == "table":
        sys.stdout.write(
            render.table(explanation, top=args.top, all_nodes=args.all_nodes, node=args.node)
        )
    else:
        sys.stdout.write(render.dumps(render.to_dict(explanation), args.output))
    return 0


def _listed(cluster, pod: dict) -> bool:  # type: ignore[no-untyped-def]
    uid = (pod.get("metadata") or {}).get("uid")
    return any((p.get("metadata") or {}).get("uid") == uid for p in cluster.pods)
