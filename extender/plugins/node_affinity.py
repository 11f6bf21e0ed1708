"""NodeAffinity (PreFilter, Filter, PreScore, Score): nodeSelector and node affinity (upstream
``pkg/scheduler/framework/plugins/nodeaffinity``).

Required part: ``spec.nodeSelector`` AND ``requiredDuringSchedulingIgnoredDuringExecution``,
plus the profile's ``addedAffinity.required...`` (args), checked first and separately.

* PreFilter: Skip when the pod has no ``nodeSelector``, no required node affinity and the
  profile has no added required affinity. When every required term pins nodes with a
  ``metadata.name In`` field requirement, the result restricts the cycle to those names (union
  over terms, intersection within a term); an empty set is UnschedulableAndUnresolvable
  ``pod affinity terms conflict``.
* Filter: addedAffinity mismatch -> ``node(s) didn't match scheduler-enforced node affinity``;
  pod mismatch -> ``node(s) didn't match Pod's node affinity/selector`` (both unresolvable).
* PreScore/Score: the summed weights of the matching preferred terms of the pod and of
  addedAffinity; Skip when the pod has no preferred list and addedAffinity has no preferred terms.
  NormalizeScore: default normalization (not reversed).

Batch forms (:mod:`extender.framework.columns`): ``filter_batch`` and ``score_batch`` run the
same compiled requirements (``extender.framework.labels``), a label requirement once per
distinct value of its key (:meth:`NodeTable.labels`, on ``{key: value}`` or ``{}`` when the
label is absent: a requirement reads its own key only) and a ``metadata.name`` field requirement
on the one row its value names and on one other name for all the other rows; the row masks are
then ANDed within a term and ORed over terms, as ``NodeSelector.matches`` does node by node.

Args: ``addedAffinity`` (a ``v1.NodeAffinity`` dict) is validated like upstream
``ValidateNodeAffinityArgs``: its selectors must parse (a ``ValueError`` names the field).
Reads node names and labels; mutates nothing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from extender.framework.columns import SAFE_AMOUNT
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from extender.framework.handle import Handle
from extender.framework.labels import NodeSelector, NodeSelectorTerm, RequiredNodeAffinity
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import DefaultNormalize
from extender.framework.resources import DNS1123_SUBDOMAIN
from extender.framework.results import PreFilterResult
from extender.framework.status import SKIP, Status, unresolvable

from .args import unsupported

if TYPE_CHECKING:
    from extender.framework.columns import NodeTable

NAME = "NodeAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
OBJECT_NAME_FIELD = "metadata.name"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


# -- selector parsing errors (what upstream's NewNodeSelector / NewRequirement reject) ----------
# labels.py compiles selectors leniently; the strict checks live here because only this plugin
# needs them (args validation and the pod's preferred terms, which upstream parses strictly).

_NAME_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _label_key_errors(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return ["prefix part must be non-empty"]
    errs = []
    if not name or len(name) > 63 or not _NAME_RE.match(name):
        errs.append(f"name part of {key!r} must be a valid label name")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        errs.append(f"prefix part of {key!r} must be a DNS-1123 subdomain")
    return errs


def _int64(value: str) -> bool:
    try:
        number = int(value, 10)
    except (TypeError, ValueError):
        return False
    return -(2**63) <= number < 2**63 and value.strip() == value and "_" not in value


def _requirement_errors(req: dict, path: str) -> list[str]:
    op = req.get("operator") or ""
    values = req.get("values") or []
    if op not in _LABEL_OPERATORS:
        return [unsupported(f"{path}.operator", op, quote=repr)]
    errs = [f"{path}.key: {e}" for e in _label_key_errors(req.get("key") or "")]
    if op in ("In", "NotIn") and not values:
        errs.append(f"{path}.values: for 'in', 'notin' operators, values set can't be empty")
    elif op in ("Exists", "DoesNotExist") and values:
        errs.append(f"{path}.values: values set must be empty for exists and does not exist")
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(f"{path}.values: for 'Gt', 'Lt' operators, exactly one value is required")
        elif not _int64(values[0]):
            errs.append(f"{path}.values[0]: for 'Gt', 'Lt' operators, the value must be an integer")
    for i, value in enumerate(values):
        if not isinstance(value, str) or len(value) > 63 or not _NAME_RE.match(value):
            errs.append(f"{path}.values[{i}]: {value!r} must be a valid label value")
    return errs


def _term_errors(term: dict, path: str) -> list[str]:
    errs: list[str] = []
    for i, req in enumerate(term.get("matchExpressions") or ()):
        errs += _requirement_errors(req, f"{path}.matchExpressions[{i}]")
    for i, req in enumerate(term.get("matchFields") or ()):
        p = f"{path}.matchFields[{i}]"
        if len(req.get("values") or ()) != 1:
            errs.append(f"{p}.values: must have one element")
        elif req.get("operator") not in ("In", "NotIn"):
            errs.append(unsupported(f"{p}.operator", req.get("operator"), quote=repr))
    return errs


def _is_empty_term(term: dict) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def node_selector_errors(selector: dict, path: str) -> list[str]:
    """Parse errors of a ``v1.NodeSelector`` (empty terms are skipped, as upstream)."""
    errs: list[str] = []
    for i, term in enumerate(selector.get("nodeSelectorTerms") or ()):
        if not _is_empty_term(term):
            errs += _term_errors(term, f"{path}.nodeSelectorTerms[{i}]")
    return errs


def preferred_terms_errors(terms: list[dict], path: str) -> list[str]:
    errs: list[str] = []
    for i, term in enumerate(terms):
        preference = term.get("preference") or {}
        if not term.get("weight") or _is_empty_term(preference):
            continue  # ignored, never parsed
        errs += _term_errors(preference, f"{path}[{i}].preference")
    return errs


# -- preferred terms ----------------------------------------------------------------------------


class PreferredTerms:
    """Compiled ``preferredDuringScheduling...`` terms; weight-0 and empty terms are dropped."""

    __slots__ = ("terms",)

    def __init__(self, terms: list[dict]) -> None:
        self.terms: tuple[tuple[NodeSelectorTerm, int], ...] = tuple(
            (NodeSelectorTerm(t.get("preference") or {}), int(t.get("weight") or 0))
            for t in terms
            if t.get("weight") and not _is_empty_term(t.get("preference") or {})
        )

    def score(self, node_name: str, labels: dict[str, str]) -> int:
        return sum(weight for term, weight in self.terms if term.matches(node_name, labels))

    def clone(self) -> PreferredTerms:
        return self  # read-only


def _node_affinity(pod: dict) -> dict:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def _pod_preferred(pod: dict) -> tuple[PreferredTerms | None, Status | None]:
    """The pod's preferred terms (``None`` when the field is absent) or an Error status."""
    terms = _node_affinity(pod).get(_PREFERRED)
    if terms is None:
        return None, None
    errs = preferred_terms_errors(terms, f"spec.affinity.nodeAffinity.{_PREFERRED}")
    if errs:
        return None, Status.error("; ".join(errs), plugin=NAME)
    return PreferredTerms(terms), None


