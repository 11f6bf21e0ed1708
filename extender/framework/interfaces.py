"""One small protocol per extension point (upstream ``pkg/scheduler/framework/interface.go``).

A plugin implements only the points it needs; the runtime finds them with ``isinstance``
against these runtime-checkable protocols. Every method returns ``None`` for Success or a
:class:`~extender.framework.status.Status`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .cycle_state import CycleState
from .status import Status
from .types import NodeInfo, NodeScore, PodInfo, PostFilterResult, PreFilterResult

if TYPE_CHECKING:
    import numpy as np

    from .columns import NodeTable
    from .events import ClusterEventWithHint
    from .types import QueuedPodInfoLike


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: dict) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool: ...


class PreFilterExtensions(Protocol):
    """Updates a PreFilter plugin's cycle state as if ``pod_to_add``/``pod_to_remove`` were on
    ``node_info`` (used for nominated pods and preemption dry runs)."""

    def add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(Plugin, Protocol):
    """Optional batch form of Filter, for every node at once (:mod:`extender.framework.columns`).

    ``filter_batch`` returns a boolean array over the table's rows: True where ``filter`` would
    answer Success for that row's NodeInfo, False where it would not; or ``None`` to decline
    (the runtime then calls ``filter`` node by node). It runs after PreFilter, reads the same
    cycle state as ``filter``, and must not write it. The runtime still calls ``filter`` for a
    rejected node it reports on, so the status (reasons, code) always comes from ``filter``.
    """

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray | None: ...


@runtime_checkable
class BatchScorePlugin(Plugin, Protocol):
    """Optional batch form of Score: ``score_batch`` returns an int64 array with, for each of
    ``rows`` (table rows), exactly what ``score`` returns for that row's NodeInfo (before
    NormalizeScore); or ``None`` to decline (the runtime then calls ``score`` node by node)."""

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None: ...


@runtime_checkable
class BatchNormalizeScore(Protocol):
    """Optional batch form of NormalizeScore, on the object ``score_extensions()`` returns:
    ``normalize_score_batch`` gets the raw scores of ``nodes`` as an int64 array and returns
    the normalized array, exactly what ``normalize_score`` would write; or ``None`` to decline
    (the runtime then builds the ``NodeScore`` list)."""

    def normalize_score_batch(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo], scores: np.ndarray
    ) -> np.ndarray | None: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None: ...


class ScoreExtensions(Protocol):
    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> tuple[int, Status | None]: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: dict, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(
        self, state: CycleState, pod: dict, node_name: str
    ) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None: ...


@runtime_checkable
class PreBindPreFlightPlugin(Plugin, Protocol):
    """Optional companion of PreBind (upstream ``PreBindPlugin.PreBindPreFlight``): before the
    binding cycle (ahead of WaitOnPermit), whether this plugin's ``pre_bind`` has work for the
    pod on ``node_name``. ``None`` (Success): it has, so the standalone scheduler writes the
    pod's ``status.nominatedNodeName`` first (upstream NominatedNodeNameForExpectation) for
    other components to see where the pod is going; ``SKIP``: nothing to do, and ``pre_bind``
    is not called for this pod; an Error status fails the binding cycle. Any other code is an
    error. Asked of the profile's preBind plugins only. It must be cheap and must not write
    anything: no API calls, no cycle state. A PreBind plugin without it counts as Success
    (its ``pre_bind`` may be slow)."""

    def pre_bind_pre_flight(
        self, state: CycleState, pod: dict, node_name: str
    ) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: dict, node_name: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


# The extension points by config name, in execution order (upstream
# ``pkg/scheduler/apis/config/types.go``, ``Plugins``), with the protocol a plugin implements.
EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}

# Extension point -> the method a plugin implements for it.
POINT_METHODS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}
