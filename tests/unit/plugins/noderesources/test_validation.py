"""The noderesources args (extender/plugins/noderesources/validation.py): defaults and the exact
upstream error texts, through each plugin's constructor as the config loader calls it."""

from __future__ import annotations

import pytest

from extender import testing
from extender.config.defaults import default_args
from extender.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from extender.plugins.noderesources.fit import NodeResourcesFit

from .test_fit import fit, strategy

GPU = "example.com/gpu"


def balanced(args: dict | None = None) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(args or {}, testing.handle())


# -- NodeResourcesFitArgs --------------------------------------------------------------------------


def test_fit_defaults() -> None:
    plugin = fit()
    assert plugin.strategy == "LeastAllocated"
    assert plugin.resources == ["cpu", "memory"]
    assert plugin.weights == [1, 1]
    assert plugin.ignored_resources == frozenset()
    configured = NodeResourcesFit(default_args("NodeResourcesFit"), testing.handle())
    assert (configured.strategy, configured.resources, configured.weights) == (
        "LeastAllocated",
        ["cpu", "memory"],
        [1, 1],
    )
    zero = fit(strategy("MostAllocated", [{"name": "cpu", "weight": 0}]))
    assert zero.weights == [1]
    assert fit(strategy("MostAllocated", [])).resources == ["cpu", "memory"]


SUPPORTED = '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"scoringStrategy": {"type": "X"}},
            f'scoringStrategy.type: Unsupported value: "X": supported values: {SUPPORTED}',
        ),
        # upstream defaults the type only when the whole strategy is absent
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}},
            f'scoringStrategy.type: Unsupported value: "": supported values: {SUPPORTED}',
        ),
        (
            strategy("LeastAllocated", [{"name": "cpu", "weight": 101}]),
            "scoringStrategy.resources[0].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]",
        ),
        (
            strategy("MostAllocated", [{"name": "cpu"}, {"name": "memory", "weight": -1}]),
            "scoringStrategy.resources[1].weight: Invalid value: -1: "
            "resource weight of memory not in valid range (0, 100]",
        ),
        (
            strategy("RequestedToCapacityRatio"),
            "scoringStrategy.shape: Required value: at least one point must be specified",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(50, 1), (10, 2)]),
            "scoringStrategy.shape[1].utilization: Invalid value: 10: "
            "values must be sorted in increasing order",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(10, 1), (10, 2)]),
            "scoringStrategy.shape[1].utilization: Invalid value: 10: "
            "values must be sorted in increasing order",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(0, 0), (101, 10)]),
            "scoringStrategy.shape[1].utilization: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(50, 11)]),
            "scoringStrategy.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
        ),
        # a shape is validated whatever the type
        (
            strategy("LeastAllocated", shape=[(0, -1)]),
            "scoringStrategy.shape[0].score: Invalid value: -1: not in valid range [0, 10]",
        ),
        (
            {"ignoredResourceGroups": ["a/b"]},
            'ignoredResourceGroups[0]: Invalid value: "a/b": '
            "resource group name can't contain '/'",
        ),
        (
            {"ignoredResources": ["bad name!"]},
            'ignoredResources[0]: Invalid value: "bad name!": must be a qualified name',
        ),
        (
            {"scoringStrategy": {"type": "Y", "resources": [{"name": "cpu", "weight": 200}]}},
            f'[scoringStrategy.type: Unsupported value: "Y": supported values: {SUPPORTED}, '
            "scoringStrategy.resources[0].weight: Invalid value: 200: "
            "resource weight of cpu not in valid range (0, 100]]",
        ),
    ],
)
def test_bad_fit_args(args: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        fit(args)
    assert str(err.value) == message


# -- NodeResourcesBalancedAllocationArgs -----------------------------------------------------------


def test_balanced_allocation_defaults() -> None:
    assert balanced().resources == ["cpu", "memory"]
    assert balanced({"resources": []}).resources == ["cpu", "memory"]
    weight_zero = {"resources": [{"name": "cpu", "weight": 0}, {"name": GPU}]}
    assert balanced(weight_zero).resources == ["cpu", GPU]
    defaulted = default_args("NodeResourcesBalancedAllocation")
    assert NodeResourcesBalancedAllocation(defaulted, testing.handle()).resources == [
        "cpu",
        "memory",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"resources": [{"name": "cpu", "weight": 2}]},
            "resources[0].weight: Invalid value: 2: must be 1",
        ),
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            'resources[1].name: Duplicate value: "cpu"',
        ),
        (
            {"resources": [{"name": "cpu", "weight": 500}, {"name": "cpu", "weight": 1}]},
            "[resources[0].weight: Invalid value: 500: must be 1, "
            'resources[1].name: Duplicate value: "cpu"]',
        ),
        ({"resources": [{"weight": 1}]}, "resources[0].name: Required value"),
    ],
)
def test_bad_balanced_allocation_args(args: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        balanced(args)
    assert str(err.value).startswith(message)