def pinned_node_names(pod: dict) -> set[str] | None:
    """Node names from ``metadata.name In`` field requirements when every term has one.

    ``None`` means "all nodes" (no required affinity, no terms, or a term without such a field).
    """
    required = _node_affinity(pod).get(_REQUIRED)
    terms = (required or {}).get("nodeSelectorTerms") or []
    if not terms:
        return None
    union: set[str] = set()
    for term in terms:
        names: set[str] | None = None
        for field in term.get("matchFields") or ():
            if field.get("key") == OBJECT_NAME_FIELD and field.get("operator") == "In":
                values = set(field.get("values") or ())
                # Requirements within a term are ANDed: intersect.
                names = values if names is None else names & values
        if names is None:
            return None  # terms are ORed: this one allows every node
        union |= names
    return union


# -- batch forms: the same requirements, once per distinct label value --------------------------


def _labels_of(key: Any, value: Any) -> dict:
    """The labels a requirement on ``key`` sees on a node whose value is ``value`` (``None``:
    the node has no such label)."""
    return {} if value is None else {key: value}


def _field_rows(table: NodeTable, req: dict, matches: Any) -> np.ndarray:
    """Rows whose name satisfies the compiled field requirement ``matches`` (of ``req``).

    A field requirement compares the node name with its one value (upstream
    ``staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``:
    only ``metadata.name``, ``In``/``NotIn``, one value), so its
    answer is the same for every name but that value: ``matches`` is called on that value (its
    row, if a node has it) and on one other name (every other row). Otherwise, or when two
    rows share a name, ``matches`` is called on every row's name."""
    values = req.get("values") or []
    n = len(table)
    if len(values) == 1 and isinstance(values[0], str) and len(table.index) == n:
        wanted = values[0]
        rows = np.full(n, bool(matches(wanted + "\x00")), dtype=bool)
        row = table.index.get(wanted)
        if row is not None:
            rows[row] = bool(matches(wanted))
        return rows
    return np.fromiter((bool(matches(name)) for name in table.names), bool, n)


