"""The profile runner: runs a profile's plugins at each extension point with upstream semantics.

One :class:`Framework` per profile (upstream ``pkg/scheduler/framework/runtime/framework.go``).
It is also the typed *handle* given to plugin factories (:mod:`extender.framework.handle`).
Per-cycle data (including the snapshot) lives in :class:`CycleState`, so one framework serves
concurrent cycles (webhook request threads) safely.

Every plugin call goes through the failure contract of :mod:`extender.framework.failures`
(:mod:`.calls`): an exception, an overrun timeout or an Error status becomes an Error status
naming the plugin and the point, counted in ``handle.metrics.plugin_error``; nothing a plugin
raises escapes. The batch forms and memos of Filter and Score are in :mod:`.batch`.

One concept, the runner: one extension point after another, each a short loop with
upstream's semantics, reads best in one place (upstream's ``framework.go`` is larger).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from .. import budget
from ..cycle_state import CycleState
from ..events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from ..failures import timed
from ..handle import Kind, Lister, Services, SharedKey
from ..interfaces import (
    EXTENSION_POINTS,
    POINT_METHODS,
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from ..node_info import NodeInfo
from ..normalize import MAX_NODE_SCORE, MIN_NODE_SCORE
from ..pod_info import PodInfo, QueuedPodInfo
from ..podgroups import Placement, PlacementScore, PodGroupAssignments, PodGroupInfo
from ..profile import Profile
from ..registry import Registry
from ..results import NodePluginScores, NodeScore, NodeScoreList, PostFilterResult, PreFilterResult
from ..status import REJECTED_CODES, Code, Status, is_non_success, is_success
from .batch import MEMO_SPECS_PER_NODE, NO_REJECT, BatchPaths, batch_normalizes
from .calls import (
    PERMIT_ANSWER,
    PLACEMENTS_ANSWER,
    POST_FILTER_ANSWER,
    PRE_FILTER_ANSWER,
    STATUS_OR_NONE,
    WrongAnswer,
    not_status,
    wrong_return,
)
from .waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod, WaitingPods

_T = TypeVar("_T")

# The preBind plugins whose PreBindPreFlight answered Skip (upstream
# ``CycleState.SetSkipPreBindPlugins``): their PreBind is not run for this pod.
SKIP_PRE_BIND_KEY = "SkipPreBindPlugins"
MAX_TOTAL_SCORE = 2**63 - 1
# What a point's caller handles of a plugin's non-success codes (``PluginCalls._call``).
NOT_ERROR = frozenset(Code) - {Code.SUCCESS, Code.ERROR}
SKIP_ONLY = frozenset({Code.SKIP})
REJECTED_OR_SKIP = REJECTED_CODES | SKIP_ONLY
NO_CODES: frozenset[Code] = frozenset()


def _first_invalid_score(values: np.ndarray | list[Any]) -> Any:
    """The first score outside ``MIN_NODE_SCORE..MAX_NODE_SCORE`` (or not an int), or None."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        bad = (values < MIN_NODE_SCORE) | (values > MAX_NODE_SCORE)
        return int(values[int(np.argmax(bad))]) if bad.any() else None
    return next(
        (v for v in values if not (isinstance(v, int) and MIN_NODE_SCORE <= v <= MAX_NODE_SCORE)),
        None,
    )


def _add_pod(
    plugin: PreFilterPlugin, state: CycleState, pod: dict, other: PodInfo, info: NodeInfo
) -> Status | None:
    ext = plugin.pre_filter_extensions()
    return None if ext is None else ext.add_pod(state, pod, other, info)


def _remove_pod(
    plugin: PreFilterPlugin, state: CycleState, pod: dict, other: PodInfo, info: NodeInfo
) -> Status | None:
    ext = plugin.pre_filter_extensions()
    return None if ext is None else ext.remove_pod(state, pod, other, info)


# The reason the runtime appends to a Wait from Permit (upstream ``RunPermitPlugins``).
PERMIT_WAIT_REASON = "one or more plugins asked to wait and no plugin rejected pod"


class ProfileError(ValueError):
    """A profile that cannot be built (unknown plugin, plugin lacking the point, bad weight)."""


def _code_text(code: Code) -> str:
    """Upstream's ``Code.String()``: ``UNSCHEDULABLE_AND_UNRESOLVABLE`` is
    ``UnschedulableAndUnresolvable``."""
    return "".join(word.capitalize() for word in code.name.split("_"))


