"""Exact quantities and consumable capacity (DRAConsumableCapacity).

Upstream: ``structured/internal/incubating/consumable_capacity.go``; quantities are parsed by
:mod:`extender.framework.quantity` (apimachinery's ``pkg/api/resource/quantity.go``) and summed
exactly, with the canonical string of each format.

Values are ``decimal.Decimal`` in a private context wide enough to be exact for every quantity
the API accepts (at most 9 fractional digits, int64-sized mantissas); the format (binary,
decimal, exponent) is kept from the parsed text because it decides the canonical string.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Context, Decimal, localcontext
from functools import lru_cache

from extender.framework import quantity
from extender.framework.quantity import (
    BINARY_SI,
    BINARY_SUFFIXES,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    DECIMAL_SUFFIXES,
    QuantityError,
)

_CONTEXT = Context(prec=120, Emax=999_999, Emin=-999_999)
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {power // 10: suffix for suffix, power in BINARY_SUFFIXES.items()}
# A value past 10^1000 is far beyond anything this arithmetic needs (int64 values); refusing it
# keeps the work bounded by the text's length (the exact view's sums stop at the same gap).
_MAX_EXPONENT = 1000


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact ``resource.Quantity``: its value and the format of its canonical string."""

    value: Decimal
    format: str = DECIMAL_SI

    @staticmethod
    def parse(text: object) -> Quantity:
        """``resource.ParseQuantity`` (a JSON number is taken as its text). Raises
        :class:`QuantityError` with upstream's message, or past 10^1000."""
        if isinstance(text, str):
            return _parse_string(text)  # the common case: one cached lookup
        if isinstance(text, Quantity):
            return text
        return _parse_text(quantity.text_of(text))

    @staticmethod
    def from_int(value: int, fmt: str = BINARY_SI) -> Quantity:
        """``resource.NewQuantity``."""
        return Quantity(Decimal(value), fmt)

    def add(self, other: Quantity) -> Quantity:
        # Quantity.Add keeps the receiver's format unless the receiver is zero.
        fmt = other.format if self.value == 0 else self.format
        with localcontext(_CONTEXT):
            return Quantity(self.value + other.value, fmt)

    def sub(self, other: Quantity) -> Quantity:
        fmt = other.format if self.value == 0 else self.format
        with localcontext(_CONTEXT):
            return Quantity(self.value - other.value, fmt)

    def cmp(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)

    def is_zero(self) -> bool:
        return self.value == 0

    def int_value(self) -> int:
        """``Value()``: rounded up (toward +inf) to an integer."""
        return int(self.value.to_integral_value(rounding=ROUND_CEILING))

    def __str__(self) -> str:
        return _canonical_cached(self)


@lru_cache(maxsize=4096)
def _parse_string(text: str) -> Quantity:
    """``Quantity.parse`` of a string, memoised as a whole (the trimming too)."""
    return _parse_text(quantity.text_of(text))


@lru_cache(maxsize=4096)
def _canonical_cached(q: Quantity) -> str:
    """``canonical``, memoised: results carry the same few consumed amounts."""
    return canonical(q)


@lru_cache(maxsize=4096)
def _parse_text(raw: str) -> Quantity:
    """Parsing is pure and the same few texts recur (capacities, counters): cached."""
    exact = quantity.parse(raw)
    if exact.exponent > _MAX_EXPONENT:
        raise QuantityError(quantity.OUT_OF_RANGE)
    return Quantity(Decimal(f"{exact.unscaled}e{exact.exponent}"), exact.format)


def canonical(q: Quantity) -> str:
    """``Quantity.String()``: the canonical text of the value in its format."""
    value = q.value
    if value == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI:
        if -1024 < value < 1024 or value != value.to_integral_value():
            fmt = DECIMAL_SI
    elif fmt not in (DECIMAL_SI, DECIMAL_EXPONENT):
        fmt = DECIMAL_EXPONENT
    if fmt == BINARY_SI:
        number = int(value)
        power = 0
        while power < 6 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{number}{_BINARY_BY_POWER.get(power, '')}"
    # Decimal: an integer mantissa and an exponent that is a multiple of 3, as large as
    # possible without losing digits.
    sign, digits, exponent = value.normalize(_CONTEXT).as_tuple()
    mantissa = int("".join(map(str, digits)))
    exp = int(exponent)
    shift = exp % 3
    mantissa *= 10**shift
    exp -= shift
    text = f"{'-' if sign else ''}{mantissa}"
    if fmt == DECIMAL_SI and exp in _DECIMAL_BY_EXPONENT:
        return text + _DECIMAL_BY_EXPONENT[exp]
    return text if exp == 0 else f"{text}e{exp}"