def _term_rows(table: NodeTable, term: NodeSelectorTerm) -> np.ndarray:
    """:meth:`NodeSelectorTerm.matches` for every row."""
    n = len(table)
    if not term.label_reqs and not term.field_reqs:
        return np.zeros(n, dtype=bool)  # an empty term matches nothing
    rows = np.ones(n, dtype=bool)
    exprs = term.raw.get("matchExpressions") or ()
    for raw, req in zip(exprs, term.label_reqs, strict=True):
        key = raw.get("key", "")
        rows &= table.labels(key).mask(lambda v, key=key, req=req: req(_labels_of(key, v)))
    fields = term.raw.get("matchFields") or ()
    for raw, freq in zip(fields, term.field_reqs, strict=True):
        rows &= _field_rows(table, raw, freq)
    return rows


def _selector_rows(table: NodeTable, selector: NodeSelector) -> np.ndarray:
    """:meth:`NodeSelector.matches` for every row: terms ORed."""
    rows = np.zeros(len(table), dtype=bool)
    for term in selector.terms:
        rows |= _term_rows(table, term)
    return rows


def _required_rows(table: NodeTable, required: RequiredNodeAffinity) -> np.ndarray:
    """:meth:`RequiredNodeAffinity.matches` for every row: nodeSelector AND the affinity."""
    rows = np.ones(len(table), dtype=bool)
    for key, value in required.node_selector:
        # The per-node test rejects when ``labels.get(key) != value``.
        rows &= table.labels(key).mask(
            lambda v, key=key, value=value: not (_labels_of(key, v).get(key) != value)
        )
    if required.affinity is not None:
        rows &= _selector_rows(table, required.affinity)
    return rows


def _preferred_rows(table: NodeTable, preferred: PreferredTerms) -> np.ndarray | None:
    """:meth:`PreferredTerms.score` for every row: the weights of the matching terms; ``None``
    when the weights could overflow int64 (the API bounds them to 1..100; the args do not)."""
    if sum(abs(weight) for _, weight in preferred.terms) >= SAFE_AMOUNT:
        return None
    total = np.zeros(len(table), dtype=np.int64)
    for term, weight in preferred.terms:
        total += _term_rows(table, term) * np.int64(weight)
    return total


def _node_name_labels(node: dict) -> tuple[str, dict[str, str]]:
    meta = node.get("metadata") or {}
    return meta.get("name") or "", meta.get("labels") or {}


def _added_affinity(args: dict) -> tuple[NodeSelector | None, PreferredTerms | None]:
    """The ``addedAffinity`` arg's required selector and preferred terms, validated."""
    added = (args or {}).get("addedAffinity")
    if added is not None and not isinstance(added, dict):
        raise ValueError("addedAffinity: must be a NodeAffinity object")
    added = added or {}
    node_selector: NodeSelector | None = None
    preferred_terms: PreferredTerms | None = None
    errs: list[str] = []
    required = added.get(_REQUIRED)
    if required is not None:
        errs += node_selector_errors(required, f"addedAffinity.{_REQUIRED}")
        node_selector = NodeSelector(required)
    preferred = added.get(_PREFERRED) or []
    if preferred:
        errs += preferred_terms_errors(preferred, f"addedAffinity.{_PREFERRED}")
        preferred_terms = PreferredTerms(preferred)
    if errs:
        raise ValueError("; ".join(errs))
    return node_selector, preferred_terms


