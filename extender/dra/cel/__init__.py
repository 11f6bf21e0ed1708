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
  pointed at a plain variable, a lookup at a view with the empty-map default
  (``compile._analyze``, on the checked AST read and edited through :mod:`.ast`).
- The base environment's checks the C++ checker lacks run on the checked AST
  (``compile._validate``: one type per list and map literal, valid ``matches`` / ``duration`` /
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
   meter (thread-local, see :mod:`.meter`), and each call of ``sets.*``, the ``lists``, ``regex``,
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
   They are bounded by (a) ``extender.dra.cel.cost``, cel-go's worst-case estimate (equal to
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

``sets.*`` find members by hash (:mod:`.sets`, ``_key``: a key per value, equal exactly when
CEL's ``==`` is: a bool is not a number, ``1 == 1u == 1.0``, NaN equals nothing, lists and maps
compare structurally, quantity / semver / IP / CIDR messages by type and content), so the largest
pair of lists the API server takes (990 elements each) costs milliseconds, not a million
pairwise comparisons; values with no key (the device message) are compared pairwise.

Known differences (none reachable by the selectors DRA drivers document):

- The C++ parser allows 32 levels of nesting (cel-go: 250): deeper expressions are compile
  errors (``Expression recursion limit exceeded``).
- Carried over since: Kubernetes' ``lists`` library (``isSorted``, ``sum``, ``min``, ``max``,
  ``indexOf``, ``lastIndexOf``: ``extender.dra.cel.lists``), cel-go's ``ext.Lists`` and
  two-variable comprehensions (the C++ runtime's own, enabled through its env config). Their
  differences: ``sum``, ``min`` and ``max`` are typed ``dyn`` (upstream: the element type), so
  ``[1].sum() + "a"`` is a runtime error there a compile error; ``sum()`` of an empty list of
  doubles or durations is the int 0 (equal to ``0.0`` in CEL, not to ``duration('0')``); a
  list of uints sums to an int; ``transformMap`` / ``transformMapEntry`` fail at evaluation
  (``No overload found in reference resolve step for cel.@mapInsert``: the C++ runtime's
  Python bindings do not register that helper); the C++ lists extension also has ``first()``.
- The ``ip`` and ``cidr`` libraries (``extender.dra.cel.net``: Go's ``netip.ParseAddr`` and
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
  that is still integral (``"1.0"``, ``"1.5Ki"``) succeed (see ``extender.framework.quantity``).
- A quantity or semver value shows its one message field (``.value``, ``.version``) and can be
  built as a message literal (``kubernetes.Quantity{...}``); upstream's types have neither.
- A lookup with a computed domain key (``device.attributes[k]``, ``k`` not a constant) of a
  domain the device lacks fails with ``no such key`` instead of giving an empty map.

Modules, one concept each: :mod:`.compile` (the environment, compiling, the checks and AST
edits above, evaluating; upstream ``compile.go``), :mod:`.cache` (``cache.go``),
:mod:`.library` (the Kubernetes library functions), :mod:`.sets` (CEL's equality, ``sets.*``
by hash), :mod:`.types` (the message types and their conversions), :mod:`.device` (a device's
CEL values), :mod:`.meter` (the runtime cost meter), :mod:`.errors` (the exceptions and
cel-go's error texts), :mod:`.cost` (the static estimate), :mod:`.ast` (reading and editing the
checked AST), :mod:`.lists`, :mod:`.net` and :mod:`.semver` (the ``lists``, ``ip`` / ``cidr``
and ``semver`` libraries' logic). The names the allocator and the tests use are re-exported
here.
"""

from __future__ import annotations

from .cache import DEFAULT_CACHE_SIZE, CELCache
from .compile import CompilationResult, compile_expression
from .device import CELDevice
from .errors import COST_LIMIT_EXCEEDED, INTERRUPTED, CELDeadlineExceeded, CELError
from .meter import CEL_SELECTOR_EXPRESSION_MAX_COST

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "COST_LIMIT_EXCEEDED",
    "DEFAULT_CACHE_SIZE",
    "INTERRUPTED",
    "CELCache",
    "CELDeadlineExceeded",
    "CELDevice",
    "CELError",
    "CompilationResult",
    "compile_expression",
]