def _policy_quantity(policy: Mapping, key: str) -> Quantity | None:
    value = policy.get(key)
    return None if value is None else Quantity.parse(value)


def _requested(capacity_requests: Mapping | None, name: str) -> Quantity | None:
    if not capacity_requests:
        return None
    requests = capacity_requests.get("requests")
    if not requests or name not in requests:
        return None
    return Quantity.parse(requests[name])


def _fill_empty_request(capacity: Mapping) -> Quantity:
    policy = capacity.get("requestPolicy")
    if policy and policy.get("default") is not None:
        return Quantity.parse(policy["default"])
    return Quantity.parse(capacity.get("value", "0"))


def _round_up_range(requested: Quantity, valid_range: Mapping) -> Quantity:
    minimum = Quantity.parse(valid_range["min"])
    if requested.cmp(minimum) < 0:
        return minimum
    step = _policy_quantity(valid_range, "step")
    if step is None:
        return requested
    added = requested.int_value() - minimum.int_value()
    step_value = step.int_value()
    n = _go_div(added, step_value)
    if _go_mod(added, step_value) != 0:
        n += 1
    return Quantity.from_int(minimum.int_value() + step_value * n, BINARY_SI)


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    return a - b * _go_div(a, b)


def _round_up_valid_values(requested: Quantity, valid_values: list) -> Quantity:
    for raw in valid_values:
        valid = Quantity.parse(raw)
        if requested.cmp(valid) <= 0:
            return valid
    return requested


def calculate_consumed_capacity(requested: Quantity | None, capacity: Mapping) -> Quantity:
    """``calculateConsumedCapacity``: what a request consumes of one device capacity."""
    if requested is None:
        return _fill_empty_request(capacity)
    policy = capacity.get("requestPolicy")
    if policy is None:
        return requested
    valid_range = policy.get("validRange")
    if valid_range is not None and valid_range.get("min") is not None:
        return _round_up_range(requested, valid_range)
    if policy.get("validValues") is not None:
        return _round_up_valid_values(requested, policy["validValues"])
    return requested


def _violates_policy(requested: Quantity, policy: Mapping | None) -> bool:
    if policy is None:
        return False
    default = _policy_quantity(policy, "default")
    if default is not None and requested.cmp(default) == 0:
        return False
    valid_range = policy.get("validRange")
    if valid_range is not None:
        maximum = _policy_quantity(valid_range, "max")
        if maximum is not None and requested.cmp(maximum) > 0:
            return True
        step = _policy_quantity(valid_range, "step")
        if step is not None:
            minimum = _policy_quantity(valid_range, "min")
            added = requested.int_value() - (minimum.int_value() if minimum else 0)
            if _go_mod(added, step.int_value()) != 0:
                return True
        return False
    valid_values = policy.get("validValues") or []
    if valid_values:
        return all(requested.cmp(Quantity.parse(v)) != 0 for v in valid_values)
    return False


class UndefinedCapacityRequest(Exception):
    """A request names a capacity the device does not have (the device is skipped)."""


def request_fits_capacity(
    consumed: Mapping[str, Quantity],
    capacity_requests: Mapping | None,
    device_capacity: Mapping[str, Mapping],
    allocating: Mapping[str, Quantity] | None,
) -> bool:
    """``CmpRequestOverCapacity``: whether the request, on top of what is consumed already
    (allocated and being allocated), stays within every capacity and its request policy.

    Raises :class:`UndefinedCapacityRequest` when a requested capacity is not defined.
    """
    requests = (capacity_requests or {}).get("requests") or {}
    for name in requests:
        if name not in device_capacity:
            raise UndefinedCapacityRequest("some requested capacity has not been defined")
    for name, capacity in device_capacity.items():
        amount = calculate_consumed_capacity(_requested(capacity_requests, name), capacity)
        if _violates_policy(amount, capacity.get("requestPolicy")):
            return False
        total = amount
        already = consumed.get(name)
        if already is not None:
            total = Quantity.parse(already).add(amount)
        if allocating and name in allocating:
            total = total.add(allocating[name])
        if total.cmp(Quantity.parse(capacity.get("value", "0"))) > 0:
            return False
    return True


def consumed_capacity_from_request(
    capacity_requests: Mapping | None, device_capacity: Mapping[str, Mapping]
) -> dict[str, Quantity]:
    """``GetConsumedCapacityFromRequest``: the amount consumed of each device capacity."""
    return {
        name: calculate_consumed_capacity(_requested(capacity_requests, name), capacity)
        for name, capacity in device_capacity.items()
    }


__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Quantity",
    "QuantityError",
    "UndefinedCapacityRequest",
    "calculate_consumed_capacity",
    "canonical",
    "consumed_capacity_from_request",
    "request_fits_capacity",
]
