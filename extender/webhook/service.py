"""The extender verbs over the plugin core, independent of HTTP.

Each verb is one scheduling-cycle fragment run by the same :class:`Framework` and
:class:`SchedulingAlgorithm` the standalone scheduler uses, so a decision made here is the
decision the standalone loop would make for the same pod and cluster state.

Node modes:

* ``NodeNames`` (``nodeCacheCapable: true``): NodeInfos come from the watch-fed cache.
* ``Nodes`` (``nodeCacheCapable: false``): the Node objects in the request are used as sent
  (unchanged when the cache holds the same resourceVersion), with the pods the cache knows
  for each node. Replies echo the input Node objects unchanged.
"""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Protocol, cast

from extender.cache import CacheError
from extender.framework import budget
from extender.framework.cycle_state import CycleState
from extender.framework.handle import MAX_EXTENDER_PRIORITY
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.pod_info import PodInfo
from extender.framework.preemption import fits_without_victims
from extender.framework.results import NodeScoreList
from extender.framework.runtime import Framework
from extender.framework.schedule import SchedulingAlgorithm, SchedulingError
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code, Status
from extender.wire import (
    binding_result,
    filter_result,
    preemption_result,
)

log = logging.getLogger(__name__)

MISSING_NODE_GRACE_SECONDS = 1.0
DYNAMIC_RESOURCES = "DynamicResources"  # its Filter is not asked again at bind (after PreBind)
ERR_NODE_NOT_IN_CACHE = "node(s) not found in the extender's node cache"
ERR_NO_NODE_CACHE = (
    "this extender has no node cache (no cluster connection): register it with "
    "nodeCacheCapable: false, or start it with --kubeconfig or in a cluster"
)
ERR_NO_CLIENT = "this extender has no cluster connection, so it cannot bind"
ERR_NOT_SYNCED = "caches not synced: the extender's informers have not synced yet"


class ServiceUnavailable(Exception):
    """The verb cannot be answered now (for example, caches not synced); HTTP 503."""


@dataclass(frozen=True, slots=True)
class Scores:
    """The prioritize answer: the HostPriorityList, and the Score plugins left out of it
    because they failed (plugin -> error message)."""

    priorities: list[dict]
    failed: dict[str, str] = field(default_factory=dict)


class NodeCache(Protocol):
    def snapshot(self) -> Snapshot: ...


class AssumingCache(NodeCache, Protocol):
    """A cache the bind verb can assume pods in (``extender.cache.Cache``)."""

    def assume_pod(self, pod: dict) -> None: ...

    def finish_binding(self, pod: dict) -> None: ...


class Binder(Protocol):
    def get_pod(self, namespace: str, name: str) -> dict | None: ...

    def bind(self, pod: dict, node_name: str) -> None: ...


def _name(node: dict) -> str:
    return node["metadata"]["name"]


