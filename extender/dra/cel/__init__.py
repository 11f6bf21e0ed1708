"""The DRA CEL environment: device selectors of DeviceClasses and ResourceClaims.

Upstream: ``k8s.io/dynamic-resource-allocation/cel/compile.go`` (the environment, the
``device`` variable, the result check) and ``cache.go`` (the LRU of compiled expressions), on
the Kubernetes base environment of ``k8s.io/apiserver/pkg/cel/environment/base.go`` with the
``quantity``, ``semver``, ``regex``, ``lists``, ``ip`` and ``cidr`` libraries of
``k8s.io/apiserver/pkg/cel/library/``.
Feature gates as v1.36 sets them: DRAConsumableCapacity on, DRAListTypeAttributes off.

An expression sees one variable, ``device``, an object with four fields:

- ``device.driver`` (string),
- ``device.attributes[domain][id]``: bool, int, string or ``semver`` values; an attribute
  written without a domain is filed under the driver's name,
- ``device.capacity[domain][id]``: ``quantity`` values,
- ``device.allowMultipleAllocations`` (bool, false when unset).

Looking up a domain the device does not have gives an empty map (upstream's
``newStringInterfaceMapWithDefault``), so ``"x" in device.attributes["other.example.com"]`` is
false and ``device.attributes["other.example.com"].x`` fails with ``no such key: x``;
``"other.example.com" in device.attributes`` is still false.

The interface (the structured allocator's): ``CELCache.get_or_compile`` gives a
``CompilationResult`` whose ``error`` is a compile error and whose ``device_matches`` answers
for one ``CELDevice`` or raises ``CELError``; ``str(e)`` is upstream's text, which the allocator
wraps as ``CEL compile error: ...`` / ``CEL runtime error: ...``. A device's CEL values are built
once per ``CELDevice`` object and a selector's answer per device is kept (it depends on nothing
else): the allocator must hand the same object for an unchanged device, and never mutate it.

Library: ``cel-expr-python`` 0.1 (Google's CEL C++ runtime with its Python bindings; wheels
for CPython 3.11 on linux x86_64). Of the candidates it is the only one with a type checker
(upstream's compile errors: syntax, undeclared references, no matching overload, undefined
fields, the result type), and it has the cel-spec string extensions (``ext.Strings`` version 2,
as upstream), ``cel.bind``, optional types, receiver-style custom functions and protobuf
message values, and it is fast: the runtime evaluates a compiled selector in a few
microseconds (``bench/cel.py``: 15 to 100 microseconds for the first evaluation of a device,
its CEL values included, on a loaded machine), against about a millisecond for ``cel-python``
(``celpy``: pure Python, no checker, no string extensions, no ``cel.bind``).
``common-expression-language`` (Rust bindings) has no checker, no string extensions, no
``cel.bind`` and cannot carry custom value types.

How upstream's environment is rebuilt on it:

- ``quantity`` and ``semver`` values are protobuf messages named as upstream's types
  (``kubernetes.Quantity``, ``kubernetes.Semver``) holding a normalized value, so CEL's ``==``
  is the libraries' semantic equality (``quantity("1k") == quantity("1000")``). The C++ runtime
  dispatches on kinds and both are of the message kind, so ``isGreaterThan``, ``isLessThan``
  and ``compareTo`` are one overload on dyn each that compares two quantities or two semvers.
- ``device`` is a ``kubernetes.DRADevice`` message to the checker (upstream's four fields);
  after checking, every use of ``device.attributes`` / ``device.capacity`` in the AST is
  pointed at a plain variable, a lookup at a view with the empty-map default (``_analyze``,
  on the checked AST read and edited through ``extender.dra.celast``).
- The base environment's checks the C++ checker lacks run on the checked AST
  (``_validate``: one type per list and map literal, valid ``matches`` / ``duration`` /
  ``timestamp`` literals); cel-go's cross-type numeric ordering (``1 < 1.5``), which the C++
  checker rejects and its runtime supports, compiles by skipping the checker when those are
  its only errors.
- Error texts: the C++ runtime's words are rewritten to cel-go's (``no such key: x``,
  ``division by zero``, ``no such overload: f``, ``index '3' out of range in list size '1'``,
  the result conversion errors of ``DeviceMatches``).

Cost. cel-go meters every evaluation and stops one past ``CELSelectorExpressionMaxCost``
(1,000,000) with ``operation cancelled: actual cost limit exceeded``; DRA's evaluation also
checks for an interrupt (the scheduler's filter timeout) every 100 comprehension iterations
(``cel.InterruptCheckFrequency``). The C++ runtime has neither. What stands in, stated
honestly:

1. The library functions implemented here in Python are metered: every evaluation carries a
   meter (thread-local, see ``_Meter``), and each call of ``sets.*``, the ``lists``, ``regex``,
   ``quantity``, ``semver``, ``ip`` and ``cidr`` functions charges upstream's runtime cost for
   the call with the actual sizes (ext/sets.go ``trackSetsCost``: 1 + size(a) * size(b),
   twice that for ``sets.equivalent``; k8s.io/apiserver ``pkg/cel/library/cost.go``
   ``CallCost``: one traversal of the list for the lists library, string length times
   pattern length for ``find`` / ``findAll``, a string traversal for the parsers, 1 for the
   accessors; cel-go's default of 1 for what neither names) *before* doing the work. Past the
   limit the evaluation fails with upstream's text, whatever the expression makes of the
   error (``e || true`` fails too: cel-go cancels the evaluation). ``device_matches`` takes a
   deadline: it is checked before evaluating, at every charge and every 100 steps of the
   functions' loops; past it the evaluation stops with ``CELDeadlineExceeded`` (cel-go's
   ``operation interrupted``), which is no answer for the device and is not kept.
2. The C++ built-ins (operators, macros and comprehensions, list and map literals, the string
   and ``ext.Lists`` extensions, ``cel.bind``) are not metered and do not see the deadline.
   They are bounded by (a) ``extender.dra.celcost``, cel-go's worst-case estimate (equal to
   upstream's on all of ``compile_test.go``'s cost figures): an expression whose estimate is
   over 1000 times the limit, or which may build a value of more than 10 million elements or
   characters, is never evaluated (``device_matches`` reports the cost limit), and (b)
   cel-expr-python's budget of 10,000 comprehension iterations an evaluation, reported with
   the same text. The API server refuses a selector whose estimate is over the limit
   (``validateCELSelector``), so for every selector it accepted neither bound changes an
   answer upstream gives, except a selector that really iterates more than 10,000 times (only
   nested comprehensions can; upstream allows it while the metered cost stays under the
   limit, about 100,000 iterations). A selector the API server would refuse (one from a file
   or a webhook) whose estimate is between 1 and 1000 times the limit is evaluated: its
   library calls are metered, its built-ins only bounded by (b).

``sets.*`` find members by hash (``_key``: a key per value, equal exactly when CEL's ``==``
is: a bool is not a number, ``1 == 1u == 1.0``, NaN equals nothing, lists and maps compare
structurally, quantity / semver / IP / CIDR messages by type and content), so the largest
pair of lists the API server takes (990 elements each) costs milliseconds, not a million
pairwise comparisons; values with no key (the device message) are compared pairwise.

Known differences (none reachable by the selectors DRA drivers document):

- The C++ parser allows 32 levels of nesting (cel-go: 250): deeper expressions are compile
  errors (``Expression recursion limit exceeded``).
- Carried over since: Kubernetes' ``lists`` library (``isSorted``, ``sum``, ``min``, ``max``,
  ``indexOf``, ``lastIndexOf``: ``extender.dra.cel_lists``), cel-go's ``ext.Lists`` and
  two-variable comprehensions (the C++ runtime's own, enabled through its env config). Their
  differences: ``sum``, ``min`` and ``max`` are typed ``dyn`` (upstream: the element type), so
  ``[1].sum() + "a"`` is a runtime error there a compile error; ``sum()`` of an empty list of
  doubles or durations is the int 0 (equal to ``0.0`` in CEL, not to ``duration('0')``); a
  list of uints sums to an int; ``transformMap`` / ``transformMapEntry`` fail at evaluation
  (``No overload found in reference resolve step for cel.@mapInsert``: the C++ runtime's
  Python bindings do not register that helper); the C++ lists extension also has ``first()``.
- The ``ip`` and ``cidr`` libraries (``extender.dra.cel_net``: Go's ``netip.ParseAddr`` and
  ``ParsePrefix`` followed step by step, their error texts included) are carried over;
  ``net.IP`` / ``net.CIDR`` values show their message fields (``.address``, ``.bits``) as
  quantities do. ``string(cidr(...))`` is a compile error (no matching overload): the C++
  runtime dispatches on kinds, both types are messages, and ``string(ip)`` holds the one slot.
- Not carried over from the base environment: the ``url`` and ``format.named``
  libraries; an expression using them gets the compile error of an undeclared reference.
  ``sets.*`` take lists of dyn (upstream: lists of one type parameter, so mixed lists are a
  compile error there).
- The parser's nesting limit is not settable through cel-expr-python 0.1 (its ``NewEnv`` takes
  no parser options and its env config has no limits section).
- In ``sets.*``, ``indexOf`` and ``lastIndexOf`` an int and a double are equal when they are
  the same number (Python's comparison); cel-go converts the int to a double first, so there
  9007199254740993 equals 9007199254740992.0 (only past 2^53).
- ``quantity(...).isGreaterThan(semver(...))`` is a runtime ``no such overload`` (upstream: a
  compile error); ``isInteger()``/``asInteger()`` of a quantity written with fraction digits
  that is still integral (``"1.0"``, ``"1.5Ki"``) succeed (see ``extender.dra.quantity``).
- A quantity or semver value shows its one message field (``.value``, ``.version``) and can be
  built as a message literal (``kubernetes.Quantity{...}``); upstream's types have neither.
- A lookup with a computed domain key (``device.attributes[k]``, ``k`` not a constant) of a
  domain the device lacks fails with ``no such key`` instead of giving an empty map.
"""

