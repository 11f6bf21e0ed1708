"""A worst-case cost estimate of a checked DRA selector, after cel-go's ``checker/cost.go``.

Why it exists: cel-go meters every evaluation and stops one past the cost limit; the C++
runtime under cel-expr-python has no meter. ``extender.dra.cel`` meters the library functions
it implements in Python, but the C++ built-ins' only bound is a budget of comprehension
iterations per evaluation (10,000; reported as upstream's "cost limit exceeded", see
``extender.dra.cel``), which bounds loops but not the size of the values an expression builds
without looping: ``cel.bind`` does not iterate, so ``cel.bind(a, l + l, cel.bind(b, a + a,
...))`` doubles a list per level and forty levels exhaust memory. This estimate bounds both
cost and sizes from the AST, with cel-go's unit costs (an identifier or select 1, a constant 0,
a list literal 10, a map 30, a message 40, string traversal 0.1 per character, a regex 0.25 per
pattern character) and the DRA environment's size limits (32 domains, 32 attributes a domain,
strings up to 64 characters), so that ``extender.dra.cel`` can refuse to evaluate what no
metered evaluation could finish.

It is an upper bound in the spirit of cel-go's, not a port of its numbers: upstream's
``compile_test.go`` cost figures come from a more precise estimator (which the scheduler does
not run: ``cache.go`` compiles with ``DisableCostEstimation``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Saturation: an estimate is a worst case, and arithmetic on it must stay bounded.
_CAP = 10**30
UNBOUNDED = _CAP
_STRING_FACTOR = 0.1
_REGEX_FACTOR = 0.25
_MAX_DOMAINS = 32  # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
_MAX_ENTRIES = 32
_MAX_DOMAIN_LENGTH = 63
_MAX_ID_LENGTH = 32
_MAX_VALUE_LENGTH = 64  # resourceapi.DeviceAttributeMaxValueLength
_DRIVER_LENGTH = 63


def _sat(value: float) -> int:
    return int(min(_CAP, max(0, value)))


def _factor(size: int, factor: float) -> int:
    """cel-go's ``multiplyByCostFactor``: rounded up."""
    return _sat(math.ceil(size * factor))


@dataclass(frozen=True, slots=True)
class Size:
    """The largest size of a value: characters of a string, entries of a list or map."""

    n: int
    elem: Size | None = None  # list elements or map values
    key: Size | None = None  # map keys

    def union(self, other: Size) -> Size:
        return Size(
            max(self.n, other.n),
            _union(self.elem, other.elem),
            _union(self.key, other.key),
        )


def _union(a: Size | None, b: Size | None) -> Size | None:
    if a is None:
        return b
    if b is None:
        return a
    return a.union(b)


SCALAR = Size(1)
_VALUE = Size(_MAX_VALUE_LENGTH)
# device.attributes and device.capacity (as the variables extender.dra.cel points them at).
_DOMAIN_MAP = Size(
    _MAX_DOMAINS,
    elem=Size(_MAX_ENTRIES, elem=_VALUE, key=Size(_MAX_ID_LENGTH)),
    key=Size(_MAX_DOMAIN_LENGTH),
)
# cost.go: parsing a string argument costs its traversal.
_PARSING_FUNCTIONS = frozenset(
    (
        "quantity",
        "isQuantity",
        "semver",
        "isSemver",
        "ip",
        "isIP",
        "ip.isCanonical",
        "cidr",
        "isCIDR",
        "containsIP",
        "containsCIDR",
    )
)
# Kubernetes' lists library (cost.go) and cel-go's ext.Lists.
_LIST_FUNCTIONS = frozenset(("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"))
_EXT_LIST_FUNCTIONS = frozenset(("distinct", "reverse", "slice", "sort", "sortBy", "flatten"))
_STRING_FUNCTIONS_SAME_SIZE = frozenset(
    ("lowerAscii", "upperAscii", "trim", "reverse", "substring", "charAt", "find")
)


