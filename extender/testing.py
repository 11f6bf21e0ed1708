"""The plugin testing kit: run a plugin, or a whole profile, on a pod and a cluster made of plain
dicts, in pytest, without a cluster. Public and stable (``docs/plugin-api.md``).

It runs the SAME code as both shells: the config loader builds the profile (args defaulted and
validated as ``kube-extender serve``/``run`` would, ``args_schema`` included), a
:class:`~extender.framework.Framework` runs the plugins under the failure contract, and
:class:`~extender.framework.SchedulingAlgorithm` filters and scores over a
:class:`~extender.framework.Snapshot` built from the cluster's nodes and assigned pods.
Objects of other kinds (ConfigMaps, Services, custom resources) back ``handle.lister(kind)``.

Differences from one scheduling attempt of the standalone scheduler, on purpose:

* every node is filtered (the webhook's way: no early stop once enough nodes fit, no
  round-robin start), so :attr:`Result.statuses` has an answer for each node;
* nodes are scored even when only one fits (the scheduler skips scoring then), so a
  Score plugin's answer can be asserted with one node;
* the nominated-node fast path, PostFilter (preemption), Reserve, Permit and the binding
  cycle are not run.

What the plugins see follows the shells' contracts, so a test that passes here does not fail
behind kube-scheduler:

* pods as the apiserver stores them (:func:`apiserver_defaults`: a container's requests
  default to its limits);
* the pods on each node only when a plugin of the profile declares ``reads=(PODS,)``, as in
  the extender (``kube-extender serve`` watches pods only then); ``handle.lister(kind)`` only
  for the kinds the profile's plugins declare (others list empty); ``namespace_labels`` only
  when one declares ``NAMESPACES``.

Example::

    from extender.testing import Cluster, node, pod, run_plugin

    cluster = Cluster(nodes=[node("a", labels={"pool": "x"}), node("b")])
    result = run_plugin(MyPlugin, pod("p"), cluster, args={"label": "pool"})
    assert result.feasible == ["a"]
    assert result.reasons("b") == ("node(s) didn't have label pool",)

One module on purpose: a plugin author reads one page to learn the kit; the cluster itself
(:class:`Cluster`, :func:`apiserver_defaults`) is :mod:`extender.offline`'s, re-exported here.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from extender.config import API_VERSION, KIND, ConfigError, SchedulerConfig, load, loads
from extender.config.plugins import check_plugin, points_of
from extender.framework import (
    NAMESPACES,
    PODS,
    Code,
    CycleState,
    Diagnosis,
    Framework,
    Handle,
    Kind,
    Lister,
    Profile,
    Registry,
    SchedulingAlgorithm,
    SchedulingError,
    Snapshot,
    Status,
    fit_error_message,
)
from extender.framework.handle import CACHE_KINDS, EmptyLister, Services
from extender.framework.schedule import NO_NODES_AVAILABLE
from extender.offline import Cluster, apiserver_defaults
from extender.offline.cluster import is_path
from extender.plugins import IN_TREE

__all__ = [
    "Cluster",
    "ConfigError",
    "Result",
    "Runner",
    "apiserver_defaults",
    "node",
    "pod",
    "taint",
    "toleration",
    "run_plugin",
    "run_profile",
    "handle",
]

# The points of one scheduling cycle that the kit runs for a single plugin.
CYCLE_POINTS = ("preFilter", "filter", "preScore", "score")
KIT_PROFILE = "testing-kit"

# -- builders ----------------------------------------------------------------------------------


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Iterable[dict] = (),
    unschedulable: bool = False,
    allocatable: Mapping[str, str] | None = None,
    images: Mapping[str, int] | None = None,
) -> dict:
    """A Node as the API serves it: ``status.allocatable`` (= capacity) from ``cpu``, ``memory``,
    ``pods`` and ``allocatable`` (extra resources, e.g. ``{"nvidia.com/gpu": "2"}``); the
    ``kubernetes.io/hostname`` label plus ``labels``; ``images`` maps an image name to its size
    in bytes."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods, **(allocatable or {})}
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {"kubernetes.io/hostname": name, **(labels or {})},
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": resources, "capacity": dict(resources)}
    if images:
        status["images"] = [{"names": [image], "sizeBytes": size} for image, size in images.items()]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    node_name: str | None = None,
    tolerations: Iterable[dict] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: dict | None = None,
    priority: int | None = None,
    scheduler_name: str | None = None,
    uid: str | None = None,
    limits: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict:
    """A Pod as the API serves it: one container requesting ``cpu``/``memory`` (if given)
    with ``limits`` (e.g. ``{"cpu": "2"}``; the kit defaults unset requests to them, as the
    apiserver does); ``node_name`` makes it an assigned, Running pod (it then counts on that
    node). Other ``spec`` fields are passed as keyword arguments in camelCase
    (e.g. ``topologySpreadConstraints=[...]``)."""
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    pod_spec: dict[str, Any] = {"containers": [container], **spec}
    if tolerations:
        pod_spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if affinity:
        pod_spec["affinity"] = affinity
    if priority is not None:
        pod_spec["priority"] = priority
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    if node_name:
        pod_spec["nodeName"] = node_name
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": dict(labels or {}),
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict:
    """A node taint, for ``node(taints=[...])``."""
    return {"key": key, "value": value, "effect": effect}