from __future__ import annotations

import datetime
import math
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

from extender.dra import quantity as quantity_lib
from extender.dra.cel import ast as celast
from extender.dra.cel import cost as celcost
from extender.dra.cel import lists as cel_lists
from extender.dra.cel import net as cel_net
from extender.dra.cel import semver as semver_lib
from extender.framework import budget

# resource.k8s.io/v1 CELSelectorExpressionMaxCost.
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
# The scheduler keeps the 10 most recently used expressions (dynamicresources.go,
# cel.NewCache(10, ...)).
DEFAULT_CACHE_SIZE = 10

COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
# The substitute for cel-go's meter (see "Cost" above): an expression whose static worst case
# is far past the limit, or that may build a value this large, is never evaluated.
_REFUSED_COST = 1000 * CEL_SELECTOR_EXPRESSION_MAX_COST
_REFUSED_SIZE = 10_000_000
# The C++ runtime's own bound (cel-expr-python: 10,000 comprehension iterations an evaluation).
_ITERATION_BUDGET = "Iteration budget exceeded"


class CELError(Exception):
    """A compile or runtime error; ``str(e)`` is upstream's message."""


class CELDeadlineExceeded(CELError):
    """The evaluation passed its deadline (cel-go's interrupt): no answer for the device."""


# cel-go's EvalCancelledError for an interrupted evaluation.
INTERRUPTED = "operation interrupted"


# --- the runtime cost meter ---------------------------------------------------------------


class _Meter:
    """One evaluation's cost and deadline (cel-go's ``CostTracker`` and interrupt check).

    The library functions implemented here charge upstream's runtime cost of a call before
    doing its work and check the deadline as they work; the C++ built-ins are not metered
    (see "Cost" above). A function that trips either raises CELError, and the evaluation
    fails with that text whatever the expression makes of the error (``e || true``), as
    cel-go cancels the whole evaluation.
    """

    __slots__ = ("cost", "deadline", "failure", "ticks", "interrupted")

    def __init__(self, deadline: float | None) -> None:
        self.cost = 0
        self.deadline = deadline
        self.failure: str | None = None
        self.ticks = 0
        # The pod budget's exception (extender.framework.budget), raised in this thread while
        # a library function ran: the evaluation ends with it (see _metered).
        self.interrupted: BaseException | None = None

    def charge(self, units: int) -> None:
        self.cost += units
        if self.failure is None and self.cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
            self.failure = COST_LIMIT_EXCEEDED
        self.check()

    def check(self) -> None:
        if self.interrupted is None:
            self.interrupted = budget.overran()
        if self.interrupted is not None:
            raise CELError(INTERRUPTED)
        if self.failure is None and self.deadline is not None:
            if time.monotonic() > self.deadline:
                self.failure = INTERRUPTED
        if self.failure is not None:
            raise CELError(self.failure)

    def tick(self) -> None:
        """One step of a loop: the deadline is looked at every _CHECK_EVERY steps."""
        self.ticks += 1
        if self.ticks % _CHECK_EVERY == 0:
            self.check()


