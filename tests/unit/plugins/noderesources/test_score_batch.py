"""Batch Score forms of NodeResourcesFit (three strategies) and NodeResourcesBalancedAllocation
equal the per-node ``score`` row by row, on randomized clusters (zero allocatable, zero and
defaulted requests, scalar resources, init containers, sidecars, pod-level requests) and on
random vectors straight into the scorers (negative amounts too, for the floor/truncation
corners), plus the declines (a non-exact table, an amount outside int64 room)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.resources import Resource as Amounts
from extender.framework.snapshot import Snapshot
from extender.framework.status import Code
from extender.plugins.noderesources.balanced_allocation import (
    PRE_SCORE_KEY as BA_KEY,
)
from extender.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balance_score,
    balance_scores,
    balance_std,
    balance_stds,
    balanced_resource_scorer,
)
from extender.plugins.noderesources.fit import PRE_SCORE_KEY as FIT_KEY
from extender.plugins.noderesources.fit import NodeResourcesFit
from extender.plugins.noderesources.least_allocated import (
    least_resource_batch_scorer,
    least_resource_scorer,
)
from extender.plugins.noderesources.most_allocated import (
    most_resource_batch_scorer,
    most_resource_scorer,
)
from extender.plugins.noderesources.requested_to_capacity_ratio import (
    requested_to_capacity_ratio_batch_scorer,
    requested_to_capacity_ratio_scorer,
)
from extender.plugins.noderesources.resource_allocation import go_div, go_div_array

GPU = "nvidia.com/gpu"
HUGE = "hugepages-2Mi"
FOO = "example.com/foo"
SCALARS = (GPU, HUGE, FOO)


def _quantity(rng: random.Random, kind: str) -> str:
    pick = rng.random()
    if pick < 0.12:
        return "0"
    if kind == "cpu":
        return f"{rng.choice([1, 7, 100, 250, 999, 1000, 3333, 16000])}m"
    if kind == "memory":
        return str(rng.choice([1, 3, 1023, 64 << 20, 200 << 20, 1 << 30, 7 << 30, 64 << 30]))
    if kind == "eph":
        return str(rng.choice([1, 5 << 30, 100 << 30]))
    if kind == HUGE:
        return str(rng.choice([2 << 20, 4 << 20, 1 << 30]))
    return str(rng.randint(1, 8))


def _container(rng: random.Random, name: str) -> dict:
    requests: dict[str, str] = {}
    for kind, key in (("cpu", "cpu"), ("memory", "memory"), ("eph", "ephemeral-storage")):
        if rng.random() < 0.6:
            requests[key] = _quantity(rng, kind)
    for scalar in SCALARS:
        if rng.random() < 0.25:
            requests[scalar] = _quantity(rng, scalar)
    container: dict[str, Any] = {"name": name, "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests}
    return container


def _pod(rng: random.Random, name: str, node: str | None = None) -> dict:
    spec: dict[str, Any] = {
        "containers": [_container(rng, f"c{i}") for i in range(rng.randint(1, 3))]
    }
    if rng.random() < 0.4:
        inits = [_container(rng, f"i{i}") for i in range(rng.randint(1, 2))]
        if rng.random() < 0.3:
            inits[0]["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = inits
    if rng.random() < 0.1:
        spec["resources"] = {"requests": {"cpu": _quantity(rng, "cpu")}}
    if rng.random() < 0.1:
        spec["containers"] = [{"name": "empty", "image": "busybox"}]  # best effort
    if node is not None:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _cluster(rng: random.Random, n: int) -> Snapshot:
    nodes = []
    for i in range(n):
        allocatable = {
            "cpu": _quantity(rng, "cpu"),
            "memory": _quantity(rng, "memory"),
            "pods": "110",
        }
        if rng.random() < 0.7:
            allocatable["ephemeral-storage"] = _quantity(rng, "eph")
        for scalar in SCALARS:
            if rng.random() < 0.4:
                allocatable[scalar] = _quantity(rng, scalar)
        nodes.append(
            {
                "metadata": {"name": f"n{i}", "labels": {}},
                "spec": {},
                "status": {"allocatable": allocatable, "capacity": allocatable},
            }
        )
    pods = [_pod(rng, f"p{j}", f"n{rng.randrange(n)}") for j in range(n * 2)]
    return Snapshot.from_objects(nodes, pods)


RESOURCE_SETS: list[list[dict] | None] = [
    None,  # defaults: cpu, memory
    [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
    [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 2},
        {"name": GPU, "weight": 5},
        {"name": HUGE, "weight": 100},
        {"name": "ephemeral-storage", "weight": 7},
    ],
    [{"name": GPU, "weight": 2}, {"name": FOO, "weight": 1}],
    [{"name": "memory", "weight": 1}],
    [{"name": "pods", "weight": 1}, {"name": "cpu", "weight": 1}],  # pods: never offered
]
SHAPES = [
    [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
    [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    [
        {"utilization": 10, "score": 3},
        {"utilization": 33, "score": 9},
        {"utilization": 70, "score": 1},
        {"utilization": 90, "score": 7},
    ],
    [{"utilization": 50, "score": 5}],
]


def _fit_args(rng: random.Random) -> dict:
    kind = rng.choice(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
    body: dict[str, Any] = {"type": kind}
    resources = rng.choice(RESOURCE_SETS)
    if resources is not None:
        body["resources"] = resources
    if kind == "RequestedToCapacityRatio":
        body["requestedToCapacityRatio"] = {"shape": rng.choice(SHAPES)}
    return {"scoringStrategy": body}


def _compare(plugin: Any, snapshot: Snapshot, pod: dict, rows: np.ndarray) -> int:
    """score_batch against score over ``rows``; returns the rows compared (0: skipped)."""
    state = CycleState()
    state.snapshot = snapshot
    infos = snapshot.node_info_list
    status = plugin.pre_score(state, pod, infos)
    if status is not None and status.code == Code.SKIP:
        return 0
    batch = plugin.score_batch(state, pod, snapshot.table, rows)
    assert batch is not None
    assert batch.dtype == np.int64
    expected = []
    for i in rows.tolist():
        value, status = plugin.score(state, pod, infos[i])
        assert status is None
        expected.append(value)
    assert batch.tolist() == expected
    return len(expected)


@pytest.mark.parametrize("seed", range(30))
def test_fit_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = _cluster(rng, rng.randint(1, 40))
    compared = 0
    for k in range(6):
        plugin = NodeResourcesFit(_fit_args(rng), testing.handle())
        pod = _pod(rng, f"pending-{k}")
        n = len(snapshot)
        rows = np.arange(n) if k % 2 == 0 else np.array(rng.sample(range(n), rng.randint(1, n)))
        compared += _compare(plugin, snapshot, pod, rows)
    assert compared > 0


@pytest.mark.parametrize("seed", range(30))
def test_balanced_allocation_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(1000 + seed)
    snapshot = _cluster(rng, rng.randint(1, 40))
    for k in range(6):
        resources = rng.choice(
            [
                None,
                [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}],
                [
                    {"name": "cpu"},
                    {"name": "memory"},
                    {"name": "ephemeral-storage"},
                    {"name": HUGE},
                ],
                [{"name": "memory"}],
                [{"name": GPU}, {"name": FOO}],
            ]
        )
        plugin = NodeResourcesBalancedAllocation(
            {"resources": resources} if resources else {}, None
        )
        pod = _pod(rng, f"pending-{k}")
        _compare(plugin, snapshot, pod, np.arange(len(snapshot)))


def test_score_batch_without_pre_score_state() -> None:
    """Without the PreScore state both forms compute the requests themselves (a best-effort pod
    scores 0 in BalancedAllocation)."""
    rng = random.Random(7)
    snapshot = _cluster(rng, 20)
    rows = np.arange(len(snapshot))
    for plugin in (
        NodeResourcesFit({}, testing.handle()),
        NodeResourcesBalancedAllocation({}, testing.handle()),
    ):
        for k in range(10):
            pod = _pod(rng, f"x{k}")
            state = CycleState()
            state.snapshot = snapshot
            batch = plugin.score_batch(state, pod, snapshot.table, rows)
            assert batch is not None
            expected = [plugin.score(state, pod, info)[0] for info in snapshot.node_info_list]
            assert batch.tolist() == expected
    assert state.get(FIT_KEY) is None and state.get(BA_KEY) is None


# -- scorers on random vectors ------------------------------------------------------------------


def _vectors(
    rng: random.Random, rows: int, width: int, signed: bool
) -> tuple[list[list[int]], list[list[int]]]:
    low = -(1 << 40) if signed else 0
    requested, allocatable = [], []
    for _ in range(rows):
        req, alloc = [], []
        for _ in range(width):
            kind = rng.random()
            if kind < 0.15:
                a = 0
            elif kind < 0.3:
                a = rng.randint(1, 5)
            elif kind < 0.35 and signed:
                a = -rng.randint(1, 1000)
            else:
                a = rng.randint(1, 1 << 40)
            r = rng.choice([0, a, a + 1, a - 1, rng.randint(low, 1 << 41), rng.randint(0, 10)])
            req.append(r)
            alloc.append(a)
        requested.append(req)
        allocatable.append(alloc)
    return requested, allocatable


def _columns(matrix: list[list[int]], width: int) -> list[np.ndarray]:
    return [np.array([row[j] for row in matrix], dtype=np.int64) for j in range(width)]


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("width", [1, 2, 3, 5])
def test_scorers_on_random_vectors(width: int, signed: bool) -> None:
    rng = random.Random(width * 10 + signed)
    weights = [rng.randint(1, 100) for _ in range(width)]
    requested, allocatable = _vectors(rng, 3000, width, signed)
    req_cols, alloc_cols = _columns(requested, width), _columns(allocatable, width)
    rtc_shape = [(u, rng.randint(0, 10)) for u in sorted(rng.sample(range(101), 4))]
    pairs = [
        (least_resource_scorer(weights), least_resource_batch_scorer(weights)),
        (most_resource_scorer(weights), most_resource_batch_scorer(weights)),
        (
            requested_to_capacity_ratio_scorer(weights, rtc_shape),
            requested_to_capacity_ratio_batch_scorer(weights, rtc_shape),
        ),
    ]
    for scalar, batch in pairs:
        answer = batch(req_cols, alloc_cols)
        assert answer is not None
        expected = [scalar(r, a) for r, a in zip(requested, allocatable, strict=True)]
        assert answer.tolist() == expected


@pytest.mark.parametrize("width", [0, 1, 2, 3, 4, 6])
def test_balance_scores_bit_identical(width: int) -> None:
    """Float64 path: many random rows, with fractions above 1, zero allocatable, tiny and huge
    amounts (the sums and the standard deviation accumulate in the per-node order)."""
    rng = random.Random(99 + width)
    requested, allocatable = _vectors(rng, 20000, width, signed=False)
    if width == 0:
        req_cols = [np.zeros(20000, dtype=np.int64)]
        alloc_cols = [np.zeros(20000, dtype=np.int64)]
        assert balance_scores(req_cols, alloc_cols).tolist() == [100] * 20000
        return
    req_cols, alloc_cols = _columns(requested, width), _columns(allocatable, width)
    # The standard deviation itself, bit for bit (an ulp off would rarely move the score).
    stds = balance_stds(req_cols, alloc_cols)
    expected_bits = np.array(
        [balance_std(r, a) for r, a in zip(requested, allocatable, strict=True)], dtype=np.float64
    ).view(np.uint64)
    assert stds.view(np.uint64).tolist() == expected_bits.tolist()
    answer = balance_scores(req_cols, alloc_cols)
    expected = [balance_score(r, a) for r, a in zip(requested, allocatable, strict=True)]
    assert answer.tolist() == expected
    # And the change-of-balance score around it, with the node's own share smaller.
    own = [
        [max(0, r - rng.randint(0, 3)) if a else 0 for r, a in zip(rr, aa, strict=True)]
        for rr, aa in zip(requested, allocatable, strict=True)
    ]
    own_cols = _columns(own, width)
    with_pod, without_pod = (
        balance_scores(req_cols, alloc_cols),
        balance_scores(own_cols, alloc_cols),
    )
    batch = 50 + go_div_array(50 + with_pod - without_pod, 2)
    expected = [
        balanced_resource_scorer(r, o, a)
        for r, o, a in zip(requested, own, allocatable, strict=True)
    ]
    assert batch.tolist() == expected


def test_go_div_array_truncates_toward_zero() -> None:
    a = np.array([7, -7, 7, -7, 0, -1, 1, -100, 99], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 2, -2, 7, 100], dtype=np.int64)
    assert go_div_array(a, b).tolist() == [
        go_div(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]


# -- declines -----------------------------------------------------------------------------------


def test_declines_when_not_int64_safe() -> None:
    rng = random.Random(3)
    snapshot = _cluster(rng, 10)
    rows = np.arange(len(snapshot))
    pod = _pod(rng, "big")
    pod["spec"]["containers"] = [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": str(1 << 60)}}}
    ]
    for plugin in (
        NodeResourcesFit({}, testing.handle()),
        NodeResourcesBalancedAllocation({}, testing.handle()),
    ):
        state = CycleState()
        state.snapshot = snapshot
        plugin.pre_score(state, pod, snapshot.node_info_list)
        assert plugin.score_batch(state, pod, snapshot.table, rows) is None
    # A node with an absurd allocatable makes the whole table inexact.
    infos = list(snapshot.node_info_list)
    huge = infos[0].clone()
    huge.allocatable = Amounts(milli_cpu=1 << 62, memory=1)
    inexact = Snapshot([huge, *infos[1:]])
    assert not inexact.table.exact
    for plugin in (
        NodeResourcesFit({}, testing.handle()),
        NodeResourcesBalancedAllocation({}, testing.handle()),
    ):
        state = CycleState()
        state.snapshot = inexact
        small = _pod(rng, "small")
        plugin.pre_score(state, small, inexact.node_info_list)
        assert plugin.score_batch(state, small, inexact.table, rows) is None


def test_weighted_scorer_declines_on_int64_room() -> None:
    """Scores from negative amounts can be huge; the product by the weights would leave int64
    where Python ints would not: the batch scorer declines rather than wrap."""
    req = [np.array([-(1 << 52)], dtype=np.int64)]
    alloc = [np.array([1], dtype=np.int64)]
    assert least_resource_scorer([100])([-(1 << 52)], [1]) == ((1 << 52) + 1) * 100
    assert least_resource_batch_scorer([100])(req, alloc) is None


@pytest.mark.parametrize("width", [1, 2, 3, 5])
def test_balance_stds_bit_identical_when_every_row_offers_every_resource(width: int) -> None:
    """The unmasked path (no allocatable is 0, as for CPU and memory on real nodes) answers
    what the per-node function answers, bit for bit, and what the masked path answers."""
    rng = random.Random(7 + width)
    requested, allocatable = _vectors(rng, 20000, width, signed=False)
    allocatable = [[a or rng.randint(1, 10**12) for a in row] for row in allocatable]
    req_cols, alloc_cols = _columns(requested, width), _columns(allocatable, width)
    stds = balance_stds(req_cols, alloc_cols)
    expected = [balance_std(r, a) for r, a in zip(requested, allocatable, strict=True)]
    assert stds.view(np.uint64).tolist() == np.array(expected).view(np.uint64).tolist()
    # One row that does not offer a resource takes the masked path for all: same answers.
    masked = [column.copy() for column in alloc_cols]
    masked[0] = np.append(masked[0][:-1], 0)
    assert balance_stds(req_cols, masked)[:-1].view(np.uint64).tolist() == (
        stds[:-1].view(np.uint64).tolist()
    )
