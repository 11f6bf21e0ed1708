"""PodInfo: a pod plus the fields the plugins read, parsed once; its affinity terms; and
QueuedPodInfo, a pod's bookkeeping in the scheduling queue.

Pods stay plain JSON dicts as the API serves them; :class:`PodInfo` parses the fields plugins
read (requests, host ports, affinity terms, labels) once, so that the hot filter/score loops
never re-parse them. Upstream counterparts: ``PodInfo``, ``AffinityTerm`` and ``QueuedPodInfo``
in kubernetes ``pkg/scheduler/framework/types.go``.
"""

from __future__ import annotations

from .labels import LabelSelector
from .resources import Resource, pod_requests


def pod_key(pod: dict) -> str:
    """The cache key of a pod: its UID, or namespace/name for pods without one (tests)."""
    meta = pod.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def pod_priority(pod: dict) -> int:
    return (pod.get("spec") or {}).get("priority") or 0


class AffinityTerm:
    """A pod (anti-)affinity term with its namespaces resolved (upstream
    ``pkg/scheduler/framework/plugins/interpodaffinity``)."""

    __slots__ = ("namespaces", "namespace_selector", "selector", "topology_key", "key")

    def __init__(self, term: dict, pod_namespace: str, pod_labels: dict) -> None:
        self.topology_key: str = term.get("topologyKey") or ""
        self.selector = LabelSelector(term.get("labelSelector"))
        for key in term.get("matchLabelKeys") or ():
            if key in pod_labels:
                self.selector.add_equals(key, pod_labels[key])
        for key in term.get("mismatchLabelKeys") or ():
            if key in pod_labels:
                self.selector.add_not_equals(key, pod_labels[key])
        ns_selector = term.get("namespaceSelector")
        self.namespaces: frozenset[str] = frozenset(term.get("namespaces") or ())
        self.namespace_selector = LabelSelector(ns_selector) if ns_selector is not None else None
        if not self.namespaces and self.namespace_selector is None:
            self.namespaces = frozenset((pod_namespace,))
        # Equal for terms that match the same pods (same namespaces, selectors, key).
        self.key: tuple = (
            self.topology_key,
            self.selector.key,
            self.namespaces,
            None if self.namespace_selector is None else self.namespace_selector.key,
        )

    def matches(self, pod: PodInfo, namespace_labels: dict | None = None) -> bool:
        """Whether ``pod`` is in the term's namespaces and its labels match the selector.

        ``namespace_labels`` are the labels of the pod's namespace, needed only when the term
        has a namespaceSelector (an empty one selects every namespace).
        """
        if pod.namespace not in self.namespaces:
            if self.namespace_selector is None:
                return False
            if not self.namespace_selector.empty and not self.namespace_selector.matches(
                namespace_labels
            ):
                return False
        return self.selector.matches(pod.labels)


class WeightedAffinityTerm:
    __slots__ = ("term", "weight")

    def __init__(self, term: AffinityTerm, weight: int) -> None:
        self.term = term
        self.weight = weight


