"""kube-extender explain: why a pod is Pending, and why it landed where it did.

Reads the cluster once (read-only: nodes, pods, namespaces and the kinds the profile's
plugins read), runs the pod's profile on the pod as it is now, and prints every node's
Filter verdict, the scores of the feasible nodes, the node(s) it would choose, and when
nothing fits the FitError and what preemption would do. A bound pod is explained with
itself taken out of its node. Nothing is written to the cluster. The config's ``extenders:``
are called with their read-only verbs (filter, prioritize), as kube-scheduler calls them.

With ``--feature-gates GenericWorkload=true,GangScheduling=true`` a pod of a PodGroup (or
``podgroup/NAME``) is explained as the scheduler tries it: with its group's pending members
in one pod group cycle, with the quorum and the member that blocks it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from extender.cli.common import add_feature_gates_flag, check_kubeconfig, connect
from extender.config import ConfigError, SchedulerConfig, load
from extender.explain import gang, render
from extender.explain.cluster import (
    InputError,
    dry_run_framework,
    find_pod,
    kinds_read,
    list_cluster,
    profile_for_pods,
    without,
)
from extender.explain.engine import Explainer, Explanation, disagreement_note, unbind
from extender.framework.features import Features
from extender.framework.podgroups import PODGROUPS, pod_group_key
from extender.scheduler.http_extender import HTTPExtender, build_extenders

PROG = "kube-extender explain"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument(
        "pod",
        metavar="POD",
        help="the pod's name (pod/NAME too), or podgroup/NAME for a PodGroup (needs "
        "--feature-gates GenericWorkload=true)",
    )
    p.add_argument("-n", "--namespace", default="default")
    p.add_argument("--config", help="KubeSchedulerConfiguration (default: the default profile)")
    p.add_argument("--profile", help="profile to run (default: the pod's schedulerName)")
    p.add_argument("--kubeconfig", help="cluster (default: KUBECONFIG or in-cluster)")
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--all-nodes", action="store_true", help="every node, one line each")
    p.add_argument("--top", type=int, default=10, metavar="N", help="feasible nodes shown")
    p.add_argument("--node", metavar="NAME", help="one node in detail (raw scores)")
    p.add_argument("--timings", action="store_true", help="list and explain times on stderr")
    add_feature_gates_flag(p)
    return p


POD_GROUP_PREFIXES = ("podgroup/", "podgroups/", "podgroup.scheduling.k8s.io/")


def parse_target(value: str) -> tuple[str, str]:
    """``NAME`` or ``pod/NAME`` -> ``("pod", NAME)``; ``podgroup/NAME`` -> ``("podgroup",
    NAME)``, as kubectl's TYPE/NAME."""
    for prefix in POD_GROUP_PREFIXES:
        if value.startswith(prefix):
            return "podgroup", value[len(prefix) :]
    for prefix in ("pod/", "pods/"):
        if value.startswith(prefix):
            return "pod", value[len(prefix) :]
    return "pod", value


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.config and not Path(args.config).is_file():
        p.error(f"--config: no such file: {args.config}")
    check_kubeconfig(p, args.kubeconfig)
    kind, name = parse_target(args.pod)
    if not name or "/" in name:
        p.error(f"POD: {args.pod!r} is not NAME, pod/NAME or podgroup/NAME")
    features: Features = args.feature_gates
    if kind == "podgroup" and not features.generic_workload:
        p.error(f"{args.pod}: {gang.ERR_NEEDS_GENERIC_WORKLOAD}")
    try:
        config = load(args.config, features=features) if args.config else None
        # Before connecting, as `run`: a tlsConfig file that does not load is a config error.
        extenders = extenders_of(config)
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    client = connect(PROG, args.kubeconfig)
    if client is None:
        return 2
    try:
        if kind == "podgroup":
            return _explain_pod_group(args, name, config, client, extenders)
        return _explain(args, name, config, client, extenders)
    except (InputError, ConfigError) as exc:  # ConfigError: a gate kube-extender lacks
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


def extenders_of(config: SchedulerConfig | None) -> list[HTTPExtender]:
    """The config's ``extenders:``, as the standalone scheduler calls them (the same HTTP
    client); :class:`~extender.explain.engine.Explainer` uses their read-only verbs only.
    A tlsConfig that does not load raises
    :class:`~extender.scheduler.http_extender.ExtenderConfigError` (a ConfigError)."""
    return build_extenders(config) if config is not None else []


def _list(client, kinds: set, features: Features):  # type: ignore[no-untyped-def]
    """The cluster (with PodGroups when GenericWorkload is on) and the list times."""
    if features.generic_workload:
        kinds = kinds | {PODGROUPS}
    start = time.perf_counter()
    try:
        cluster, timings = list_cluster(client, kinds)
    except Exception as exc:
        hint = ""
        if features.generic_workload and "podgroups" in str(exc):
            hint = " (is the API scheduling.k8s.io/v1alpha2 served? kube-apiserver "
            hint += "--runtime-config=scheduling.k8s.io/v1alpha2=true)"
        raise InputError(f"listing the cluster failed: {exc}{hint}") from None
    return cluster, timings, time.perf_counter() - start


