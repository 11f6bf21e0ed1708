"""Compiling and evaluating a selector (upstream
``k8s.io/dynamic-resource-allocation/cel/compile.go``): the environment, the checks of
Kubernetes' base environment the C++ checker lacks (``_validate``), pointing ``device.attributes``
and ``device.capacity`` at plain variables (``_analyze``), the cost refusal, and
:class:`CompilationResult`, which evaluates against one device. See the notes of
:mod:`extender.dra.cel`."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from extender.framework import budget

from . import ast as celast
from . import cost as celcost
from . import lists as cel_lists
from .device import CELDevice, _device_ref, _device_values, _DeviceRef
from .errors import (
    COST_LIMIT_EXCEEDED,
    INTERRUPTED,
    CELDeadlineExceeded,
    CELError,
    _compile_message,
    _not_bool,
    _runtime_message,
    _type_name,
)
from .library import _kubernetes_library
from .meter import _LOCAL, CEL_SELECTOR_EXPRESSION_MAX_COST, _current_meter, _Meter
from .types import _POOL, _T

# The substitute for cel-go's meter (see "Cost" in the package notes): an expression whose
# static worst case is far past the limit, or that may build a value this large, is never
# evaluated.
_REFUSED_COST = 1000 * CEL_SELECTOR_EXPRESSION_MAX_COST
_REFUSED_SIZE = 10_000_000


# Extensions of the C++ runtime that are enabled by name only: cel-go's ext.Lists (base
# environment since 1.34; version 3 there is version 2's functions with costs) and
# ext.TwoVarComprehensions (since 1.32).
_CONFIG_YAML = """extensions:
  - name: "lists"
    version: 2
  - name: "two-var-comprehensions"
