"""One small protocol per extension point (upstream ``pkg/scheduler/framework/interface.go``).

A plugin implements only the points it needs; the runtime finds them with ``isinstance``
against these runtime-checkable protocols. Every method returns ``None`` for Success or a
:class:`~extender.framework.status.Status`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .cycle_state import CycleState
from .node_info import NodeInfo
from .pod_info import PodInfo
from .results import NodeScore, PostFilterResult, PreFilterResult
from .status import Status

if TYPE_CHECKING:
    import numpy as np

    from .columns import NodeTable
    from .events import ClusterEventWithHint
    from .pod_info import QueuedPodInfoLike
    from .podgroups import Placement, PlacementScore, PodGroupAssignments, PodGroupInfo


@runtime_checkable
class Plugin(Protocol):
    """What every plugin is: a ``name``, the one the configuration enables and weights it by.

    A plugin is built once per profile by its factory, ``factory(args, handle)``, and then
    called from several threads (the scheduling cycle, binding cycles, the webhook's request
    threads): keep per-pod data in the :class:`CycleState`, never on ``self``.
    """

    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    """Gates a pod before it enters the active queue (upstream ``PreEnqueuePlugin``)."""

    def pre_enqueue(self, pod: dict) -> Status | None:
        """Called before the pod is added to the active queue, from the event handlers; any
        non-success keeps it out (gated) until an event it registered for moves it again. Must
        be cheap: no API calls, no waiting, for it holds up the enqueueing of other pods.
        Standalone scheduler only (an extender is called for pods already dequeued)."""
        ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """Orders the scheduling queue (upstream ``QueueSortPlugin``); one per process, the same in
    every profile."""

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        """Whether ``a`` is scheduled before ``b``. A strict weak order; pure and cheap."""
        ...


class PreFilterExtensions(Protocol):
    """Updates a PreFilter plugin's cycle state as if ``pod_to_add``/``pod_to_remove`` were on
    ``node_info`` (used for nominated pods and preemption dry runs)."""

    def add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Update ``state`` as if ``pod_to_add`` ran on ``node_info`` while ``pod`` is being
        scheduled. Called only after this plugin's PreFilter, possibly on a clone of the state,
        and possibly several times before the next Filter of that node."""
        ...

    def remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Update ``state`` as if ``pod_to_remove`` no longer ran on ``node_info``; the same
        calling rules as :meth:`add_pod`."""
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Per-pod work once per cycle, before Filter (upstream ``PreFilterPlugin``)."""

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Called at the start of the scheduling cycle; computes what this plugin's Filter
        needs into ``state`` under its own key. Every PreFilter must succeed or the pod is
        rejected on every node. A :class:`PreFilterResult` restricts the nodes evaluated
        downstream (``None``: all of them). ``SKIP``: the result and message are ignored, and
        this plugin's Filter and extensions are not called in this cycle. ``nodes`` and the
        pod are shared: never mutate them."""
        ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """The object that updates this plugin's PreFilter state incrementally, or ``None``
        when that state does not depend on other pods."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Whether the pod can run on one node (upstream ``FilterPlugin``)."""

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        """``None`` (Success): the pod fits the node; else Unschedulable (preemption may help),
        UnschedulableAndUnresolvable (it may not) or Error. Called concurrently for different
        nodes, and also while evaluating nominated pods and preemption victims: read the node
        from ``node_info`` (which may hold pods that are not in the snapshot), not from a
        lister, and write nothing to ``state``."""
        ...


@runtime_checkable
class BatchFilterPlugin(Plugin, Protocol):
    """Optional batch form of Filter, for every node at once (:mod:`extender.framework.columns`).

    ``filter_batch`` returns a boolean array over the table's rows: True where ``filter`` would
    answer Success for that row's NodeInfo, False where it would not; or ``None`` to decline
    (the runtime then calls ``filter`` node by node). It runs after PreFilter, reads the same
    cycle state as ``filter``, and must not write it. The runtime still calls ``filter`` for a
    rejected node it reports on, so the status (reasons, code) always comes from ``filter``.
    """

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray | None:
        """Per table row, True where ``filter`` would answer Success; ``None``: declined."""
        ...


@runtime_checkable
class BatchScorePlugin(Plugin, Protocol):
    """Optional batch form of Score: ``score_batch`` returns an int64 array with, for each of
    ``rows`` (table rows), exactly what ``score`` returns for that row's NodeInfo (before
    NormalizeScore); or ``None`` to decline (the runtime then calls ``score`` node by node)."""

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """Per row of ``rows``, what ``score`` returns; ``None``: declined."""
        ...