class ExtenderService:
    def __init__(
        self,
        fwk: Framework,
        *,
        cache: NodeCache | None = None,
        client: Binder | None = None,
        algorithm: SchedulingAlgorithm | None = None,
        ready: Any = None,
        filter_unresolvable: bool = True,
        assume_on_bind: bool = False,
    ) -> None:
        if assume_on_bind and not hasattr(cache, "assume_pod"):
            raise ValueError("assume_on_bind needs a cache that can assume pods")
        self.fwk = fwk
        self.cache = cache
        self.client = client
        self.algorithm = algorithm or SchedulingAlgorithm()
        self._ready = ready or (lambda: True)
        # False: report UnschedulableAndUnresolvable nodes in FailedNodes too, so that the
        # scheduler's preemption still considers them.
        self.filter_unresolvable = filter_unresolvable
        # True: a pod this process bound is in its cache at once (see _assume).
        self.assume_on_bind = assume_on_bind

    def ready(self) -> bool:
        return bool(self._ready())

    # -- node views ---------------------------------------------------------------------------

    def snapshot_for_names(self, names: list[str]) -> tuple[Snapshot, list[NodeInfo], list[str]]:
        if self.cache is None:
            raise ServiceUnavailable(ERR_NO_NODE_CACHE)
        if not self.ready():
            raise ServiceUnavailable(ERR_NOT_SYNCED)
        # kube-scheduler's informer may have seen a new node a moment before ours: give the
        # watch a short while to deliver it, rather than failing a node that exists.
        deadline = time.monotonic() + MISSING_NODE_GRACE_SECONDS
        while True:
            snapshot = self.cache.snapshot()
            lookup = snapshot.node_info_map.get
            found = list(map(lookup, names))
            if None not in found:  # the usual case: one C-level pass, the list is the answer
                return snapshot, found, []  # type: ignore[return-value]
            candidates = [info for info in found if info is not None]
            missing = [n for n, i in zip(names, found, strict=True) if i is None]
            if time.monotonic() >= deadline:
                return snapshot, candidates, missing
            time.sleep(0.02)

    def snapshot_for_nodes(self, nodes: list[dict]) -> tuple[Snapshot, list[NodeInfo]]:
        base = self.cache.snapshot() if self.cache is not None else None
        candidates: list[NodeInfo] = []
        for node in nodes:
            cached = base.get(_name(node)) if base is not None else None
            if cached is not None and _same_version(cached.node, node):
                candidates.append(cached)
            else:
                candidates.append(NodeInfo(node, cached.pods if cached is not None else ()))
        if base is None:
            return Snapshot(candidates), candidates
        # The plugins that count pods across the cluster (topology spread, inter-pod
        # affinity) see every cached node, with the request's version of the sent ones.
        changed = [info for info in candidates if base.get(info.name) is not info]
        return (base.overlay(changed) if changed else base), candidates

    # -- verbs --------------------------------------------------------------------------------

    def filter(self, args: dict) -> dict:
        pod = args["pod"]
        node_names = args["node_names"]
        by_names = args["nodes"] is None
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        if not self.ready():
            # Both node modes: with Nodes, an unsynced cache means every node looks empty
            # (no pods, no spread or affinity counts), so a 200 would be silently wrong. The
            # Error fails this scheduling attempt and kube-scheduler retries the pod.
            return filter_result(
                node_names=[] if by_names else None,
                nodes=None if by_names else [],
                failed={},
                failed_unresolvable={},
                error=ERR_NOT_SYNCED,
            )
        if by_names:
            try:
                snapshot, candidates, missing = self.snapshot_for_names(node_names)
            except ServiceUnavailable as exc:
                return filter_result(
                    node_names=[], nodes=None, failed={}, failed_unresolvable={}, error=str(exc)
                )
            for name in missing:
                failed[name] = ERR_NODE_NOT_IN_CACHE
        else:
            snapshot, candidates = self.snapshot_for_nodes(args["nodes"])

        state = CycleState()
        try:
            with self._budget(state):
                feasible, diagnosis = self.algorithm.find_nodes_that_fit(
                    self.fwk, state, pod, snapshot, candidates, evaluate_all=True
                )
        except (SchedulingError, *budget.OVER) as exc:
            return filter_result(
                node_names=[] if by_names else None,
                nodes=None if by_names else [],
                failed={},
                failed_unresolvable={},
                error=self._error_of(exc).message,
            )
        passed = {info.name for info in feasible}
        rejected = len(candidates) - len(feasible)  # a node sent twice is filtered alike
        if rejected:
            statuses = diagnosis.node_to_status
            hard = unresolvable if self.filter_unresolvable else failed
            if len(statuses) == rejected:  # each rejected node has its status, nothing else
                for name, status in statuses.items():
                    _record(status, name, failed, hard)
            else:  # some rejected by PreFilter (absent_status), or a node sent twice
                absent = diagnosis.absent_status
                for info in candidates:
                    name = info.name
                    if name not in passed:
                        _record(statuses.get(name) or absent, name, failed, hard)

        if by_names:
            # Every name found: the feasible nodes are the names that passed, in their order.
            kept = (
                list(map(attrgetter("name"), feasible))
                if len(candidates) == len(node_names)
                else [n for n in node_names if n in passed]
            )
            return filter_result(
                node_names=kept, nodes=None, failed=failed, failed_unresolvable=unresolvable
            )
        return filter_result(
            node_names=None,
            nodes=[node for node in args["nodes"] if _name(node) in passed],
            failed=failed,
            failed_unresolvable=unresolvable,
        )

    def prioritize(self, args: dict) -> Scores:
        """Every node sent gets a score: the standalone path's weighted total for the pod on
        that node, mapped to 0..10 (see :func:`extender_score`).

        The cycle state is built as the scheduling cycle builds it: PreFilter and Filter over
        the nodes sent (kube-scheduler's feasible nodes), then PreScore and Score over the
        ones that pass, so a Score that reads what its PreFilter or Filter wrote (DRA's
        allocations per node) finds it. A node our filters reject (the extender not being a
        filter too, or a cache a moment behind) scores 0, the lowest. A Score plugin that
        fails is left out and named in :attr:`Scores.failed` (logged, counted per plugin) while
        the others still score: kube-scheduler ignores a failed prioritize answer as a whole.
        An Error before scoring (PreFilter, Filter) fails the call (HTTP 500).

        Before the caches sync: 503 (ServiceUnavailable), in both node modes. kube-scheduler
        ignores a failed prioritize call (no score from this extender, the pod still placed)
        exactly as it would an empty list, but the 503 shows in its log and in our metrics."""
        pod = args["pod"]
        if not self.ready():
            raise ServiceUnavailable(ERR_NOT_SYNCED)
        if args["nodes"] is None:
            sent = args["node_names"]
            snapshot, candidates, _ = self.snapshot_for_names(sent)
        else:
            sent = [_name(node) for node in args["nodes"]]
            snapshot, candidates = self.snapshot_for_nodes(args["nodes"])
        totals: dict[str, int] = {}
        scored: NodeScoreList | None = None
        failed: dict[str, str] = {}
        if candidates and self.fwk.has_score_plugins():
            state = CycleState()
            failures: dict[str, Status] = {}
            try:
                with self._budget(state):
                    feasible, _ = self.algorithm.find_nodes_that_fit(
                        self.fwk, state, pod, snapshot, candidates, evaluate_all=True
                    )
                    scores = (
                        self.algorithm.prioritize_nodes(self.fwk, state, pod, feasible, failures)
                        if feasible
                        else []
                    )
            except (SchedulingError, *budget.OVER) as exc:
                raise SchedulingError(self._error_of(exc)) from None
            if isinstance(scores, NodeScoreList):
                scored = scores
            else:
                totals = {entry.name: entry.total_score for entry in scores}
            for plugin, status in failures.items():
                failed[plugin] = status.message
                log.warning(
                    "prioritize: plugin %s left out of the scores: %s", plugin, failed[plugin]
                )
        scale = MAX_NODE_SCORE * (sum(self.fwk.score_weights.values()) or 1)
        return Scores(_priorities(sent, scored, totals, scale), failed)

    def _budget(self, state: CycleState) -> AbstractContextManager[None]:
        """The verb's computing part within the pod budget (``extender.framework.budget``):
        a call ends in time whatever the pod's objects cost, long before kube-scheduler's
        extender ``httpTimeout`` (30s by default) and the worker's timeout."""
        return budget.enforced(state, self.fwk.profile.pod_budget)

    def _error_of(self, failure: SchedulingError | BaseException | Status) -> Status:
        """The Error status of a failed verb call; a budget that ran out is counted."""
        if isinstance(failure, Status):
            status = failure
        elif isinstance(failure, SchedulingError):
            status = failure.status
        else:
            status = Status(Code.ERROR, str(failure), err=failure)
        if isinstance(status.err, budget.OVER):
            count = getattr(self.fwk.metrics, "budget_exceeded", None)
            if count is not None:
                count(self.fwk.profile_name)
        return status

    def preempt(self, args: dict) -> dict:
        """Keep the candidate nodes where, with their victims gone, the pod passes our filters.

        Victims are returned as proposed (same order, same PDB count): the scheduler's own
        filters needed all of them removed, so dropping one here could nominate a node the
        pod still does not fit.
        """
        pod = args["pod"]
        if self.cache is None:
            raise ServiceUnavailable(ERR_NO_NODE_CACHE)
        if not self.ready():
            raise ServiceUnavailable("the extender's caches are not synced yet")
        snapshot = self.cache.snapshot()
        candidates: dict[str, tuple[list[str], list[PodInfo | None], int]] = {}
        if args["node_name_to_meta_victims"] is not None:
            for node, victims in args["node_name_to_meta_victims"].items():
                uids = [p["uid"] for p in victims.get("pods") or ()]
                candidates[node] = (uids, [None] * len(uids), victims["num_pdb_violations"])
        else:
            for node, victims in args["node_name_to_victims"].items():
                infos = [PodInfo(p) for p in victims.get("pods") or ()]
                uids = [info.uid for info in infos]
                candidates[node] = (uids, list(infos), victims["num_pdb_violations"])

        state = CycleState()
        try:
            with self._budget(state):
                return self._preempt(state, pod, snapshot, candidates)
        except (SchedulingError, *budget.OVER) as exc:
            raise SchedulingError(self._error_of(exc)) from None

    def _preempt(
        self,
        state: CycleState,
        pod: dict,
        snapshot: Snapshot,
        candidates: dict[str, tuple[list[str], list[PodInfo | None], int]],
    ) -> dict:
        state.snapshot = snapshot
        result, status, _ = self.fwk.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
        if status is not None:
            if status.code == Code.ERROR:
                raise SchedulingError(status)
            return preemption_result({})
        allowed = None if result is None else result.node_names

        kept: dict[str, tuple[list[str], int]] = {}
        for node_name, (uids, infos, violations) in candidates.items():
            info = snapshot.get(node_name)
            if info is None or (allowed is not None and node_name not in allowed):
                continue
            if self._fits_without(state, pod, info, uids, infos):
                kept[node_name] = (uids, violations)
        return preemption_result(kept)

    def _fits_without(
        self,
        state: CycleState,
        pod: dict,
        node_info: NodeInfo,
        uids: list[str],
        infos: list[PodInfo | None],
    ) -> bool:
        """The evaluator's dry run (:func:`fits_without_victims`) with the proposed victims:
        each is the pod of that UID on the node, else the pod as sent; a pod neither our cache
        nor the request knows is skipped (nothing of it to remove). The extender's nominator
        is empty (kube-scheduler keeps the nominations), so only the node's pods count."""
        on_node = {p.uid: p for p in node_info.pods}
        victims = [
            victim
            for uid, given in zip(uids, infos, strict=True)
            if (victim := on_node.get(uid) or given) is not None
        ]
        return fits_without_victims(self.fwk, state, pod, node_info, victims) is None

    def bind(self, args: dict) -> dict:
        """Bind only what the profile's filters accept, and only the pod the caller named.

        The pod is read back from the apiserver (its spec is not in the request): a UID that
        differs from ``PodUID`` (a pod of the same name re-created) or a pod that already has
        a node is refused, and PreFilter + Filter run for the pod on that one node as in a
        filter call, so a bind cannot place a pod where a filter call would have refused it
        (a NoSchedule taint included). The binding carries the UID as a precondition.

        With ``assume_on_bind``, a pod bound here is assumed in the cache at once (see
        :meth:`_assume`); a failed bind assumes nothing.
        """
        namespace, name, node_name = args["pod_namespace"], args["pod_name"], args["node"]
        if self.client is None:
            return binding_result(ERR_NO_CLIENT)
        where = f"binding pod {namespace}/{name} to node {node_name}"
        try:
            pod = self.client.get_pod(namespace, name)
            refused = self._bind_refusal(pod, args["pod_uid"], node_name)
            if refused:
                log.info("%s refused: %s", where, refused)
                return binding_result(f"{where}: {refused}")
            assert pod is not None
            bound = {"metadata": {"name": name, "namespace": namespace, "uid": args["pod_uid"]}}
            self.client.bind(bound, node_name)
        except SchedulingError as exc:
            log.info("%s failed: %s", where, exc.status.message)
            return binding_result(f"{where}: {exc.status.message}")
        except Exception as exc:  # the cause goes back to the scheduler in band
            log.info("%s failed: %s", where, exc)
            return binding_result(f"{where}: {exc}")
        if self.assume_on_bind:
            self._assume(pod, node_name)
        return binding_result("")

    def _assume(self, pod: dict, node_name: str) -> None:
        """Count the pod just bound on its node in this process's cache, as kube-scheduler's
        cache assumes a pod before binding it (upstream ``pkg/scheduler/schedule_one.go``,
        ``assume``). Our cache learns of the binding from its pod watch, later: until then,
        the filter and prioritize calls for the next pods would not count it. The watch's
        add of the same UID confirms the assumption (replacing it, so nothing is counted
        twice); one it never confirms expires after the cache's ``assumed_pod_ttl``.

        ``pod`` is the pod read back from the apiserver before binding, so ``nodeName`` is
        set on a copy. Only this process knows: other workers and replicas wait for their
        watch. The binding is done whatever happens here, so nothing here fails the verb."""
        cache = cast(AssumingCache, self.cache)
        assumed = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node_name}}
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        try:
            cache.assume_pod(assumed)
            cache.finish_binding(assumed)
        except CacheError:
            # The watch delivered the bound pod first: it is in the cache already.
            log.debug("pod %s: the watch saw it bound before it was assumed", key)
        except Exception as exc:  # the watch will add it; the binding stands
            log.warning("pod %s was bound but could not be assumed: %s", key, exc)

    def _bind_refusal(self, pod: dict | None, uid: str, node_name: str) -> str:
        if pod is None:
            return "the pod does not exist"
        meta = pod.get("metadata") or {}
        if meta.get("uid") != uid:
            return f"the pod's UID is {meta.get('uid')!r}, not the PodUID {uid!r} of the request"
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            return f"the pod is already assigned to node {assigned}"
        if self.cache is None:
            return ERR_NO_NODE_CACHE
        if not self.ready():
            return "the extender's caches are not synced yet"
        snapshot = self.cache.snapshot()
        info = snapshot.get(node_name)
        if info is None:
            return ERR_NODE_NOT_IN_CACHE
        state = CycleState()
        dra = self.fwk.plugin(DYNAMIC_RESOURCES)
        if dra is not None and _has_claims(pod):
            # kube-scheduler calls bind after its PreBind: the claims are checked as PreBind
            # left them, not filtered again (see DynamicResources.claims_bound_for). The
            # informers may be a moment behind the allocation PreBind just wrote.
            deadline = time.monotonic() + MISSING_NODE_GRACE_SECONDS
            while refused := dra.claims_bound_for(pod, info):
                if time.monotonic() >= deadline:
                    return f"the pod's claims are not ready for this node: {refused}"
                time.sleep(0.02)
            state.skip_filter_plugins.add(DYNAMIC_RESOURCES)
        feasible, diagnosis = self.algorithm.find_nodes_that_fit(
            self.fwk, state, pod, snapshot, [info], evaluate_all=True
        )
        if feasible:
            return ""
        status = diagnosis.node_to_status.get(node_name) or diagnosis.absent_status
        reason = status.message if status is not None else "node(s) were rejected"
        return f"the pod does not pass the filters on this node: {reason}"


