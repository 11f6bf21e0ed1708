"""The DRA CEL environment against upstream's own cases.

``UPSTREAM_CASES`` is the table of ``k8s.io/dynamic-resource-allocation/cel/compile_test.go``
(v0.36.3): each case's expression, device, and expected match, compile error or runtime error,
and its cost estimate, for the feature gates as v1.36 sets them (DRAConsumableCapacity on,
DRAListTypeAttributes off). ``NOT_APPLICABLE`` lists the upstream cases that exercise a gate in
its non-default state; ``test_the_upstream_table_is_complete`` keeps the two lists honest.
``TestCacheSemantic`` / ``TestCacheConcurrency`` of ``cache_test.go`` follow.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from extender.dra import cel
from extender.dra.cel import CELCache, CELDevice, CELError, compile_expression

DRIVER = "dra.example.com"
MAX_ATTRIBUTES = 32  # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_ID_LENGTH = 32  # resourceapi.DeviceMaxIDLength


@dataclass(frozen=True)
class Case:
    expression: str
    driver: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)
    allow_multiple_allocations: bool | None = None
    expect_compile_error: str = ""
    expect_match_error: str = ""
    expect_match: bool = False
    expect_cost: int = 0


def _expensive_attributes() -> dict[str, Any]:
    attributes = {}
    for i in range(MAX_ATTRIBUTES):
        suffix = f"-{i}"
        name = "dra.example.com/" + "x" * (MAX_ID_LENGTH - len(suffix)) + suffix
        attributes[name] = {"string": "abc"}
    return attributes


_ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

_LISTS = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
_EXPENSIVE = (
    f"{_LISTS}.all(x, {_LISTS}.all(y, {_LISTS}.all(z, {_LISTS}.all(z2, {_LISTS}.all(z3, "
    f"{_LISTS}.all(z4, {_LISTS}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)

UPSTREAM_CASES: dict[str, Case] = {
    "true": Case("true", expect_match=True),
    "false": Case("false", expect_match=False),
    "syntax-error": Case("?!", expect_compile_error="Syntax error"),
    "type-error": Case(
        "1", expect_compile_error="must evaluate to bool or the unknown type, not int"
    ),
    "runtime-error-lookup-identifier": Case(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        expect_match_error="no such key: noSuchAttr",
        expect_cost=6,
    ),
    "runtime-error-lookup-map": Case(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        expect_match_error="no such key: noSuchAttr",
        expect_cost=6,
    ),
    "domain-check-negative": Case(
        '"no-such-domain" in device.attributes', expect_match=False, expect_cost=3
    ),
    "domain-check-positive": Case(
        '"dra.example.com" in device.attributes',
        attributes={"dra.example.com/something": {"bool": True}},
        expect_match=True,
        expect_cost=3,
    ),
    "empty-driver-name": Case('device.driver == ""', expect_match=True, expect_cost=2),
    "real-driver-name": Case(
        'device.driver == "dra.example.com"', driver=DRIVER, expect_match=True, expect_cost=4
    ),
    "driver-name-qualifier": Case(
        'device.attributes["dra.example.com"].name',
        driver=DRIVER,
        attributes={"name": {"bool": True}},
        expect_match=True,
        expect_cost=4,
    ),
    "driver-name-qualifier-map-lookup": Case(
        'device.attributes["dra.example.com"]["name"]',
        driver=DRIVER,
        attributes={"name": {"bool": True}},
        expect_match=True,
        expect_cost=4,
    ),
    "bind": Case(
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        driver=DRIVER,
        attributes={"name": {"bool": True}},
        expect_match=True,
        expect_cost=15,
    ),
    "qualified-attribute-name": Case(
        'device.attributes["other.example.com"].name',
        driver=DRIVER,
        attributes={"other.example.com/name": {"bool": True}},
        expect_match=True,
        expect_cost=4,
    ),
    "bool": Case(
        'device.attributes["dra.example.com"].name',
        driver=DRIVER,
        attributes={"name": {"bool": True}},
        expect_match=True,
        expect_cost=4,
    ),
    "int": Case(
        'device.attributes["dra.example.com"].name > 0',
        driver=DRIVER,
        attributes={"name": {"int": 1}},
        expect_match=True,
        expect_cost=5,
    ),
    "string": Case(
        'device.attributes["dra.example.com"].name == "fish"',
        driver=DRIVER,
        attributes={"name": {"string": "fish"}},
        expect_match=True,
        expect_cost=5,
    ),
    "attribute-access-causes-match-error": Case(
        'device.attributes["dra.example.com"].names',
        driver=DRIVER,
        # A list value (DRAListTypeAttributes) is unsupported while the gate is off.
        attributes={"names": {"strings": ["fish", "bird"]}},
        expect_match_error="attribute names: unsupported attribute value",
        expect_cost=4,
    ),
    "includes-function-undeclared-error": Case(
        'device.attributes["dra.example.com"].name.includes("fish")',
        driver=DRIVER,
        expect_compile_error="undeclared reference to 'includes'",
    ),
    "version": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        driver=DRIVER,
        attributes={"name": {"version": "1.0.0"}},
        expect_match=True,
        expect_cost=6,
    ),
    "version_v": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) '
        '&& isSemver("v1.0.0", true)',
        driver=DRIVER,
        attributes={"name": {"version": "1.0.0"}},
        expect_match=True,
        expect_cost=7,
    ),
    "quantity": Case(
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        driver=DRIVER,
        capacity={"name": {"value": "1Mi"}},
        expect_match=True,
        expect_cost=6,
    ),
    "check-positive": Case(
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        driver=DRIVER,
        capacity={"name": {"value": "1Mi"}},
        expect_match=True,
        expect_cost=10,
    ),
    "check-negative": Case(
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        expect_match=True,
        expect_cost=11,
    ),
    "all": Case(
        _ALL,
        driver=DRIVER,
        attributes={
            "bool": {"bool": True},
            "int": {"int": 1},
            "string": {"string": "fish"},
            "version": {"version": "1.0.0"},
        },
        capacity={"quantity": {"value": "1Mi"}},
        expect_match=True,
        expect_cost=52,
    ),
    "many": Case(
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b '
        '&& device.attributes["dra.example.com"].c',
        driver=DRIVER,
        attributes={"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        expect_match=True,
        expect_cost=12,
    ),
    "check_attribute_domains": Case(
        'device.attributes.exists_one(x, x == "dra.example.com")',
        driver=DRIVER,
        attributes={"services": {"string": "some_example_value"}},
        expect_match=True,
        expect_cost=164,
    ),
    "check_attribute_ids": Case(
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        driver=DRIVER,
        attributes={"services": {"string": "some_example_value"}},
        expect_match=True,
        expect_cost=133,
    ),
    "split_attribute": Case(
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        driver=DRIVER,
        attributes={"services": {"string": "some_example_value"}},
        expect_match=True,
        expect_cost=19,
    ),
    "regexp_attribute": Case(
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        driver=DRIVER,
        attributes={"services": {"string": "asymetric"}},
        expect_match=True,
        expect_cost=18,
    ),
    "check_capacity_domains": Case(
        'device.capacity.exists_one(x, x == "dra.example.com")',
        driver=DRIVER,
        capacity={"memory": {"value": "1Mi"}},
        expect_match=True,
        expect_cost=164,
    ),
    "check_capacity_ids": Case(
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        driver=DRIVER,
        capacity={"memory": {"value": "1Mi"}},
        expect_match=True,
        expect_cost=133,
    ),
    "expensive": Case(
        _EXPENSIVE,
        driver=DRIVER,
        attributes=_expensive_attributes(),
        expect_match_error="actual cost limit exceeded",
        expect_cost=85555551,
    ),
    "allow_multiple_allocations": Case(
        "device.allowMultipleAllocations == true",
        driver=DRIVER,
        allow_multiple_allocations=True,
        expect_match=True,
        expect_cost=3,
    ),
    "allow_multiple_allocations_default": Case(
        "device.allowMultipleAllocations == false",
        driver=DRIVER,
        allow_multiple_allocations=None,
        expect_match=True,
        expect_cost=3,
    ),
    "allow_multiple_allocations_false": Case(
        "device.allowMultipleAllocations == false",
        driver=DRIVER,
        allow_multiple_allocations=False,
        expect_match=True,
        expect_cost=3,
    ),
    # upstream runs these two in the NewExpressions environment; with the gate on it is the
    # same device type.
    "allow_multiple_allocations_new": Case(
        "device.allowMultipleAllocations == false",
        driver=DRIVER,
        allow_multiple_allocations=False,
        expect_match=True,
        expect_cost=3,
    ),
    "allow_multiple_allocations_enabled": Case(
        "device.allowMultipleAllocations == false",
        driver=DRIVER,
        allow_multiple_allocations=False,
        expect_match=True,
        expect_cost=3,
    ),
}

# Upstream cases for a gate in its non-default state in v1.36.
_LIST_TYPE_CASES = [
    "macro-exists-on-int",
    "macro-exists-on-bool",
    "macro-exists-on-string",
    "list-of-bool",
    "list-of-int",
    "list-of-string",
    "list-of-semver",
    "macro-on-list-of-int",
    "macro-on-list-of-string",
    "macro-on-list-of-semver",
    "includes-function-on-bool-scalar-positive",
    "includes-function-on-bool-scalar-negative",
    "includes-function-on-bool-list-positive",
    "includes-function-on-bool-list-negative",
    "includes-function-on-int-scalar-positive",
    "includes-function-on-int-scalar-negative",
    "includes-function-on-int-list-positive",
    "includes-function-on-int-list-negative",
    "includes-function-on-string-scalar-positive",
    "includes-function-on-string-scalar-negative",
    "includes-function-on-string-list-positive",
    "includes-function-on-string-list-negative",
    "includes-function-on-semver-scalar-positive",
    "includes-function-on-semver-scalar-negative",
    "includes-function-on-semver-list-positive",
    "includes-function-on-semver-list-negative",
    "includes-function-on-very-long-list-positive",
    "includes-function-on-very-long-list-runtime-error",
    "in-operator-on-list",
    "macro-exists-on-version",
]
NOT_APPLICABLE: dict[str, str] = {
    **{name: "DRAListTypeAttributes (alpha, off in v1.36)" for name in _LIST_TYPE_CASES},
    "allow_multiple_allocations_disabled": "DRAConsumableCapacity off (on in v1.36)",
}


def _device(case: Case) -> CELDevice:
    return CELDevice(
        driver=case.driver,
        attributes=case.attributes,
        capacity=case.capacity,
        allow_multiple_allocations=case.allow_multiple_allocations,
    )


@pytest.mark.parametrize("name", sorted(UPSTREAM_CASES))
def test_upstream_case(name: str) -> None:
    case = UPSTREAM_CASES[name]
    result = compile_expression(case.expression)
    if case.expect_compile_error:
        assert result.error is not None, "expected a compile error"
        assert case.expect_compile_error in str(result.error)
        return
    assert result.error is None, f"unexpected compile error: {result.error}"
    if case.expect_match_error:
        with pytest.raises(CELError) as raised:
            result.device_matches(_device(case))
        assert case.expect_match_error in str(raised.value)
        return
    assert result.device_matches(_device(case)) is case.expect_match


@pytest.mark.parametrize(
    "name", sorted(n for n, c in UPSTREAM_CASES.items() if not c.expect_compile_error)
)
def test_upstream_cost_estimate(name: str) -> None:
    # cel-go's worst-case estimate with the DRA environment's sizes (compile.go's
    # sizeEstimator); the scheduler's cache does not need it, the cost limit does (cel/cost.py).
    case = UPSTREAM_CASES[name]
    result = compile_expression(case.expression)
    assert result.max_cost == case.expect_cost


def test_the_upstream_table_is_complete() -> None:
    # 69 cases in compile_test.go at v0.36.3: each is ported or named as not applicable.
    assert not set(UPSTREAM_CASES) & set(NOT_APPLICABLE)
    assert len(UPSTREAM_CASES) + len(NOT_APPLICABLE) == 69


# --- the cache (cache_test.go) -------------------------------------------------------------


def test_cache_semantic() -> None:
    cache = CELCache(2)
    result_true = cache.get_or_compile("true")
    assert result_true.error is None
    assert cache.get_or_compile("true") is result_true, "successful compilations are cached"

    failed = cache.get_or_compile("no-such-variable")
    assert failed.error is not None
    assert cache.get_or_compile("no-such-variable") is not failed, "failures are not cached"

    result_false = cache.get_or_compile("false")
    assert result_false.error is None
    assert cache.get_or_compile("false") is result_false
    assert cache.get_or_compile("true") is result_true, "the cache holds two entries"

    other = cache.get_or_compile("false && true")
    assert other.error is None
    assert cache.get_or_compile("false && true") is other
    assert cache.get_or_compile("false") is not result_false, "the least recently used goes"


def test_cache_concurrency() -> None:
    cache = CELCache(2)
    errors: list[object] = []

    def work(i: int) -> None:
        result = cache.get_or_compile(f"{i} == {i}")
        if result.error is not None:
            errors.append(result.error)
        elif not result.device_matches(CELDevice(driver="", attributes={}, capacity={})):
            errors.append(f"{i} == {i} is false")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(cache) == 2


def test_default_cache_size_is_the_schedulers() -> None:
    # dynamicresources.go: cel.NewCache(10, ...)
    assert cel.DEFAULT_CACHE_SIZE == 10
    cache = CELCache()
    for i in range(12):
        cache.get_or_compile(f"{i} == {i}")
    assert len(cache) == 10