# cel-go's InterruptCheckFrequency as the DRA evaluation sets it (celconfig.CheckFrequency).
_CHECK_EVERY = 100
_LOCAL = threading.local()


def _current_meter() -> _Meter | None:
    meter: _Meter | None = getattr(_LOCAL, "meter", None)
    return meter


def _tick() -> None:
    meter = _current_meter()
    if meter is not None:
        meter.tick()


def _metered(cost: Callable[..., int], impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` charging ``cost(*args)`` (upstream's runtime cost of the call) first."""

    def call(*args: Any) -> Any:
        # The watchdog's exception may land on this function's first line, before the `try`:
        # then the meter learns of it from budget.overran() at its next check.
        meter = _current_meter()
        try:
            if meter is not None:
                meter.charge(cost(*args))
            return impl(*args)
        except budget.OVER as exc:
            # Raised in this thread from outside (the pod budget's watchdog). The C++ runtime
            # would make it an error value that an operator may absorb (`e && false`), and
            # the search would go on to the next device: the meter keeps it, and the
            # evaluation ends with it (see CompilationResult._evaluate).
            if meter is not None and meter.interrupted is None:
                meter.interrupted = exc
            raise

    return call


# cel-go's common.StringTraversalCostFactor and RegexStringLengthCostFactor.
_STRING_FACTOR = 0.1
_REGEX_FACTOR = 0.25


def _nominal(*_: Any) -> int:
    return 1


def _string_cost(factor: float = 1.0) -> Callable[..., int]:
    """cost.go: parsing or scanning the first argument, a string (its length in runes)."""
    return lambda text, *_: math.ceil(len(text) * factor * _STRING_FACTOR)


def _regex_cost(text: str, pattern: str, *_: Any) -> int:
    """cost.go ``find`` / ``findAll``: the string's traversal times the pattern's size."""
    return math.ceil((1 + len(text)) * _STRING_FACTOR) * math.ceil(len(pattern) * _REGEX_FACTOR)


def _traversal_cost(value: Any) -> int:
    """cost.go ``traversalCost`` (Go's len of a string: its UTF-8 bytes; rounded down)."""
    if isinstance(value, str):
        return int(len(value.encode("utf-8", "surrogatepass")) * _STRING_FACTOR)
    if isinstance(value, bytes | bytearray):
        return int(len(value) * _STRING_FACTOR)
    if isinstance(value, list):
        return sum(_traversal_cost(v) for v in value)
    if isinstance(value, dict):
        return sum(_traversal_cost(k) + _traversal_cost(v) for k, v in value.items())
    return 1


def _list_cost(values: list[Any], *_: Any) -> int:
    """cost.go: the lists library's functions cost one traversal of the list."""
    return _traversal_cost(values)


def _sets_cost(factor: int) -> Callable[[list[Any], list[Any]], int]:
    """ext/sets.go ``trackSetsCost``: 1 + size(a) * size(b) * factor."""
    return lambda a, b: 1 + int(float(len(a) * len(b)) * factor)


def _cidr_bytes(cidr: Any) -> int:
    """cidr.go ``Size``: the prefix length in bytes."""
    return math.ceil(int(cidr.bits) / 8)


def _contains_ip_cost(cidr: Any, other: Any) -> int:
    cost = math.ceil(2 * _cidr_bytes(cidr) * _STRING_FACTOR)
    if isinstance(other, str):
        cost += math.ceil(len(other) * _STRING_FACTOR)
    return cost


def _contains_cidr_cost(cidr: Any, other: Any) -> int:
    size = _cidr_bytes(cidr)
    cost = math.ceil(2 * size * _STRING_FACTOR) + math.ceil(size * _STRING_FACTOR) + 1
    if isinstance(other, str):
        cost += math.ceil(len(other) * _STRING_FACTOR)
    return cost


@dataclass(frozen=True, slots=True, weakref_slot=True)
class CELDevice:
    """The input of a selector: one device of a ResourceSlice, as the API serves it.

    Weakly referenceable: the caches of its values and of each selector's answer hold it
    weakly, so a deleted slice's devices (and all that was derived from them) are freed."""

    driver: str
    # name -> {"int": 1} | {"bool": True} | {"string": "x"} | {"version": "1.2.3"};
    # names are "domain/id" or a bare "id" (then the driver is the domain).
    attributes: Mapping[str, Mapping[str, Any]]
    # name -> {"value": "80Gi", ...} (resource.k8s.io/v1 DeviceCapacity)
    capacity: Mapping[str, Mapping[str, Any]]
    allow_multiple_allocations: bool | None = None


# --- the message types: kubernetes.Quantity, kubernetes.Semver, kubernetes.DRADevice --------


def _message_types() -> tuple[Any, Any, Any, Any]:
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="extender/dra/kubernetes_cel.proto", package="kubernetes", syntax="proto3"
    )
    q = proto.message_type.add(name="Quantity")
    # One field, "<unscaled>e<exponent>" of the normalized value: equal text, equal quantity.
    q.field.add(name="value", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    s = proto.message_type.add(name="Semver")
    s.field.add(name="version", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    # What the checker sees of upstream's kubernetes.DRADevice object: its four fields, the
    # two maps as map(string, map(string, dyn)) (a Struct is a JSON object to CEL). At run
    # time only driver and allowMultipleAllocations are read from it: every use of the maps
    # is pointed at a plain variable (see _analyze).
    proto.dependency.append("google/protobuf/struct.proto")
    d = proto.message_type.add(name="DRADevice")
    d.field.add(name="driver", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    d.field.add(
        name="allowMultipleAllocations", number=2, type=field.TYPE_BOOL, label=field.LABEL_OPTIONAL
    )
    for number, name in ((3, "attributes"), (4, "capacity")):
        entry = d.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
        entry.field.add(
            name="value",
            number=2,
            type=field.TYPE_MESSAGE,
            label=field.LABEL_OPTIONAL,
            type_name=".google.protobuf.Struct",
        )
        d.field.add(
            name=name,
            number=number,
            type=field.TYPE_MESSAGE,
            label=field.LABEL_REPEATED,
            type_name=f".kubernetes.DRADevice.{name.capitalize()}Entry",
        )
    # The default pool: the checker resolves the well-known types (google.protobuf.Struct,
    # Value, ...) in the pool it is given, and without them a dyn value cannot be the range
    # of a comprehension. The file name is ours alone.
    pool = descriptor_pool.Default()
    pool.FindFileByName(struct_pb2.DESCRIPTOR.name)  # there once struct_pb2 is imported
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    quantity_cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("kubernetes.Quantity")
    )
    semver_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Semver"))
    device_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.DRADevice"))
    return pool, quantity_cls, semver_cls, device_cls


_POOL, _QuantityMsg, _SemverMsg, _DeviceMsg = _message_types()


def _net_types() -> Any:
    """``net.IP`` (ip.go's type name, so ``type(ip("::1")) == net.IP``)."""
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="extender/dra/net_cel.proto", package="net", syntax="proto3"
    )
    ip = proto.message_type.add(name="IP")
    # One field, the canonical text: equal text, equal address.
    ip.field.add(name="address", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    # cidr.go's net.CIDR: the address as written (unmasked, as Go's Prefix) and the length.
    cidr = proto.message_type.add(name="CIDR")
    cidr.field.add(name="address", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    cidr.field.add(name="bits", number=2, type=field.TYPE_INT64, label=field.LABEL_OPTIONAL)
    try:
        _POOL.FindFileByName(proto.name)
    except KeyError:
        _POOL.Add(proto)
    return tuple(
        message_factory.GetMessageClass(_POOL.FindMessageTypeByName(name))
        for name in ("net.IP", "net.CIDR")
    )


_IPMsg, _CIDRMsg = _net_types()
_IP = cel.Type("net.IP")
_CIDR = cel.Type("net.CIDR")
_QUANTITY = cel.Type("kubernetes.Quantity")
_SEMVER = cel.Type("kubernetes.Semver")


def _to_quantity_msg(q: quantity_lib.Quantity) -> Any:
    return _QuantityMsg(value=f"{q.unscaled}e{q.exponent}")


@lru_cache(maxsize=4096)
def _quantity_of_text(text: str) -> quantity_lib.Quantity:
    unscaled, _, exponent = text.partition("e")
    return quantity_lib.Quantity(int(unscaled or "0"), int(exponent or "0"))


def _from_quantity_msg(msg: Any) -> quantity_lib.Quantity:
    return _quantity_of_text(msg.value)


@lru_cache(maxsize=1024)
def _semver_of(text: str) -> semver_lib.Version:
    return semver_lib.parse(text)


def _to_semver_msg(v: semver_lib.Version) -> Any:
    return _SemverMsg(version=v.canonical())


def _from_semver_msg(msg: Any) -> semver_lib.Version:
    return _semver_of(msg.version)


# --- library functions (names and overload ids as in quantity.go and semverlib.go) --------


def _quantity(text: str) -> Any:
    return _quantity_msg_of(text)


def _is_quantity(text: str) -> bool:
    try:
        quantity_lib.parse(text)
    except quantity_lib.QuantityError:
        return False
    return True


def _q_cmp(a: Any, b: Any) -> int:
    return _from_quantity_msg(a).cmp(_from_quantity_msg(b))


def _q_as_integer(a: Any) -> int:
    value = _from_quantity_msg(a).as_int64()
    if value is None:
        raise CELError("cannot convert value to integer")
    return value


def _q_add(a: Any, b: Any) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(_from_quantity_msg(b)))


def _q_add_int(a: Any, b: int) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(quantity_lib.Quantity.of(b)))


def _q_sub(a: Any, b: Any) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(_from_quantity_msg(b).neg()))


def _q_sub_int(a: Any, b: int) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(quantity_lib.Quantity.of(-b)))


def _semver(text: str) -> Any:
    return _to_semver_msg(semver_lib.parse(text))


def _semver_normalize(text: str, normalize: bool) -> Any:
    parse = semver_lib.parse_normalized if normalize else semver_lib.parse
    return _to_semver_msg(parse(text))


def _is_semver(text: str) -> bool:
    return _is_semver_normalize(text, False)


def _is_semver_normalize(text: str, normalize: bool) -> bool:
    parse = semver_lib.parse_normalized if normalize else semver_lib.parse
    try:
        parse(text)
    except semver_lib.SemverError:
        return False
    return True


def _s_cmp(a: Any, b: Any) -> int:
    return _from_semver_msg(a).compare(_from_semver_msg(b))


def _compare(function: str, a: Any, b: Any) -> int:
    """Two quantities or two semvers; anything else has no overload (cel-go's words)."""
    if isinstance(a, _QuantityMsg) and isinstance(b, _QuantityMsg):
        return _q_cmp(a, b)
    if isinstance(a, _SemverMsg) and isinstance(b, _SemverMsg):
        return _s_cmp(a, b)
    raise CELError(f"no such overload: {function}")


def _compare_to(a: Any, b: Any) -> int:
    return _compare("compareTo", a, b)


def _greater_than(a: Any, b: Any) -> bool:
    return _compare("isGreaterThan", a, b) == 1


def _less_than(a: Any, b: Any) -> bool:
    return _compare("isLessThan", a, b) == -1


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # an invalid pattern is the caller's error, not a log line
    return options


_RE2_OPTIONS = _re2_options()


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    """RE2, as Go's regexp: linear time (a selector is hostile input; Python's re is not)."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as e:
        detail = (
            e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else e
        )
        raise CELError(f"Illegal regex: error parsing regexp: {detail}") from None


def _find(text: str, pattern: str) -> str:
    """regex.go ``find``: the leftmost match, or the empty string."""
    match = _regex(pattern).search(text)
    return str(match.group(0)) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """regex.go ``findAll``: Go's ``FindAllString`` (a negative limit means all; an empty
    match right after the previous match is skipped)."""
    if limit == 0:
        return []
    found: list[str] = []
    previous_end = -1
    for match in _regex(pattern).finditer(text):
        if match.start() == match.end() == previous_end:
            continue
        previous_end = match.end()
        found.append(str(match.group(0)))
        if 0 < limit <= len(found):
            break
    return found


def _cel_equal(a: Any, b: Any) -> bool:
    """CEL's ``==`` on the Python values the runtime hands over (a bool is no number)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return _dict_equal(a, b)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    if isinstance(a, cel.Type) or isinstance(b, cel.Type):
        # A type value's == takes only another type (it raises on anything else).
        return isinstance(a, cel.Type) and isinstance(b, cel.Type) and bool(a == b)
    return bool(a == b)


_MISSING = object()


def _dict_equal(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    """Same keys (a bool key is not the number 1), equal values."""
    if len(a) != len(b):
        return False
    others = {(type(k) is bool, k): v for k, v in b.items()}
    for k, v in a.items():
        other = others.get((type(k) is bool, k), _MISSING)
        if other is _MISSING or not _cel_equal(v, other):
            return False
    return True


# --- sets.*: membership by hash, with CEL's equality -------------------------------------


class _Unkeyable(Exception):
    """A value with no key: compared pairwise (``_cel_equal``)."""


class _Unequal(Exception):
    """A value equal to nothing, itself included: NaN, or a list or map holding it."""


# Messages keyed by type and content: our own value types, whose fields are strings and ints
# (their serialization is their value). Others are compared pairwise.
_KEYED_MESSAGES = frozenset(("kubernetes.Quantity", "kubernetes.Semver", "net.IP", "net.CIDR"))


def _key(value: Any) -> Hashable:
    """A key equal for values CEL's ``==`` finds equal (as ``_cel_equal``), else different.

    Numbers are their Python selves (``1 == 1.0``, and int and uint are both ``int``); every
    other kind is a tuple tagged with its kind, so a bool is not the number 1 and a string is
    not bytes. Raises ``_Unequal`` for a value equal to nothing and ``_Unkeyable`` for a value
    of another kind.
    """
    kind = type(value)
    if kind is int or kind is str:
        return value
    if kind is list:
        return ("list", tuple([_key(v) for v in value]))
    if kind is float:
        if value != value:
            raise _Unequal
        return value
    if kind is bool:
        return ("bool", value)
    if kind is dict:
        return ("map", frozenset([(_key(k), _key(v)) for k, v in value.items()]))
    if kind is bytes or kind is bytearray:
        return ("bytes", bytes(value))
    if value is None:
        return ("null",)
    if kind is datetime.timedelta:
        return ("duration", value)
    if kind is datetime.datetime:
        return ("timestamp", value)
    if isinstance(value, cel.Type):
        return ("type", value.name())
    name = getattr(getattr(value, "DESCRIPTOR", None), "full_name", None)
    if name in _KEYED_MESSAGES:
        return ("message", name, value.SerializeToString(deterministic=True))
    raise _Unkeyable


class _Index:
    """The elements of a list by key; those with no key are compared pairwise."""

    __slots__ = ("values", "keys", "loose")

    def __init__(self, values: list[Any]) -> None:
        self.values = values
        self.keys: set[Hashable] = set()
        self.loose: list[Any] = []
        meter = _current_meter()
        for i, value in enumerate(values):
            if meter is not None and i % _CHECK_EVERY == 0:
                meter.check()
            try:
                self.keys.add(_key(value))
            except _Unkeyable:
                self.loose.append(value)
            except _Unequal:
                pass

    def has(self, value: Any) -> bool:
        """Whether an element of the list equals ``value``."""
        try:
            key = _key(value)
        except _Unkeyable:
            return _any_equal(self.values, value)
        except _Unequal:
            return False
        return key in self.keys or (bool(self.loose) and _any_equal(self.loose, value))


def _any_equal(values: list[Any], value: Any) -> bool:
    for other in values:
        _tick()
        if _cel_equal(other, value):
            return True
    return False


def _probe(index: _Index, values: list[Any], want: bool) -> bool:
    """Whether some element of ``values`` is (``want``) or is not in ``index``."""
    meter = _current_meter()
    for i, value in enumerate(values):
        if meter is not None and i % _CHECK_EVERY == 0:
            meter.check()
        if index.has(value) is want:
            return True
    return False


def _sets_contains(a: list[Any], b: list[Any]) -> bool:
    """ext.Sets ``sets.contains``: every element of b is in a."""
    return not b or not _probe(_Index(a), b, False)


def _sets_equivalent(a: list[Any], b: list[Any]) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return bool(a) and bool(b) and _probe(_Index(a), b, True)


def _lists_call(impl: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except cel_lists.ListsError as e:
            raise CELError(str(e)) from None

    return call


def _ticking_equal(a: Any, b: Any) -> bool:
    _tick()
    return _cel_equal(a, b)


def _index_of(values: list[Any], item: Any) -> int:
    return cel_lists.index_of(values, item, _ticking_equal)


def _last_index_of(values: list[Any], item: Any) -> int:
    return cel_lists.last_index_of(values, item, _ticking_equal)


@lru_cache(maxsize=1024)
def _ip_msg_of(text: str) -> Any:
    try:
        return _IPMsg(address=cel_net.parse_addr(text).canonical())
    except cel_net.NetError as e:
        raise CELError(str(e)) from None


@lru_cache(maxsize=1024)
def _addr_of(text: str) -> cel_net.Addr:
    return cel_net.parse_addr(text)


@lru_cache(maxsize=1024)
def _prefix_of(text: str) -> cel_net.Prefix:
    try:
        return cel_net.parse_cidr(text)
    except cel_net.NetError as e:
        raise CELError(str(e)) from None


def _cidr_msg(prefix: cel_net.Prefix) -> Any:
    return _CIDRMsg(address=prefix.addr.canonical(), bits=prefix.bits)


def _cidr_of(msg: Any) -> cel_net.Prefix:
    return cel_net.Prefix(_addr_of(msg.address), int(msg.bits))


def _ip_of(msg_or_text: Any) -> cel_net.Addr:
    if isinstance(msg_or_text, str):
        try:
            return _addr_of(msg_or_text)
        except cel_net.NetError as e:
            raise CELError(str(e)) from None
    return _addr_of(msg_or_text.address)


def _contains_ip(cidr: Any, ip: Any) -> bool:
    return _cidr_of(cidr).contains(_ip_of(ip))


def _contains_cidr(cidr: Any, other: Any) -> bool:
    inner = _prefix_of(other) if isinstance(other, str) else _cidr_of(other)
    return _cidr_of(cidr).contains_prefix(inner)


def _net_to_string(value: Any) -> str:
    if isinstance(value, _CIDRMsg):
        return f"{value.address}/{value.bits}"
    return str(value.address)


def _ip_is_canonical(text: str) -> bool:
    try:
        return cel_net.is_canonical(text)
    except cel_net.NetError as e:
        raise CELError(str(e)) from None


def _ip_test(test: Callable[[cel_net.Addr], bool]) -> Callable[[Any], bool]:
    return lambda msg: test(_addr_of(msg.address))


_T = cel.Type


def _overload(
    overload_id: str,
    result: cel.Type,
    params: list[cel.Type],
    impl: Callable[..., Any],
    member: bool = False,
    cost: Callable[..., int] = _nominal,
) -> cel.Overload:
    """An overload whose calls are metered: ``cost(*args)`` is upstream's runtime cost of the
    call (cost.go ``CallCost``, ext/sets.go; 1 for what they do not name)."""
    return cel.Overload(overload_id, result, params, is_member=member, impl=_metered(cost, impl))


def _kubernetes_library() -> cel.CelExtension:
    Q, S, B, INT, STR, DYN = _QUANTITY, _SEMVER, _T.BOOL, _T.INT, _T.STRING, _T.DYN
    LIST = _T.List(DYN)
    f = cel.FunctionDecl
    o = _overload
    functions = [
        # quantity.go
        f("quantity", [o("string_to_quantity", Q, [STR], _quantity, cost=_string_cost())]),
        f("isQuantity", [o("is_quantity_string", B, [STR], _is_quantity, cost=_string_cost())]),
        f("sign", [o("quantity_sign", INT, [Q], lambda a: _from_quantity_msg(a).sign(), True)]),
        f(
            "asApproximateFloat",
            [
                o(
                    "quantity_get_float",
                    _T.DOUBLE,
                    [Q],
                    lambda a: _from_quantity_msg(a).approximate_float(),
                    True,
                )
            ],
        ),
        f("asInteger", [o("quantity_get_int", INT, [Q], _q_as_integer, True)]),
        f(
            "isInteger",
            [
                o(
                    "quantity_is_integer",
                    B,
                    [Q],
                    lambda a: _from_quantity_msg(a).as_int64() is not None,
                    True,
                )
            ],
        ),
        f(
            "add",
            [
                o("quantity_add", Q, [Q, Q], _q_add, True),
                o("quantity_add_int", Q, [Q, INT], _q_add_int, True),
            ],
        ),
        f(
            "sub",
            [
                o("quantity_sub", Q, [Q, Q], _q_sub, True),
                o("quantity_sub_int", Q, [Q, INT], _q_sub_int, True),
            ],
        ),
        # The C++ runtime dispatches on kinds, and both value types are of the message kind:
        # one overload on dyn per method compares two quantities or two semvers.
        f("isGreaterThan", [o("dra_is_greater_than", B, [DYN, DYN], _greater_than, True)]),
        f("isLessThan", [o("dra_is_less_than", B, [DYN, DYN], _less_than, True)]),
        f("compareTo", [o("dra_compare_to", INT, [DYN, DYN], _compare_to, True)]),
        # semverlib.go (SemverVersion(1): the normalizing overloads too)
        f(
            "semver",
            [
                o("string_to_semver", S, [STR], _semver, cost=_string_cost()),
                o("string_bool_to_semver", S, [STR, B], _semver_normalize, cost=_string_cost()),
            ],
        ),
        f(
            "isSemver",
            [
                o("is_semver_string", B, [STR], _is_semver, cost=_string_cost()),
                o("is_semver_string_bool", B, [STR, B], _is_semver_normalize, cost=_string_cost()),
            ],
        ),
        # regex.go (RE2, as Go's regexp)
        f("find", [o("string_find_string", STR, [STR, STR], _find, True, _regex_cost)]),
        f(
            "findAll",
            [
                o(
                    "string_find_all_string",
                    _T.List(STR),
                    [STR, STR],
                    _find_all,
                    True,
                    _regex_cost,
                ),
                o(
                    "string_find_all_string_int",
                    _T.List(STR),
                    [STR, STR, INT],
                    _find_all,
                    True,
                    _regex_cost,
                ),
            ],
        ),
        # cel-go ext.Sets (base environment since 1.29)
        f(
            "sets.contains",
            [o("list_sets_contains_list", B, [LIST, LIST], _sets_contains, cost=_sets_cost(1))],
        ),
        f(
            "sets.equivalent",
            [o("list_sets_equivalent_list", B, [LIST, LIST], _sets_equivalent, cost=_sets_cost(2))],
        ),
        f(
            "sets.intersects",
            [o("list_sets_intersects_list", B, [LIST, LIST], _sets_intersects, cost=_sets_cost(1))],
        ),
        # ip.go
        f(
            "ip",
            [
                o("string_to_ip", _IP, [STR], _ip_msg_of, cost=_string_cost()),
                o("cidr_ip", _IP, [_CIDR], lambda c: _IPMsg(address=c.address), True),
            ],
        ),
        # cidr.go
        f(
            "cidr",
            [
                o(
                    "string_to_cidr",
                    _CIDR,
                    [STR],
                    lambda t: _cidr_msg(_prefix_of(t)),
                    cost=_string_cost(),
                )
            ],
        ),
        f("isCIDR", [o("is_cidr", B, [STR], cel_net.is_cidr, cost=_string_cost())]),
        f(
            "containsIP",
            [
                o(
                    "cidr_contains_ip_string",
                    B,
                    [_CIDR, STR],
                    _contains_ip,
                    True,
                    _contains_ip_cost,
                ),
                o("cidr_contains_ip_ip", B, [_CIDR, _IP], _contains_ip, True, _contains_ip_cost),
            ],
        ),
        f(
            "containsCIDR",
            [
                o(
                    "cidr_contains_cidr_string",
                    B,
                    [_CIDR, STR],
                    _contains_cidr,
                    True,
                    _contains_cidr_cost,
                ),
                o(
                    "cidr_contains_cidr",
                    B,
                    [_CIDR, _CIDR],
                    _contains_cidr,
                    True,
                    _contains_cidr_cost,
                ),
            ],
        ),
        f("prefixLength", [o("cidr_prefix_length", INT, [_CIDR], lambda c: int(c.bits), True)]),
        f(
            "masked",
            [o("cidr_masked", _CIDR, [_CIDR], lambda c: _cidr_msg(_cidr_of(c).masked()), True)],
        ),
        f("isIP", [o("is_ip", B, [STR], cel_net.is_ip, cost=_string_cost())]),
        f(
            "ip.isCanonical",
            [o("ip_is_canonical", B, [STR], _ip_is_canonical, cost=_string_cost(2))],
        ),
        f(
            "family",
            [o("ip_family", INT, [_IP], lambda a: 4 if _addr_of(a.address).is4 else 6, True)],
        ),
        # string(cidr): the C++ runtime dispatches on kinds, and net.IP and net.CIDR are both
        # messages: string(ip) is the one overload (ip_to_string) and gives a CIDR's text too.
        f("string", [o("ip_to_string", STR, [_IP], _net_to_string)]),
        *(
            f(name, [o(overload, B, [_IP], _ip_test(test), True)])
            for name, overload, test in (
                ("isUnspecified", "ip_is_unspecified", cel_net.Addr.is_unspecified),
                ("isLoopback", "ip_is_loopback", cel_net.Addr.is_loopback),
                (
                    "isLinkLocalMulticast",
                    "ip_is_link_local_multicast",
                    cel_net.Addr.is_link_local_multicast,
                ),
                (
                    "isLinkLocalUnicast",
                    "ip_is_link_local_unicast",
                    cel_net.Addr.is_link_local_unicast,
                ),
                ("isGlobalUnicast", "ip_is_global_unicast", cel_net.Addr.is_global_unicast),
            )
        ),
        # lists.go: one overload on list(dyn) each (see extender.dra.cel_lists); indexOf and
        # lastIndexOf of strings are the string extension's.
        f(
            "isSorted",
            [
                o(
                    "list_is_sorted_bool",
                    B,
                    [LIST],
                    _lists_call(cel_lists.is_sorted),
                    True,
                    _list_cost,
                )
            ],
        ),
        f("sum", [o("list_sum", DYN, [LIST], _lists_call(cel_lists.list_sum), True, _list_cost)]),
        f("min", [o("list_min", DYN, [LIST], _lists_call(cel_lists.list_min), True, _list_cost)]),
        f("max", [o("list_max", DYN, [LIST], _lists_call(cel_lists.list_max), True, _list_cost)]),
        f("indexOf", [o("list_a_index_of_int", INT, [LIST, DYN], _index_of, True, _list_cost)]),
        f(
            "lastIndexOf",
            [o("list_a_last_index_of_int", INT, [LIST, DYN], _last_index_of, True, _list_cost)],
        ),
        f("major", [o("semver_major", INT, [S], lambda a: _from_semver_msg(a).major, True)]),
        f("minor", [o("semver_minor", INT, [S], lambda a: _from_semver_msg(a).minor, True)]),
        f("patch", [o("semver_patch", INT, [S], lambda a: _from_semver_msg(a).patch, True)]),
    ]
    return cel.CelExtension("kubernetes", functions)


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


# --- error texts: the C++ runtime's words to cel-go's ---------------------------------------


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")


def _strip_status(message: str) -> str:
    """Drop absl's ``CODE: `` prefix and `` [CODE]`` suffix."""
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", message, count=1))


_KEY_NOT_FOUND = "Key not found in map : "
_NO_OVERLOAD = "No matching overloads found"


def _runtime_message(message: str) -> str:
    message = _strip_status(message)
    if message.startswith(_KEY_NOT_FOUND):
        key = message[len(_KEY_NOT_FOUND) :]
        if len(key) >= 2 and key[0] == key[-1] == '"':
            key = key[1:-1]
        return f"no such key: {key}"
    if message == _ITERATION_BUDGET:
        return COST_LIMIT_EXCEEDED
    if message == "divide by zero":
        return "division by zero"
    if message.startswith(_NO_OVERLOAD):
        # "No matching overloads found : (int64).isGreaterThan(struct)" -> the function name
        names = re.findall(r"([^\s(),]+)\(", message[len(_NO_OVERLOAD) :])
        return f"no such overload: {names[-1].lstrip('.')}" if names else "no such overload"
    if message.startswith("Index error: index="):
        found = re.match(r"Index error: index=(-?\d+) size=(\d+)", message)
        if found:
            return f"index '{found[1]}' out of range in list size '{found[2]}'"
    return message


# cel-go's ConvertToNative(bool) errors, by the result's type (the reachable ones: a selector's
# result is only not bool when its type is dyn, i.e. an attribute or capacity value).
_CONVERSION_ERRORS = {
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "string": "unsupported native conversion from string to 'bool'",
    "double": "type conversion error from Double to 'bool'",
    "bytes": "type conversion error from Bytes to 'bool'",
    "null_type": "type conversion error from 'null_type' to 'bool'",
    "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'",
    "kubernetes.Quantity": "type conversion error from 'Quantity' to 'bool'",
}


def _not_bool(type_name: str) -> str:
    """``DeviceMatches``' error for a result that is not a bool."""
    if type_name.startswith("list("):
        detail = "type conversion error from list to 'bool'"
    elif type_name.startswith("map("):
        detail = "unsupported type conversion: bool to map"
    else:
        detail = _CONVERSION_ERRORS.get(
            type_name, f"type conversion error from '{type_name}' to 'bool'"
        )
    return f"CEL result of type {type_name} could not be converted to bool: {detail}"


def _type_name(name: str) -> str:
    """A C++ checker type name in cel-go's spelling (``LIST<INT>`` -> ``list(int)``)."""
    simple = {
        "BOOL": "bool",
        "INT": "int",
        "UINT": "uint",
        "DOUBLE": "double",
        "STRING": "string",
        "BYTES": "bytes",
        "NULL": "null_type",
        "DYN": "dyn",
        "DURATION": "google.protobuf.Duration",
        "TIMESTAMP": "google.protobuf.Timestamp",
        "ERROR": "*error*",
    }
    if name in simple:
        return simple[name]
    if "<" in name and name.endswith(">"):
        head, _, inner = name.partition("<")
        args = _split_type_args(inner[:-1])
        converted = ", ".join(_type_name(a) for a in args)
        return f"{_type_name(head) if head not in ('LIST', 'MAP', 'TYPE') else head.lower()}" + (
            f"({converted})"
        )
    return name


def _split_type_args(text: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return args


# --- compilation and evaluation -----------------------------------------------------------


def _attribute_value(name: str, attribute: Mapping[str, Any]) -> Any:
    """``getAttributeValue``: the one value of a DeviceAttribute (list values: gate off)."""
    # type() before isinstance(): this runs for every attribute of every device.
    if type(attribute) is not dict and not isinstance(attribute, Mapping):
        raise CELError(f"attribute {name}: unsupported attribute value")
    value = attribute.get("int")
    if type(value) is int and _MIN_INT64 <= value <= _MAX_INT64:
        return value
    value = attribute.get("bool")
    if type(value) is bool:
        return value
    value = attribute.get("string")
    if type(value) is str:
        return value
    value = attribute.get("version")
    if type(value) is str:
        try:
            return _semver_msg_of(value)
        except semver_lib.SemverError as e:
            raise CELError(f"attribute {name}: parse semantic version: {e}") from None
    raise CELError(f"attribute {name}: unsupported attribute value")


_MIN_INT64, _MAX_INT64 = -(1 << 63), (1 << 63) - 1


def _split_name(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


@lru_cache(maxsize=4096)
def _quantity_msg_of(text: str) -> Any:
    # The same message object for the same text: messages handed to the runtime are only read.
    return _to_quantity_msg(quantity_lib.parse(text))


@lru_cache(maxsize=4096)
def _semver_msg_of(text: str) -> Any:
    return _to_semver_msg(_semver_of(text))


def _capacity_value(name: str, capacity: Mapping[str, Any]) -> Any:
    is_mapping = type(capacity) is dict or isinstance(capacity, Mapping)
    value = capacity.get("value") if is_mapping else None
    if type(value) not in (str, int, float):
        raise CELError(f"capacity {name}: missing value")
    try:
        return _quantity_msg_of(str(value))
    except quantity_lib.QuantityError as e:
        raise CELError(f"capacity {name}: {e}") from None


def _device_maps(device: CELDevice) -> tuple[dict[str, Any], dict[str, Any]]:
    """device.attributes and device.capacity as CEL values (``DeviceMatches``)."""
    # The API's types, checked: a device from a file or a webhook may hold anything.
    if type(device.driver) is not str:
        raise CELError("device driver: not a string")
    for label, value in (("attributes", device.attributes), ("capacity", device.capacity)):
        if not isinstance(value, Mapping) or not all(type(k) is str for k in value):
            raise CELError(f"device {label}: not a map of names")
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        value = _attribute_value(name, attribute)
        domain, ident = _split_name(name, device.driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split_name(name, device.driver)
        capacity.setdefault(domain, {})[ident] = _capacity_value(name, cap)
    return attributes, capacity


class _DeviceRef(weakref.ref):
    """A weak reference to a cached CELDevice, with the cache key and the cached value: the
    entry goes when the device does (a deleted or replaced slice), not when the cache fills."""

    __slots__ = ("key", "value", "owner")
    key: int
    value: Any  # the cached answer (None for the values cache: the entry holds the ref)
    owner: dict[int, Any]  # the cache holding the entry


class _DeviceValues:
    """A device's CEL values, built once: every selector of every pod reads the same device."""

    __slots__ = ("ref", "message", "attributes", "capacity", "error")

    def __init__(self, device: CELDevice) -> None:
        self.ref: _DeviceRef | None = None  # set by _device_values: the device, weakly
        self.message: Any = None
        self.error: CELError | None = None
        self.attributes: dict[str, Any] = {}
        self.capacity: dict[str, Any] = {}
        try:
            self.attributes, self.capacity = _device_maps(device)
            self.message = _DeviceMsg(
                driver=device.driver,
                allowMultipleAllocations=device.allow_multiple_allocations is True,
            )
        except CELError as e:
            self.error = e
        except (ValueError, TypeError, OverflowError) as e:
            # Input no API server would have taken (a device from a file may hold anything).
            self.error = CELError(f"invalid device: {e}")


# Keyed by identity (a CELDevice holds dicts: it has no hash). The allocator builds one
# CELDevice per device of a ResourceSlice and keeps it while the slice is unchanged, so a
# device's values are built once, not once a selector and pod; its mappings must not change.
# Entries hold the device weakly and leave with it.
_DEVICE_CACHE_SIZE = 8192
_RESULTS_SIZE = 65536
_DEVICE_CACHE: OrderedDict[int, _DeviceValues] = OrderedDict()
_DEVICE_CACHE_LOCK = threading.Lock()


def _drop_entry(ref: Any) -> None:
    """The device of a cache entry is gone: drop the entry (no lock: this runs wherever the
    last reference went, maybe under the cache's lock; one dict operation is atomic)."""
    owner, key = ref.owner, ref.key
    entry = owner.get(key)
    if entry is ref or getattr(entry, "ref", None) is ref:
        owner.pop(key, None)
        if not owner:
            owner.clear()  # an emptied dict keeps its table; clear() gives it back


def _device_ref(device: CELDevice, owner: dict, value: Any) -> _DeviceRef:
    ref = _DeviceRef(device, _drop_entry)
    ref.key, ref.value, ref.owner = id(device), value, owner
    return ref


def _device_values(device: CELDevice) -> _DeviceValues:
    key = id(device)
    with _DEVICE_CACHE_LOCK:
        entry = _DEVICE_CACHE.get(key)
        if entry is not None and entry.ref is not None and entry.ref() is device:
            _DEVICE_CACHE.move_to_end(key)
            return entry
    entry = _DeviceValues(device)
    entry.ref = _device_ref(device, _DEVICE_CACHE, None)
    with _DEVICE_CACHE_LOCK:
        _DEVICE_CACHE[key] = entry
        _DEVICE_CACHE.move_to_end(key)
        while len(_DEVICE_CACHE) > _DEVICE_CACHE_SIZE:
            _DEVICE_CACHE.popitem(last=False)
    return entry


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
        # The worst-case cost (cel-go's estimate, extender.dra.celcost); None after an error.
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
_UNDEFINED_FIELD = re.compile(r"undefined field '([^']*)' not found in struct '[^']*'")


def _compile_message(message: str) -> str:
    """A C++ checker error in cel-go's words."""
    return _UNDEFINED_FIELD.sub(r"undefined field '\1'", _strip_status(message))


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


class CELCache:
    """An LRU of compiled expressions (``Cache`` of cache.go); thread-safe.

    As upstream, only successful compilations are kept: a broken expression is compiled again
    each time (the error is cheap to get and must not push good entries out).
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_SIZE) -> None:
        self._max_entries = max(1, max_entries)
        self._entries: OrderedDict[str, CompilationResult] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompilationResult:
        with self._lock:
            cached = self._entries.get(expression)
            if cached is not None:
                self._entries.move_to_end(expression)
                return cached
            # Compiling under the lock: compiling twice in parallel costs more than waiting.
            result = compile_expression(expression)
            if result.error is None:
                self._entries[expression] = result
                if len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
            return result

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
