"""``score_batch`` answers all zeros without calling Score per node exactly when Score would
answer 0 everywhere: no claim with a first-available request (or the gate off). A claim with
``firstAvailable`` goes per node (``None``), where the ranking is."""

from __future__ import annotations

import numpy as np

from extender.plugins.dynamicresources.allocation import Features

from .fixtures import (
    NODE_NAME,
    FakeHandle,
    allocated,
    claim,
    device_class,
    node,
    node_info,
    node_slice,
    plugin,
    pod_with_claim_name,
)
from .test_allocation import prioritized_claim, run_filter


def _per_node(pl, state, pod, nodes) -> list[int]:
    return [pl.score(state, pod, node_info(n))[0] for n in nodes]


def test_exact_claims_score_zero_in_one_batch() -> None:
    nodes = [node(), node("worker-2"), node("worker-3")]
    handle = FakeHandle(
        [claim()],
        [device_class()],
        [node_slice(devices=2), node_slice("worker-2", devices=1)],
    )
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, statuses = run_filter(pl, pod, nodes)
    assert statuses[NODE_NAME] is None
    batch = pl.score_batch(state, pod, None, np.arange(len(nodes)))
    assert batch is not None
    assert batch.tolist() == _per_node(pl, state, pod, nodes) == [0, 0, 0]


def test_an_allocated_claim_scores_zero_in_one_batch() -> None:
    handle = FakeHandle([allocated(claim())], [device_class()], [node_slice(devices=1)])
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    batch = pl.score_batch(state, pod, None, np.arange(1))
    assert batch is not None and batch.tolist() == _per_node(pl, state, pod, [node()])


def test_first_available_claims_are_scored_per_node() -> None:
    nodes = [node(), node("worker-2")]
    handle = FakeHandle(
        [prioritized_claim()],
        [device_class()],
        [node_slice(devices=2), node_slice("worker-2", devices=1)],
    )
    pl = plugin(handle)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, nodes)
    assert pl.score_batch(state, pod, None, np.arange(2)) is None
    assert _per_node(pl, state, pod, nodes) == [8, 7]


def test_gate_off_scores_zero_in_one_batch() -> None:
    handle = FakeHandle([claim()], [device_class()], [node_slice(devices=2)])
    pl = plugin(handle)
    pl.features = Features(prioritized_list=False)
    pod = pod_with_claim_name()
    state, _ = run_filter(pl, pod, [node()])
    batch = pl.score_batch(state, pod, None, np.arange(1))
    assert batch is not None and batch.tolist() == _per_node(pl, state, pod, [node()]) == [0]