def host_ports_of(spec: dict) -> tuple[tuple[str, str, int], ...]:
    ports = []
    containers = list(spec.get("containers") or ())
    containers += [
        c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"
    ]
    for container in containers:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort") or 0
            if host_port > 0:
                ports.append(
                    (port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", host_port)
                )
    return tuple(ports)


class PodInfo:
    """A pod plus the fields the plugins read, parsed once."""

    __slots__ = (
        "pod",
        "key",
        "name",
        "namespace",
        "uid",
        "labels",
        "priority",
        "node_name",
        "requests",
        "non_zero_milli_cpu",
        "non_zero_memory",
        "host_ports",
        "required_affinity_terms",
        "required_anti_affinity_terms",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "deleting",
        "start_time",
    )
    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int
    host_ports: tuple[tuple[str, str, int], ...]
    required_affinity_terms: tuple[AffinityTerm, ...]
    required_anti_affinity_terms: tuple[AffinityTerm, ...]
    preferred_affinity_terms: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...]

    def __init__(self, pod: dict, previous: PodInfo | None = None) -> None:
        """``previous``: a PodInfo of an earlier version of the same pod (the queue's, for
        the assumed copy; the assumed one, for the bound pod the watch brings). What it
        parsed from parts of the pod that are equal in ``pod`` is taken over instead of
        parsed again: requests and host ports when the spec is equal but for
        ``nodeName``, affinity terms when the labels and namespace are equal too."""
        self.pod = pod
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.key = pod_key(pod)
        self.name: str = meta.get("name", "")
        self.namespace: str = meta.get("namespace") or "default"
        self.uid: str = meta.get("uid", "")
        self.labels: dict[str, str] = meta.get("labels") or {}
        self.priority: int = spec.get("priority") or 0
        self.node_name: str = spec.get("nodeName") or ""
        self.deleting = meta.get("deletionTimestamp") is not None
        self.start_time: str = (pod.get("status") or {}).get("startTime") or meta.get(
            "creationTimestamp", ""
        )
        if previous is not None and _same_but_node(previous.pod.get("spec") or {}, spec):
            # The parsed values are never mutated: sharing them is safe.
            self.requests = previous.requests
            self.non_zero_milli_cpu = previous.non_zero_milli_cpu
            self.non_zero_memory = previous.non_zero_memory
            self.host_ports = previous.host_ports
            if previous.namespace == self.namespace and previous.labels == self.labels:
                self.required_affinity_terms = previous.required_affinity_terms
                self.required_anti_affinity_terms = previous.required_anti_affinity_terms
                self.preferred_affinity_terms = previous.preferred_affinity_terms
                self.preferred_anti_affinity_terms = previous.preferred_anti_affinity_terms
                return
        else:
            self.requests = pod_requests(pod)
            non_zero = pod_requests(pod, non_zero=True)
            self.non_zero_milli_cpu = non_zero.milli_cpu
            self.non_zero_memory = non_zero.memory
            self.host_ports = host_ports_of(spec)

        affinity = spec.get("affinity") or {}
        pod_aff = affinity.get("podAffinity") or {}
        pod_anti = affinity.get("podAntiAffinity") or {}
        self.required_affinity_terms = self._terms(
            pod_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
        )
        self.required_anti_affinity_terms = self._terms(
            pod_anti.get("requiredDuringSchedulingIgnoredDuringExecution")
        )
        self.preferred_affinity_terms = self._weighted(
            pod_aff.get("preferredDuringSchedulingIgnoredDuringExecution")
        )
        self.preferred_anti_affinity_terms = self._weighted(
            pod_anti.get("preferredDuringSchedulingIgnoredDuringExecution")
        )

    def _terms(self, terms: list[dict] | None) -> tuple[AffinityTerm, ...]:
        return tuple(AffinityTerm(t, self.namespace, self.labels) for t in terms or ())

    def _weighted(self, terms: list[dict] | None) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(
            WeightedAffinityTerm(
                AffinityTerm(t.get("podAffinityTerm") or {}, self.namespace, self.labels),
                t.get("weight") or 0,
            )
            for t in terms or ()
        )

    @property
    def has_affinity(self) -> bool:
        return bool(
            self.required_affinity_terms
            or self.required_anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )

    def __repr__(self) -> str:
        return f"PodInfo({self.namespace}/{self.name})"


def _same_but_node(old: dict, new: dict) -> bool:
    """Two pod specs equal but for ``nodeName`` (the assumed copy, the bound pod)."""
    if old.get("nodeName") == new.get("nodeName"):
        return old == new
    return {**old, "nodeName": None} == {**new, "nodeName": None}


class QueuedPodInfo:
    """A pod in the scheduling queue with its bookkeeping (upstream
    ``pkg/scheduler/backend/queue``)."""

    __slots__ = (
        "pod_info",
        "timestamp",
        "attempts",
        "initial_attempt_timestamp",
        "unschedulable_count",
        "consecutive_errors_count",
        "unschedulable_plugins",
        "pending_plugins",
        "gating_plugin",
    )

    def __init__(self, pod: dict | PodInfo, timestamp: float = 0.0) -> None:
        self.pod_info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        self.timestamp = timestamp
        self.attempts = 0
        self.initial_attempt_timestamp: float | None = None
        self.unschedulable_count = 0
        self.consecutive_errors_count = 0
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.gating_plugin = ""

    @property
    def pod(self) -> dict:
        return self.pod_info.pod

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod_info.namespace}/{self.pod_info.name})"


QueuedPodInfoLike = QueuedPodInfo
