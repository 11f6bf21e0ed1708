"""The plugin API: the one module a plugin author imports (``from extender.framework import
...``). Every name in ``__all__`` is stable and documented in ``docs/plugin-api.md``; anything
reached another way (``extender.framework.runtime``, ``extender.plugins.*``) is internal.

Upstream counterparts: ``pkg/scheduler/framework/interface.go`` (points, Handle, Status),
``pkg/scheduler/framework/types.go`` (NodeInfo, PodInfo, events) and
``pkg/scheduler/framework/plugins/helper`` (normalization).
"""

from .columns import LabelColumn, NodeTable
from .cycle_state import CycleState, StateNotFound
from .events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from .handle import (
    CONFIG_MAPS,
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    DEVICE_CLASSES,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    Handle,
    Kind,
    Lister,
    SharedKey,
)
from .interfaces import (
    BatchFilterPlugin,
    BatchNormalizeScore,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScoreExtensions,
    PlacementScorePlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from .node_info import NodeInfo
from .normalize import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    DefaultNormalize,
    default_normalize_score,
    default_normalize_score_batch,
)
from .pod_info import PodInfo, QueuedPodInfo
from .podgroups import (
    POD_GROUP_STATES,
    PODGROUPS,
    Placement,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupState,
)
from .profile import PluginSpec, Profile
from .registry import Registry
from .resources import Resource as ResourceAmounts
from .results import NodeScore, PreFilterResult
from .runtime import Framework, ProfileError
from .schedule import Diagnosis, FitError, SchedulingAlgorithm, SchedulingError, fit_error_message
from .snapshot import Snapshot
from .status import SKIP, Code, Status, is_non_success, is_success, unresolvable, unschedulable

# `Resource` is the kind of object a cluster event is about (upstream's EventResource), not an
# amount of CPU or memory: `EventResource` says so, `ResourceAmounts` is the amounts' type
# (NodeInfo.requested / allocatable, PodInfo.requests). `Resource` stays, for compatibility.
EventResource = Resource

# The list is repeated in docs/plugin-api.md ("Public names"); a test keeps the two equal.
__all__ = [
    # extension points
    "PreEnqueuePlugin",
    "QueueSortPlugin",
    "PreFilterPlugin",
    "PreFilterExtensions",
    "FilterPlugin",
    "PostFilterPlugin",
    "PreScorePlugin",
    "ScorePlugin",
    "ScoreExtensions",
    "ReservePlugin",
    "PermitPlugin",
    "POD_GROUP_STATES",
    "PODGROUPS",
    "Placement",
    "PlacementScore",
    "PodGroupAssignments",
    "PodGroupInfo",
    "PodGroupState",
    "PlacementGeneratePlugin",
    "PlacementScoreExtensions",
    "PlacementScorePlugin",
    "PreBindPlugin",
    "PreBindPreFlightPlugin",
    "BindPlugin",
    "PostBindPlugin",
    "EnqueueExtensions",
    # batch forms (optional, for speed)
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "BatchNormalizeScore",
    "default_normalize_score_batch",
    "NodeTable",
    "LabelColumn",
    # handle and listers
    "Handle",
    "Lister",
    "Kind",
    "SharedKey",
    "PODS",
    "NAMESPACES",
    "SERVICES",
    "REPLICATION_CONTROLLERS",
    "CONFIG_MAPS",
    "REPLICA_SETS",
    "STATEFUL_SETS",
    "POD_DISRUPTION_BUDGETS",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "STORAGE_CLASSES",
    "CSI_NODES",
    "CSI_DRIVERS",
    "CSI_STORAGE_CAPACITIES",
    "DEVICE_CLASSES",
    "RESOURCE_SLICES",
    "RESOURCE_CLAIMS",
    # statuses
    "Status",
    "Code",
    "SKIP",
    "is_success",
    "is_non_success",
    "unschedulable",
    "unresolvable",
    # per-cycle data and cluster views
    "CycleState",
    "StateNotFound",
    "NodeInfo",
    "PodInfo",
    "ResourceAmounts",
    "NodeScore",
    "PreFilterResult",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "default_normalize_score",
    "DefaultNormalize",
    # cluster events (queueing hints)
    "ClusterEvent",
    "ClusterEventWithHint",
    "ActionType",
    "Resource",
    "EventResource",
    "QueueingHint",
    # the runner (what the shells and extender.testing build)
    "Framework",
    "Profile",
    "PluginSpec",
    "ProfileError",
    "Registry",
    "SchedulingAlgorithm",
    "SchedulingError",
    "Snapshot",
    "Diagnosis",
    "FitError",
    "fit_error_message",
    "QueuedPodInfo",
]
