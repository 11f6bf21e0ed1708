"""Hostile selectors and devices: compiling and evaluating never raises anything but CELError.

A selector and a ResourceSlice come from the API, a dump file or a webhook body: any text, any
JSON. Expressions are drawn from fragments of the DRA environment joined at random (so many
parse, type-check and evaluate) and from arbitrary text; devices from arbitrary JSON values.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.dra.cel import CELDevice, CELError, compile_expression

FRAGMENTS = [
    "device",
    "device.driver",
    "device.attributes",
    "device.capacity",
    'device.attributes["d.example.com"]',
    'device.capacity["d.example.com"]',
    ".a",
    ".m",
    '["a"]',
    ".size()",
    ".isGreaterThan(",
    ".compareTo(",
    'quantity("1Gi")',
    'semver("1.2.3")',
    ".lowerAscii()",
    '.split(",")',
    '.find("[0-9]+")',
    ".exists(x, x",
    ".all(k, ",
    "cel.bind(v, ",
    "has(",
    " in ",
    " == ",
    " < ",
    " && ",
    " || ",
    "!",
    "(",
    ")",
    ", ",
    "1",
    "1.5",
    '"a"',
    "true",
    "[1, 2]",
    '{"a": 1}',
    " + ",
    " ? ",
    " : ",
    "?",
    "[?",
    ".?a",
    "null",
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
ATTRIBUTE = st.one_of(
    st.fixed_dictionaries({"int": st.integers()}),
    st.fixed_dictionaries({"bool": st.booleans()}),
    st.fixed_dictionaries({"string": st.text(max_size=20)}),
    st.fixed_dictionaries({"version": st.sampled_from(["1.2.3", "v1", "1.0.0-rc.1+b", "x"])}),
    JSON,
)
NAMES = st.sampled_from(["a", "m", "d.example.com/a", "other.example.com/m", "", "/", "a/b/c"])
DEVICES = st.builds(
    CELDevice,
    driver=st.sampled_from(["d.example.com", "", "x"]) | JSON,
    attributes=st.dictionaries(NAMES, ATTRIBUTE, max_size=4) | JSON,
    capacity=st.dictionaries(
        NAMES,
        st.fixed_dictionaries({"value": st.sampled_from(["1Gi", "80", "1.5", "x", "1e3"])}) | JSON,
        max_size=3,
    )
    | JSON,
    allow_multiple_allocations=st.none() | st.booleans() | JSON,
)
EXPRESSIONS = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12).map("".join) | st.text(
    max_size=60
)


def _exercise(expression: str, device: Any) -> None:
    result = compile_expression(expression)
    if result.error is not None:
        assert isinstance(result.error, CELError)
        return
    try:
        assert result.device_matches(device) in (True, False)
    except CELError:
        pass


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(EXPRESSIONS, DEVICES)
def test_nothing_but_cel_errors(expression: str, device: Any) -> None:
    _exercise(expression, device)