def _has_claims(pod: dict) -> bool:
    """ResourceClaims, or an extended-resource claim PreBind made for the pod."""
    return bool((pod.get("spec") or {}).get("resourceClaims")) or bool(
        (pod.get("status") or {}).get("extendedResourceClaimStatus")
    )


def extender_score(total: int, scale: int) -> int:
    """A weighted total of 0..100 plugin scores on the extender scale 0..10: the weighted
    mean, rounded down (``scale`` is 100 x the profile's score weights). kube-scheduler
    multiplies it back by the extender's weight x 10."""
    return total * MAX_EXTENDER_PRIORITY // scale


def _priorities(
    sent: list[str], scored: NodeScoreList | None, totals: dict[str, int], scale: int
) -> list[dict]:
    """The HostPriorityList of the nodes ``sent``, in their order: each node's total
    (``scored``, or else ``totals``; 0 when not scored) on the extender scale. When every node
    sent was scored, in the order sent (kube-scheduler sends the nodes that passed every
    filter), the totals are read in one pass without a lookup per node."""
    top = MAX_EXTENDER_PRIORITY
    if scored is not None:
        if scored.names == sent:
            return [
                {"Host": name, "Score": total * top // scale}
                for name, total in zip(sent, scored.totals, strict=True)
            ]
        totals = dict(zip(scored.names, scored.totals, strict=True))
    get = totals.get
    return [{"Host": name, "Score": get(name, 0) * top // scale} for name in sent]


def _record(
    status: Status | None, name: str, failed: dict[str, str], unresolvable: dict[str, str]
) -> None:
    message = status.message if status is not None else "node(s) were rejected"
    if status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        unresolvable[name] = message
    else:
        failed[name] = message


def _same_version(cached: dict | None, sent: dict) -> bool:
    if cached is None:
        return False
    version = (sent.get("metadata") or {}).get("resourceVersion")
    return bool(version) and (cached.get("metadata") or {}).get("resourceVersion") == version
