"""Label selectors, node selectors and tolerations, compiled once and applied many times.

These are the shared matching rules of the API (``metav1.LabelSelector``,
``v1.NodeSelector``, taint/toleration matching) that several plugins and preemption use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Labels = Mapping[str, str]


def _selector_requirement(req: dict) -> Callable[[Labels], bool]:
    key = req.get("key", "")
    op = req.get("operator", "")
    values = frozenset(req.get("values") or ())
    if op == "In":
        return lambda labels: key in labels and labels[key] in values
    if op == "NotIn":
        return lambda labels: key not in labels or labels[key] not in values
    if op == "Exists":
        return lambda labels: key in labels
    if op == "DoesNotExist":
        return lambda labels: key not in labels
    raise ValueError(f"invalid label selector operator {op!r}")


class LabelSelector:
    """A compiled ``metav1.LabelSelector``.

    An empty selector (``{}``) matches everything; a missing one (``None``) matches nothing,
    as ``metav1.LabelSelectorAsSelector`` does.
    """

    __slots__ = ("match_labels", "requirements", "matches_nothing", "empty", "key", "selective")

    def __init__(self, selector: dict | None) -> None:
        self.matches_nothing = selector is None
        selector = selector or {}
        # A hashable identity of what the selector selects (for memoized counts).
        self.key: tuple = (
            self.matches_nothing,
            tuple(sorted((selector.get("matchLabels") or {}).items())),
            tuple(
                (r.get("key"), r.get("operator"), tuple(r.get("values") or ()))
                for r in selector.get("matchExpressions") or ()
            ),
        )
        self.match_labels: tuple[tuple[str, str], ...] = tuple(
            (selector.get("matchLabels") or {}).items()
        )
        self.requirements = tuple(
            _selector_requirement(r) for r in selector.get("matchExpressions") or ()
        )
        self.empty = not self.matches_nothing and not self.match_labels and not self.requirements
        # The requirements a matching pod must satisfy with one of a few (key, value) pairs:
        # matchLabels pairs and ``In`` expressions, values deduplicated (a label has one value,
        # so pods found under different values are distinct). A pod without any pair of one
        # of these cannot match, which lets NodeInfo.candidates look pods up by label. A null
        # matchLabels value (a hostile webhook body) also matches pods lacking the key: no pair.
        self.selective: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
            (key, (value,)) for key, value in self.match_labels if value is not None
        ) + tuple(
            (r.get("key", ""), tuple(dict.fromkeys(r.get("values") or ())))
            for r in selector.get("matchExpressions") or ()
            if r.get("operator") == "In"
        )

    def matches(self, labels: Labels | None) -> bool:
        if self.matches_nothing:
            return False
        labels = labels or {}
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for req in self.requirements:
            if not req(labels):
                return False
        return True

    def add_equals(self, key: str, value: str) -> None:
        """Add ``key == value`` (matchLabelKeys); a no-op on a selector that matches nothing."""
        if not self.matches_nothing:
            self.match_labels = (*self.match_labels, (key, value))
            if value is not None:
                self.selective = (*self.selective, (key, (value,)))
            self.empty = False
            self.key = (*self.key, ("=", key, value))

    def add_not_equals(self, key: str, value: str) -> None:
        """Add ``key != value`` (mismatchLabelKeys)."""
        if not self.matches_nothing:
            self.requirements = (
                *self.requirements,
                _selector_requirement({"key": key, "operator": "NotIn", "values": [value]}),
            )
            self.empty = False
            self.key = (*self.key, ("!=", key, value))


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _node_requirement(req: dict) -> Callable[[Labels], bool]:
    key = req.get("key", "")
    op = req.get("operator", "")
    values = req.get("values") or []
    if op in ("In", "NotIn", "Exists", "DoesNotExist"):
        return _selector_requirement(req)
    if op in ("Gt", "Lt"):
        bound = _int_or_none(values[0]) if len(values) == 1 else None
        if bound is None:
            return lambda labels: False

        def compare(labels: Labels) -> bool:
            if key not in labels:
                return False
            actual = _int_or_none(labels[key])
            if actual is None:
                return False
            return actual > bound if op == "Gt" else actual < bound

        return compare
    # Unknown operators match nothing, as upstream's parse error makes the term not match.
    return lambda labels: False


def _field_requirement(req: dict) -> Callable[[str], bool]:
    values = req.get("values") or []
    if req.get("key") != "metadata.name" or len(values) != 1:
        return lambda name: False
    wanted = values[0]
    if req.get("operator") == "In":
        return lambda name: name == wanted
    if req.get("operator") == "NotIn":
        return lambda name: name != wanted
    return lambda name: False


class NodeSelectorTerm:
    __slots__ = ("label_reqs", "field_reqs", "raw")

    def __init__(self, term: dict) -> None:
        self.raw = term
        self.label_reqs = tuple(_node_requirement(r) for r in term.get("matchExpressions") or ())
        self.field_reqs = tuple(_field_requirement(r) for r in term.get("matchFields") or ())

    def matches(self, node_name: str, labels: Labels) -> bool:
        # A term with neither expressions nor fields matches nothing.
        if not self.label_reqs and not self.field_reqs:
            return False
        for req in self.label_reqs:
            if not req(labels):
                return False
        for freq in self.field_reqs:
            if not freq(node_name):
                return False
        return True


class NodeSelector:
    """A compiled ``v1.NodeSelector``: terms ORed, requirements within a term ANDed."""

    __slots__ = ("terms",)

    def __init__(self, selector: dict) -> None:
        self.terms = tuple(NodeSelectorTerm(t) for t in selector.get("nodeSelectorTerms") or ())

    def matches(self, node_name: str, labels: Labels) -> bool:
        for term in self.terms:
            if term.matches(node_name, labels):
                return True
        return False


class RequiredNodeAffinity:
    """``spec.nodeSelector`` AND required node affinity of a pod (``GetRequiredNodeAffinity``)."""

    __slots__ = ("node_selector", "affinity")

    def __init__(self, pod: dict) -> None:
        spec = pod.get("spec") or {}
        self.node_selector: tuple[tuple[str, str], ...] = tuple(
            (spec.get("nodeSelector") or {}).items()
        )
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        self.affinity = NodeSelector(required) if required is not None else None

    def matches(self, node_name: str, labels: Labels) -> bool:
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return False
        if self.affinity is not None and not self.affinity.matches(node_name, labels):
            return False
        return True


def toleration_tolerates(toleration: dict, taint: dict) -> bool:
    """Whether one toleration matches one taint (``v1.Toleration.ToleratesTaint``)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    for toleration in tolerations:
        if toleration_tolerates(toleration, taint):
            return True
    return False


