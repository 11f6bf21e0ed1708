"""What filtering, scoring and the queueing hints of InterPodAffinity share: the plugin's name,
the cycle's snapshot of namespace labels (upstream ``GetNamespaceLabelsSnapshot`` in
``interpodaffinity/plugin.go``) and term matching (``podMatchesAllAffinityTerms`` in
``filtering.go``). Upstream keeps these in those files; here they sit apart because the plugin
class in :mod:`.plugin` imports its filtering and scoring halves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from extender.framework.handle import Handle
from extender.framework.pod_info import AffinityTerm, PodInfo

NAME = "InterPodAffinity"

TopologyPair = tuple[str, str]


class NamespaceLabels:
    """Namespace labels looked up once per namespace and cycle (a snapshot, like upstream's)."""

    __slots__ = ("_lookup", "_cache")

    def __init__(self, handle: Handle) -> None:
        self._lookup: Callable[[str], dict | None] = handle.namespace_labels
        self._cache: dict[str, dict | None] = {}

    def get(self, namespace: str) -> dict | None:
        if namespace not in self._cache:
            self._cache[namespace] = self._lookup(namespace) or None
        return self._cache[namespace]


def term_matches(term: AffinityTerm, pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
    """``term.matches`` fetching the pod's namespace labels only when the term needs them."""
    if (
        pod.namespace in term.namespaces
        or term.namespace_selector is None
        or term.namespace_selector.empty
    ):
        return term.matches(pod)
    return term.matches(pod, ns_labels.get(pod.namespace))


def matches_all_terms(
    terms: Iterable[AffinityTerm], pod: PodInfo, ns_labels: NamespaceLabels
) -> bool:
    """True iff there is at least one term and ``pod`` matches every one."""
    terms = tuple(terms)
    return bool(terms) and all(term_matches(t, pod, ns_labels) for t in terms)