class _Estimator:
    def __init__(self, variables: dict[str, Size]) -> None:
        self.variables = variables
        self.locals: list[tuple[str, Size]] = []
        self.largest = 0  # the largest value any node may produce

    def lookup(self, name: str) -> Size:
        for local, size in reversed(self.locals):
            if local == name:
                return size
        return self.variables.get(name, SCALAR)

    def estimate(self, expr: Any) -> tuple[int, Size]:
        cost, size = self.node(expr)
        self.largest = max(self.largest, size.n)
        return cost, size

    def node(self, expr: Any) -> tuple[int, Size]:
        kind = expr.WhichOneof("expr_kind")
        if kind == "const_expr":
            const = expr.const_expr
            which = const.WhichOneof("constant_kind")
            if which == "string_value":
                return 0, Size(len(const.string_value))
            if which == "bytes_value":
                return 0, Size(len(const.bytes_value))
            return 0, SCALAR
        if kind == "ident_expr":
            name = expr.ident_expr.name
            # A stand-in for device.attributes / device.capacity: an ident and a select.
            return (2 if name in self.variables else 1), self.lookup(name)
        if kind == "select_expr":
            cost, size = self.estimate(expr.select_expr.operand)
            if expr.select_expr.test_only:
                return cost, SCALAR
            if expr.select_expr.field == "driver":
                return cost + 1, Size(_DRIVER_LENGTH)
            return cost + 1, size.elem or SCALAR
        if kind == "list_expr":
            cost, elem = 10, None
            for element in expr.list_expr.elements:
                c, s = self.estimate(element)
                cost, elem = cost + c, _union(elem, s)
            return _sat(cost), Size(len(expr.list_expr.elements), elem=elem)
        if kind == "struct_expr":
            struct = expr.struct_expr
            cost, key, value = (40 if struct.message_name else 30), None, None
            for entry in struct.entries:
                if entry.HasField("map_key"):
                    c, s = self.estimate(entry.map_key)
                    cost, key = cost + c, _union(key, s)
                c, s = self.estimate(entry.value)
                cost, value = cost + c, _union(value, s)
            return _sat(cost), Size(len(struct.entries), elem=value, key=key)
        if kind == "comprehension_expr":
            return self.comprehension(expr.comprehension_expr)
        if kind == "call_expr":
            return self.call(expr.call_expr)
        return 1, SCALAR

    def comprehension(self, comp: Any) -> tuple[int, Size]:
        range_cost, range_size = self.estimate(comp.iter_range)
        init_cost, init_size = self.estimate(comp.accu_init)
        is_bind = (
            comp.iter_range.WhichOneof("expr_kind") == "list_expr"
            and not comp.iter_range.list_expr.elements
            and comp.accu_var != "@result"
        )
        self.locals.append((comp.accu_var, init_size))
        if is_bind:
            result_cost, result_size = self.estimate(comp.result)
            self.locals.pop()
            return _sat(range_cost + init_cost + result_cost), result_size
        count = range_size.n
        if range_size.key is not None:  # a map: the loop sees its keys (and values)
            first, second = range_size.key, range_size.elem or SCALAR
        else:
            first, second = range_size.elem or SCALAR, range_size.elem or SCALAR
        if comp.iter_var2:
            self.locals.append((comp.iter_var, SCALAR if range_size.key is None else first))
            self.locals.append((comp.iter_var2, second))
        else:
            self.locals.append((comp.iter_var, first))
        # The accumulator grows by at most one step's worth per iteration.
        condition_cost, _ = self.estimate(comp.loop_condition)
        step_cost, step_size = self.estimate(comp.loop_step)
        self.locals.pop()
        if comp.iter_var2:
            self.locals.pop()
        self.locals.pop()
        if comp.accu_init.WhichOneof("expr_kind") in ("list_expr", "struct_expr"):
            # map / filter: one entry an iteration, the entries as the step builds them.
            accumulated = Size(count, elem=step_size.elem, key=step_size.key)
        else:
            accumulated = init_size
        self.locals.append((comp.accu_var, accumulated))
        result_cost, result_size = self.estimate(comp.result)
        self.locals.pop()
        loop_cost = count * (condition_cost + step_cost)
        return _sat(range_cost + init_cost + loop_cost + result_cost), result_size

    def call(self, call: Any) -> tuple[int, Size]:
        function = call.function
        parts = [self.estimate(call.target)] if call.HasField("target") else []
        parts += [self.estimate(arg) for arg in call.args]
        costs = [c for c, _ in parts]
        sizes = [s for _, s in parts]
        total = sum(costs)
        if function == "_?_:_" and len(sizes) == 3:
            return _sat(costs[0] + max(costs[1], costs[2])), sizes[1].union(sizes[2])
        if function in ("_&&_", "_||_", "dyn"):
            return _sat(total + (1 if function == "dyn" else 0)), sizes[-1] if sizes else SCALAR
        if function == "_[_]" and len(sizes) == 2:
            return _sat(total + 1), sizes[0].elem or SCALAR
        if function == "_+_" and len(sizes) == 2:
            joined = Size(_sat(sizes[0].n + sizes[1].n), elem=_union(sizes[0].elem, sizes[1].elem))
            if joined.elem is not None:  # lists: O(1), the size is what matters
                return _sat(total + 1), joined
            return _sat(total + _factor(joined.n, _STRING_FACTOR)), joined
        if function in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_") and len(sizes) == 2:
            return _sat(total + _factor(min(sizes[0].n, sizes[1].n), _STRING_FACTOR)), SCALAR
        if function == "@in" and len(sizes) == 2:
            # O(1) in a map, O(n) in a list.
            return _sat(total + (1 if sizes[1].key is not None else sizes[1].n)), SCALAR
        if function in ("matches", "find", "findAll") and len(sizes) >= 2:
            work = _factor(sizes[0].n + 1, _STRING_FACTOR) * _factor(sizes[1].n, _REGEX_FACTOR)
            if function == "matches":
                return _sat(total + work), SCALAR
            if function == "find":
                return _sat(total + work), sizes[0]
            return _sat(total + work), Size(sizes[0].n + 1, elem=sizes[0])
        if function.startswith("sets.") and len(sizes) == 2:
            factor = 2 if function == "sets.equivalent" else 1
            return _sat(total + 1 + sizes[0].n * sizes[1].n * factor), SCALAR
        if function in _PARSING_FUNCTIONS and sizes:
            return _sat(total + _factor(sizes[0].n, _STRING_FACTOR)), SCALAR
        if function in _LIST_FUNCTIONS and call.HasField("target") and sizes[0].elem is not None:
            # cost.go: one a compared element, plus the traversal of string elements.
            elem = sizes[0].elem
            per_element = 1 + _factor(elem.n, _STRING_FACTOR) if elem.elem is None else 1
            result = SCALAR if function in ("isSorted", "indexOf", "lastIndexOf") else elem
            return _sat(total + sizes[0].n * per_element), result
        if function in _EXT_LIST_FUNCTIONS and call.HasField("target") and sizes:
            # ext.Lists: a new list no larger than the target (flatten: its elements' elements).
            return _sat(total + 1 + sizes[0].n), sizes[0]
        if function in ("contains", "startsWith", "endsWith", "indexOf", "lastIndexOf"):
            other = sizes[1].n if len(sizes) > 1 else 1
            work = _factor(sizes[0].n, _STRING_FACTOR) * max(1, _factor(other, _STRING_FACTOR))
            return _sat(total + work), SCALAR
        if function in _STRING_FUNCTIONS_SAME_SIZE and sizes:
            return _sat(total + _factor(sizes[0].n, _STRING_FACTOR)), sizes[0]
        if function == "split" and sizes:
            return _sat(total + _factor(sizes[0].n, 2 * _STRING_FACTOR)), Size(
                sizes[0].n + 1, elem=sizes[0]
            )
        if function == "replace" and len(sizes) >= 3:
            grown = Size(_sat(sizes[0].n * max(1, sizes[2].n) + sizes[2].n))
            return _sat(total + _factor(grown.n, 2 * _STRING_FACTOR)), grown
        if function == "join" and sizes:
            elem = sizes[0].elem or SCALAR
            separator = sizes[1].n if len(sizes) > 1 else 0
            joined = Size(_sat(sizes[0].n * (elem.n + separator)))
            return _sat(total + _factor(joined.n, _STRING_FACTOR)), joined
        if function in ("string", "format", "strings.quote") and sizes:
            # Conversions and formatting: bounded by what goes in (a number: a few digits).
            grown = Size(_sat(sum(s.n for s in sizes) * 2 + 32))
            return _sat(total + 1 + _factor(grown.n, _STRING_FACTOR)), grown
        return _sat(total + 1), SCALAR


def estimate(checked: Any, variables: dict[str, Size]) -> tuple[int, int]:
    """(worst-case cost, largest value size) of evaluating ``checked`` once."""
    estimator = _Estimator(variables)
    cost, _ = estimator.estimate(checked.expr)
    return cost, estimator.largest


def device_variables(names: list[str]) -> dict[str, Size]:
    """The sizes of the maps that stand in for device.attributes and device.capacity."""
    return dict.fromkeys(names, _DOMAIN_MAP)
