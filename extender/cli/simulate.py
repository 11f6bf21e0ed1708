"""kube-extender simulate: offline what-if over a cluster dump, no cluster needed.

``--cluster DUMP`` (``kubectl get nodes,pods,namespaces,... -A -o yaml``, with
``deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates`` for pods with
ResourceClaims; multi-document
YAML, or a directory of such files); ``--pods FILE`` (pods, or Deployments, StatefulSets,
Jobs, ReplicaSets expanded to their pods) are scheduled in queue order as ``kube-extender
run`` would; ``--max PODSPEC`` answers how many more replicas of a pod fit. With
``--feature-gates GenericWorkload=true,GangScheduling=true`` pods of a PodGroup are placed as
whole gangs, and ``--max`` with a PodGroup counts whole gangs.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from extender.cli.common import add_feature_gates_flag
from extender.config import ConfigError, load
from extender.explain import gang, render
from extender.explain.cluster import (
    InputError,
    dry_run_framework,
    load_dump,
    load_objects,
    profile_for_pods,
)
from extender.explain.simulate import (
    GangMax,
    Simulation,
    expand,
    max_gangs,
    placements_dict,
    utilisation,
)
from extender.framework.features import Features
from extender.framework.podgroups import PODGROUPS, gang_min_count, pod_group_name
from extender.offline import Cluster, apiserver_defaults

PROG = "kube-extender simulate"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--cluster", required=True, metavar="DUMP", help="file or directory")
    p.add_argument("--pods", metavar="FILE", help="pods or controllers to schedule, in order")
    p.add_argument("--max", metavar="PODSPEC", help="how many more replicas of this pod fit")
    p.add_argument("--limit", type=int, default=100_000, help="--max stops here")
    p.add_argument("--config", help="KubeSchedulerConfiguration (default: the default profile)")
    p.add_argument("--profile", help="profile (default: each pod's schedulerName)")
    p.add_argument("-o", "--output", choices=("table", "json", "yaml", "html"), default="table")
    p.add_argument("--seed", type=int, default=0, help="tie-breaking RNG seed")
    add_feature_gates_flag(p)
    return p


@contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while pods are placed, or None: only on a terminal, and not
    under ``-o json``/``yaml`` (whose readers want the document alone). ``total`` 0: unknown
    (``--max`` counts up to the first pod that does not fit)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    with tqdm(desc=label, unit="pod", file=sys.stderr, leave=False, dynamic_ncols=True) as bar:

        def report(done: int, total: int) -> None:
            if total and bar.total != total:
                bar.total = total
            bar.update(done - bar.n)

        yield report


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if not args.pods and not args.max:
        p.error("give --pods FILE, --max PODSPEC, or both")
    try:
        config = load(args.config, features=args.feature_gates) if args.config else None
        return _simulate(args, config)
    except (InputError, ConfigError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


# Kinds a --pods or --max file may bring along for its pods (a ResourceClaimTemplate next to
# the Deployment that names it): added to the simulated cluster.
DRA_KINDS = ("ResourceClaimTemplate", "ResourceClaim", "DeviceClass", "ResourceSlice")
# And the PodGroups its pods name (scheduling.k8s.io/v1alpha2; scheduler-plugins'
# scheduling.x-k8s.io ones join the cluster too, for Coscheduling).
GROUP_KINDS = ("PodGroup",)


def is_workload_pod_group(obj: dict) -> bool:
    """A PodGroup of the workload API (``scheduling.k8s.io``), what gangs are made of."""
    return obj.get("kind") == "PodGroup" and (obj.get("apiVersion") or "").startswith(
        "scheduling.k8s.io/"
    )


def _gang_template(
    source: str, objects: list[dict], pods: list[dict], cluster: Cluster
) -> tuple[dict, list[dict]] | None:
    """The gang ``--max`` copies: the file's PodGroup (or the dump's, named by its pods) and
    its members (every pod of the file; a lone pod is repeated up to ``minCount``); ``None``
    when the file names no pod group."""
    groups = [o for o in objects if is_workload_pod_group(o)]
    named = sorted({n for n in (pod_group_name(p) for p in pods) if n})
    if not groups and not named:
        return None
    if len(groups) > 1 or len(named) > 1:
        raise InputError(f"{source}: --max counts one gang: give one PodGroup and its pods")
    if groups:
        pod_group = groups[0]
    else:
        namespace = (pods[0].get("metadata") or {}).get("namespace") or "default"
        found = cluster.lister(PODGROUPS).get(namespace, named[0])
        if found is None:
            raise InputError(
                f"{source}: the pods name pod group {named[0]!r}, which is neither in the file "
                "nor in the dump: give its PodGroup (scheduling.k8s.io/v1alpha2)"
            )
        pod_group = found
    members = pods
    if len(members) == 1:
        members = members * max(1, gang_min_count(pod_group) or 1)
    return pod_group, members


def _simulate(args: argparse.Namespace, config: Any) -> int:
    features: Features = args.feature_gates
    cluster = load_dump(args.cluster)
    given = load_objects(args.pods) if args.pods else []
    pod_objects = list(given)
    pods = expand(given, args.seed) if args.pods else []
    template = None
    gang_template = None
    if args.max:
        max_objects = load_objects(args.max)
        given += max_objects
        found = [o for o in max_objects if o.get("kind") == "Pod"]
        controllers = expand([o for o in max_objects if o.get("kind") != "Pod"])
        found += controllers if features.generic_workload else controllers[:1]
        if not found:
            raise InputError(f"{args.max}: no Pod (or controller template) in the file")
        template = apiserver_defaults(found[0])
        if features.generic_workload:
            gang_template = _gang_template(
                args.max, max_objects, [apiserver_defaults(p) for p in found], cluster
            )
        elif any(is_workload_pod_group(o) for o in max_objects) or pod_group_name(template):
            raise InputError(f"{args.max}: a pod group: {gang.ERR_NEEDS_GENERIC_WORKLOAD}")
    for obj in given:
        if obj.get("kind") in DRA_KINDS:
            cluster.add(obj)
    # The --pods file's PodGroups join the cluster; the --max file's is copied per gang.
    for obj in pod_objects:
        if obj.get("kind") in GROUP_KINDS:
            cluster.add(obj)
    config, profile, notes = profile_for_pods(
        config, pods + ([template] if template else []), args.profile, features
    )
    if not features.generic_workload and any(pod_group_name(p) for p in pods):
        notes.append(
            "some pods name a pod group (spec.schedulingGroup): placed one by one, as a "
            "scheduler without the feature gates places them; --feature-gates "
            "GenericWorkload=true,GangScheduling=true places them as whole gangs"
        )
    name = profile.scheduler_name
    fwk = dry_run_framework(config, profile, cluster, args.seed)
    sim = Simulation(fwk, cluster, args.seed, features)
    before = utilisation(sim.snapshot)
    report: dict[str, Any] = {"version": 1, "kind": "Simulation", "profile": name}
    report["extenders"] = extenders_not_called(config)
    report["notes"] = notes + (
        [
            f"the config's extenders ({', '.join(e['urlPrefix'] for e in report['extenders'])}) "
            "were not called: simulate is offline, so these placements are the profile's "
            "plugins alone"
        ]
        if report["extenders"]
        else []
    )
    quiet = args.output in ("json", "yaml")
    with _progress("scheduling", quiet) as progress:
        placements = sim.run(pods, progress) if pods else []
    report["placements"] = placements_dict(placements)
    if gang_template is not None:
        with _progress("gangs", quiet) as progress:
            result = max_gangs(sim, *gang_template, args.limit, progress)
        report["max"] = gang_max_dict(gang_template[0], gang_template[1], result)
    elif template is not None:
        with _progress("replicas", quiet) as progress:
            count, why, per_node = sim.max_replicas(template, args.limit, progress)
        report["max"] = {
            "pod": (template.get("metadata") or {}).get("name"),
            "replicas": count,
            "perNode": dict(sorted(per_node.items())),
            "stoppedBy": why.fit_error if why is not None else None,
            "stoppedByPlugins": stopped_by_plugins(why),
            "stoppedByDetail": stopped_by_detail(why),
        }
    report["utilisation"] = {"before": before, "after": utilisation(sim.snapshot)}
    unscheduled = [p.why_not for p in placements if p.why_not is not None]
    if args.output in ("json", "yaml"):
        report["explanations"] = [render.to_dict(e) for e in unscheduled if e.pod]
        sys.stdout.write(render.dumps(report, args.output))
    elif args.output == "html":
        sys.stdout.write(to_html(report, [render.to_dict(e) for e in unscheduled if e.pod]))
    else:
        sys.stdout.write(table(report))
    return 0


def gang_max_dict(pod_group: dict, members: list[dict], result: GangMax) -> dict[str, Any]:
    """``max`` for a gang: the replica keys (pods placed) and the gang's own."""
    why = result.why
    stopped = why.fit_error if why is not None and why.fit_error else None
    return {
        "pod": (members[0].get("metadata") or {}).get("name"),
        "podGroup": (pod_group.get("metadata") or {}).get("name"),
        "gangSize": result.size,
        "minCount": result.min_count,
        "gangs": result.gangs,
        "replicas": result.pods,
        "perNode": dict(sorted(result.per_node.items())),
        "stoppedBy": stopped or result.stopped_message or None,
        "stoppedByGroup": {
            "verdict": result.stopped_verdict,
            "message": result.stopped_message,
            "blocking": result.blocking or None,
        }
        if result.stopped_verdict
        else None,
        "stoppedByPlugins": stopped_by_plugins(why),
        "stoppedByDetail": stopped_by_detail(why),
    }