def _pod_uid(pod: dict) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


class Framework(BatchPaths):
    """Runs one profile. Also the handle passed to plugin factories."""

    def __init__(
        self,
        profile: Profile,
        registry: Registry,
        services: Services | None = None,
    ) -> None:
        services = services or Services()
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        # The Handle (extender.framework.handle): what plugins reach outside the core.
        self.services = services
        self.client = services.client
        self.event_recorder = services.event_recorder
        self.nominator = services.nominator
        self.metrics = services.metrics
        self.extenders = services.extenders
        self.rng = services.rng
        self.features = services.features
        self.waiting_pods = WaitingPods()

        self.plugins: dict[str, Any] = {}
        for name in sorted(profile.plugin_names()):
            factory = registry.get(name)
            if factory is None:
                raise ProfileError(f"profile {self.profile_name!r}: unknown plugin {name!r}")
            try:
                self.plugins[name] = factory(profile.plugin_config.get(name) or {}, self)
            except Exception as exc:
                raise ProfileError(
                    f"profile {self.profile_name!r}: plugin {name!r} failed to start: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

        self.points: dict[str, list[Any]] = {}
        # point -> [(plugin name, the plugin's method for it, timed if configured)]
        self._calls: dict[str, list[tuple[str, Callable[..., Any]]]] = {}
        for point, protocol in EXTENSION_POINTS.items():
            instances: list[Any] = []
            for spec in profile.plugins.get(point, ()):
                plugin = self.plugins[spec.name]
                if not isinstance(plugin, protocol):
                    raise ProfileError(
                        f"profile {self.profile_name!r}: plugin {spec.name!r} "
                        f"does not extend {point}"
                    )
                instances.append(plugin)
            self.points[point] = instances
            self._calls[point] = [(p.name, self._method(p, point)) for p in instances]

        self.score_weights: dict[str, int] = {}
        for spec in profile.plugins.get("score", ()):
            if spec.weight < 0:
                raise ProfileError(
                    f"profile {self.profile_name!r}: score plugin {spec.name!r} "
                    f"has a negative weight {spec.weight}"
                )
            self.score_weights[spec.name] = spec.weight or 1
        if sum(self.score_weights.values()) * MAX_NODE_SCORE > MAX_TOTAL_SCORE:
            raise ProfileError(f"profile {self.profile_name!r}: total score weight overflows")

        self._memos: dict[tuple[str, str], dict] = {}
        self._filter_memos = {
            p.name: m
            for p in self.points["filter"]
            if (m := self._memo_for(p, "filter")) is not None
        }
        self._score_memos = {
            p.name: m for p in self.points["score"] if (m := self._memo_for(p, "score")) is not None
        }
        # The filter loop runs once per node: its (name, method, memo) triples, built once.
        self._filter_calls = [
            (name, fn, self._filter_memos.get(name)) for name, fn in self._calls["filter"]
        ]
        # Batch forms (extender.framework.columns), used unless the plugin has a timeout at
        # that point (a batch call could not be timed per node). `use_batch` False: the
        # per-node reference path only (the equality tests compare the two).
        self.use_batch = True
        self._batch_filters = [
            (k, p.name, p.filter_batch)
            for k, p in enumerate(self.points["filter"])
            if isinstance(p, BatchFilterPlugin) and not self._timed(p.name, "filter")
        ]
        self._batch_scores = {
            p.name: p.score_batch
            for p in self.points["score"]
            if isinstance(p, BatchScorePlugin) and not self._timed(p.name, "score")
        }
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = self.points["preEnqueue"]
        self.queue_sort_plugins: list[QueueSortPlugin] = self.points["queueSort"]
        self.pre_filter_plugins: list[PreFilterPlugin] = self.points["preFilter"]
        self.filter_plugins: list[FilterPlugin] = self.points["filter"]
        self.post_filter_plugins: list[PostFilterPlugin] = self.points["postFilter"]
        self.pre_score_plugins: list[PreScorePlugin] = self.points["preScore"]
        self.score_plugins: list[ScorePlugin] = self.points["score"]
        self.reserve_plugins: list[ReservePlugin] = self.points["reserve"]
        self.permit_plugins: list[PermitPlugin] = self.points["permit"]
        self.pre_bind_plugins: list[PreBindPlugin] = self.points["preBind"]
        # Each preBind plugin with its PreBindPreFlight, or None: decided once here, as an
        # isinstance check against the runtime-checkable protocol costs tens of microseconds
        # (it walks the protocol's members), which every binding cycle paid per plugin.
        self._pre_flights = [
            (p.name, p.pre_bind_pre_flight if isinstance(p, PreBindPreFlightPlugin) else None)
            for p in self.pre_bind_plugins
        ]
        self.bind_plugins: list[BindPlugin] = self.points["bind"]
        self.post_bind_plugins: list[PostBindPlugin] = self.points["postBind"]
        if len(self.queue_sort_plugins) > 1:
            raise ProfileError(f"profile {self.profile_name!r}: only one queueSort plugin allowed")
        if len(self.points["placementGenerate"]) > 1:
            raise ProfileError(
                f"profile {self.profile_name!r}: only one placementGenerate plugin allowed"
            )
        self.placement_score_weights = {
            spec.name: spec.weight for spec in profile.plugins.get("placementScore", ())
        }

    def _timed(self, name: str, point: str) -> bool:
        return self.profile.plugin_timeouts.get(name, {}).get(point) is not None

    def _method(self, plugin: Any, point: str) -> Callable[..., Any]:
        method = getattr(plugin, POINT_METHODS[point])  # the protocol check above guarantees it
        seconds = self.profile.plugin_timeouts.get(plugin.name, {}).get(point)
        return method if seconds is None else timed(method, seconds)

    def _out_of_budget(self, state: CycleState, where: str) -> Status:
        """The Error of an attempt whose pod budget ran out (``extender.framework.budget``)."""
        exc = budget.BudgetExceeded(state.budget or 0)
        return Status(Code.ERROR, f"{exc} {where}", err=exc)

    # -- handle -------------------------------------------------------------------------

    def plugin(self, name: str) -> Any:
        return self.plugins.get(name)

    def lister(self, kind: Kind) -> Lister:
        return self.services.listers(kind)

    def namespace_labels(self, namespace: str) -> dict | None:
        return self.services.namespace_labels(namespace)

    def shared(self, key: SharedKey[_T]) -> _T:
        return self.services.shared.get(key, self)

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Per plugin, the cluster events that may make a pod it rejected schedulable.

        Plugins that do not say register for every event (upstream
        ``pkg/scheduler/framework/interface.go``, ``EnqueueExtensions``).
        """
        # Asked per unschedulable pod per cluster event: computed once, as upstream builds its
        # queueing-hint map once at start-up (each new claim at start-up walked every gated
        # pod through every plugin's isinstance(EnqueueExtensions) checks).
        cached: dict[str, list[ClusterEventWithHint]] | None = getattr(self, "_events", None)
        if cached is not None:
            return cached
        events: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            registered = None
            if isinstance(plugin, EnqueueExtensions):
                try:
                    registered = list(plugin.events_to_register())
                except Exception as exc:
                    self._failed(name, "preEnqueue", exc)
                wrong = next(
                    (e for e in registered or () if not isinstance(e, ClusterEventWithHint)), None
                )
                if wrong is not None:
                    # e.g. a bare ClusterEvent: the queue could not match it; every event
                    # requeues this plugin's pods instead.
                    detail = wrong_return(wrong, "ClusterEventWithHint items")
                    self._failed(name, "preEnqueue", WrongAnswer(f"events_to_register {detail}"))
                    registered = None
            events[name] = registered or [
                ClusterEventWithHint(ClusterEvent(Resource.WILDCARD, ActionType.ALL))
            ]
        self._events = events
        return events

    # -- queue --------------------------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: dict) -> Status | None:
        for name, pre_enqueue in self._calls["preEnqueue"]:
            status = self._call(name, "preEnqueue", pre_enqueue, pod, accept=NOT_ERROR)
            if is_non_success(status):
                status.plugin = name  # already so on an Error
                return status
        return None

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        name, less = self._calls["queueSort"][0]
        try:
            return bool(less(a, b))
        except Exception as exc:
            # A broken order must not break the queue: keep the insertion order.
            self._failed(name, "queueSort", exc)
            return False

    # -- prefilter / filter ---------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """PreFilter in profile order (upstream ``RunPreFilterPlugins``).

        Returns the merged node subset (``None``: all nodes), a rejecting or error status, and
        the plugins that rejected.
        """
        result: PreFilterResult | None = None
        rejected_by: set[str] = set()
        rejection: Status | None = None
        subset_plugins: list[str] = []
        for name, pre_filter in self._calls["preFilter"]:
            answer, error = self._answer(
                name, "preFilter", pre_filter, (state, pod, nodes), PRE_FILTER_ANSWER
            )
            if error is not None:
                return None, error, set()
            res, status = answer
            if is_non_success(status):
                if status.code == Code.SKIP:
                    state.skip_filter_plugins.add(name)
                    continue
                status.plugin = name
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, {name}
                if status.code in REJECTED_CODES:
                    rejected_by.add(name)
                    if rejection is None:
                        rejection = status
                    continue
                return None, self._failed(name, "preFilter", status.message), set()
            if res is not None and not res.all_nodes():
                subset_plugins.append(name)
                result = res if result is None else result.merge(res)
                if not result.node_names:
                    message = (
                        f"node(s) didn't satisfy plugin(s) [{' '.join(subset_plugins)}] "
                        "simultaneously"
                        if len(subset_plugins) > 1
                        else f"node(s) didn't satisfy plugin {subset_plugins[0]}"
                    )
                    status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, plugin=name)
                    return None, status, set(subset_plugins)
        if rejection is not None:
            return None, rejection, rejected_by
        if result is not None:
            result.plugins = subset_plugins
        return result, None, set()

    def _run_pre_filter_extension(
        self, point: str, state: CycleState, pod: dict, other: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        extend = _add_pod if point == "preFilterAddPod" else _remove_pod
        args = (state, pod, other, node_info)
        for plugin in self.pre_filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            status = self._call(plugin.name, point, extend, plugin, *args, accept=NO_CODES)
            if is_non_success(status):
                return status
        return None

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("preFilterAddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(
            "preFilterRemovePod", state, pod, pod_to_remove, node_info
        )

    def run_filter_plugins(
        self,
        state: CycleState,
        pod: dict,
        node_info: NodeInfo,
        answered: frozenset[int] = frozenset(),
        first_reject: int = NO_REJECT,
    ) -> Status | None:
        """Filter plugins in order, stopping at the first non-Success (upstream
        ``RunFilterPlugins``).

        With a batch answer for this node (``answered``, ``first_reject``: see
        :class:`BatchFilter`), plugins whose batch form let the node pass are not called again,
        and the first batch rejector is called for its status."""
        if state.deadline is not None and budget.expired(state):
            return self._out_of_budget(state, f"before node {node_info.name} was filtered")
        skip = state.skip_filter_plugins
        signature = None
        for k, (name, filter_, memo) in enumerate(self._filter_calls):
            if skip and name in skip:
                continue
            if answered and k < first_reject and k in answered:
                continue  # its batch form let this node pass
            try:
                if memo is None or node_info.scratch:
                    status = filter_(state, pod, node_info)
                else:
                    if signature is None:
                        signature = self.pod_signature(state, pod)
                    entry = memo.get(node_info.name)
                    if entry is None or entry[0] != node_info.generation:
                        entry = memo[node_info.name] = (node_info.generation, {})
                    table: dict[bytes, Any] = entry[1]
                    if signature in table:
                        status = table[signature]
                    else:
                        status = filter_(state, pod, node_info)
                        if status is None or (
                            isinstance(status, Status) and status.code != Code.ERROR
                        ):
                            if len(table) >= MEMO_SPECS_PER_NODE:
                                table.clear()
                            table[signature] = status
            except Exception as exc:
                return self._failed(name, "filter", exc)
            if status is not None:
                if not isinstance(status, Status):
                    return self._failed(name, "filter", wrong_return(status, STATUS_OR_NONE))
                if status.code == Code.SUCCESS:
                    continue
                if status.code not in REJECTED_CODES:
                    return self._failed(name, "filter", status.message)
                status.plugin = name
                return status
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None:
        """Filter, counting pods nominated to the node with >= priority (upstream
        ``RunFilterPluginsWithNominatedPods``)."""
        priority = (pod.get("spec") or {}).get("priority") or 0
        uid = _pod_uid(pod)
        nominated = [
            p
            for p in self.nominator.nominated_pods_for_node(node_info.name)
            if p.priority >= priority and p.uid != uid
        ]
        if nominated:
            state_with = state.clone()
            info_with = node_info.clone()
            info_with.scratch = True
            for pod_info in nominated:
                info_with.add_pod(pod_info)
                status = self.run_pre_filter_extension_add_pod(state_with, pod, pod_info, info_with)
                if status is not None:
                    return status
            status = self.run_filter_plugins(state_with, pod, info_with)
            if status is not None:
                return status
        return self.run_filter_plugins(state, pod, node_info)

    def run_post_filter_plugins(
        self, state: CycleState, pod: dict, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """PostFilter (upstream ``RunPostFilterPlugins``): the first Success or Unresolvable
        ends it."""
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        for name, post_filter in self._calls["postFilter"]:
            args = (state, pod, filtered_node_status)
            answer, error = self._answer(name, "postFilter", post_filter, args, POST_FILTER_ANSWER)
            if error is not None:
                return None, error
            res, status = answer
            if is_success(status):
                return res, status or Status(Code.SUCCESS)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                status.plugin = name
                return res, status
            if status.code != Code.UNSCHEDULABLE:
                return None, self._failed(name, "postFilter", status.message)
            reasons.extend(status.reasons)
            rejector = rejector or name
            if res is not None and res.nominating_info is not None:
                result = res
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # -- scoring ------------------------------------------------------------------------

    def run_pre_score_plugins(
        self,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        failures: dict[str, Status] | None = None,
    ) -> Status | None:
        """PreScore in profile order; the first Error ends it. With ``failures`` (the extender's
        prioritize verb, where upstream ignores a failed answer as a whole), a failing plugin
        is recorded there and its Score skipped instead, so the others still score."""
        for name, pre_score in self._calls["preScore"]:
            status = self._call(name, "preScore", pre_score, state, pod, nodes, accept=SKIP_ONLY)
            if not is_non_success(status):
                continue
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(name)
                continue
            if failures is None:
                return status
            failures[name] = status
            state.skip_score_plugins.add(name)
        return None

    def run_score_plugins(
        self,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        failures: dict[str, Status] | None = None,
    ) -> tuple[Sequence[NodePluginScores], Status | None]:
        """Score, NormalizeScore, validation and weights (upstream ``RunScorePlugins``). The
        first failing plugin fails the whole call; with ``failures`` it is recorded there and
        left out of the totals instead (see :meth:`run_pre_score_plugins`)."""
        skip = state.skip_score_plugins
        names: list[str] = []
        columns: list[list[int]] = []  # per plugin: its weighted score of each node
        # int64 is exact: the profile's weights x MAX_NODE_SCORE fit (checked at build).
        totals = np.zeros(len(nodes), dtype=np.int64)
        for plugin, (name, score) in zip(self.score_plugins, self._calls["score"], strict=True):
            if name in skip:
                continue
            if state.deadline is not None and budget.expired(state):
                return [], self._out_of_budget(state, f"before Score plugin {name!r} ran")
            values, status = self._plugin_scores(state, pod, nodes, plugin, name, score)
            if status is not None:
                if failures is None:
                    return [], status
                failures[name] = status
                continue
            weight = self.score_weights.get(name, 1)
            weighted = np.asarray(values, dtype=np.int64) * weight
            names.append(name)
            columns.append(weighted.tolist())
            totals += weighted
        if not columns:
            return [NodePluginScores(info.name) for info in nodes], None
        return NodeScoreList([i.name for i in nodes], totals.tolist(), (names, columns)), None

    def _plugin_scores(
        self,
        state: CycleState,
        pod: dict,
        nodes: list[NodeInfo],
        plugin: Any,
        name: str,
        score: Callable[..., Any],
    ) -> tuple[np.ndarray | list[int], Status | None]:
        """One plugin's normalized, validated scores of ``nodes`` (unweighted), or its Error."""
        values, status = self._raw_scores(state, pod, nodes, name, score)
        if status is not None:
            return [], status
        try:
            ext = plugin.score_extensions()
            normalized = None
            if isinstance(values, np.ndarray) and batch_normalizes(ext):
                normalized = ext.normalize_score_batch(state, pod, nodes, values)
            if normalized is not None:
                values = normalized
            elif ext is not None:
                # NodeScore objects only for the plugins that normalize across nodes.
                listed = values.tolist() if isinstance(values, np.ndarray) else values
                node_scores = [
                    NodeScore(info.name, v) for info, v in zip(nodes, listed, strict=True)
                ]
                status = ext.normalize_score(state, pod, node_scores)
                if not_status(status):
                    detail = wrong_return(status, STATUS_OR_NONE)
                    return [], self._failed(name, "normalizeScore", detail)
                if is_non_success(status):
                    return [], self._failed(name, "normalizeScore", status.message)
                values = [ns.score for ns in node_scores]
        except Exception as exc:
            return [], self._failed(name, "normalizeScore", exc)
        if len(values) != len(nodes):
            self.metrics.plugin_error(name, "score")
            return [], Status.error(
                f'plugin "{name}" returned {len(values)} scores for {len(nodes)} nodes'
            ).with_plugin(name)
        invalid = _first_invalid_score(values)
        if invalid is not None:
            self.metrics.plugin_error(name, "score")
            return [], Status.error(
                f'plugin "{name}" returns an invalid score {invalid}, '
                f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                "after normalizing"
            ).with_plugin(name)
        return values, None

    # -- reserve / permit ---------------------------------------------------------------

    # -- pod group placements (feature gate TopologyAwareWorkloadScheduling) ---------------

    def run_placement_generate_plugins(
        self, state: CycleState, pod_group: PodGroupInfo, nodes: list[NodeInfo]
    ) -> tuple[list[Placement], Status | None]:
        """Upstream ``RunPlacementGeneratePlugins``: the one PlacementGenerate plugin's
        placements of ``nodes`` (no plugin: all of them, as one placement)."""
        parent = Placement("", list(nodes))
        calls = self._calls["placementGenerate"]
        if not calls:
            return [parent], None
        name, generate = calls[0]
        answer, error = self._answer(
            name, "placementGenerate", generate, (state, pod_group, parent), PLACEMENTS_ANSWER
        )
        if error is not None:
            return [], error
        placements, status = answer
        if status is not None:
            status.plugin = name
            return [], status
        if not placements:
            return [], Status(Code.UNSCHEDULABLE, "no feasible placements found", plugin=name)
        return list(placements), None

    def run_placement_score_plugins(
        self, state: CycleState, pod_group: PodGroupInfo, assignments: list[PodGroupAssignments]
    ) -> tuple[list[int], Status | None]:
        """Upstream ``RunPlacementScorePlugins``: every PlacementScore plugin on every
        placement, normalized, weighted and summed: one total per placement."""
        totals = [0] * len(assignments)
        for plugin in self.points["placementScore"]:
            scores: list[PlacementScore] = []
            for assignment in assignments:
                try:
                    score, status = plugin.score_placement(state, pod_group, assignment)
                except Exception as exc:
                    return [], self._failed(plugin.name, "placementScore", exc)
                if status is not None:
                    return [], Status.error(
                        f'running PlacementScore plugins: plugin "{plugin.name}" failed with: '
                        f"{status.message}"
                    )
                scores.append(PlacementScore(assignment.placement, int(score)))
            normalize = getattr(plugin, "normalize_placement_score", None)
            if normalize is not None:
                status = normalize(state, pod_group, scores)
                if status is not None:
                    return [], Status.error(
                        "running NormalizePlacementScore on PlacementScore plugins: "
                        f'plugin "{plugin.name}" failed with: {status.message}'
                    )
            weight = self.placement_score_weights.get(plugin.name, 1)
            for i, s in enumerate(scores):
                if not MIN_NODE_SCORE <= s.score <= MAX_NODE_SCORE:
                    return [], Status.error(
                        "applying score defaultWeights on PlacementScore plugins: plugin "
                        f'"{plugin.name}" returns an invalid score {s.score}, it should in the '
                        f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    )
                totals[i] += s.score * weight
        return totals, None

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: dict, node_name: str
    ) -> Status | None:
        for name, reserve in self._calls["reserve"]:
            status = self._call(name, "reserve", reserve, state, pod, node_name)
            if is_non_success(status):
                status.plugin = name  # already so on an Error
                return status
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        # Reverse order; Unreserve must tolerate a pod that was never reserved.
        for plugin in reversed(self.reserve_plugins):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception as exc:
                self._failed(plugin.name, "unreserve", exc)

    def run_permit_plugins(
        self, state: CycleState, pod: dict, node_name: str, *, add_waiting: bool = True
    ) -> Status | None:
        """Permit (upstream ``RunPermitPlugins``): a rejection stops; Wait parks the pod in the
        waiting map (``add_waiting``; a pod group cycle only asks, upstream's
        ``AddWaitingPod`` comes later)."""
        timeouts: dict[str, float] = {}
        waiting_status: Status | None = None
        for name, permit in self._calls["permit"]:
            answer, error = self._answer(
                name, "permit", permit, (state, pod, node_name), PERMIT_ANSWER
            )
            if error is not None:
                return error
            status, timeout = answer
            if is_success(status):
                continue
            if status.code in REJECTED_CODES:
                status.plugin = name
                return status
            if status.code == Code.WAIT:
                timeouts[name] = min(timeout, MAX_PERMIT_TIMEOUT)
                status.plugin = name
                waiting_status = status
                continue
            return self._failed(name, "permit", status.message)
        if timeouts:
            if add_waiting:
                waiting = WaitingPod(pod, node_name, timeouts)
                self.waiting_pods.add(waiting)
                waiting.start()
            # As upstream v1.36: the last waiting plugin's reasons, then the runtime's.
            assert waiting_status is not None
            return Status(
                Code.WAIT, *waiting_status.reasons, PERMIT_WAIT_REASON, plugin=waiting_status.plugin
            )
        return None

    def wait_on_permit(self, pod: dict) -> Status | None:
        waiting = self.waiting_pods.get(_pod_uid(pod))
        if waiting is None:
            return None
        try:
            status = waiting.wait(MAX_PERMIT_TIMEOUT + 5)
        finally:
            self.waiting_pods.remove(waiting.uid)
        return status

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        for waiting in self.waiting_pods.all():
            fn(waiting)

    def reject_waiting_pod(self, uid: str) -> bool:
        waiting = self.waiting_pods.get(uid)
        if waiting is None:
            return False
        waiting.reject("", "removed")
        return True

    # -- binding ------------------------------------------------------------------------

    def will_wait_on_permit(self, pod: dict) -> bool:
        """Whether a Permit plugin parked the pod (upstream ``WillWaitOnPermit``)."""
        return self.waiting_pods.get(_pod_uid(pod)) is not None

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod: dict, node_name: str
    ) -> Status | None:
        """PreBindPreFlight of every preBind plugin (upstream ``RunPreBindPreFlights``):
        ``None`` (Success) when one or more will work in PreBind, ``SKIP`` when all skip (or
        there are none), an Error at the first plugin that errs or answers another code. The
        skipping plugins are recorded in ``state``: ``run_pre_bind_plugins`` passes them by."""
        skip: set[str] = set()
        answer: Status | None = Status(Code.SKIP)
        for name, pre_flight in self._pre_flights:
            if pre_flight is None:
                answer = None  # cannot tell: its PreBind may have work
                continue
            status = self._call(
                name, "preBindPreFlight", pre_flight, state, pod, node_name, accept=NOT_ERROR
            )
            if status is None or status.code == Code.SUCCESS:
                answer = None
            elif status.code == Code.SKIP:
                skip.add(name)
            elif status.code == Code.ERROR:
                return status
            else:
                self.metrics.plugin_error(name, "preBindPreFlight")
                return Status(
                    Code.ERROR,
                    f'PreBindPreFlight {name} returned "{_code_text(status.code)}", which is '
                    "unsupported. It is supposed to return Success, Skip, or Error status",
                    plugin=name,
                )
        state.write(SKIP_PRE_BIND_KEY, frozenset(skip))
        return answer

    def run_pre_bind_plugins(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        skip = state.get(SKIP_PRE_BIND_KEY, frozenset())
        for name, pre_bind in self._calls["preBind"]:
            if name in skip:
                continue
            status = self._call(name, "preBind", pre_bind, state, pod, node_name)
            if is_non_success(status):
                status.plugin = name  # already so on an Error
                return status
        return None

    def run_bind_plugins(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """The first binder that does not Skip decides; all skipping is a Skip status."""
        for name, bind in self._calls["bind"]:
            status = self._call(name, "bind", bind, state, pod, node_name, accept=REJECTED_OR_SKIP)
            if status is not None and status.code == Code.SKIP:
                continue
            if is_non_success(status):
                status.plugin = name  # already so on an Error
            return status
        return Status(Code.SKIP)

    def run_post_bind_plugins(self, state: CycleState, pod: dict, node_name: str) -> None:
        # Informational: the pod is bound; a failure is logged and counted, nothing else.
        for name, post_bind in self._calls["postBind"]:
            try:
                post_bind(state, pod, node_name)
            except Exception as exc:
                self._failed(name, "postBind", exc)
