"""NodeDeclaredFeatures (PreFilter, Filter): a pod that needs a node feature only lands on a node
that declares it (upstream ``pkg/scheduler/framework/plugins/nodedeclaredfeatures``, with the
feature registry of ``k8s.io/component-helpers/nodedeclaredfeatures`` v0.36.3; feature gate
NodeDeclaredFeatures, beta and on by default in v1.36).

A kubelet publishes the features it implements in ``node.status.declaredFeatures`` (sorted,
unique: the apiserver validates both). PreFilter infers the features the pod's spec needs from
the registry (:data:`FEATURES`); of v1.36's five only two matter for scheduling:

- ``RestartAllContainersOnContainerExits``: a container or init container with a
  ``restartPolicyRules`` entry whose action is ``RestartAllContainers``;
- ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` with ``hostUsers: false``.

No requirement makes PreFilter Skip (then Filter is not called). Filter: the node must declare
every required feature, else UnschedulableAndUnresolvable with :data:`ERR_REASON`. Names a node
declares that the registry does not know are ignored; the node's list is read as upstream's
``FeatureMapper.TryMap`` reads it (a merge walk that assumes sorted input).

Reads the pod's spec and ``node.status.declaredFeatures``; mutates nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import Handle
from extender.framework.node_info import NodeInfo
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unresolvable

NAME = "NodeDeclaredFeatures"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match Pod's required features"

# The component version the plugin infers for (upstream: the binary's version.Get()); a feature
# whose MaxVersion is below it is no longer required. No v1.36 feature has a MaxVersion.
COMPONENT_VERSION = (1, 36, 3)


def _rules_restart_all(containers: object) -> bool:
    for container in containers or ():  # type: ignore[attr-defined]
        for rule in (container or {}).get("restartPolicyRules") or ():
            if (rule or {}).get("action") == "RestartAllContainers":
                return True
    return False


def _needs_restart_all_containers(spec: dict) -> bool:
    return _rules_restart_all(spec.get("containers")) or _rules_restart_all(
        spec.get("initContainers")
    )


def _needs_user_namespaces_host_network(spec: dict) -> bool:
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


def _never(spec: dict) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Feature:
    """One registry entry: its declared name, whether scheduling a pod with this spec needs
    it, and the last version it matters for (``None``: no bound)."""

    name: str
    infer_for_scheduling: Callable[[dict], bool]
    max_version: tuple[int, int, int] | None = None


# Upstream's features.AllFeatures, sorted by name as ndf.New sorts them: a FeatureSet is a
# bitmask over this order.
FEATURES: tuple[Feature, ...] = tuple(
    sorted(
        (
            Feature("RestartAllContainersOnContainerExits", _needs_restart_all_containers),
            # Only pod updates (in-place resize) need these two; scheduling never does.
            Feature("InPlacePodLevelResourcesVerticalScaling", _never),
            Feature("ExtendWebSocketsToKubelet", _never),
            Feature("InPlacePodVerticalScalingInitContainers", _never),
            Feature("UserNamespacesHostNetworkSupport", _needs_user_namespaces_host_network),
        ),
        key=lambda f: f.name,
    )
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)


def infer_for_pod_scheduling(
    spec: dict,
    features: Sequence[Feature] = FEATURES,
    version: tuple[int, int, int] = COMPONENT_VERSION,
) -> int:
    """The features scheduling a pod with ``spec`` needs, as a bitmask over ``features``."""
    required = 0
    for i, feature in enumerate(features):
        if feature.max_version is not None and version > feature.max_version:
            continue
        if feature.infer_for_scheduling(spec):
            required |= 1 << i
    return required


def try_map(declared: object, names: Sequence[str] = FEATURE_NAMES) -> int:
    """``node.status.declaredFeatures`` as a bitmask over ``names`` (sorted), unknown names
    ignored: upstream's merge walk, so an unsorted list maps as it does there."""
    if not isinstance(declared, list):
        return 0
    mapped, i, j = 0, 0, 0
    while i < len(declared) and j < len(names):
        name = declared[i]
        if not isinstance(name, str):
            i += 1  # the webhook boundary rejects these; never a crash here
        elif name == names[j]:
            mapped |= 1 << j
            i += 1
            j += 1
        elif name < names[j]:
            i += 1
        else:
            j += 1
    return mapped


def unmap(features: int, names: Sequence[str] = FEATURE_NAMES) -> list[str]:
    """The names of the features set in ``features``, sorted."""
    return [name for i, name in enumerate(names) if features >> i & 1]


def _declared(node: dict | None) -> object:
    return ((node or {}).get("status") or {}).get("declaredFeatures")


class _PreFilterState:
    """The pod's required features; read-only, so clone shares it."""

    __slots__ = ("required",)

    def __init__(self, required: int) -> None:
        self.required = required

    def clone(self) -> _PreFilterState:
        return self


class NodeDeclaredFeatures:
    name = NAME
    # Answers depend only on the pod's spec and the NodeInfo: the runtime may memoize them.
    memo_points = ("filter",)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.features: Sequence[Feature] = FEATURES
        self.names: tuple[str, ...] = FEATURE_NAMES
        self.version = COMPONENT_VERSION

    def _required(self, pod: dict | None) -> int:
        return infer_for_pod_scheduling((pod or {}).get("spec") or {}, self.features, self.version)

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = self._required(pod)
        if not required:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(required))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        try:
            s: _PreFilterState = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return Status.error(
                f'error reading "{PRE_FILTER_KEY}" from cycle-state: not found', plugin=NAME
            )
        declared = try_map(_declared(node_info.node), self.names)
        if s.required & ~declared:
            return unresolvable(ERR_REASON)
        return None

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray | None:
        """:meth:`filter` for every row (PreFilter ran, so the pod needs some feature)."""
        try:
            s: _PreFilterState = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            return None  # the per-node call reports it
        return np.fromiter(
            (not s.required & ~try_map(_declared(info.node), self.names) for info in table.infos),
            bool,
            len(table),
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE), self.is_schedulable_after_pod_update
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        """Skip only an update that leaves the declared features as they were."""
        if old is not None and (_declared(old) or []) == (_declared(new) or []):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_update(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        """Queue when the pod's own update changed the features it needs."""
        uid = ((pod.get("metadata") or {}).get("uid")) or ""
        if uid != (((new or {}).get("metadata") or {}).get("uid") or ""):
            return QueueingHint.QUEUE_SKIP
        if self._required(old) == self._required(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