def toleration(
    key: str = "", value: str = "", effect: str = "", operator: str | None = None
) -> dict:
    """A pod toleration; the operator defaults to ``Equal`` with a value, ``Exists`` without."""
    entry = {"key": key, "operator": operator or ("Equal" if value else "Exists")}
    if value:
        entry["value"] = value
    if effect:
        entry["effect"] = effect
    return entry


def _as_cluster(cluster: Cluster | Mapping[str, Any]) -> Cluster:
    return cluster if isinstance(cluster, Cluster) else Cluster.from_dict(cluster)


# -- results -----------------------------------------------------------------------------------


@dataclass
class Result:
    """What one run decided, to assert on.

    * ``statuses``: every node -> ``None`` (passed PreFilter and Filter) or the rejecting
      :class:`~extender.framework.Status` (``code``, ``reasons``, ``plugin``); nodes a
      PreFilter excluded carry its status.
    * ``feasible``: the names of the nodes that passed, sorted.
    * ``scores``: node -> plugin -> normalized score (0..100, after NormalizeScore, before the
      weight); ``weighted``: the same times the plugin's weight; ``totals``: node -> sum of
      the weighted scores (what the scheduler compares). Empty when nothing was scored.
    * ``chosen``: the node(s) with the highest total, sorted (several on a tie: the scheduler
      picks one of them at random). Empty when nothing fits.
    * ``fit_error``: ``"0/N nodes are available: ..."`` when no node fits, else ``None``.
    * ``error``: the Error status when a plugin failed (an exception, a timeout, an Error
      status: see the failure contract); the other fields then hold what was decided before.
    """

    pod: dict
    num_nodes: int
    statuses: dict[str, Status | None] = field(default_factory=dict)
    feasible: list[str] = field(default_factory=list)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    weighted: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    chosen: list[str] = field(default_factory=list)
    fit_error: str | None = None
    error: Status | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)

    def status(self, node_name: str) -> Status | None:
        """The node's filter status (``None``: it fits). ``KeyError`` for an unknown node."""
        return self.statuses[node_name]

    def code(self, node_name: str) -> Code:
        status = self.status(node_name)
        return Code.SUCCESS if status is None else status.code

    def reasons(self, node_name: str) -> tuple[str, ...]:
        status = self.status(node_name)
        return () if status is None else status.reasons

    def rejected_by(self, node_name: str) -> str:
        """The plugin that rejected the node ("" if it fits, or for a PreFilter subset)."""
        status = self.status(node_name)
        return "" if status is None else status.plugin

    @property
    def rejected(self) -> dict[str, Status]:
        """node -> status, for the nodes that do not fit."""
        return {name: s for name, s in self.statuses.items() if s is not None}

    def score(self, node_name: str, plugin: str) -> int:
        """One plugin's normalized (unweighted) score of a node."""
        return self.scores[node_name][plugin]


# -- runners -----------------------------------------------------------------------------------


