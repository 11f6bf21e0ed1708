"""The PodTopologySpread plugin (upstream ``podtopologyspread/plugin.go``): its args and
default constraints, the constraints of a pod, the events that requeue a pod. Filtering and
scoring are mixed in from :mod:`.filtering` and :mod:`.scoring`."""

from __future__ import annotations

from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import (
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    Handle,
    Kind,
)
from extender.framework.labels import LabelSelector
from extender.framework.pod_info import pod_key
from extender.framework.snapshot import HOSTNAME_LABEL, ZONE_LABEL

from ..args import duplicate, invalid, is_int, required, unsupported
from .common import (
    DO_NOT_SCHEDULE,
    HONOR,
    NAME,
    SCHEDULE_ANYWAY,
    Constraint,
    MatchCounts,
    RowCounts,
    _parse_constraints,
    default_selector,
    node_has_all_keys,
)
from .filtering import Filtering
from .scoring import Scoring

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict, ...] = (
    {"topologyKey": HOSTNAME_LABEL, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": ZONE_LABEL, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


class PodTopologySpread(Filtering, Scoring):
    name = NAME
    reads = (PODS, SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidatePodTopologySpreadArgs``: ``ValueError`` naming the bad field."""
        args = args or {}
        _validate_args(
            args.get("defaultingType") or SYSTEM_DEFAULTING,
            list(args.get("defaultConstraints") or []),
        )

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.match_counts = MatchCounts()
        self.row_counts = RowCounts()
        args = args or {}
        defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
        defaults = list(args.get("defaultConstraints") or [])
        _validate_args(defaulting, defaults)
        self.system_defaulted = defaulting == SYSTEM_DEFAULTING
        self.default_constraints: list[dict] = (
            [dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS] if self.system_defaulted else defaults
        )

    # -- constraints ------------------------------------------------------------------

    def _constraints(self, pod: dict, action: str) -> list[Constraint]:
        """The pod's constraints for ``action``, or the default ones if it has none at all."""
        spec = pod.get("spec") or {}
        labels = (pod.get("metadata") or {}).get("labels") or {}
        own = spec.get("topologySpreadConstraints") or []
        if own:
            return _parse_constraints(own, labels, action)
        return self._default_constraints(pod, action)

    def _default_constraints(self, pod: dict, action: str) -> list[Constraint]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        constraints = _parse_constraints(self.default_constraints, labels, action)
        if not constraints:
            return []
        selector = self._default_selector(pod)
        if selector is None or selector.empty:
            return []
        for c in constraints:
            c.selector = selector
        return constraints

    def _default_selector(self, pod: dict) -> LabelSelector | None:
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        services = self.handle.lister(SERVICES).list(namespace)
        return default_selector(pod, services, self._controller)

    def _controller(self, kind: Kind, namespace: str, name: str) -> dict | None:
        return self.handle.lister(kind).get(namespace, name)

    # -- events -----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, node_actions), self.is_schedulable_after_node_change
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        if (new is not None and not _involved(new, pod)) or (
            old is not None and not _involved(old, pod)
        ):
            return QueueingHint.QUEUE_SKIP
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            if (
                pod_key(new) == pod_key(pod)
                and _tolerations(old) != _tolerations(new)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            old_labels, new_labels = _labels(old), _labels(new)
            if old_labels == new_labels:
                return QueueingHint.QUEUE_SKIP
            for c in constraints:
                if c.selector.matches(old_labels) != c.selector.matches(new_labels):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        if changed is not None and any(c.selector.matches(_labels(changed)) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        old_match = old is not None and node_has_all_keys(_labels(old), constraints)
        new_match = new is not None and node_has_all_keys(_labels(new), constraints)
        if old is not None and new is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match:
                old_labels, new_labels = _labels(old), _labels(new)
                if any(
                    old_labels.get(c.topology_key) != new_labels.get(c.topology_key)
                    for c in constraints
                ) or _taints(old) != _taints(new):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.QUEUE_SKIP


def _labels(obj: dict) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _tolerations(pod: dict) -> list[dict]:
    return (pod.get("spec") or {}).get("tolerations") or []


def _taints(node: dict) -> list[dict]:
    return (node.get("spec") or {}).get("taints") or []


def _involved(changed: dict, pod: dict) -> bool:
    """Whether ``changed`` is the pod itself or an assigned pod of the pod's namespace."""
    if pod_key(changed) == pod_key(pod):
        return True
    assigned = bool((changed.get("spec") or {}).get("nodeName"))
    same_ns = ((changed.get("metadata") or {}).get("namespace") or "default") == (
        (pod.get("metadata") or {}).get("namespace") or "default"
    )
    return assigned and same_ns


def _validate_args(defaulting: str, defaults: list[dict]) -> None:
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ValueError(
            unsupported(
                "defaultingType", defaulting, (LIST_DEFAULTING, SYSTEM_DEFAULTING), quote=repr
            )
        )
    if defaulting == SYSTEM_DEFAULTING and defaults:
        raise ValueError(
            invalid(
                "defaultingType",
                defaulting,
                "when .defaultConstraints are not empty",
                quote=repr,
            )
        )
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(defaults):
        path = f"defaultConstraints[{i}]"
        if not isinstance(c, dict):
            raise ValueError(f"{path}: must be an object")
        max_skew = c.get("maxSkew")
        if not is_int(max_skew) or max_skew <= 0:
            raise ValueError(
                invalid(f"{path}.maxSkew", max_skew, "not in valid range (0, inf)", quote=repr)
            )
        if not c.get("topologyKey"):
            raise ValueError(required(f"{path}.topologyKey", "can not be empty"))
        when = c.get("whenUnsatisfiable")
        if not when:
            raise ValueError(required(f"{path}.whenUnsatisfiable", "can not be empty"))
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(
                unsupported(
                    f"{path}.whenUnsatisfiable",
                    when,
                    (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY),
                    quote=repr,
                )
            )
        if c.get("labelSelector") is not None:
            raise ValueError(
                f"{path}.labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod"
            )
        key = (c["topologyKey"], when)
        if key in seen:
            raise ValueError(duplicate(path, f"{{{key[0]}, {key[1]}}}"))
        seen.add(key)
