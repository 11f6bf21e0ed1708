"""The cluster cache: NodeInfos with their pods, assumed pods, and per-cycle snapshots.

One per process, shared by every thread (informer handlers, scheduling cycle, binding
workers, webhook request threads); all access goes through one lock.

Pod state machine (spec §5.2): ``assume_pod`` (at Reserve) -> ``finish_binding`` (bind sent)
-> ``add_pod`` from the watch confirms it; ``forget_pod`` undoes an assumption when binding
fails. With a TTL > 0 a bound pod the watch never confirms expires after ``ttl`` seconds
(upstream's TTL is 0, never: see kubernetes#106361 for why expiry can over-commit a node).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from extender.framework.types import NodeInfo, PodInfo, Snapshot, pod_key


class CacheError(ValueError):
    """An impossible transition (assuming a pod twice, forgetting an unknown pod, ...)."""


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    node: str
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


def _node_name(pod: dict) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


class Cache:
    def __init__(self, ttl: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.RLock()
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._namespaces: dict[str, dict] = {}
        # The last snapshot's clones, reused while a node's generation is unchanged.
        self._clones: dict[str, NodeInfo] = {}
        self._snapshot: Snapshot | None = None
        self._dirty = True

    # -- nodes ----------------------------------------------------------------------------------

    def add_node(self, node: dict) -> None:
        with self._lock:
            name = _name(node)
            info = self._nodes.get(name)
            if info is None:
                self._nodes[name] = NodeInfo(node)
            else:
                info.set_node(node)  # a placeholder (pods arrived first) gets its node
            self._dirty = True

    def update_node(self, old: dict | None, new: dict) -> None:
        self.add_node(new)

    def remove_node(self, node: dict) -> None:
        with self._lock:
            name = _name(node)
            info = self._nodes.get(name)
            if info is None:
                return
            if info.pods:
                # Pods still reference it: keep a node-less NodeInfo until they go.
                info.node = None
                info.generation += 1
            else:
                del self._nodes[name]
            self._dirty = True

    def get_node(self, name: str) -> dict | None:
        with self._lock:
            info = self._nodes.get(name)
            return info.node if info is not None else None

    def node_names(self) -> list[str]:
        with self._lock:
            return [name for name, info in self._nodes.items() if info.node is not None]

    def node_count(self) -> int:
        return len(self.node_names())

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pods)

    # -- pods -----------------------------------------------------------------------------------

    def _node_info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo()
            info.name = name
        return info

    def _place(self, pod: dict, node: str) -> PodInfo:
        info = self._node_info(node).add_pod(pod)
        self._dirty = True
        return info

    def _unplace(self, key: str, node: str) -> None:
        info = self._nodes.get(node)
        if info is None:
            return
        info.remove_pod(key)
        if info.node is None and not info.pods:
            del self._nodes[node]
        self._dirty = True

    def assume_pod(self, pod: dict) -> None:
        key, node = pod_key(pod), _node_name(pod)
        if not node:
            raise CacheError(f"assume_pod: pod {key} has no spec.nodeName")
        with self._lock:
            if key in self._pods:
                raise CacheError(f"assume_pod: pod {key} is already in the cache")
            self._pods[key] = _PodState(self._place(pod, node), node, assumed=True)

    def finish_binding(self, pod: dict) -> None:
        with self._lock:
            state = self._pods.get(pod_key(pod))
            if state is not None and state.assumed:
                state.binding_finished = True
                state.deadline = self.clock() + self.ttl if self.ttl > 0 else None

    def forget_pod(self, pod: dict) -> None:
        key = pod_key(pod)
        with self._lock:
            state = self._pods.get(key)
            if state is None:
                return
            if not state.assumed:
                raise CacheError(f"forget_pod: pod {key} was added, not assumed")
            node = _node_name(pod)
            if node and node != state.node:
                raise CacheError(f"forget_pod: pod {key} was assumed on {state.node}, not {node}")
            self._unplace(key, state.node)
            del self._pods[key]

    def is_assumed(self, uid_or_key: str) -> bool:
        with self._lock:
            state = self._pods.get(uid_or_key)
            return state is not None and state.assumed

    def add_pod(self, pod: dict) -> None:
        key, node = pod_key(pod), _node_name(pod)
        if not node:
            return
        with self._lock:
            state = self._pods.get(key)
            if state is not None:
                # Assumed: the watch confirms it (on whatever node it really landed). Added
                # twice (a re-list): treat as an update.
                self._unplace(key, state.node)
            self._pods[key] = _PodState(self._place(pod, node), node)

    def update_pod(self, old: dict | None, new: dict) -> None:
        self.add_pod(new)

    def remove_pod(self, pod: dict) -> None:
        key = pod_key(pod)
        with self._lock:
            state = self._pods.pop(key, None)
            if state is not None:
                self._unplace(key, state.node)

    def cleanup_assumed_pods(self, now: float | None = None) -> list[str]:
        """Expire bound-but-unconfirmed pods past their deadline; returns their keys."""
        now = self.clock() if now is None else now
        expired = []
        with self._lock:
            for key, state in list(self._pods.items()):
                if state.assumed and state.deadline is not None and now >= state.deadline:
                    self._unplace(key, state.node)
                    del self._pods[key]
                    expired.append(key)
        return expired

    # -- namespaces (for namespaceSelector in pod affinity terms) -------------------------------

    def add_namespace(self, namespace: dict) -> None:
        with self._lock:
            self._namespaces[_name(namespace)] = (namespace.get("metadata") or {}).get(
                "labels"
            ) or {}

    def update_namespace(self, old: dict | None, new: dict) -> None:
        self.add_namespace(new)

    def remove_namespace(self, namespace: dict) -> None:
        with self._lock:
            self._namespaces.pop(_name(namespace), None)

    def namespace_labels(self, namespace: str) -> dict | None:
        with self._lock:
            return self._namespaces.get(namespace)

    # -- snapshot -------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """A consistent view for one cycle; NodeInfos unchanged since the last one are reused."""
        with self._lock:
            if not self._dirty and self._snapshot is not None:
                return self._snapshot
            clones: dict[str, NodeInfo] = {}
            for name, info in self._nodes.items():
                if info.node is None:
                    continue
                previous = self._clones.get(name)
                if previous is not None and previous.generation == info.generation:
                    clones[name] = previous
                else:
                    clones[name] = info.clone()
            self._clones = clones
            self._snapshot = Snapshot(clones.values())
            self._dirty = False
            return self._snapshot

    def dump(self) -> dict:
        with self._lock:
            return {
                "nodes": {
                    name: {
                        "pods": [p.key for p in info.pods],
                        "requested": repr(info.requested),
                        "placeholder": info.node is None,
                    }
                    for name, info in self._nodes.items()
                },
                "assumed": [key for key, s in self._pods.items() if s.assumed],
            }