class Runner:
    """One profile's Framework and SchedulingAlgorithm, built once; :meth:`run` per pod.

    ``config`` is a loaded :class:`~extender.config.SchedulerConfig`; ``profile`` names the
    profile to run (default: the first).
    """

    def __init__(
        self,
        config: SchedulerConfig,
        cluster: Cluster | Mapping[str, Any],
        *,
        profile: str | None = None,
        seed: int = 0,
    ) -> None:
        self.config = config
        self.cluster = _as_cluster(cluster)
        self.profile = _pick(config.profiles, profile)
        # The kinds the profile's plugins declare in `reads`: what the extender would watch.
        self.reads: frozenset[str] = frozenset(
            kind.name
            for name in self.profile.plugin_names()
            for kind in config.registry.reads(name)
        )
        services = Services(
            listers=self._lister,
            namespace_labels=(
                self.cluster.namespace_labels if NAMESPACES.name in self.reads else _no_labels
            ),
            rng=random.Random(seed),
        )
        self.framework = Framework(self.profile, config.registry, services)
        self.algorithm = SchedulingAlgorithm(rng=random.Random(seed))

    def _lister(self, kind: Kind) -> Lister:
        """As in the shells: a declared kind's objects; pods and namespaces (the cache's kinds)
        and undeclared kinds list empty."""
        if kind.name not in self.reads or kind in CACHE_KINDS:
            return EmptyLister()
        return self.cluster.lister(kind)

    def _snapshot(self) -> Snapshot:
        """The cluster's nodes; their pods only if a plugin declares ``PODS`` (the extender
        watches pods only then: a plugin that counts pods without declaring them sees none
        behind kube-scheduler, and so it does here)."""
        if PODS.name in self.reads:
            return self.cluster.snapshot()
        assigned = sum(1 for p in self.cluster.pods if (p.get("spec") or {}).get("nodeName"))
        if assigned:
            warnings.warn(
                f"the cluster's {assigned} assigned pod(s) are not on the nodes: no plugin of "
                f"profile {self.profile.scheduler_name!r} declares reads=(PODS,), so the "
                "extender would not watch pods (declare PODS if a plugin reads "
                "node_info.pods)",
                stacklevel=3,
            )
        return Snapshot.from_objects(self.cluster.nodes, [])

    def run(self, pod: dict) -> Result:
        """PreFilter and Filter on every node, then PreScore, Score and NormalizeScore with the
        weights on the feasible nodes, as :meth:`SchedulingAlgorithm.schedule_pod` does."""
        snapshot = self._snapshot()
        result = Result(pod=pod, num_nodes=len(snapshot))
        pod = apiserver_defaults(pod)
        state = CycleState()
        if len(snapshot) == 0:
            result.fit_error = NO_NODES_AVAILABLE
            return result
        fwk = self.framework
        try:
            feasible, diagnosis = self.algorithm.find_nodes_that_fit(
                fwk, state, pod, snapshot, evaluate_all=True
            )
        except SchedulingError as exc:
            result.error = exc.status
            return result
        result.diagnosis = diagnosis
        result.statuses = {info.name: diagnosis.status_of(info.name) for info in snapshot}
        for info in feasible:
            result.statuses[info.name] = None
        result.feasible = sorted(info.name for info in feasible)
        if not feasible:
            result.fit_error = fit_error_message(len(snapshot), diagnosis)
            return result
        try:
            node_scores = self.algorithm.prioritize_nodes(fwk, state, pod, feasible)
        except SchedulingError as exc:
            result.error = exc.status
            return result
        weights = fwk.score_weights
        for entry in node_scores:
            result.weighted[entry.name] = dict(entry.scores)
            result.scores[entry.name] = {
                plugin: value // weights.get(plugin, 1) for plugin, value in entry.scores.items()
            }
            result.totals[entry.name] = entry.total_score
        best = max(result.totals.values())
        result.chosen = sorted(name for name, total in result.totals.items() if total == best)
        return result


def _no_labels(namespace: str) -> dict | None:
    return None


def _pick(profiles: list[Profile], name: str | None) -> Profile:
    if name is None:
        return profiles[0]
    for profile in profiles:
        if profile.scheduler_name == name:
            return profile
    names = ", ".join(p.scheduler_name for p in profiles)
    raise ValueError(f"no profile named {name!r} (profiles: {names})")


def _load_config(
    config: str | Path | Mapping[str, Any], plugins: Iterable[type]
) -> SchedulerConfig:
    if isinstance(config, Mapping):
        return loads(yaml.safe_dump(dict(config)), "<dict>", plugins=plugins)
    if is_path(config):
        return load(config, plugins=plugins)
    return loads(str(config), "<string>", plugins=plugins)


