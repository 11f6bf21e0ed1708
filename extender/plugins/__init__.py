"""In-tree plugins, named after the upstream plugin: one module each, or one package split along
upstream's files where upstream's directory splits it (the node-resources family,
DynamicResources, PodTopologySpread, InterPodAffinity, VolumeBinding, Coscheduling).

The registry maps each plugin name to its factory ``cls(args, handle)``. Modules are imported
on first use, so a profile only pays for the plugins it enables.
"""

from __future__ import annotations

from extender.framework.registry import LazyPlugin, Registry

# plugin name -> "module:Class" under extender.plugins
IN_TREE_PLUGINS: dict[str, str] = {
    "SchedulingGates": "scheduling_gates:SchedulingGates",
    "PrioritySort": "priority_sort:PrioritySort",
    "NodeUnschedulable": "node_unschedulable:NodeUnschedulable",
    "NodeName": "node_name:NodeName",
    "TaintToleration": "taint_toleration:TaintToleration",
    "NodeAffinity": "node_affinity:NodeAffinity",
    "NodePorts": "node_ports:NodePorts",
    "NodeResourcesFit": "noderesources.fit:NodeResourcesFit",
    "VolumeRestrictions": "volume_restrictions:VolumeRestrictions",
    "NodeVolumeLimits": "node_volume_limits:NodeVolumeLimits",
    "VolumeBinding": "volumebinding:VolumeBinding",
    "VolumeZone": "volume_zone:VolumeZone",
    "PodTopologySpread": "podtopologyspread:PodTopologySpread",
    "InterPodAffinity": "interpodaffinity:InterPodAffinity",
    "DynamicResources": "dynamicresources.dynamic_resources:DynamicResources",
    "DefaultPreemption": "default_preemption:DefaultPreemption",
    "NodeResourcesBalancedAllocation": (
        "noderesources.balanced_allocation:NodeResourcesBalancedAllocation"
    ),
    "ImageLocality": "image_locality:ImageLocality",
    "DefaultBinder": "default_binder:DefaultBinder",
    "NodeDeclaredFeatures": "node_declared_features:NodeDeclaredFeatures",
    "NodeNumber": "node_number:NodeNumber",
    # Workload-aware scheduling (feature gates GenericWorkload and GangScheduling).
    "GangScheduling": "gang_scheduling:GangScheduling",
    # Feature gate TopologyAwareWorkloadScheduling.
    "TopologyPlacementGenerator": "topology_placement_generator:TopologyPlacementGenerator",
    "PodGroupPodsCount": "pod_group_pods_count:PodGroupPodsCount",
    # scheduler-plugins' gang scheduling, opt-in (enabled by name, with its queueSort).
    "Coscheduling": "coscheduling.coscheduling:Coscheduling",
}


IN_TREE = "in-tree"


def in_tree_registry() -> Registry:
    registry = Registry()
    for name, target in IN_TREE_PLUGINS.items():
        registry.register(name, LazyPlugin(f"{__name__}.{target}"), IN_TREE)
    return registry


def plugin_class(name: str) -> type:
    """The class of an in-tree plugin (for config validation and docs)."""
    return LazyPlugin(f"{__name__}.{IN_TREE_PLUGINS[name]}").load()
