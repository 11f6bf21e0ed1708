"""Upstream v1.36 defaults for what we implement (spec §6.1-§6.3).

The default profile is upstream's MultiPoint list restricted to the plugins in
:data:`extender.plugins.IN_TREE_PLUGINS`. Absent, because they need objects or nodes we do not
model: VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, DynamicResources and
NodeDeclaredFeatures. NodeNumber (the seed's teaching plugin) is opt-in.
"""

from __future__ import annotations

from extender.framework.profile import PluginSpec

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# (name, score weight), in upstream's MultiPoint order.
DEFAULT_MULTI_POINT: list[PluginSpec] = [
    PluginSpec("SchedulingGates"),
    PluginSpec("PrioritySort"),
    PluginSpec("NodeUnschedulable"),
    PluginSpec("NodeName"),
    PluginSpec("TaintToleration", 3),
    PluginSpec("NodeAffinity", 2),
    PluginSpec("NodePorts"),
    PluginSpec("NodeResourcesFit", 1),
    PluginSpec("PodTopologySpread", 2),
    PluginSpec("InterPodAffinity", 2),
    PluginSpec("DefaultPreemption"),
    PluginSpec("NodeResourcesBalancedAllocation", 1),
    PluginSpec("ImageLocality", 1),
    PluginSpec("DefaultBinder"),
]

_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]

DEFAULT_ARGS: dict[str, dict] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeResourcesFit": {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": _RESOURCES},
    },
    "NodeResourcesBalancedAllocation": {"resources": _RESOURCES},
    "PodTopologySpread": {"defaultingType": "System", "defaultConstraints": []},
    "NodeAffinity": {},
    "NodeNumber": {"permitTimeoutSeconds": 10},
}

# The keys each plugin's args accept (decoding is strict, as upstream's).
ARG_KEYS: dict[str, frozenset[str]] = {
    "DefaultPreemption": frozenset({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}),
    "InterPodAffinity": frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}),
    "NodeResourcesFit": frozenset({"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}),
    "NodeResourcesBalancedAllocation": frozenset({"resources"}),
    "PodTopologySpread": frozenset({"defaultingType", "defaultConstraints"}),
    "NodeAffinity": frozenset({"addedAffinity"}),
    "NodeNumber": frozenset({"permitTimeoutSeconds"}),
}

DEFAULT_LEADER_ELECTION = {
    "leaderElect": True,
    "resourceLock": "leases",
    "resourceNamespace": "kube-system",
    # Upstream's default is "kube-scheduler"; ours must not contend for kube-scheduler's lease.
    "resourceName": "kube-extender",
    "leaseDuration": 15.0,
    "renewDeadline": 10.0,
    "retryPeriod": 2.0,
}

DEFAULT_CLIENT_CONNECTION = {"qps": 50.0, "burst": 100, "kubeconfig": ""}