def run_plugin(
    plugin: type | str,
    pod: dict,
    cluster: Cluster | Mapping[str, Any],
    args: Mapping[str, Any] | None = None,
    *,
    weight: int = 1,
) -> Result:
    """Run ONE plugin (a class, or the name of an in-tree or installed plugin) alone.

    A profile is built through the config loader with every default plugin disabled and
    ``plugin`` enabled at each of PreFilter, Filter, PreScore and Score it implements, with
    ``args`` as its pluginConfig (validated and defaulted as in the shells) and ``weight`` as
    its score weight. The default profile's other plugins are not involved: a node fits if this
    plugin's PreFilter and Filter let it.
    """
    classes = [plugin] if isinstance(plugin, type) else []
    name = plugin.name if isinstance(plugin, type) else plugin
    probe = loads(f"apiVersion: {API_VERSION}\nkind: {KIND}\n", "<probe>", plugins=classes)
    if name not in probe.registry:
        raise ValueError(f"unknown plugin {name!r}")
    if probe.registry.source(name) != IN_TREE:
        # What the loader says of an enabled plugin (signatures against the protocols),
        # before the points are picked from what the class implements.
        problem = check_plugin(probe.registry, name)
        if problem:
            raise ConfigError(problem)
    cls = probe.registry.plugin_class(name)
    points = points_of(cls) if cls is not None else frozenset(CYCLE_POINTS)
    plugins: dict[str, Any] = {"multiPoint": {"disabled": [{"name": "*"}]}}
    for point in CYCLE_POINTS:
        if point in points:
            entry = {"name": name, "weight": weight} if point == "score" else {"name": name}
            plugins[point] = {"enabled": [entry]}
    if not any(point in points for point in CYCLE_POINTS):
        raise ValueError(f"plugin {name!r} implements none of {', '.join(CYCLE_POINTS)}")
    profile: dict[str, Any] = {"schedulerName": KIT_PROFILE, "plugins": plugins}
    if args is not None:
        profile["pluginConfig"] = [{"name": name, "args": dict(args)}]
    config = {"apiVersion": API_VERSION, "kind": KIND, "profiles": [profile]}
    return Runner(_load_config(config, classes), cluster).run(pod)


def run_profile(
    pod: dict,
    cluster: Cluster | Mapping[str, Any],
    config: str | Path | Mapping[str, Any] | None = None,
    *,
    plugins: Iterable[type] = (),
    args: Mapping[str, Mapping[str, Any]] | None = None,
    profile: str | None = None,
) -> Result:
    """Run a whole profile on ``pod``.

    ``config``: a KubeSchedulerConfiguration file (a ``Path``, or a ``str`` without a newline),
    its YAML text, or its parsed mapping; ``plugins`` are extra classes it may name. Without a
    config: the default profile, with ``plugins`` added to its MultiPoint set (so each runs at
    every point it implements, weight 1) and ``args`` (plugin name -> args) as pluginConfig.
    ``profile`` names the profile to run (default: the first).
    """
    classes = list(plugins)
    if config is None:
        profile_doc: dict[str, Any] = {
            "schedulerName": KIT_PROFILE,
            "plugins": {"multiPoint": {"enabled": [{"name": c.name} for c in classes]}},
        }
        if args:
            profile_doc["pluginConfig"] = [{"name": n, "args": dict(a)} for n, a in args.items()]
        config = {"apiVersion": API_VERSION, "kind": KIND, "profiles": [profile_doc]}
    elif args:
        raise ValueError("args: give them in the config's pluginConfig")
    return Runner(_load_config(config, classes), cluster, profile=profile).run(pod)


def handle(cluster: Cluster | Mapping[str, Any] | None = None, *, seed: int = 0) -> Handle:
    """A real :class:`~extender.framework.Handle` to construct a plugin with in a test
    (``MyPlugin(args, testing.handle(cluster))``): the handle of a profile without plugins,
    whose ``lister(kind)`` answers from ``cluster`` (every kind; empty without one), with no
    API client, no events, no extenders and an RNG seeded with ``seed``."""
    services = (_as_cluster(cluster) if cluster is not None else Cluster()).services(seed)
    return Framework(Profile(scheduler_name=KIT_PROFILE), Registry(), services)
