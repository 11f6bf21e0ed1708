"""Kubernetes' ``lists`` CEL library and cel-go's ``ext.Lists`` / two-variable comprehensions.

The table is the "stdlib list functions" case of
``k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go`` (v0.36.3; the
library's own package has no test of it), its ``self.*`` lists written as literals; then the
documented examples of ``lists.go`` and of cel-go's ``ext/lists.go`` and ``ext/comprehensions.go``.
"""

from __future__ import annotations

import pytest

from extender.dra.cel import CELDevice, CELError, compile_expression

DEVICE = CELDevice(driver="x.example.com", attributes={}, capacity={})

SELF = {
    "self.ints": "[1, 2, 2, 3]",
    "self.unsortedInts": "[2, 1]",
    "self.emptyInts": "[0].filter(x, false)",
    "self.doubles": "[1.0, 2.0, 2.0, 3.0]",
    "self.unsortedDoubles": "[2.0, 1.0]",
    "self.emptyDoubles": "[0.0].filter(x, false)",
    "self.durations": "[duration('1s'), duration('1m'), duration('1m'), duration('1h')]",
    "self.unsortedDurations": "[duration('1m'), duration('1s')]",
    "self.emptyDurations": "[duration('1s')].filter(x, false)",
    "self.strings": "['a', 'b', 'b', 'c']",
    "self.unsortedStrings": "['b', 'a']",
    "self.emptyStrings": "[''].filter(x, false)",
    "self.dates": (
        "[timestamp('2000-01-01T00:00:00Z'), timestamp('2000-02-01T00:00:00Z'), "
        "timestamp('2000-02-01T00:00:00Z'), timestamp('2010-01-01T00:00:00Z')]"
    ),
    "self.unsortedDates": "[timestamp('2000-02-01T00:00:00Z'), timestamp('2000-01-01T00:00:00Z')]",
    "self.emptyDates": "[timestamp('2000-01-01T00:00:00Z')].filter(x, false)",
    "self.objs": "[{'f1': 'a', 'f2': 'a'}, {'f1': 'a', 'f2': 'b'}, {'f1': 'a', 'f2': 'b'}, "
    "{'f1': 'a', 'f2': 'c'}]",
}


def _literal(expression: str) -> str:
    # Longest names first: self.emptyInts before self.ints never matters, but unsortedX does.
    for name in sorted(SELF, key=len, reverse=True):
        expression = expression.replace(name, SELF[name])
    return expression


VALID = [
    "self.ints.sum() == 8",
    "self.ints.min() == 1",
    "self.ints.max() == 3",
    "self.emptyInts.sum() == 0",
    "self.ints.isSorted()",
    "self.emptyInts.isSorted()",
    "self.unsortedInts.isSorted() == false",
    "self.ints.indexOf(2) == 1",
    "self.ints.lastIndexOf(2) == 2",
    "self.ints.indexOf(10) == -1",
    "self.ints.lastIndexOf(10) == -1",
    "self.doubles.sum() == 8.0",
    "self.doubles.min() == 1.0",
    "self.doubles.max() == 3.0",
    "self.emptyDoubles.sum() == 0.0",
    "self.doubles.isSorted()",
    "self.emptyDoubles.isSorted()",
    "self.unsortedDoubles.isSorted() == false",
    "self.doubles.indexOf(2.0) == 1",
    "self.doubles.lastIndexOf(2.0) == 2",
    "self.doubles.indexOf(10.0) == -1",
    "self.doubles.lastIndexOf(10.0) == -1",
    "self.durations.sum() == duration('1h2m1s')",
    "self.durations.min() == duration('1s')",
    "self.durations.max() == duration('1h')",
    "self.durations.isSorted()",
    "self.emptyDurations.isSorted()",
    "self.unsortedDurations.isSorted() == false",
    "self.durations.indexOf(duration('1m')) == 1",
    "self.durations.lastIndexOf(duration('1m')) == 2",
    "self.durations.indexOf(duration('2m')) == -1",
    "self.durations.lastIndexOf(duration('2m')) == -1",
    "self.strings.min() == 'a'",
    "self.strings.max() == 'c'",
    "self.strings.isSorted()",
    "self.emptyStrings.isSorted()",
    "self.unsortedStrings.isSorted() == false",
    "self.strings.indexOf('b') == 1",
    "self.strings.lastIndexOf('b') == 2",
    "self.strings.indexOf('x') == -1",
    "self.strings.lastIndexOf('x') == -1",
    "self.dates.min() == timestamp('2000-01-01T00:00:00.000Z')",
    "self.dates.max() == timestamp('2010-01-01T00:00:00.000Z')",
    "self.dates.isSorted()",
    "self.emptyDates.isSorted()",
    "self.unsortedDates.isSorted() == false",
    "self.dates.indexOf(timestamp('2000-02-01T00:00:00.000Z')) == 1",
    "self.dates.lastIndexOf(timestamp('2000-02-01T00:00:00.000Z')) == 2",
    "self.dates.indexOf(timestamp('2005-02-01T00:00:00.000Z')) == -1",
    "self.dates.lastIndexOf(timestamp('2005-02-01T00:00:00.000Z')) == -1",
    "[[1], [2]].indexOf([1]) == 0",
    "[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2}) == 1",
    "self.objs.indexOf(self.objs[1]) == 1",
    "self.objs.lastIndexOf(self.objs[1]) == 2",
    "([0] + self.emptyInts).min() == 0",
    "dyn([]).sum() == 0",
    "dyn([1, 2]).sum() == 3",
    "dyn([1.0, 2.0]).sum() == 3.0",
    "[].sum() == 0",
]

