"""The cluster cache: NodeInfos with their pods, assumed pods, and per-cycle snapshots.

One per process, shared by every thread (informer handlers, the scheduling cycle, binding
workers, webhook request threads); every method takes one lock. Pods and nodes are the API's
dicts and are never mutated here.

Pod state machine (upstream ``pkg/scheduler/backend/cache/cache.go``), keyed by pod UID
(``pod_key``)::

    assume_pod ──▶ Assumed ── add_pod (the watch confirms it) ──▶ Added ── remove_pod ──▶ gone
                     └── forget_pod (binding failed) ──▶ gone

By default (``assumed_pod_ttl`` 0, the standalone scheduler) assumed pods never expire, as
upstream v1.36 whose cache has no expiry any more: expiring one before the watch confirms it
frees its resources in the cache too early and lets another pod be placed on top
(kubernetes#106361). The scheduler forgets a pod whose binding failed, and sees the deletion of
a pod it assumed (it watches unassigned pods too), so nothing is left behind.

With a ttl (the extender service, which assumes a pod after its own bind verb created the
Binding), an assumption whose binding finished (``finish_binding``) and that the watch has not
confirmed ``assumed_pod_ttl`` seconds later expires, as upstream's cache did while it had a ttl
(``finishBinding`` set the deadline, ``cleanupAssumedPods`` removed the pods past it). The
extender needs that bound: its pod watch sees assigned pods only, so a pod deleted before the
watch saw it bound, across a re-list, would otherwise stay assumed for good. Expiry is checked
lazily, on each read of the pods (``snapshot`` and the queries below), so a pod past its
deadline is never in a snapshot.

Where upstream returns an error for an impossible informer transition (adding a pod twice,
updating or removing an unknown pod; it even exits when a pod's node changes) this cache
repairs itself instead: an informer-fed cache converges on what the API says. Errors remain
for the scheduler's own calls: assuming a pod that is already cached, forgetting an added pod
or one assumed on another node (:class:`CacheError`).

Pods whose node is not known (yet, or any more) are kept on a placeholder NodeInfo (``node``
is ``None``) that snapshots leave out; it turns into the real NodeInfo when the node arrives
and disappears with its last pod.

Snapshots are incremental: the clone of a NodeInfo is reused while the NodeInfo's generation
is unchanged, so an unchanged node is the same object in consecutive snapshots. Snapshots are
read-only for their users; ``Snapshot`` fills each clone's ``image_states``, which is derived
data and the same for any snapshot of the same node set. As upstream's ``UpdateSnapshot``
(``pkg/scheduler/backend/cache/cache.go``), which walks only the NodeInfos updated since the
last snapshot, the cache records which nodes a pod change touched, so a snapshot after pod
changes visits those nodes only, not every node of the cluster (the scheduling loop takes one
per pod). Node changes rebuild the node order and image summaries from all nodes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from extender.framework.node_info import NodeInfo, next_generation
from extender.framework.pod_info import PodInfo, pod_key
from extender.framework.snapshot import Snapshot, zone_key

log = logging.getLogger(__name__)
# What a malformed object raises while it is parsed into a NodeInfo/PodInfo (QuantityError is a
# ValueError); a well-typed object from the API never does.
MALFORMED = (ValueError, TypeError, AttributeError)


class CacheError(ValueError):
    """An impossible transition (assuming a pod twice, forgetting an added pod, ...)."""


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    node: str
    assumed: bool = False
    binding_finished: bool = False
    # When an unconfirmed assumption expires (finish_binding + ttl); None: never.
    deadline: float | None = None


def _node_name(pod: dict) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


class Cache:
    def __init__(
        self, assumed_pod_ttl: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``assumed_pod_ttl``: seconds after ``finish_binding`` an assumed pod that the watch
        has not confirmed expires; 0 (the default): never (see the module docstring)."""
        if assumed_pod_ttl < 0:
            raise ValueError(f"assumed_pod_ttl must not be negative, got {assumed_pod_ttl}")
        self._lock = threading.RLock()
        self._ttl = assumed_pod_ttl
        self._clock = clock
        # The earliest deadline of an assumed pod (a bound on it: may be one already gone),
        # so that reads skip the expiry walk until then.
        self._next_deadline: float | None = None
        # Insertion order = node arrival order, which the snapshot's zone interleaving keeps.
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._namespaces: dict[str, dict] = {}
        # The last snapshot's clones, reused while their NodeInfo's generation is unchanged.
        self._clones: dict[str, NodeInfo] = {}
        self._snapshot: Snapshot | None = None
        self._dirty = True
        # Nodes added, updated or removed since the last snapshot: the node order and the
        # image summaries must be rebuilt. Pod changes alone only swap NodeInfos.
        self._nodes_changed = True
        # Names of the NodeInfos whose pods (or node, in place) changed since the last snapshot.
        self._touched: set[str] = set()

    # -- nodes ----------------------------------------------------------------------------------

    def add_node(self, node: dict) -> None:
        with self._lock:
            name = _name(node)
            info = self._nodes.get(name)
            in_place = False
            try:
                if info is None:
                    self._nodes[name] = NodeInfo(node)
                else:
                    # An update that keeps the node's zone (its place in the node order) and its
                    # images (the snapshot-wide image counts) only swaps its NodeInfo, like a
                    # pod change: status updates must not rebuild the whole snapshot.
                    before = (info.node is not None, zone_key(info), info.images)
                    info.set_node(node)  # an update, or a placeholder whose node arrived
                    in_place = before == (True, zone_key(info), info.images)
            except MALFORMED as exc:
                # Go's informer could not decode such an object at all: skip it, loudly.
                log.error("node %s skipped: malformed object from the API: %s", name, exc)
                return
            self._dirty = True
            if in_place:
                self._touched.add(name)
            else:
                self._nodes_changed = True

    def update_node(self, old: dict | None, new: dict) -> None:
        self.add_node(new)

    def remove_node(self, node: dict) -> None:
        with self._lock:
            name = _name(node)
            info = self._nodes.get(name)
            if info is None:
                return
            if info.pods:
                # Pods still reference it (their deletions may not have arrived yet): keep a
                # node-less NodeInfo until they go, so their accounting stays right.
                info.node = None
                info.generation = next_generation()
            else:
                del self._nodes[name]
            self._dirty = True
            self._nodes_changed = True

    def get_node(self, name: str) -> dict | None:
        with self._lock:
            info = self._nodes.get(name)
            return info.node if info is not None else None

    def node_names(self) -> list[str]:
        with self._lock:
            return [name for name, info in self._nodes.items() if info.node is not None]

    def node_count(self) -> int:
        with self._lock:
            return sum(1 for info in self._nodes.values() if info.node is not None)

    def pod_count(self) -> int:
        """Pods in the cache, assumed ones included."""
        with self._lock:
            self._expire_due()
            return len(self._pods)

    # -- pods -----------------------------------------------------------------------------------

    def _node_info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo()  # placeholder until the node arrives
            info.name = name
        return info

    def _place(self, pod: dict | PodInfo, node: str) -> PodInfo:
        info = self._node_info(node).add_pod(pod)
        self._dirty = True
        self._touched.add(node)
        return info

    def _unplace(self, key: str, node: str) -> None:
        info = self._nodes.get(node)
        if info is None:
            return
        info.remove_pod(key)
        if info.node is None and not info.pods:
            del self._nodes[node]
        self._dirty = True
        self._touched.add(node)

    def assume_pod(self, pod: dict, previous: PodInfo | None = None) -> None:
        """Account ``pod`` (with ``spec.nodeName`` set) on its node before it is bound.
        ``previous``: the scheduler's PodInfo of the pod before it had a node, whose parse
        the assumed copy's PodInfo takes over (see :class:`PodInfo`)."""
        key, node = pod_key(pod), _node_name(pod)
        if not node:
            raise CacheError(f"pod {key} has no spec.nodeName, so it can't be assumed")
        parsed = PodInfo(pod, previous)
        with self._lock:
            self._expire_due()
            if key in self._pods:
                raise CacheError(f"pod {key} is in the cache, so it can't be assumed")
            self._pods[key] = _PodState(self._place(parsed, node), node, assumed=True)

    def finish_binding(self, pod: dict) -> None:
        """The bind request was sent; the pod stays assumed until the watch confirms it, or
        with a ttl until ``assumed_pod_ttl`` seconds from now."""
        with self._lock:
            state = self._pods.get(pod_key(pod))
            if state is None or not state.assumed:
                return  # already confirmed by the watch (or forgotten)
            state.binding_finished = True
            if self._ttl > 0:
                state.deadline = self._clock() + self._ttl
                if self._next_deadline is None or state.deadline < self._next_deadline:
                    self._next_deadline = state.deadline

    def cleanup_assumed_pods(self, now: float | None = None) -> list[str]:
        """Remove the assumed pods whose deadline passed (binding finished, no confirmation
        from the watch); return their keys. Reads call this themselves."""
        with self._lock:
            return self._expire(self._clock() if now is None else now)

    def _expire_due(self) -> None:
        if self._next_deadline is not None and self._clock() > self._next_deadline:
            self._expire(self._clock())

    def _expire(self, now: float) -> list[str]:
        expired: list[str] = []
        upcoming: float | None = None
        for key, state in list(self._pods.items()):
            if not state.assumed or state.deadline is None:
                continue  # confirmed, or still binding (upstream never expires those either)
            if now > state.deadline:
                log.info(
                    "assumed pod %s on node %s expired: the watch did not confirm it within %g s",
                    state.info.key,
                    state.node,
                    self._ttl,
                )
                self._unplace(key, state.node)
                del self._pods[key]
                expired.append(key)
            elif upcoming is None or state.deadline < upcoming:
                upcoming = state.deadline
        self._next_deadline = upcoming
        return expired

    def forget_pod(self, pod: dict) -> None:
        """Undo ``assume_pod`` (binding failed). Unknown pods are ignored."""
        key = pod_key(pod)
        with self._lock:
            state = self._pods.get(key)
            if state is None:
                return
            node = _node_name(pod)
            if node and node != state.node:
                raise CacheError(f"pod {key} was assumed on {state.node} but assigned to {node}")
            if not state.assumed:
                raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
            self._unplace(key, state.node)
            del self._pods[key]

    def is_assumed(self, uid: str) -> bool:
        with self._lock:
            self._expire_due()
            state = self._pods.get(uid) if uid else None
            return state is not None and state.assumed

    def assumed_pods(self) -> list[str]:
        with self._lock:
            self._expire_due()
            return [key for key, state in self._pods.items() if state.assumed]

    def get_pod(self, key: str) -> dict | None:
        """The cached pod (assumed or added) with this UID, else ``None``."""
        with self._lock:
            self._expire_due()
            state = self._pods.get(key)
            return state.info.pod if state is not None else None

    def add_pod(self, pod: dict) -> None:
        """A pod with ``spec.nodeName`` arrived from the watch (unassigned ones are ignored).

        An assumed pod is confirmed: the real pod replaces the assumed copy, on the node it
        really landed on. An already added pod is updated (see the module docstring).
        """
        key, node = pod_key(pod), _node_name(pod)
        if not node:
            return
        # The assumed (or earlier) version's parse is reused for what did not change: the
        # watch's copy of a pod this scheduler bound differs from the assumed one in labels
        # at most (the binding may add the node's topology labels).
        known = self._pods.get(key)
        try:
            parsed = PodInfo(pod, known.info if known is not None else None)
        except MALFORMED as exc:
            log.error("pod %s skipped: malformed object from the API: %s", key, exc)
            return
        with self._lock:
            state = self._pods.get(key)
            if state is not None:
                if not state.assumed:
                    log.debug("add_pod: pod %s was already added; updating it", key)
                elif state.node != node:
                    log.info("pod %s was assumed on %s but bound to %s", key, state.node, node)
                self._unplace(key, state.node)
            self._pods[key] = _PodState(self._place(parsed, node), node)

    def update_pod(self, old: dict | None, new: dict) -> None:
        """An added pod changed (labels, requests after resize, ...). An unknown or assumed
        pod is added/confirmed instead; a pod that lost its node is removed."""
        if not _node_name(new):
            self.remove_pod(new)
            return
        self.add_pod(new)

    def remove_pod(self, pod: dict) -> None:
        """The pod is gone (deleted, or finished): remove it from the node it is cached on."""
        key = pod_key(pod)
        with self._lock:
            state = self._pods.pop(key, None)
            if state is not None:
                self._unplace(key, state.node)

    # -- namespaces (for namespaceSelector in pod affinity terms) -------------------------------

    def add_namespace(self, namespace: dict) -> None:
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        with self._lock:
            self._namespaces[_name(namespace)] = labels

    def update_namespace(self, old: dict | None, new: dict) -> None:
        self.add_namespace(new)

    def remove_namespace(self, namespace: dict) -> None:
        with self._lock:
            self._namespaces.pop(_name(namespace), None)

    def namespace_labels(self, namespace: str) -> dict | None:
        """The labels of a namespace, ``None`` if unknown (no namespace informer, or gone)."""
        with self._lock:
            return self._namespaces.get(namespace)

    # -- snapshot -------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """A consistent, read-only view for one cycle (nodes that exist, with their pods).

        Nothing changed since the last call: the same Snapshot. Otherwise only NodeInfos whose
        generation moved are cloned again; the others are the previous snapshot's objects.
        """
        with self._lock:
            self._expire_due()
            if not self._dirty and self._snapshot is not None:
                return self._snapshot
            if self._nodes_changed or self._snapshot is None:
                self._snapshot = self._full_snapshot()
            else:
                self._snapshot = self._pods_snapshot(self._snapshot)
            self._dirty = False
            self._nodes_changed = False
            self._touched.clear()
            return self._snapshot

    def _full_snapshot(self) -> Snapshot:
        clones: dict[str, NodeInfo] = {}
        generation = 0
        for name, info in self._nodes.items():
            if info.node is None:
                continue
            previous = self._clones.get(name)
            if previous is not None and previous.generation == info.generation:
                clones[name] = previous
            else:
                clones[name] = info.clone()
            generation = max(generation, info.generation)
        self._clones = clones
        return Snapshot(clones.values(), generation)

    def _pods_snapshot(self, previous: Snapshot) -> Snapshot:
        """Only pods moved, on the nodes in ``_touched``: keep the node order and image
        summaries, swap the NodeInfos of those nodes (the node set is unchanged, so each of
        them is in ``_clones`` unless it is a placeholder, which snapshots leave out)."""
        changed: list[NodeInfo] = []
        generation = previous.generation
        for name in self._touched:
            info = self._nodes.get(name)
            clone = self._clones.get(name)
            if info is None or info.node is None or clone is None:
                continue
            if clone.generation != info.generation:
                clone = self._clones[name] = info.clone()
                changed.append(clone)
                generation = max(generation, info.generation)
        if not changed:
            return previous
        snapshot = previous.overlay(changed)
        snapshot.generation = generation
        return snapshot

    def dump(self) -> dict:
        """The cache's content for debugging (JSON-able)."""
        with self._lock:
            self._expire_due()
            now = self._clock()
            return {
                "nodes": {
                    name: {
                        "placeholder": info.node is None,
                        "generation": info.generation,
                        "pods": [p.key for p in info.pods],
                        "requested": {
                            "milliCPU": info.requested.milli_cpu,
                            "memory": info.requested.memory,
                        },
                        "allocatable": {
                            "milliCPU": info.allocatable.milli_cpu,
                            "memory": info.allocatable.memory,
                        },
                    }
                    for name, info in self._nodes.items()
                },
                "assumed": {
                    key: {"node": s.node, "bindingFinished": s.binding_finished}
                    | ({} if s.deadline is None else {"expiresIn": round(s.deadline - now, 3)})
                    for key, s in self._pods.items()
                    if s.assumed
                },
                "pods": len(self._pods),
                "namespaces": len(self._namespaces),
            }


__all__ = ["Cache", "CacheError"]
