"""TopologyPlacementGenerator (PlacementGenerate): one placement per topology domain for a
PodGroup with a topology constraint (kubernetes
``pkg/scheduler/framework/plugins/topologyaware/topology_placement.go``; feature gate
TopologyAwareWorkloadScheduling, alpha, off by default).

Reads: the PodGroup's ``spec.schedulingConstraints.topology[0].key`` (the API allows one), the
pod group cycle's state of the group (``state.pod_group_states``) and the labels of the nodes of
the parent placement. Mutates nothing.

- No constraint: the parent placement itself (every node), as the only one.
- A constraint: the parent's nodes grouped by their value of the key (nodes without the label
  are in no placement); once some member is scheduled, only its domain (members in two domains
  are an error). Upstream iterates a map, so its order is random; here domains are sorted.
"""

from __future__ import annotations

from extender.framework.cycle_state import CycleState
from extender.framework.handle import Handle
from extender.framework.podgroups import PODGROUPS, Placement, PodGroupInfo
from extender.framework.status import Status

NAME = "TopologyPlacementGenerator"


def topology_key(pod_group: dict) -> str | None:
    """The key of the PodGroup's first topology constraint, or ``None``."""
    constraints = (pod_group.get("spec") or {}).get("schedulingConstraints") or {}
    topology = constraints.get("topology") or []
    if not topology or not isinstance(topology[0], dict):
        return None
    key = topology[0].get("key")
    return key if isinstance(key, str) and key else None


class TopologyPlacementGenerator:
    name = NAME
    reads = (PODGROUPS,)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.pod_groups = handle.lister(PODGROUPS)

    def generate_placements(
        self, state: CycleState, pod_group: PodGroupInfo, parent: Placement
    ) -> tuple[list[Placement] | None, Status | None]:
        group = self.pod_groups.get(pod_group.namespace, pod_group.name)
        if group is None:
            return None, Status.error(f'podgroups.scheduling.k8s.io "{pod_group.name}" not found')
        key = topology_key(group)
        if key is None:
            return [parent], None
        required: str | None = None
        states = state.pod_group_states or {}
        group_state = states.get(pod_group.key)
        if group_state is None:
            return None, Status.error(
                f"pod group state not found for pod group {pod_group.namespace}/{pod_group.name}"
            )
        snapshot = state.snapshot
        for pod in group_state.scheduled_pods():
            meta = pod.get("metadata") or {}
            node_name = (pod.get("spec") or {}).get("nodeName") or ""
            node = snapshot.get(node_name) if snapshot is not None else None
            if node is None:
                return None, Status.error(
                    "cannot determine domain for already scheduled pods: getting node for pod "
                    f'{meta.get("namespace")}/{meta.get("name")}: node "{node_name}" not found'
                )
            domain = node.labels.get(key)
            if domain is None:
                return None, Status.error(
                    "cannot determine domain for already scheduled pods: no topology domain "
                    f"found for pod {meta.get('namespace')}/{meta.get('name')}"
                )
            if required is not None and required != domain:
                return None, Status.error(
                    "cannot determine domain for already scheduled pods: more than 1 domain "
                    f"found for pod group: {required}, {domain}"
                )
            required = domain
        domains: dict[str, list] = {}
        for node in parent.nodes:
            domain = node.labels.get(key)
            if domain is not None and (required is None or domain == required):
                domains.setdefault(domain, []).append(node)
        return [Placement(name, nodes) for name, nodes in sorted(domains.items())], None