ERRORS = {
    "self.emptyInts.min() == 1": "min called on empty list",
    "self.emptyInts.max() == 3": "max called on empty list",
    "self.emptyDoubles.min() == 1.0": "min called on empty list",
    "self.emptyDoubles.max() == 3.0": "max called on empty list",
    "self.emptyStrings.min() == 'a'": "min called on empty list",
    "self.emptyStrings.max() == 'c'": "max called on empty list",
    "['a', 'b'].sum() == 'c'": "found no matching overload for 'sum' applied to 'list(string).()",
    "[[1], [2]].min() == [1]": (
        "found no matching overload for 'min' applied to 'list(list(int)).()"
    ),
    "[{'a': 1}, {'b': 2}].max() == {'b': 2}": (
        "found no matching overload for 'max' applied to 'list(map(string, int)).()"
    ),
    # Int.Add's overflow check (cel-go common/types/int.go).
    "[9223372036854775807, 1].sum() > 0": "integer overflow",
    "[1].indexOf('a') == 0": (
        "found no matching overload for 'indexOf' applied to 'list(int).(string)'"
    ),
}

# cel-go ext/lists.go and ext/comprehensions.go, the documented examples.
EXTENSIONS = [
    "[1, 2, 2, 3, 3, 3].distinct() == [1, 2, 3]",
    "['b', 'b', 'c', 'a', 'c'].distinct() == ['b', 'c', 'a']",
    "lists.range(5) == [0, 1, 2, 3, 4]",
    "[5, 3, 1, 2].reverse() == [2, 1, 3, 5]",
    "[1, 2, 3, 4].slice(1, 3) == [2, 3]",
    "[1, 2, 3, 4].slice(2, 4) == [3, 4]",
    # (the documented mixed lists, through dyn: the base environment's literals are homogeneous)
    "[dyn(1), dyn([2, 3]), dyn([4])].flatten() == [1, 2, 3, 4]",
    "[[[1]], [[2], [3]]].flatten() == [[1], [2], [3]]",
    "[[[1]], [[2], [3]]].flatten(2) == [1, 2, 3]",
    "[3, 2, 1].sort() == [1, 2, 3]",
    "['b', 'c', 'a'].sort() == ['a', 'b', 'c']",
    "[{'score': 0}, {'score': -10}].sortBy(e, e.score) == [{'score': -10}, {'score': 0}]",
    "[1, 2, 3].all(i, v, i < v)",
    "[1, 2, 3].exists(i, v, i == 1 && v == 2)",
    "{'a': 1, 'b': 2}.all(k, v, k.startsWith('a') ? v == 1 : v == 2)",
    "{'a': 1, 'b': 2}.existsOne(k, v, v == 2)",
    "[1, 2, 3].transformList(i, v, i > 0, v * 2) == [4, 6]",
    "[1, 2, 3].transformList(i, v, v * i) == [0, 2, 6]",
]


@pytest.mark.parametrize("expression", VALID)
def test_lists_valid(expression: str) -> None:
    result = compile_expression(_literal(expression))
    assert result.error is None, result.error
    assert result.device_matches(DEVICE) is True


@pytest.mark.parametrize("expression", sorted(ERRORS))
def test_lists_errors(expression: str) -> None:
    result = compile_expression(_literal(expression))
    with pytest.raises(CELError) as raised:
        if result.error is not None:
            raise result.error
        result.device_matches(DEVICE)
    assert ERRORS[expression] in str(raised.value)


@pytest.mark.parametrize("expression", EXTENSIONS)
def test_ext_lists_and_two_variable_comprehensions(expression: str) -> None:
    result = compile_expression(expression)
    assert result.error is None, result.error
    assert result.device_matches(DEVICE) is True


@pytest.mark.parametrize(
    "expression, message",
    [
        ("[1, 'b'].sort() == []", "compilation failed"),  # heterogeneous literal
        ("[[1]].flatten(-1) == []", "level must be non-negative"),
        ("[1, 2].slice(2, 1) == []", "start index must be less than or equal to end index"),
    ],
)
def test_ext_lists_errors(expression: str, message: str) -> None:
    result = compile_expression(expression)
    with pytest.raises(CELError, match=message):
        if result.error is not None:
            raise result.error
        result.device_matches(DEVICE)


def test_device_values_in_list_functions() -> None:
    device = CELDevice(
        driver="x.example.com",
        attributes={"a": {"int": 3}, "b": {"int": 1}},
        capacity={"mem": {"value": "1Gi"}},
    )
    attrs = "device.attributes['x.example.com']"
    result = compile_expression(
        f"[{attrs}.a, {attrs}.b].sum() == 4 && [{attrs}.b, dyn(2)].isSorted()"
    )
    assert result.error is None, result.error
    assert result.device_matches(device) is True
    pairs = compile_expression(f"{attrs}.all(k, v, v > 0)")
    assert pairs.error is None, pairs.error
    assert pairs.device_matches(device) is True