def _explain(args: argparse.Namespace, name: str, config, client, extenders) -> int:  # type: ignore[no-untyped-def]
    features: Features = args.feature_gates
    try:
        pod = client.get_pod(args.namespace, name)
    except Exception as exc:  # no connection, no permission: one line
        raise InputError(f"reading pod {args.namespace}/{name}: {exc}") from None
    if pod is None:
        raise InputError(f'pod "{name}" not found in namespace "{args.namespace}"')
    config, profile, notes = profile_for_pods(config, [pod], args.profile, features)
    cluster, timings, listed = _list(client, kinds_read([profile], config.registry), features)
    pod = find_pod(cluster, args.namespace, name) if _listed(cluster, pod) else pod
    group = pod_group_key(pod)
    if group is not None and not features.generic_workload:
        notes.append(
            f"the pod belongs to pod group {group[1]}; explained as one pod: with "
            "--feature-gates GenericWorkload=true,GangScheduling=true it is explained with "
            "its group, as a scheduler with those gates schedules it"
        )
        group = None
    whole = cluster
    bound_to = (pod.get("spec") or {}).get("nodeName") or ""
    if bound_to:
        cluster, pod = without(cluster, pod), unbind(pod)
    fwk = dry_run_framework(config, profile, cluster)
    explainer = Explainer(fwk, extenders=extenders)
    start = time.perf_counter()
    cycle = None
    title = ""
    if group is not None and not bound_to:
        cycle, focus, title = gang.explain_group(
            explainer,
            group,
            whole.pods,
            whole.snapshot(),
            focus=gang.pod_name(pod),
            placements=features.topology_aware_workload_scheduling,
        )
        assert focus is not None  # a pending or waiting member is explained
        explanation = focus
    else:
        explanation = explainer.explain(pod, cluster.snapshot(), bound_to=bound_to)
        if group is not None:
            whole_fwk = dry_run_framework(config, profile, whole)
            cycle = gang.run_cycle(
                whole_fwk,
                group,
                whole.pods,
                whole.snapshot(),
                placements=features.topology_aware_workload_scheduling,
            )
    # A member that fits while its group does not is no contradiction of its condition.
    contradiction = cycle is None or cycle.verdict == gang.SCHEDULABLE
    _add_notes(args, config, explanation, notes, extenders, bound_to, contradiction)
    elapsed = time.perf_counter() - start
    if args.timings:
        _print_timings(cluster, timings, listed, elapsed)
    options = {"top": args.top, "all_nodes": args.all_nodes, "node": args.node}
    if args.output == "table":
        if cycle is not None:
            sys.stdout.write(render.gang_table(cycle, explanation, title, **options))
        else:
            sys.stdout.write(render.table(explanation, **options))
    else:
        data = render.to_dict(explanation)
        if cycle is not None:
            data["podGroup"] = render.pod_group_dict(cycle)
        sys.stdout.write(render.dumps(data, args.output))
    return 0


def _explain_pod_group(args: argparse.Namespace, name: str, config, client, extenders) -> int:  # type: ignore[no-untyped-def]
    """``explain podgroup/NAME``: the group's quorum and cycle, and the member that blocks
    it (else the first one tried) per node."""
    features: Features = args.feature_gates
    key = (args.namespace, name)
    try:
        pods, _ = client.list(f"/api/v1/namespaces/{args.namespace}/pods")
    except Exception as exc:
        raise InputError(f"listing pods in namespace {args.namespace}: {exc}") from None
    members = [p for p in pods if pod_group_key(p) == key]
    config, profile, notes = profile_for_pods(config, members, args.profile, features)
    cluster, timings, listed = _list(client, kinds_read([profile], config.registry), features)
    fwk = dry_run_framework(config, profile, cluster)
    if gang.find_pod_group(fwk, key) is None and not gang.members_of(cluster.pods, key):
        raise InputError(f'podgroup "{name}" not found in namespace "{args.namespace}"')
    explainer = Explainer(fwk, extenders=extenders)
    start = time.perf_counter()
    cycle, focus, title = gang.explain_group(
        explainer,
        key,
        cluster.pods,
        cluster.snapshot(),
        placements=features.topology_aware_workload_scheduling,
    )
    if focus is not None:
        contradiction = cycle.verdict == gang.SCHEDULABLE
        _add_notes(args, config, focus, notes, extenders, "", contradiction)
    elapsed = time.perf_counter() - start
    if args.timings:
        _print_timings(cluster, timings, listed, elapsed)
    if args.output == "table":
        for note in notes if focus is None else ():
            sys.stdout.write("\n".join(render._wrap(f"Note: {note}", "")) + "\n")
        options = {"top": args.top, "all_nodes": args.all_nodes, "node": args.node}
        sys.stdout.write(render.gang_table(cycle, focus, title, **options))
    else:
        sys.stdout.write(render.dumps(render.pod_group_document(cycle, focus), args.output))
    return 0


def _add_notes(  # type: ignore[no-untyped-def]
    args: argparse.Namespace,
    config,
    explanation: Explanation,
    notes: list[str],
    extenders,
    bound_to: str,
    contradiction: bool = True,
) -> None:
    explanation.notes[:0] = notes
    # First: a verdict the pod's own condition contradicts is what the reader must see.
    disagreement = contradiction and disagreement_note(
        explanation, config.source if args.config else None, len(extenders)
    )
    if disagreement:
        explanation.notes.insert(0, disagreement)
    if bound_to and extenders:
        explanation.notes.append(
            f"the extenders were called about a pod bound to {bound_to}: an extender that "
            "reads pods from its own cache still counts it there"
        )


def _print_timings(cluster, timings: dict, listed: float, elapsed: float) -> None:  # type: ignore[no-untyped-def]
    print(
        f"listed {len(cluster.nodes)} nodes, {len(cluster.pods)} pods in {listed:.3f} s "
        f"({', '.join(f'{k} {v:.3f}' for k, v in timings.items())}); "
        f"explained in {elapsed:.3f} s",
        file=sys.stderr,
    )


def _listed(cluster, pod: dict) -> bool:  # type: ignore[no-untyped-def]
    uid = (pod.get("metadata") or {}).get("uid")
    return any((p.get("metadata") or {}).get("uid") == uid for p in cluster.pods)