"""


def _new_env() -> cel.Env:
    return cel.NewEnv(
        _POOL,
        config=cel.NewEnvConfigFromYaml(_CONFIG_YAML),
        variables={
            "device": _T("kubernetes.DRADevice"),
            # device.attributes and device.capacity, as they are and with defaults
            # (see _analyze).
            **{name: _DOMAINS for name in _HIDDEN},
        },
        extensions=[
            ext_strings.ExtStrings(2),
            ext_bindings.ExtBindings(),
            ext_optional.ExtOptional(),
            _kubernetes_library(),
        ],
    )


# The variables that stand in for device.attributes and device.capacity: the maps as they
# are, and the lookup views with an empty map for each looked-up domain the device lacks.
_VARIABLES = {
    "attributes": ("__dra_attributes__", "__dra_attributes_lookup__"),
    "capacity": ("__dra_capacity__", "__dra_capacity_lookup__"),
}
_HIDDEN = frozenset(name for pair in _VARIABLES.values() for name in pair)
# Index, optional index (m[?k]) and optional select (m.?k): all look a key up (mapper.Find).
_LOOKUP_FUNCTIONS = frozenset(("_[_]", "_[?_]", "_?._"))
_DOMAINS = _T.Map(_T.STRING, _T.Map(_T.STRING, _T.DYN))

_ENV_LOCK = threading.Lock()
_ENV: cel.Env | None = None


def _env() -> cel.Env:
    global _ENV
    with _ENV_LOCK:
        if _ENV is None:
            _ENV = _new_env()
        return _ENV


# The most answers a compiled expression keeps (then it starts afresh).
_RESULTS_SIZE = 65536


@dataclass(frozen=True, slots=True)
class _Lookups:
    """The domains an expression looks up directly in device.attributes / device.capacity."""

    attributes: frozenset[str] = frozenset()
    capacity: frozenset[str] = frozenset()
    # The variables the edited AST reads: only those are handed to the runtime.
    variables: frozenset[str] = frozenset(("device",))


def _with_defaults(domains: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """The map with an empty map for each looked-up domain the device does not have."""
    missing = [k for k in keys if k not in domains]
    if not missing:
        return domains
    view: dict[str, Any] = dict(domains)
    for key in missing:
        view[key] = {}
    return view


class CompilationResult:
    """One compiled selector expression (``CompilationResult`` of compile.go)."""

    __slots__ = ("expression", "error", "max_cost", "_program", "_lookups", "_results")

    def __init__(
        self,
        expression: str,
        error: CELError | None,
        program: Any = None,
        lookups: _Lookups | None = None,
        max_cost: int | None = None,
    ) -> None:
        self.expression = expression
        self.error = error
        # The worst-case cost (cel-go's estimate, extender.dra.cel.cost); None after an error.
        self.max_cost = max_cost
        self._program = program
        self._lookups = lookups or _Lookups()
        # id(device) -> the device (weakly) with its match or error text: a selector's answer
        # for a device never changes (the expression and the device are all it reads), and the
        # same devices are asked again for every pod that uses the class. An entry leaves with
        # its device.
        self._results: dict[int, _DeviceRef] = {}

    def device_matches(self, device: CELDevice, deadline: float | None = None) -> bool:
        """Evaluate against one device; a runtime error raises CELError (upstream's text).

        ``deadline`` is a ``time.monotonic()`` value: past it, the evaluation stops with
        CELDeadlineExceeded (checked before evaluating and by the library functions as they
        work), which is no answer for the device and is not kept.
        """
        if self.error is not None:
            raise CELError(str(self.error))  # a new one each time: tracebacks accumulate
        known = self._results.get(id(device))
        outcome: bool | str
        if known is not None and known() is device:
            outcome = known.value
        else:
            try:
                outcome = self._evaluate(device, deadline)
            except CELDeadlineExceeded:
                raise
            except CELError as e:
                outcome = str(e)
            if len(self._results) >= _RESULTS_SIZE:
                self._results.clear()
            self._results[id(device)] = _device_ref(device, self._results, outcome)
        if isinstance(outcome, str):
            raise CELError(outcome)
        return outcome

    def _evaluate(self, device: CELDevice, deadline: float | None = None) -> bool:
        if self._program is None:
            raise CELError(COST_LIMIT_EXCEEDED)
        if deadline is not None and time.monotonic() > deadline:
            raise CELDeadlineExceeded(INTERRUPTED)
        values = _device_values(device)
        if values.error is not None:
            raise CELError(str(values.error))
        used = self._lookups.variables
        variables: dict[str, Any] = {}
        if "device" in used:
            variables["device"] = values.message
        if "__dra_attributes__" in used:
            variables["__dra_attributes__"] = values.attributes
        if "__dra_attributes_lookup__" in used:
            variables["__dra_attributes_lookup__"] = _with_defaults(
                values.attributes, self._lookups.attributes
            )
        if "__dra_capacity__" in used:
            variables["__dra_capacity__"] = values.capacity
        if "__dra_capacity_lookup__" in used:
            variables["__dra_capacity_lookup__"] = _with_defaults(
                values.capacity, self._lookups.capacity
            )
        meter = _Meter(deadline)
        outer = _current_meter()  # None unless an evaluation runs inside a library function
        _LOCAL.meter = meter
        try:
            result = self._program.eval(data=variables)
        except RuntimeError as e:
            if meter.failure is None and meter.interrupted is None:
                raise CELError(_runtime_message(str(e))) from None
        finally:
            _LOCAL.meter = outer
        if meter.failure is not None:
            # cel-go cancels the evaluation: no operator absorbs it (`e || true`).
            if meter.failure == INTERRUPTED:
                raise CELDeadlineExceeded(INTERRUPTED)
            raise CELError(meter.failure)
        interrupted = meter.interrupted or budget.overran()
        if interrupted is not None:
            raise interrupted  # not an answer for the device: never kept
        value = result.value()
        if type(value) is bool:
            return value
        kind = result.type()
        if kind == _T.ERROR:
            raise CELError(_runtime_message(str(result.value())))
        raise CELError(_not_bool(_type_name(kind.name())))


def _string_constant(node: Any) -> str | None:
    if node.WhichOneof("expr_kind") != "const_expr":
        return None
    if node.const_expr.WhichOneof("constant_kind") != "string_value":
        return None
    return str(node.const_expr.string_value)


@lru_cache(maxsize=1)
def _literal_checks() -> dict[str, Any]:
    """Programs that try a literal the way cel-go's literal validators do (by evaluating it)."""
    env = cel.NewEnv(variables={"p": _T.STRING})
    return {
        "matches": env.compile('"".matches(p)'),
        "duration": env.compile("duration(p)"),
        "timestamp": env.compile("timestamp(p)"),
    }


def _literal_is_valid(function: str, text: str) -> bool:
    result = _literal_checks()[function].eval(data={"p": text})
    return bool(result.type() != _T.ERROR)


_LIST_FUNCTIONS = frozenset((*cel_lists.ELEMENT_TYPES, "indexOf", "lastIndexOf"))


def _list_call_error(types: Any, call: Any) -> str | None:
    """Upstream's overloads of the lists library, by element type (ours take list(dyn))."""
    target = types.get(call.target.id)
    if target is None or target.WhichOneof("type_kind") != "list_type":
        return None
    element = target.list_type.elem_type
    if celast.is_dyn(element):
        return None
    args = [types.get(a.id) for a in call.args]
    allowed = cel_lists.ELEMENT_TYPES.get(call.function)
    if allowed is not None:
        if celast.type_name(element) in allowed:
            return None
    elif len(args) != 1 or args[0] is None or celast.is_dyn(args[0]):
        return None
    elif celast.type_name(args[0]) == celast.type_name(element):
        return None
    shown = ", ".join(celast.type_name(a) if a is not None else "dyn" for a in args)
    return (
        f"found no matching overload for '{call.function}' applied to "
        f"'{celast.type_name(target)}.({shown})'"
    )


def _validate(checked: Any, expression: str) -> str | None:
    """The checks of Kubernetes' base environment the C++ checker does not make.

    ``cel.HomogeneousAggregateLiterals`` and ``ValidateHomogeneousAggregateLiterals``: the
    elements of a list literal, and the keys and the values of a map literal, have one type
    (inside ``format`` a dyn element is allowed); ``ValidateRegexLiterals``,
    ``ValidateDurationLiterals``, ``ValidateTimestampLiterals``: a literal argument of
    ``matches``, ``duration`` and ``timestamp`` must be valid. Errors in cel-go's words, in
    source order.
    """
    types = checked.type_map
    errors: list[tuple[int, str]] = []

    def mismatch(node: Any, expected: Any, found: Any) -> None:
        errors.append(
            (
                node.id,
                f"expected type '{celast.type_name(expected)}' but found "
                f"'{celast.type_name(found)}'",
            )
        )

    def homogeneous(nodes: list[Any], in_format: bool) -> None:
        previous = None
        for node in nodes:
            current = types.get(node.id)
            if current is None:
                continue
            if previous is None or previous.SerializeToString() == current.SerializeToString():
                previous = current
            elif in_format and (celast.is_dyn(previous) or celast.is_dyn(current)):
                previous = current if celast.is_dyn(current) else previous
            else:
                mismatch(node, previous, current)
                return

    stack: list[tuple[Any, bool]] = [(checked.expr, False)]
    while stack:
        node, in_format = stack.pop()
        kind = node.WhichOneof("expr_kind")
        if kind == "list_expr":
            homogeneous(list(node.list_expr.elements), in_format)
        elif kind == "struct_expr" and not node.struct_expr.message_name:
            entries = node.struct_expr.entries
            homogeneous([e.map_key for e in entries if e.HasField("map_key")], in_format)
            homogeneous([e.value for e in entries], in_format)
        elif kind == "call_expr":
            call = node.call_expr
            function = call.function
            if call.HasField("target") and function in _LIST_FUNCTIONS:
                message = _list_call_error(types, call)
                if message is not None:
                    errors.append((node.id, message))
            if function in ("matches", "duration", "timestamp") and call.args:
                literal = _string_constant(call.args[0])
                if literal is not None and not _literal_is_valid(function, literal):
                    errors.append((call.args[0].id, f"invalid {function} argument"))
            in_format = in_format or function == "format"
        stack.extend((child, in_format) for child in celast.children(node))
    if not errors:
        return None
    positions = checked.source_info.positions
    errors.sort(key=lambda e: positions.get(e[0], 0))
    return "\n".join(celast.error_at(checked, i, expression, m) for i, m in errors)


def _analyze(checked: Any, expression: str) -> tuple[str | None, _Lookups]:
    """Point device.attributes and device.capacity at plain variables; edits ``checked``.

    The checker knows ``device`` as a message with upstream's four fields (so an unknown field
    or a non-bool result is its compile error), but the maps' values are Python dicts. Every
    use of ``device.attributes`` / ``device.capacity`` becomes a variable: a lookup
    (``M[k]``, ``M.k``, ``has(M.k)``) the lookup view, anything else (``in``, ``size``, the
    macros, ``cel.bind``) the map as it is. Upstream's map answers a lookup of a domain the
    device lacks with an empty map (``newStringInterfaceMapWithDefault``) while ``in`` and
    iteration see the real domains; the lookup view holds an empty map for every constant key
    the expression looks up. A computed key (rare: selectors name their domains) gets no
    default.

    Returns (compile error text or None, the looked-up keys).
    """
    refs = checked.reference_map if celast.is_checked(checked) else None

    def device_map(node: Any, bound: frozenset[str]) -> str | None:
        """ "attributes" or "capacity" if ``node`` is ``device.attributes`` / ``.capacity``."""
        if node.WhichOneof("expr_kind") != "select_expr" or node.select_expr.test_only:
            return None
        operand = node.select_expr.operand
        if operand.WhichOneof("expr_kind") != "ident_expr":
            return None
        if operand.ident_expr.name != "device" or "device" in bound:
            return None  # a comprehension variable named device is not the device
        field = str(node.select_expr.field)
        return field if field in _VARIABLES else None

    keys: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
    lookups: dict[int, str] = {}  # node id of a map used for a lookup -> its map
    uses: list[tuple[Any, str]] = []
    for node, bound in celast.walk_scoped(checked.expr):
        kind = node.WhichOneof("expr_kind")
        if kind == "ident_expr" and node.ident_expr.name in _HIDDEN:
            message = f"undeclared reference to '{node.ident_expr.name}' (in container '')"
            return celast.error_at(checked, node.id, expression, message), _Lookups()
        if kind == "call_expr" and node.call_expr.function in _LOOKUP_FUNCTIONS:
            target = node.call_expr.args[0]
            name = device_map(target, bound)
            if name:
                lookups[target.id] = name
                key = _string_constant(node.call_expr.args[1])
                if key is not None:
                    keys[name].add(key)
        elif kind == "select_expr":
            operand = node.select_expr.operand
            name = device_map(operand, bound)
            if name:
                lookups[operand.id] = name
                keys[name].add(str(node.select_expr.field))
        name = device_map(node, bound)
        if name:
            uses.append((node, name))
    for node, name in uses:
        exact, lookup = _VARIABLES[name]
        variable = lookup if node.id in lookups else exact
        node.ClearField("select_expr")
        node.ident_expr.name = variable
        if refs is not None:
            refs[node.id].name = variable
    variables = frozenset(
        node.ident_expr.name
        for node in celast.walk(checked.expr)
        if node.WhichOneof("expr_kind") == "ident_expr"
        and node.ident_expr.name in _HIDDEN | {"device"}
    )
    return None, _Lookups(frozenset(keys["attributes"]), frozenset(keys["capacity"]), variables)


_CROSS_TYPE_ORDERING = re.compile(
    r"found no matching overload for '_(<|<=|>|>=)_' applied to "
    r"'\((int|uint|double), (int|uint|double)\)'"
)


def _only_cross_type_ordering(message: str) -> bool:
    """Whether every checker error is an ordering of two different numeric types."""
    errors = [line for line in message.split("\n") if line.startswith("ERROR:")]
    for line in errors:
        found = _CROSS_TYPE_ORDERING.search(line)
        if found is None or found[2] == found[3]:
            return False
    return bool(errors)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def compile_expression(expression: str) -> CompilationResult:
    """``CompileCELExpression`` (StoredExpressions environment)."""
    env = _env()
    # A lone surrogate (JSON "\ud800") cannot be UTF-8: Go's JSON decoder makes it U+FFFD.
    source = _LONE_SURROGATE.sub("\ufffd", expression)
    try:
        program = env.compile(source)
    except RuntimeError as e:
        message = _compile_message(str(e))
        if not _only_cross_type_ordering(message):
            return CompilationResult(expression, CELError("compilation failed: " + message))
        # cel-go's CrossTypeNumericComparisons (Kubernetes' base environment): `1 < 1.5` and
        # `q.asApproximateFloat() > 0` check there; the C++ checker has no such overloads
        # (its runtime does). Such an expression is run unchecked: dispatch by the values.
        program = env.compile(source, disable_check=True)
    output = program.return_type()
    if output != _T.BOOL and output != _T.DYN:
        return CompilationResult(
            expression,
            CELError(f"must evaluate to bool or the unknown type, not {_type_name(output.name())}"),
        )
    try:
        checked = celast.decode(program.serialize())
    except celast.DecodeError:
        # Deeper than protobuf's nesting limit (100), past the parser's 32 levels only
        # through macros; upstream's parser allows 250 levels.
        return CompilationResult(expression, CELError("compilation failed: nested too deeply"))
    error = _validate(checked, source) if celast.is_checked(checked) else None
    if error is None:
        error, lookups = _analyze(checked, source)
    if error is not None:
        if error.startswith("ERROR:"):
            error = "compilation failed: " + error
        return CompilationResult(expression, CELError(error))
    program = env.deserialize(celast.encode(checked))
    try:
        cost, largest = celcost.estimate(checked, celcost.device_variables(sorted(_HIDDEN)))
    except RecursionError:
        cost, largest = celcost.UNBOUNDED, celcost.UNBOUNDED
    if cost > _REFUSED_COST or largest > _REFUSED_SIZE:
        program = None  # never evaluated: device_matches reports the cost limit
    return CompilationResult(expression, None, program, lookups, cost)