# From this many tolerations a check of several taints indexes them first: a pod with
# thousands of tolerations against nodes with hundreds of taints must not cost their product.
INDEX_TOLERATIONS_FROM = 16


class TolerationIndex:
    """A pod's tolerations indexed by what a taint is matched on, so that one taint costs a few
    dict lookups whatever their number. Answers exactly as :func:`tolerates`: a toleration's
    empty effect matches every effect, its empty key every key; ``Exists`` matches any value,
    ``Equal`` the same value, any other operator nothing. Each entry: the effects tolerated
    (``""``: all)."""

    __slots__ = ("_any_key", "_any_key_value", "_key", "_key_value")

    def __init__(self, tolerations: list[dict]) -> None:
        self._any_key: set[str] = set()  # Exists, no key
        self._any_key_value: dict[str, set[str]] = {}  # Equal, no key: by value
        self._key: dict[str, set[str]] = {}  # Exists: by key
        self._key_value: dict[tuple[str, str], set[str]] = {}  # Equal: by key and value
        for toleration in tolerations:
            effect = toleration.get("effect") or ""
            key = toleration.get("key") or ""
            op = toleration.get("operator") or "Equal"
            value = toleration.get("value") or ""
            if op == "Exists":
                (self._key.setdefault(key, set()) if key else self._any_key).add(effect)
            elif op == "Equal":
                if key:
                    self._key_value.setdefault((key, value), set()).add(effect)
                else:
                    self._any_key_value.setdefault(value, set()).add(effect)

    def tolerates(self, taint: dict) -> bool:
        effect, key = taint.get("effect"), taint.get("key") or ""
        value = taint.get("value") or ""
        for effects in (
            self._any_key,
            self._any_key_value.get(value),
            self._key.get(key),
            self._key_value.get((key, value)),
        ):
            if effects and ("" in effects or effect in effects):
                return True
        return False


def toleration_matcher(tolerations: list[dict], taints: int) -> Callable[[dict], bool]:
    """``taint -> tolerated`` for checking ``taints`` taints: an index of many tolerations,
    else the plain scan (cheaper for the usual handful)."""
    if len(tolerations) >= INDEX_TOLERATIONS_FROM and taints > 1:
        return TolerationIndex(tolerations).tolerates
    return lambda taint: tolerates(tolerations, taint)


def find_untolerated_taint(
    taints: list[dict], tolerations: list[dict], effects: tuple[str, ...]
) -> dict | None:
    """The first taint with one of ``effects`` that no toleration matches, or ``None``."""
    if not taints:
        return None
    tolerated = toleration_matcher(tolerations, len(taints))
    for taint in taints:
        if taint.get("effect") in effects and not tolerated(taint):
            return taint
    return None
