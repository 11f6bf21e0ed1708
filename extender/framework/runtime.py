"""The profile runner: runs a profile's plugins at each extension point with upstream semantics.

One :class:`Framework` per profile. It is also the *handle* given to plugin factories: plugins
reach the client, the nominator, the waiting pods and the other plugins' extension points
through it. Per-cycle data (including the snapshot) lives in :class:`CycleState`, so one
framework serves concurrent cycles (webhook request threads) safely.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from .cycle_state import CycleState
from .events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from .handle import Kind, Lister, Services
from .interfaces import (
    EXTENSION_POINTS,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from .profile import Profile
from .registry import Registry
from .status import REJECTED_CODES, Code, Status
from .types import (
    NodeInfo,
    NodePluginScores,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from .waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod, WaitingPods

log = logging.getLogger(__name__)

POD_SIGNATURE_KEY = "PodSignature"
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class ProfileError(ValueError):
    """A profile that cannot be built (unknown plugin, plugin lacking the point, bad weight)."""


def _pod_uid(pod: dict) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


class Framework:
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
        self.waiting_pods = WaitingPods()

        self.plugins: dict[str, Any] = {}
        wanted = {spec.name for specs in profile.plugins.values() for spec in specs}
        for name in sorted(wanted):
            factory = registry.get(name)
            if factory is None:
                raise ProfileError(f"profile {self.profile_name!r}: unknown plugin {name!r}")
            self.plugins[name] = factory(profile.plugin_config.get(name) or {}, self)

        self.points: dict[str, list[Any]] = {}
        for point, protocol in EXTENSION_POINTS.items():
            instances = []
            for spec in profile.plugins.get(point, ()):
                plugin = self.plugins[spec.name]
                if not isinstance(plugin, protocol):
                    raise ProfileError(
                        f"profile {self.profile_name!r}: plugin {spec.name!r} "
                        f"does not extend {point}"
                    )
                instances.append(plugin)
            self.points[point] = instances

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
        self.bind_plugins: list[BindPlugin] = self.points["bind"]
        self.post_bind_plugins: list[PostBindPlugin] = self.points["postBind"]
        if len(self.queue_sort_plugins) > 1:
            raise ProfileError(f"profile {self.profile_name!r}: only one queueSort plugin allowed")

    # -- handle -------------------------------------------------------------------------

    def plugin(self, name: str) -> Any:
        return self.plugins.get(name)

    def lister(self, kind: Kind) -> Lister:
        return self.services.listers(kind)

    def namespace_labels(self, namespace: str) -> dict | None:
        return self.services.namespace_labels(namespace)

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Per plugin, the cluster events that may make a pod it rejected schedulable.

        Plugins that do not say register for every event (spec §1.5).
        """
        events: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            if isinstance(plugin, EnqueueExtensions):
                events[name] = list(plugin.events_to_register())
            else:
                events[name] = [
                    ClusterEventWithHint(ClusterEvent(Resource.WILDCARD, ActionType.ALL))
                ]
        return events

    # -- queue --------------------------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: dict) -> Status | None:
        for plugin in self.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = plugin.name
                return status
        return None

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.queue_sort_plugins[0].less(a, b)

    # -- prefilter / filter ---------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """PreFilter in profile order (spec §2.3).

        Returns the merged node subset (``None``: all nodes), a rejecting or error status, and
        the plugins that rejected.
        """
        result: PreFilterResult | None = None
        rejected_by: set[str] = set()
        rejection: Status | None = None
        subset_plugins: list[str] = []
        for plugin in self.pre_filter_plugins:
            try:
                res, status = plugin.pre_filter(state, pod, nodes)
            except Exception as exc:  # a plugin bug must not kill the scheduler
                log.exception("PreFilter plugin %s failed", plugin.name)
                return None, Status.error(f'running PreFilter plugin "{plugin.name}": {exc}'), set()
            if status is not None and status.code != Code.SUCCESS:
                if status.code == Code.SKIP:
                    state.skip_filter_plugins.add(plugin.name)
                    continue
                status.plugin = plugin.name
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, {plugin.name}
                if status.code in REJECTED_CODES:
                    rejected_by.add(plugin.name)
                    if rejection is None:
                        rejection = status
                    continue
                return (
                    None,
                    Status.error(f'running PreFilter plugin "{plugin.name}": {status.message}'),
                    set(),
                )
            if res is not None and not res.all_nodes():
                subset_plugins.append(plugin.name)
                result = res if result is None else result.merge(res)
                if not result.node_names:
                    message = (
                        f"node(s) didn't satisfy plugin(s) [{' '.join(subset_plugins)}] "
                        "simultaneously"
                        if len(subset_plugins) > 1
                        else f"node(s) didn't satisfy plugin {subset_plugins[0]}"
                    )
                    status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
                    status.plugin = plugin.name
                    return None, status, set(subset_plugins)
        if rejection is not None:
            return None, rejection, rejected_by
        if result is not None:
            result.plugins = subset_plugins
        return result, None, set()

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: dict, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for plugin in self.pre_filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            ext = plugin.pre_filter_extensions()
            if ext is None:
                continue
            status = ext.add_pod(state, pod, pod_to_add, node_info)
            if status is not None and status.code != Code.SUCCESS:
                return Status.error(
                    f'running AddPod on PreFilter plugin "{plugin.name}": {status.message}'
                )
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: dict, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for plugin in self.pre_filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            ext = plugin.pre_filter_extensions()
            if ext is None:
                continue
            status = ext.remove_pod(state, pod, pod_to_remove, node_info)
            if status is not None and status.code != Code.SUCCESS:
                return Status.error(
                    f'running RemovePod on PreFilter plugin "{plugin.name}": {status.message}'
                )
        return None

    def pod_signature(self, state: CycleState, pod: dict) -> bytes:
        """The pod's spec, canonical, computed once per cycle (the memo's key)."""
        signature = state.get(POD_SIGNATURE_KEY)
        if signature is None:
            signature = orjson.dumps(pod.get("spec") or {}, option=orjson.OPT_SORT_KEYS)
            state.write(POD_SIGNATURE_KEY, signature)
        return signature

    def _memo_for(self, plugin: Any, point: str) -> dict | None:
        """Per-node memo of a plugin that declares its answer a function of the pod's spec and
        the NodeInfo alone (``memo_points``): pods of one workload share their spec, and between
        two of them only the node the last one landed on changed (a new NodeInfo generation)."""
        if point not in getattr(plugin, "memo_points", ()):
            return None
        return self._memos.setdefault((plugin.name, point), {})

    def run_filter_plugins(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None:
        """Filter plugins in order, stopping at the first non-Success (spec §2.5)."""
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if skip and plugin.name in skip:
                continue
            memo = self._filter_memos.get(plugin.name)
            try:
                if memo is None:
                    status = plugin.filter(state, pod, node_info)
                else:
                    signature = self.pod_signature(state, pod)
                    hit = memo.get(node_info.name)
                    if hit is not None and hit[1] == node_info.generation and hit[0] == signature:
                        status = hit[2]
                    else:
                        status = plugin.filter(state, pod, node_info)
                        if status is None or status.code != Code.ERROR:
                            memo[node_info.name] = (signature, node_info.generation, status)
            except Exception as exc:
                log.exception("Filter plugin %s failed", plugin.name)
                status = Status.error(str(exc))
            if status is not None and status.code != Code.SUCCESS:
                if status.code not in REJECTED_CODES:
                    status = Status.error(
                        f'running "{plugin.name}" filter plugin: {status.message}'
                    )
                status.plugin = plugin.name
                return status
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: dict, node_info: NodeInfo
    ) -> Status | None:
        """Filter, counting pods nominated to the node with >= priority (spec §2.6)."""
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
        """PostFilter (spec §2.8): the first Success or Unresolvable ends it."""
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        for plugin in self.post_filter_plugins:
            res, status = plugin.post_filter(state, pod, filtered_node_status)
            if status is None or status.code == Code.SUCCESS:
                return res, status or Status(Code.SUCCESS)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                status.plugin = plugin.name
                return res, status
            if status.code != Code.UNSCHEDULABLE:
                return None, Status.error(
                    f'running PostFilter plugin "{plugin.name}": {status.message}'
                ).with_plugin(plugin.name)
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
            if res is not None and res.nominating_info is not None:
                result = res
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # -- scoring ------------------------------------------------------------------------

    def run_pre_score_plugins(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> Status | None:
        for plugin in self.pre_score_plugins:
            status = plugin.pre_score(state, pod, nodes)
            if status is None or status.code == Code.SUCCESS:
                continue
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(plugin.name)
                continue
            return Status.error(
                f'running PreScore plugin "{plugin.name}": {status.message}'
            ).with_plugin(plugin.name)
        return None

    def run_score_plugins(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status | None]:
        """Score, NormalizeScore, validation and weights (spec §2.9 steps 2-5)."""
        skip = state.skip_score_plugins
        plugins = [p for p in self.score_plugins if p.name not in skip]
        all_scores = [NodePluginScores(info.name) for info in nodes]
        for plugin in plugins:
            score = plugin.score
            values: list[int] = []
            memo = self._score_memos.get(plugin.name)
            signature = self.pod_signature(state, pod) if memo is not None else b""
            for info in nodes:
                if memo is not None:
                    hit = memo.get(info.name)
                    if hit is not None and hit[1] == info.generation and hit[0] == signature:
                        values.append(hit[2])
                        continue
                value, status = score(state, pod, info)
                if status is not None and status.code != Code.SUCCESS:
                    return [], Status.error(
                        f'running Score plugin "{plugin.name}": {status.message}'
                    ).with_plugin(plugin.name)
                if memo is not None:
                    memo[info.name] = (signature, info.generation, value)
                values.append(value)
            ext = plugin.score_extensions()
            if ext is not None:
                # NodeScore objects only for the plugins that normalize across nodes.
                node_scores = [
                    NodeScore(info.name, v) for info, v in zip(nodes, values, strict=True)
                ]
                status = ext.normalize_score(state, pod, node_scores)
                if status is not None and status.code != Code.SUCCESS:
                    return [], Status.error(
                        f'running Normalize on Score plugin "{plugin.name}": {status.message}'
                    ).with_plugin(plugin.name)
                values = [ns.score for ns in node_scores]
            weight = self.score_weights.get(plugin.name, 1)
            name = plugin.name
            for entry, value in zip(all_scores, values, strict=True):
                if not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE:
                    return [], Status.error(
                        f'plugin "{name}" returns an invalid score {value}, '
                        f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                        "after normalizing"
                    ).with_plugin(name)
                weighted = value * weight
                entry.scores[name] = weighted
                entry.total_score += weighted
        return all_scores, None

    # -- reserve / permit ---------------------------------------------------------------

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: dict, node_name: str
    ) -> Status | None:
        for plugin in self.reserve_plugins:
            status = plugin.reserve(state, pod, node_name)
            if status is not None and status.code != Code.SUCCESS:
                if status.code not in REJECTED_CODES:
                    status = Status.error(
                        f'running Reserve plugin "{plugin.name}": {status.message}'
                    )
                status.plugin = plugin.name
                return status
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: dict, node_name: str) -> None:
        # Reverse order; Unreserve must tolerate a pod that was never reserved.
        for plugin in reversed(self.reserve_plugins):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve of plugin %s failed", plugin.name)

    def run_permit_plugins(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """Permit (spec §2.11): a rejection stops; Wait parks the pod in the waiting map."""
        timeouts: dict[str, float] = {}
        for plugin in self.permit_plugins:
            status, timeout = plugin.permit(state, pod, node_name)
            if status is None or status.code == Code.SUCCESS:
                continue
            if status.code in REJECTED_CODES:
                status.plugin = plugin.name
                return status
            if status.code == Code.WAIT:
                timeouts[plugin.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                continue
            return Status.error(
                f'running Permit plugin "{plugin.name}": {status.message}'
            ).with_plugin(plugin.name)
        if timeouts:
            waiting = WaitingPod(pod, node_name, timeouts)
            self.waiting_pods.add(waiting)
            waiting.start()
            name = (pod.get("metadata") or {}).get("name", "")
            return Status(
                Code.WAIT,
                f'one or more plugins asked to wait and no plugin rejected pod "{name}"',
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

    def run_pre_bind_plugins(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        for plugin in self.pre_bind_plugins:
            status = plugin.pre_bind(state, pod, node_name)
            if status is not None and status.code != Code.SUCCESS:
                if status.code not in REJECTED_CODES:
                    status = Status.error(
                        f'running PreBind plugin "{plugin.name}": {status.message}'
                    )
                status.plugin = plugin.name
                return status
        return None

    def run_bind_plugins(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        """The first binder that does not Skip decides; all skipping is a Skip status."""
        for plugin in self.bind_plugins:
            status = plugin.bind(state, pod, node_name)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and status.code != Code.SUCCESS:
                if status.code not in REJECTED_CODES:
                    status = Status.error(f'running Bind plugin "{plugin.name}": {status.message}')
                status.plugin = plugin.name
            return status
        return Status(Code.SKIP)

    def run_post_bind_plugins(self, state: CycleState, pod: dict, node_name: str) -> None:
        for plugin in self.post_bind_plugins:
            plugin.post_bind(state, pod, node_name)


def plugins_implementing(plugins: Iterable[Any], point: str) -> list[str]:
    protocol = EXTENSION_POINTS[point]
    return [p.name for p in plugins if isinstance(p, protocol)]