@runtime_checkable
class BatchNormalizeScore(Protocol):
    """Optional batch form of NormalizeScore, on the object ``score_extensions()`` returns:
    ``normalize_score_batch`` gets the raw scores of ``nodes`` as an int64 array and returns
    the normalized array, exactly what ``normalize_score`` would write; or ``None`` to decline
    (the runtime then builds the ``NodeScore`` list)."""

    def normalize_score_batch(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo], scores: np.ndarray
    ) -> np.ndarray | None:
        """The normalized copy of ``scores`` (one per node of ``nodes``); ``None``: declined."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs when no node fits, e.g. preemption (upstream ``PostFilterPlugin``)."""

    def post_filter(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Called after PreFilter or Filter rejected the pod everywhere;
        ``filtered_node_status`` maps each node to the status it got. Success: the pod can be
        made schedulable (a :class:`PostFilterResult` may nominate a node); Unschedulable: it
        cannot; Error: the plugin failed. The first Success ends the PostFilter phase, so
        informational plugins go first and answer Unschedulable."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Per-pod work once per cycle over the feasible nodes (upstream ``PreScorePlugin``)."""

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        """Called with the nodes that passed Filter; every PreScore must succeed or the cycle
        fails. ``SKIP``: this plugin's Score is not called in this cycle."""
        ...


class ScoreExtensions(Protocol):
    """NormalizeScore for a Score plugin (upstream ``ScoreExtensions``)."""

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        """Rewrite ``scores[i].score`` in place, for all the scores this plugin's Score gave in
        this cycle; afterwards each must be in ``MIN_NODE_SCORE..MAX_NODE_SCORE``."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Ranks the feasible nodes (upstream ``ScorePlugin``)."""

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        """The node's score, called for each feasible node (concurrently). It must succeed or
        the cycle fails. Without NormalizeScore the score must already be in
        ``MIN_NODE_SCORE..MAX_NODE_SCORE``; the runtime multiplies it by the plugin's weight."""
        ...

    def score_extensions(self) -> ScoreExtensions | None:
        """The NormalizeScore of this plugin, or ``None`` if it has none."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Claims and releases per-node resources of the plugin's own (upstream ``ReservePlugin``)."""

    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """Called once the pod is assumed on ``node_name`` in the scheduler's cache. On any
        failure the runtime calls ``unreserve`` of every Reserve plugin."""
        ...

    def unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        """Undo ``reserve``: the pod was rejected, a later Reserve failed, or a later phase
        (Permit, PreBind, Bind) failed. Must be idempotent, and tolerate being called when this
        plugin's ``reserve`` was not (or not for this pod)."""
        ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Allows, rejects or delays binding (upstream ``PermitPlugin``)."""

    def permit(self, state: CycleState, pod: dict, node_name: str) -> tuple[Status | None, float]:
        """Called after Reserve, before PreBind. ``None``: allowed; ``Status(Code.WAIT)`` with
        a timeout in seconds: the pod waits (after the remaining Permit plugins ran) until
        ``handle.get_waiting_pod(uid).allow(self.name)`` or reject, and is rejected at the
        timeout; any other status rejects the pod."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """Work before the binding (upstream ``PreBindPlugin``), e.g. provisioning a volume."""

    def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """Called in the binding cycle, after Permit. Every PreBind must succeed or the pod is
        not bound (and Unreserve runs)."""
        ...


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

    def pre_bind_pre_flight(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """``None``: ``pre_bind`` has work for this pod; ``SKIP``: it has none; else an Error."""
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Binds the pod to its node (upstream ``BindPlugin``)."""

    def bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """Called in the configured order after every PreBind succeeded. ``SKIP``: this plugin
        does not handle the pod, the next one is asked; ``None``: bound, the rest are skipped;
        an Error: the pod is not bound (and Unreserve runs)."""
        ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    """Informational, after a successful binding (upstream ``PostBindPlugin``)."""

    def post_bind(self, state: CycleState, pod: dict, node_name: str) -> None:
        """Called once the pod is bound; the place to clean up per-pod state. Cannot fail."""
        ...


@runtime_checkable
class PlacementGeneratePlugin(Plugin, Protocol):
    """Proposes the node sets a pod group is tried on (upstream ``PlacementGeneratePlugin``;
    feature gate TopologyAwareWorkloadScheduling). At most one per profile."""

    def generate_placements(
        self, state: CycleState, pod_group: PodGroupInfo, parent: Placement
    ) -> tuple[list[Placement] | None, Status | None]:
        """Called once per pod group cycle with ``parent`` (every node); answer the placements,
        each a subset of ``parent``'s nodes, that the cycle tries the whole group on, one after
        the other. No placement at all makes the group unschedulable. ``state`` is the pod
        group cycle's (``state.pod_group_states`` holds its copies of the group states)."""
        ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    """Ranks the placements where the whole group fit (upstream ``PlacementScorePlugin``); its
    weight comes from the configuration as a score plugin's does."""

    def score_placement(
        self, state: CycleState, pod_group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> tuple[int, Status | None]:
        """Called for each placement where the group is schedulable, with where its pods went;
        answer a score (0..100 after ``normalize_placement_score``, if the plugin has one)."""
        ...


@runtime_checkable
class PlacementScoreExtensions(Protocol):
    """Optional companion of PlacementScore (upstream ``PlacementScoreExtensions``)."""

    def normalize_placement_score(
        self, state: CycleState, pod_group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        """Rewrite ``scores`` in place into 0..100, after every placement was scored."""
        ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """The cluster events that may make a pod this plugin rejected schedulable (upstream
    ``EnqueueExtensions``)."""

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Asked once at start-up (the answer must not depend on the cluster's state); the
        standalone scheduler requeues a pod this plugin rejected only on these events, and
        each event's queueing hint may skip events that cannot help. Not implementing it
        means every event."""
        ...


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
    "placementGenerate": PlacementGeneratePlugin,
    "placementScore": PlacementScorePlugin,
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
    "placementGenerate": "generate_placements",
    "placementScore": "score_placement",
}
