"""Consumable capacity and quantities of the structured allocator.

The capacity cases are upstream's ``structured/internal/incubating/consumable_capacity_test.go``
(v0.36.3), case by case; the canonical strings are apimachinery's ``Quantity.String()``.
"""

from __future__ import annotations

import pytest

from extender.dra.structured import (
    AllocatedState,
    Features,
    Quantity,
    QuantityError,
    insert_consumed,
    is_device_allocated,
    node_matches,
    remove_consumed,
)
from extender.dra.structured.capacity import (
    BINARY_SI,
    _violates_policy,
    calculate_consumed_capacity,
    consumed_capacity_from_request,
)

ONE, TWO, THREE = Quantity.parse("1"), Quantity.parse("2"), Quantity.parse("3")
DEVICE = ("driver-a", "pool-1", "device-1")


def test_insert_remove_consumed_capacity_collection() -> None:
    collection: dict = {}
    insert_consumed(collection, DEVICE, {"capacity-0": ONE})
    insert_consumed(collection, DEVICE, {"capacity-0": ONE})
    assert collection[DEVICE]["capacity-0"].cmp(TWO) == 0
    remove_consumed(collection, DEVICE, {"capacity-0": ONE})
    assert collection[DEVICE]["capacity-0"].cmp(ONE) == 0
    remove_consumed(collection, DEVICE, {"capacity-0": ONE})
    assert DEVICE not in collection  # all zero: the entry goes


def test_consumed_capacity_from_request() -> None:
    requested = {"requests": {"capacity-0": "1", "dummy": "1"}}
    capacity = {
        # with request and with default: the requested value
        "capacity-0": {"value": "2", "requestPolicy": {"default": "2", "validRange": {"min": "1"}}},
        # no request but a default: the default
        "capacity-1": {"value": "2", "requestPolicy": {"default": "1", "validRange": {"min": "1"}}},
        # no request, no policy: the capacity's value
        "dummy": {"value": "1"},
    }
    consumed = consumed_capacity_from_request(requested, capacity)
    assert sorted(consumed) == ["capacity-0", "capacity-1", "dummy"]
    assert all(q.cmp(ONE) == 0 for q in consumed.values())


@pytest.mark.parametrize(
    ("requested", "policy", "violates"),
    [
        ("1", None, False),  # no constraint
        ("1", {"default": "1", "validRange": {"min": "1", "max": "2"}}, False),  # below max
        ("2", {"default": "1", "validRange": {"min": "1", "max": "1"}}, True),  # above max
        ("1", {"default": "1", "validValues": ["1"]}, False),  # in set
        ("2", {"default": "1", "validValues": ["1"]}, True),  # not in set
    ],
    ids=["no-constraint", "less-than-maximum", "more-than-maximum", "in-set", "not-in-set"],
)
def test_violates_policy(requested: str, policy: dict | None, violates: bool) -> None:
    assert _violates_policy(Quantity.parse(requested), policy) is violates


@pytest.mark.parametrize(
    ("requested", "value", "policy", "expected"),
    [
        (None, "1", {}, "1"),
        (None, "2", {"default": "1", "validRange": {"min": "1"}}, "1"),
        (None, "2", {"default": "1", "validValues": ["1"]}, "1"),
        ("2", "2", {"default": "1", "validRange": {"min": "1"}}, "2"),
        ("1", "2", {"default": "1", "validRange": {"min": "2"}}, "2"),
        ("2", "3", {"default": "1", "validRange": {"min": "1", "step": "2"}}, "3"),
        ("2", "2", {"default": "1", "validRange": {"min": "1", "step": "1"}}, "2"),
        ("2", "3", {"default": "1", "validValues": ["1", "2", "3"]}, "2"),
        ("2", "3", {"default": "1", "validValues": ["1", "3"]}, "3"),
        ("3", "3", {"default": "1", "validValues": ["1", "2"]}, "3"),
    ],
    ids=[
        "empty",
        "min-in-range",
        "default-in-set",
        "more-than-min-in-range",
        "less-than-min-in-range",
        "with-step-round-up",
        "with-step-no-remaining",
        "valid-value-in-set",
        "set-round-up",
        "larger-than-set",
    ],
)
def test_calculate_consumed_capacity(
    requested: str | None, value: str, policy: dict, expected: str
) -> None:
    amount = None if requested is None else Quantity.parse(requested)
    capacity = {"value": value, "requestPolicy": policy}
    assert calculate_consumed_capacity(amount, capacity).cmp(Quantity.parse(expected)) == 0


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0", "0"),
        ("1", "1"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("1Gi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("2048Ki", "2Mi"),
        ("1000Ki", "1000Ki"),
        ("1e3", "1e3"),
        ("12e2", "1200"),
        ("1n", "1n"),
        ("0.0000000001", "1n"),  # rounded up to nano
        ("10G", "10G"),
    ],
)
def test_quantity_canonical(text: str, canonical: str) -> None:
    assert str(Quantity.parse(text)) == canonical


def test_quantity_binary_small_values_print_decimal() -> None:
    # resource.NewQuantity(v, BinarySI) for |v| < 1024 prints as DecimalSI.
    assert str(Quantity.from_int(1000, BINARY_SI)) == "1k"
    assert str(Quantity.from_int(1024, BINARY_SI)) == "1Ki"
    assert str(Quantity.from_int(3 * 1024**3, BINARY_SI)) == "3Gi"


@pytest.mark.parametrize("text", ["", "abc", "1x", "--1", "1e99999999", True, None, [1]])
def test_quantity_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


def test_is_device_allocated() -> None:
    assert not is_device_allocated(DEVICE, AllocatedState())
    assert is_device_allocated(DEVICE, AllocatedState(allocated_devices={DEVICE}))
    shared = AllocatedState(allocated_shared_device_ids={(*DEVICE, "uid")})
    assert is_device_allocated(DEVICE, shared)
    consumed = AllocatedState(aggregated_capacity={DEVICE: {"memory": ONE}})
    assert is_device_allocated(DEVICE, consumed)


NODE = {"metadata": {"name": "node-1", "labels": {"region": "region-1"}}}


@pytest.mark.parametrize(
    ("node", "name", "all_nodes", "selector", "matches"),
    [
        (NODE, "node-1", False, None, True),
        (NODE, "node-2", False, None, False),
        (None, "node-1", False, None, False),
        (NODE, "", True, None, True),
        (None, "", True, None, True),
        (NODE, "", False, None, False),
        (
            NODE,
            "",
            False,
            {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "region", "operator": "In", "values": ["region-1"]}
                        ]
                    }
                ]
            },
            True,
        ),
        (
            NODE,
            "",
            False,
            {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "region", "operator": "In", "values": ["region-2"]}
                        ]
                    }
                ]
            },
            False,
        ),
        (
            NODE,
            "",
            False,
            {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ]
                    }
                ]
            },
            True,
        ),
        (None, "", False, {"nodeSelectorTerms": []}, False),
        # The node name wins over the other fields.
        (NODE, "node-2", True, None, False),
    ],
)
def test_node_matches(
    node: dict | None, name: str, all_nodes: bool, selector: dict | None, matches: bool
) -> None:
    assert node_matches(Features(), node, name, all_nodes, selector) is matches