class NodeAffinity(DefaultNormalize):
    name = NAME

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """Upstream ``ValidateNodeAffinityArgs``: ``ValueError`` naming each bad field."""
        _added_affinity(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.added_node_selector: NodeSelector | None
        self.added_preferred: PreferredTerms | None
        self.added_node_selector, self.added_preferred = _added_affinity(args)

    # -- filter ---------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        spec = pod.get("spec") or {}
        required = _node_affinity(pod).get(_REQUIRED)
        # ``None`` tests, not truthiness: upstream checks for nil, and an empty map is not nil.
        if (
            required is None
            and self.added_node_selector is None
            and spec.get("nodeSelector") is None
        ):
            return None, SKIP  # nothing for Filter to check
        state.write(PRE_FILTER_KEY, RequiredNodeAffinity(pod))
        names = pinned_node_names(pod)
        if names is None:
            return None, None
        if not names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names), None

    def pre_filter_extensions(self) -> None:
        return None  # the state does not depend on other pods

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            node_info.name, node_info.labels
        ):
            return unresolvable(ERR_REASON_ENFORCED)
        try:
            required: RequiredNodeAffinity = state.read(PRE_FILTER_KEY)
        except StateNotFound:
            # PreFilter did not run (disabled, or skipped): compute it here, as upstream does.
            required = RequiredNodeAffinity(pod)
        if not required.matches(node_info.name, node_info.labels):
            return unresolvable(ERR_REASON_POD)
        return None

    def filter_batch(self, state: CycleState, pod: dict, table: NodeTable) -> np.ndarray:
        """:meth:`filter` for every row: the added affinity AND the pod's required affinity
        (the PreFilter state, or computed from the pod as ``filter`` does without it)."""
        rows = np.ones(len(table), dtype=bool)
        if self.added_node_selector is not None:
            rows &= _selector_rows(table, self.added_node_selector)
        required: RequiredNodeAffinity | None = state.get(PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity(pod)
        return rows & _required_rows(table, required)

    # -- score ----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        preferred, status = _pod_preferred(pod)
        if status is not None:
            return status
        if preferred is None and self.added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_KEY, _PreScoreState(preferred))
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        total = 0
        if self.added_preferred is not None:
            total += self.added_preferred.score(node_info.name, node_info.labels)
        try:
            preferred = state.read(PRE_SCORE_KEY).preferred
        except StateNotFound:
            preferred, status = _pod_preferred(pod)  # PreScore disabled
            if status is not None:
                return 0, status
        if preferred is not None:
            total += preferred.score(node_info.name, node_info.labels)
        return total, None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for ``rows``: the matching preferred weights of addedAffinity and of the
        pod. Declines when the pod's terms do not parse (``score`` reports the error)."""
        total = np.zeros(len(table), dtype=np.int64)
        if self.added_preferred is not None:
            added = _preferred_rows(table, self.added_preferred)
            if added is None:
                return None
            total += added
        pre_score: _PreScoreState | None = state.get(PRE_SCORE_KEY)
        if pre_score is not None:
            preferred = pre_score.preferred
        else:
            preferred, status = _pod_preferred(pod)  # PreScore disabled
            if status is not None:
                return None
        if preferred is not None:
            weights = _preferred_rows(table, preferred)
            if weights is None:
                return None
            total += weights
        return total[rows]

    # -- queueing -------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints there is no preCheck, so taint updates need not be registered.
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: dict, old: dict | None, new: dict | None
    ) -> QueueingHint:
        """Queue when a node was added matching the pod, or an update made it match."""
        if new is None:
            return QueueingHint.QUEUE_SKIP
        name, labels = _node_name_labels(new)
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            name, labels
        ):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        if not required.matches(name, labels):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if required.matches(*_node_name_labels(old)):
            return QueueingHint.QUEUE_SKIP  # it matched before: this update changes nothing
        return QueueingHint.QUEUE


class _PreScoreState:
    __slots__ = ("preferred",)

    def __init__(self, preferred: PreferredTerms | None) -> None:
        self.preferred = preferred

    def clone(self) -> _PreScoreState:
        return self
