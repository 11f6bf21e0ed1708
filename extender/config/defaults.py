"""Upstream v1.36 defaults for what we implement (upstream
``pkg/scheduler/apis/config/v1/defaults.go``).

The default profile is upstream's MultiPoint list (upstream
``pkg/scheduler/apis/config/v1/default_plugins.go``) restricted to the plugins in
:data:`extender.plugins.IN_TREE_PLUGINS`, in upstream order and with upstream score weights.

NodeDeclaredFeatures (feature gate NodeDeclaredFeatures, beta and on in v1.36) comes last, as
upstream's ``applyFeatureGates`` appends it; DynamicResources goes before DefaultPreemption (its
PostFilter first), as ``applyDynamicResources`` inserts it. Upstream defaults that are absent
here: none today (:data:`UPSTREAM_ONLY_PLUGINS`; a config may *disable* such a plugin, not
enable it). The feature-gated workload plugins are appended when their gates are on
(:func:`default_multi_point`), as ``applyGangScheduling`` and
``applyTopologyAwareWorkloadScheduling`` do. NodeNumber (the teaching plugin)
is in the registry but opt-in, so it is not in the default profile; so is Coscheduling
(scheduler-plugins' gang scheduling), enabled by name as upstream's out-of-tree build requires.
"""

from __future__ import annotations

import copy
from typing import Any

from extender.framework.features import DEFAULT_FEATURES, Features

# Upstream's name for the profile created when a config names none, defined next to Profile
# (whose default it is) and exported here with the other defaults.
from extender.framework.profile import DEFAULT_SCHEDULER_NAME as DEFAULT_SCHEDULER_NAME
from extender.framework.profile import PluginSpec
from extender.kube.leader_election import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RESOURCE_LOCK,
    DEFAULT_RETRY_PERIOD,
)
from extender.plugins.noderesources.resource_allocation import DEFAULT_RESOURCES

# Our own default when code asks for a profile without a config (the extender's profile).
OWN_SCHEDULER_NAME = "kube-extender"

# Upstream's MultiPoint defaults that we implement, in upstream order, with score weights
# (0: the plugin does not score).
DEFAULT_MULTI_POINT: tuple[PluginSpec, ...] = (
    PluginSpec("SchedulingGates"),
    PluginSpec("PrioritySort"),
    PluginSpec("NodeUnschedulable"),
    PluginSpec("NodeName"),
    PluginSpec("TaintToleration", 3),
    PluginSpec("NodeAffinity", 2),
    PluginSpec("NodePorts"),
    PluginSpec("NodeResourcesFit", 1),
    PluginSpec("VolumeRestrictions"),
    PluginSpec("NodeVolumeLimits"),
    PluginSpec("VolumeBinding"),
    PluginSpec("VolumeZone"),
    PluginSpec("PodTopologySpread", 2),
    PluginSpec("InterPodAffinity", 2),
    # Before DefaultPreemption (upstream applyDynamicResources): deallocating an idle claim
    # beats evicting a pod.
    PluginSpec("DynamicResources", 2),
    PluginSpec("DefaultPreemption"),
    PluginSpec("NodeResourcesBalancedAllocation", 1),
    PluginSpec("ImageLocality", 1),
    PluginSpec("DefaultBinder"),
    PluginSpec("NodeDeclaredFeatures"),
)


def default_multi_point(features: Features = DEFAULT_FEATURES) -> tuple[PluginSpec, ...]:
    """The MultiPoint defaults under ``features`` (upstream ``applyFeatureGates``)."""
    specs = DEFAULT_MULTI_POINT
    if features.gang_scheduling:
        specs += (PluginSpec("GangScheduling"),)
    if features.topology_aware_workload_scheduling:
        specs += (PluginSpec("TopologyPlacementGenerator"), PluginSpec("PodGroupPodsCount", 1))
    return specs


# Upstream plugins we do not implement: a config may disable them (no-op), not enable them.
UPSTREAM_ONLY_PLUGINS: frozenset[str] = frozenset()