def stopped_by_plugins(why: Any) -> dict[str, int]:
    """Plugin -> the number of nodes it rejected the next replica on (what stops ``--max``)."""
    counts: dict[str, int] = {}
    for verdict in why.nodes if why is not None else ():
        if verdict.status is not None:
            plugin = verdict.status.plugin or "-"
            counts[plugin] = counts.get(plugin, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def stopped_by_detail(why: Any) -> list[dict[str, Any]]:
    """The rejected nodes' details (DynamicResources: which request got no devices, why), each
    with the number of nodes it was said of, most common first."""
    counts: dict[str, int] = {}
    for verdict in why.nodes if why is not None else ():
        for line in verdict.detail:
            counts[line] = counts.get(line, 0) + 1
    return [
        {"detail": line, "nodes": n}
        for line, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def extenders_not_called(config: Any) -> list[dict[str, Any]]:
    """The config's ``extenders:`` as the report lists them (``called`` is always false)."""
    return [
        {"urlPrefix": e.get("urlPrefix"), "called": False}
        for e in (config.extenders if config is not None else ())
    ]


def table(report: dict[str, Any]) -> str:
    out: list[str] = []
    for note in report.get("notes") or ():
        out += render._wrap(f"Note: {note}", "")
    placements = report["placements"]
    if placements:
        placed = sum(1 for p in placements if p["node"])
        out.append(f"{placed}/{len(placements)} pods placed (profile {report['profile']})")
        out.append(f"  {'POD':<40} {'NODE':<30} PRIO")
        for p in placements:
            node = p["node"] or "-"
            out.append(
                f"  {render._cut(p['pod'], 40):<40} {render._cut(node, 30):<30} {p['priority']}"
            )
            if p["victims"]:
                out += render._wrap("preempts " + ", ".join(p["victims"]), "    ")
            if not p["node"]:
                if p.get("fitError") or p.get("error"):
                    out += render._wrap(p.get("fitError") or p.get("error") or "", "    ")
                if p.get("podGroup"):
                    out += render._wrap(_gang_line(p), "    ")
    if "max" in report:
        m = report["max"]
        out.append("")
        if "gangs" in m:
            quorum = f", minCount {m['minCount']}" if m["minCount"] is not None else ""
            out += render._wrap(
                f"{m['gangs']} more gangs of {m['podGroup']} ({m['gangSize']} pods{quorum}) "
                f"fit ({m['replicas']} pods)",
                "",
            )
            group = m.get("stoppedByGroup")
            if group and group["message"] and group["message"] != m["stoppedBy"]:
                out += render._wrap(f"the next gang: {group['message']}", "  ")
            if group and group["blocking"]:
                out += render._wrap(f"blocked by its member {group['blocking']}", "  ")
        else:
            out.append(f"{m['replicas']} more replicas of {m['pod']} fit")
        if m["stoppedBy"]:
            out += render._wrap(f"the next one: {m['stoppedBy']}", "  ")
        if m.get("stoppedByPlugins"):
            plugins = ", ".join(
                f"{plugin} on {n} node{'s' if n != 1 else ''}"
                for plugin, n in m["stoppedByPlugins"].items()
            )
            out += render._wrap(f"rejected by {plugins}", "  ")
        details = m.get("stoppedByDetail") or []
        for entry in details[:3]:
            n = entry["nodes"]
            out += render._wrap(f"- {entry['detail']} ({n} node{'s' if n != 1 else ''})", "    ")
        if len(details) > 3:
            out.append(f"    ... {len(details) - 3} more (-o json)")
    out.append("")
    out.append(f"  {'RESOURCE':<10} {'BEFORE':>8} {'AFTER':>8}")
    for resource, before in report["utilisation"]["before"].items():
        after = report["utilisation"]["after"][resource]
        out.append(f"  {resource:<10} {before['percent']:>7}% {after['percent']:>7}%")
    return "\n".join(out) + "\n"


_OUTCOMES = {
    gang.FITS: "fits, waits at Permit for its gang's quorum",
    gang.NEEDS_PREEMPTION: "fits after preemption",
    gang.NOT_TRIED: "not tried",
}


def _gang_line(p: dict[str, Any]) -> str:
    """Why a gang member was not placed, as to its group."""
    group, verdict, message = p["podGroup"], p["groupVerdict"], p["groupMessage"]
    if verdict == gang.SCHEDULABLE:
        return f"pod group {group} is schedulable without it"
    if verdict == gang.ALL_GATED:
        return f"pod group {group}: not tried: {message}"
    what = _OUTCOMES.get(p["outcome"], "")
    said = f" ({message})" if message else ""
    return (
        f"{what + '; ' if what else ''}pod group {group}: {verdict}{said}, none of its pods placed"
    )


HTML_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}th{background:#eee}
.fits{background:#d9f2d9}.rejected{background:#f8d7d7}.chosen{background:#9fdf9f;font-weight:bold}
.pending{background:#f8d7d7}input{padding:4px;width:30em}
"""
HTML_SCRIPT = """
document.getElementById('q').addEventListener('input',function(){var q=this.value.toLowerCase();
document.querySelectorAll('tr.row').forEach(function(r){
r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':''})});
"""


def to_html(report: dict[str, Any], explanations: list[dict[str, Any]]) -> str:
    """One self-contained page: placements, per unscheduled pod the node x plugin table
    coloured by verdict, and a filter box."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>kube-extender simulate</title>",
        f"<style>{HTML_STYLE}</style></head><body><h1>kube-extender simulate</h1>",
        *(f"<p><b>Note:</b> {e(note)}</p>" for note in report.get("notes") or ()),
        "<input id='q' placeholder='filter rows (pod, node, plugin, reason)'>",
        "<h2>Placements</h2><table><tr><th>pod</th><th>node</th><th>priority</th>"
        "<th>victims</th><th>why not</th></tr>",
    ]
    for p in report["placements"]:
        cls = "fits" if p["node"] else "pending"
        parts.append(
            f"<tr class='row {cls}'><td>{e(p['pod'])}</td><td>{e(p['node'] or '-')}</td>"
            f"<td>{p['priority']}</td><td>{e(', '.join(p['victims']))}</td>"
            f"<td>{e(p.get('fitError') or (_gang_line(p) if p.get('podGroup') else ''))}</td>"
            "</tr>"
        )
    parts.append("</table>")
    if "max" in report:
        m = report["max"]
        parts.append(
            f"<h2>Capacity</h2><p>{m['replicas']} more replicas of {e(str(m['pod']))} fit. "
            f"{e(m['stoppedBy'] or '')}</p>"
        )
    for ex in explanations:
        plugins = list(ex["scoreWeights"])
        pod = ex["pod"]
        parts.append(f"<h2>{e(pod['namespace'])}/{e(pod['name'])}: {e(ex['verdict'])}</h2>")
        parts.append(f"<p>{e(ex['fitError'] or '')}</p><table><tr><th>node</th><th>verdict</th>")
        parts += [f"<th>{e(pl)}</th>" for pl in plugins] + ["<th>total</th></tr>"]
        for node in ex["nodes"]:
            cls = "chosen" if node["chosen"] else ("fits" if node["fits"] else "rejected")
            verdict = "fits" if node["fits"] else f"{node['plugin']}: {'; '.join(node['reasons'])}"
            cells = "".join(
                f"<td>{(node['scores'] or {}).get(pl, {}).get('weighted', '')}</td>"
                for pl in plugins
            )
            parts.append(
                f"<tr class='row {cls}'><td>{e(node['name'])}</td><td>{e(verdict)}</td>"
                f"{cells}<td>{node['total'] if node['total'] is not None else ''}</td></tr>"
            )
        parts.append("</table>")
    util = report["utilisation"]
    parts.append("<h2>Utilisation</h2><table><tr><th>resource</th><th>before</th><th>after</th>")
    for resource, before in util["before"].items():
        parts.append(
            f"<tr><td>{resource}</td><td>{before['percent']}%</td>"
            f"<td>{util['after'][resource]['percent']}%</td></tr>"
        )
    parts.append(f"</table><script>{HTML_SCRIPT}</script></body></html>\n")
    return "".join(parts)


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2))
