"""The shared scorer machinery (extender/plugins/noderesources/resource_allocation.py)."""

from __future__ import annotations

from extender.framework.node_info import NodeInfo
from extender.plugins.noderesources.resource_allocation import (
    go_div,
    go_round_ratio,
    resource_vectors,
    weighted_resource_scorer,
)
from tests.unit.builders import make_node

GPU = "example.com/gpu"


def test_go_integer_helpers() -> None:
    assert go_div(7, 2) == 3
    assert go_div(-7, 2) == -3  # toward zero, not floor
    assert go_round_ratio(65, 2) == 33  # 32.5 rounds half away from zero
    assert go_round_ratio(64, 3) == 21


def test_resource_vectors_leave_out_absent_and_unrequested_scalars() -> None:
    info = NodeInfo(make_node("n", cpu="4", extra_allocatable={GPU: "8"}))
    requested, allocatable = resource_vectors(info, ["cpu", GPU, "memory"], [1000, 0, 0], True)
    assert (requested[0], allocatable[0]) == (1000, 4000)
    # the gpu is offered but not requested: left out
    assert (requested[1], allocatable[1]) == (0, 0)


def test_weighted_scorer_skips_resources_the_node_lacks() -> None:
    scorer = weighted_resource_scorer([1, 3], lambda req, alloc: req * 100 // alloc)
    assert scorer([50, 0], [100, 0]) == 50
    assert scorer([50, 10], [100, 100]) == (50 + 30) // 4
    assert scorer([0, 0], [0, 0]) == 0