# The keys each plugin's args accept (upstream decodes args strictly). A plugin missing here
# takes no args.
ARG_KEYS: dict[str, frozenset[str]] = {
    "DefaultPreemption": frozenset({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}),
    "InterPodAffinity": frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}),
    "NodeResourcesFit": frozenset({"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}),
    "NodeResourcesBalancedAllocation": frozenset({"resources"}),
    "PodTopologySpread": frozenset({"defaultingType", "defaultConstraints"}),
    "NodeAffinity": frozenset({"addedAffinity"}),
    "NodeNumber": frozenset({"permitTimeoutSeconds"}),
    "VolumeBinding": frozenset({"bindTimeoutSeconds", "shape"}),
    "DynamicResources": frozenset({"filterTimeout", "bindingTimeout"}),
    "Coscheduling": frozenset(
        {"permitWaitingTimeSeconds", "podGroupBackoffSeconds", "podGroupRejectPercentage"}
    ),
}


def _default_resources(resources: Any) -> Any:
    """An empty list means the default set; a weight of 0 means 1 (upstream SetDefaults)."""
    if resources is None or resources == []:
        return [dict(r) for r in DEFAULT_RESOURCES]
    if not isinstance(resources, list):
        return resources  # the plugin rejects it with a precise message
    out = []
    for item in resources:
        if isinstance(item, dict) and item.get("weight", 0) == 0:
            item = {**item, "weight": 1}
        out.append(item)
    return out


def _fit(args: dict) -> dict:
    args.setdefault("ignoredResources", [])
    args.setdefault("ignoredResourceGroups", [])
    strategy = args.get("scoringStrategy")
    if strategy is None:
        args["scoringStrategy"] = {
            "type": "LeastAllocated",
            "resources": [dict(r) for r in DEFAULT_RESOURCES],
        }
    elif isinstance(strategy, dict):
        # Upstream defaults only the resources of a given strategy, not its type.
        args["scoringStrategy"] = {
            **strategy,
            "resources": _default_resources(strategy.get("resources")),
        }
    return args


def _balanced(args: dict) -> dict:
    args["resources"] = _default_resources(args.get("resources"))
    return args


def _spread(args: dict) -> dict:
    if not args.get("defaultingType"):
        args["defaultingType"] = "System"
    args.setdefault("defaultConstraints", [])
    return args


def _inter_pod_affinity(args: dict) -> dict:
    args.setdefault("hardPodAffinityWeight", 1)
    args.setdefault("ignorePreferredTermsOfExistingPods", False)
    return args


def _preemption(args: dict) -> dict:
    args.setdefault("minCandidateNodesPercentage", 10)
    args.setdefault("minCandidateNodesAbsolute", 100)
    return args


def _node_number(args: dict) -> dict:
    args.setdefault("permitTimeoutSeconds", 10)
    return args


def _volume_binding(args: dict) -> dict:
    # The shape is defaulted only with StorageCapacityScoring (alpha, off in v1.36).
    args.setdefault("bindTimeoutSeconds", 600)
    return args


def _dynamic_resources(args: dict) -> dict:
    # Both defaults need feature gates that are on in v1.36 (DRASchedulerFilterTimeout;
    # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus).
    args.setdefault("filterTimeout", "10s")
    args.setdefault("bindingTimeout", "10m0s")
    return args


def _coscheduling(args: dict) -> dict:
    # scheduler-plugins apis/config/v1/defaults.go, SetDefaults_CoschedulingArgs.
    args.setdefault("permitWaitingTimeSeconds", 60)
    args.setdefault("podGroupBackoffSeconds", 0)
    args.setdefault("podGroupRejectPercentage", 10)
    return args


_DEFAULTERS = {
    "NodeResourcesFit": _fit,
    "NodeResourcesBalancedAllocation": _balanced,
    "PodTopologySpread": _spread,
    "InterPodAffinity": _inter_pod_affinity,
    "DefaultPreemption": _preemption,
    "NodeAffinity": lambda args: args,
    "NodeNumber": _node_number,
    "VolumeBinding": _volume_binding,
    "DynamicResources": _dynamic_resources,
    "Coscheduling": _coscheduling,
}


def has_args(name: str) -> bool:
    """Whether the plugin has an args type (and so a default pluginConfig entry)."""
    return name in _DEFAULTERS


def default_args(name: str, args: dict | None = None) -> dict:
    """``args`` (not mutated) with upstream's defaults filled in, as SetDefaults_<Plugin>Args."""
    result = copy.deepcopy(args) if args else {}
    defaulter = _DEFAULTERS.get(name)
    return defaulter(result) if defaulter is not None else result


DEFAULT_LEADER_ELECTION: dict[str, Any] = {
    "leaderElect": True,
    "leaseDuration": DEFAULT_LEASE_DURATION,
    "renewDeadline": DEFAULT_RENEW_DEADLINE,
    "retryPeriod": DEFAULT_RETRY_PERIOD,
    "resourceLock": DEFAULT_RESOURCE_LOCK,
    "resourceName": DEFAULT_LEASE_NAME,
    "resourceNamespace": DEFAULT_LEASE_NAMESPACE,
}

DEFAULT_CLIENT_CONNECTION: dict[str, Any] = {
    "kubeconfig": "",
    "acceptContentTypes": "",
    "contentType": "application/vnd.kubernetes.protobuf",
    "qps": 50.0,
    "burst": 100,
}

# A parsed full-Node body costs 6-8x its size in RSS: 32 MiB fits a 512 Mi container with
# headroom (docs/extender.md#memory). Node-cache mode sends names and needs far less.
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
# The pod budget (ExtenderConfiguration podBudget, extender.framework.budget), seconds: as long
# as DynamicResources' filterTimeout, well inside kube-scheduler's extender httpTimeout (30s).
DEFAULT_POD_BUDGET = 10.0
