"""Hypothesis strategies for hostile extender requests: Pods and Nodes shaped like the real
ones, where any field the core reads may hold any JSON value, odd quantities, huge label sets."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extender.wire_fields import NODE_FIELDS, POD_FIELDS

NAMES = st.sampled_from(["node1", "node2", "node3", "n-4", ""])
SHORT = st.text(alphabet="abcz01-./=:", max_size=8)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)

quantities = st.one_of(
    st.sampled_from(
        [
            "1",
            "100m",
            "1Gi",
            "1.5",
            "0",
            "+",
            ".",
            "1e999999",
            "-1e999999",
            "1e-999999",
            "8Ei",
            "9223372036854775808",
            "1E",
            "1e4294967299",
            "abc",
            "NaN",
            "",
            "1e",
            " 2 ",
            "1..5",
        ]
    ),
    st.from_regex(
        r"\A[+-]?[0-9]{0,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,25}|[KMGTPE]i|[numkMGTPE])?\Z"
    ),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _valid(spec: Any, depth: int) -> st.SearchStrategy:
    if spec == "str":
        return SHORT
    if spec == "int":
        return st.integers(min_value=-(2**31), max_value=2**31)
    if spec == "bool":
        return st.booleans()
    if spec == "qty":
        return quantities
    if spec == "any":
        return json_values
    if isinstance(spec, dict):
        return st.fixed_dictionaries({}, optional={k: field(v, depth + 1) for k, v in spec.items()})
    kind, item = spec
    if kind == "list":
        return st.lists(field(item, depth + 1), max_size=3)
    return st.dictionaries(SHORT, field(item, depth + 1), max_size=4)


def field(spec: Any, depth: int = 0) -> st.SearchStrategy:
    """Mostly a value of the right shape, sometimes any JSON value."""
    valid = _valid(spec, depth)
    return st.one_of(valid, valid, valid, valid, json_values) if depth else valid


def _object(fields: dict, names: st.SearchStrategy) -> st.SearchStrategy:
    @st.composite
    def build(draw: Any) -> Any:
        obj = draw(_valid(fields, 0))
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict) or draw(st.integers(0, 9)):
            meta = obj["metadata"] = meta if isinstance(meta, dict) else {}
            meta["name"] = draw(names)
        if draw(st.integers(0, 19)) == 0:  # a huge label set
            meta["labels"] = {f"k{i}": "v" for i in range(draw(st.integers(1000, 12000)))}
        return obj

    return build()


pods = _object(POD_FIELDS, st.sampled_from(["p", "q"]))
nodes = _object(NODE_FIELDS, NAMES)
node_lists = st.one_of(
    st.lists(nodes, max_size=5),
    st.integers(0, 300).map(
        lambda n: [
            {"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "1"}}}
            for i in range(n)
        ]
    ),
)


def maybe(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """The strategy, or now and then any JSON value in its place."""
    return st.one_of(strategy, strategy, strategy, json_values)


@st.composite
def extender_args(draw: Any, by_names: bool) -> Any:
    body: dict = {"Pod": draw(maybe(pods))}
    if by_names:
        body["NodeNames"] = draw(maybe(st.lists(NAMES, max_size=6)))
        body["Nodes"] = None
    else:
        body["Nodes"] = draw(maybe(node_lists.map(lambda items: {"items": items})))
        body["NodeNames"] = None
    if draw(st.booleans()):
        body[draw(st.sampled_from(["Future", "pod", "NODENAMES", "nodes"]))] = draw(json_values)
    return body


@st.composite
def preemption_args(draw: Any, meta: bool) -> Any:
    victims: Any
    if meta:
        victim = st.fixed_dictionaries(
            {
                "Pods": maybe(
                    st.lists(maybe(st.fixed_dictionaries({"UID": maybe(SHORT)})), max_size=3)
                )
            },
            optional={"NumPDBViolations": maybe(st.integers(0, 3)), "New": json_values},
        )
        victims = draw(maybe(st.dictionaries(NAMES, maybe(victim), max_size=4)))
        return {
            "Pod": draw(maybe(pods)),
            "NodeNameToMetaVictims": victims,
            "NodeNameToVictims": None,
        }
    victim = st.fixed_dictionaries(
        {"Pods": maybe(st.lists(maybe(pods), max_size=3))},
        optional={"NumPDBViolations": maybe(st.integers(0, 3))},
    )
    victims = draw(maybe(st.dictionaries(NAMES, maybe(victim), max_size=4)))
    return {"Pod": draw(maybe(pods)), "NodeNameToVictims": victims, "NodeNameToMetaVictims": None}


binding_args = st.fixed_dictionaries(
    {
        "PodName": maybe(SHORT),
        "PodNamespace": maybe(SHORT),
        "PodUID": maybe(SHORT),
        "Node": maybe(NAMES),
    },
    optional={"Future": json_values},
)
