"""The runtime cost meter of one evaluation (cel-go's ``CostTracker`` and interrupt check) and
upstream's runtime cost of each library call (k8s.io/apiserver ``pkg/cel/library/cost.go``
``CallCost``, cel-go ``ext/sets.go``). See "Cost" in :mod:`extender.dra.cel`."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from extender.framework import budget

from .errors import COST_LIMIT_EXCEEDED, INTERRUPTED, CELError

# resource.k8s.io/v1 CELSelectorExpressionMaxCost.
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000


# --- the runtime cost meter ---------------------------------------------------------------


class _Meter:
    """One evaluation's cost and deadline (cel-go's ``CostTracker`` and interrupt check).

    The library functions implemented in Python (:mod:`.library`) charge upstream's runtime
    cost of a call before doing its work and check the deadline as they work; the C++
    built-ins are not metered (see "Cost" in :mod:`extender.dra.cel`). A function that trips
    either raises CELError, and the evaluation fails with that text whatever the expression
    makes of the error (``e || true``), as cel-go cancels the whole evaluation.
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
