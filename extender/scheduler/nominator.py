"""Pods nominated to nodes by preemption (upstream ``pkg/scheduler/backend/queue/nominator.go``).

The framework's filters count a node's nominated pods of equal or higher priority, so a node
freed by preemption is kept for the pod it was freed for.
"""

from __future__ import annotations

import threading

from extender.framework.pod_info import PodInfo, pod_key
from extender.framework.results import NominatingInfo, NominatingMode


class Nominator:
    """Pod key -> nominated node, and node -> nominated pods; one lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, info: PodInfo, nominating: NominatingInfo | None = None) -> None:
        with self._lock:
            self._delete(info.key)
            if nominating is not None and nominating.mode == NominatingMode.OVERRIDE:
                node = nominating.nominated_node_name
            else:
                node = ((info.pod.get("status") or {}).get("nominatedNodeName")) or ""
            if not node:
                return
            self._node_of[info.key] = node
            self._by_node.setdefault(node, []).append(info)

    def delete_nominated_pod_if_exists(self, pod: dict) -> None:
        with self._lock:
            self._delete(pod_key(pod))

    def _delete(self, key: str) -> None:
        node = self._node_of.pop(key, None)
        if node is None:
            return
        pods = [p for p in self._by_node.get(node, ()) if p.key != key]
        if pods:
            self._by_node[node] = pods
        else:
            self._by_node.pop(node, None)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        with self._lock:
            return list(self._by_node.get(node_name, ()))

    def nominated_node_of(self, pod: dict) -> str:
        with self._lock:
            return self._node_of.get(pod_key(pod), "")

    def has_nominated_pods(self) -> bool:
        return bool(self._node_of)
