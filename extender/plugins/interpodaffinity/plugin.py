"""The InterPodAffinity plugin (upstream ``interpodaffinity/plugin.go``): its args and the
events that requeue a pod. Filtering and scoring are mixed in from :mod:`.filtering` and
:mod:`.scoring`."""

from __future__ import annotations

from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import NAMESPACES, PODS, Handle
from extender.framework.pod_info import PodInfo

from ..args import invalid, is_int
from .common import NAME, NamespaceLabels, matches_all_terms, term_matches
from .filtering import Filtering
from .scoring import Scoring

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def _parse_args(args: dict) -> tuple[int, bool]:
    """(hardPodAffinityWeight, ignorePreferredTermsOfExistingPods), defaulted and validated
    (upstream ``ValidateInterPodAffinityArgs``)."""
    args = args or {}
    weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    if weight is None:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if not is_int(weight) or not (
        MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT
    ):
        raise ValueError(
            invalid(
                "hardPodAffinityWeight",
                weight,
                f"not in valid range "
                f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
                quote=repr,
            )
        )
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise ValueError(
            invalid("ignorePreferredTermsOfExistingPods", ignore, "must be a boolean", quote=repr)
        )
    return weight, ignore


class InterPodAffinity(Filtering, Scoring):
    name = NAME
    reads = (PODS, NAMESPACES)

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateInterPodAffinityArgs``: ``ValueError`` naming the bad field."""
        _parse_args(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        weight, ignore = _parse_args(args)
        self.hard_pod_affinity_weight: int = weight
        self.ignore_preferred_terms_of_existing_pods: bool = ignore

    # -- events -----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # UpdateNodeTaint stands in for node additions that were filtered out while the
            # node was not ready (upstream keeps it for the same reason).
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if (new is not None and not _node_name(new)) or (old is not None and not _node_name(old)):
            return QueueingHint.QUEUE_SKIP
        target = PodInfo(pod)
        ns_labels = NamespaceLabels(self.handle)
        terms = target.required_affinity_terms
        anti_terms = target.required_anti_affinity_terms

        def matches_any_anti(changed: PodInfo) -> bool:
            return any(term_matches(t, changed, ns_labels) for t in anti_terms)

        if old is not None and new is not None:
            old_info, new_info = PodInfo(old), PodInfo(new)
            if not matches_all_terms(terms, old_info, ns_labels) and matches_all_terms(
                terms, new_info, ns_labels
            ):
                return QueueingHint.QUEUE
            if matches_any_anti(old_info) and not matches_any_anti(new_info):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            added = PodInfo(new)
            if matches_all_terms(terms, added, ns_labels):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        deleted = PodInfo(old)
        if matches_any_anti(deleted):
            return QueueingHint.QUEUE
        # The deleted pod's own anti-affinity may have been what kept the pod away.
        if any(term_matches(t, target, ns_labels) for t in deleted.required_anti_affinity_terms):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        target = PodInfo(pod)
        new_labels = (new.get("metadata") or {}).get("labels") or {}
        old_labels = ((old or {}).get("metadata") or {}).get("labels") or {}
        for term in target.required_affinity_terms:
            key = term.topology_key
            if old is None:
                if key in new_labels:
                    return QueueingHint.QUEUE
            elif key in new_labels and (
                key not in old_labels or old_labels[key] != new_labels[key]
            ):
                # The node gained the key, or moved to another domain.
                return QueueingHint.QUEUE
        for term in target.required_anti_affinity_terms:
            key = term.topology_key
            if old is None:
                return QueueingHint.QUEUE
            if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
                # The node left the domain that held the conflicting pod.
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _node_name(pod: dict) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""
