"""ImageLocality's batch Score form equals ``score`` row by row: images present, absent and
shared across nodes, untagged names, multi-container pods, init containers, image volumes, a
pod without containers; on snapshots and on overlays whose table (and image columns) was
derived from the parent's."""

from __future__ import annotations

import random

import numpy as np
import pytest

from extender import testing
from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState
from extender.framework.node_info import ImageStateSummary, NodeInfo
from extender.framework.snapshot import Snapshot
from extender.plugins.image_locality import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    ImageLocality,
    calculate_priorities,
    calculate_priority,
    normalized_image_name,
    scaled_image_score,
    scaled_image_scores,
)
from tests.unit.builders import make_node

MB = 1024 * 1024
IMAGES = [
    "app:v1",
    "app:v2",
    "nginx",
    "nginx:latest",
    "gcr.io/x/db:9",
    "registry:5000/tool",
    "big:1",
]


def _node(rng: random.Random, name: str) -> dict:
    images = []
    for image in rng.sample(IMAGES, rng.randint(0, len(IMAGES))):
        size = rng.choice(
            [0, 1, 5 * MB, 23 * MB, 300 * MB, 999 * MB, 3000 * MB, rng.randint(1, 1 << 33)]
        )
        images.append(([normalized_image_name(image)], size))
    return make_node(name, images=images)


def _pod(rng: random.Random, name: str) -> dict:
    spec: dict = {
        "containers": [
            {"name": f"c{i}", "image": rng.choice([*IMAGES, "absent:1"])}
            for i in range(rng.randint(0, 4))
        ]
    }
    if rng.random() < 0.4:
        spec["initContainers"] = [
            {"name": f"i{i}", "image": rng.choice(IMAGES)} for i in range(rng.randint(1, 2))
        ]
    if rng.random() < 0.3:
        spec["volumes"] = [{"name": "v", "image": {"reference": rng.choice(IMAGES)}}]
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def _compare(snapshot: Snapshot, pod: dict, rows: np.ndarray) -> list[int]:
    plugin = ImageLocality({}, testing.handle())
    state = CycleState()
    state.snapshot = snapshot
    batch = plugin.score_batch(state, pod, snapshot.table, rows)
    assert batch is not None
    infos = snapshot.node_info_list
    expected = []
    for i in rows.tolist():
        value, status = plugin.score(state, pod, infos[i])
        assert status is None
        expected.append(value)
    assert batch.tolist() == expected
    return expected


def _random_case(seed: int) -> list[int]:
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    snapshot = Snapshot.from_objects([_node(rng, f"n{i}") for i in range(n)])
    scores = []
    for k in range(8):
        rows = np.arange(n) if k % 2 == 0 else np.array(rng.sample(range(n), rng.randint(1, n)))
        scores += _compare(snapshot, _pod(rng, f"p{k}"), rows)
    return scores


@pytest.mark.parametrize("seed", range(25))
def test_score_batch_equals_score(seed: int) -> None:
    _random_case(seed)


def test_random_cases_score_across_the_range() -> None:
    """The random cases are not all zeros: the comparison sees real scores."""
    seen = {score for seed in range(6) for score in _random_case(seed)}
    assert 0 in seen and 100 in seen and len(seen) > 20


def test_overlay_derived_image_columns() -> None:
    """An overlay's table derives from the parent's; its image columns (the parent's, with the
    replaced rows re-read) equal a fresh table's, and the scores equal the per-node ones."""
    rng = random.Random(11)
    nodes = [_node(rng, f"n{i}") for i in range(20)]
    snapshot = Snapshot.from_objects(nodes)
    table = snapshot.table
    for image in IMAGES:
        table.image_states(normalized_image_name(image))
    before = {name: table.image_states(normalized_image_name(name)) for name in IMAGES}
    # Replace a few nodes: one gains images, one loses all, one unchanged clone.
    replaced = []
    for i, images in ((2, [(["new:1"], 50 * MB), (["app:v1"], 7 * MB)]), (5, []), (9, None)):
        info = snapshot.node_info_list[i]
        if images is None:
            replaced.append(info.clone())
        else:
            replaced.append(NodeInfo(make_node(info.name, images=images)))
    overlaid = snapshot.overlay(replaced)
    derived = overlaid.table
    assert derived is not table
    fresh = NodeTable(overlaid.node_info_list)
    for image in [*IMAGES, "new:1"]:
        name = normalized_image_name(image)
        got, want = derived.image_states(name), fresh.image_states(name)
        assert got is not None and want is not None
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist(), name
    # The parent's columns are untouched.
    for image, pair in before.items():
        assert pair is not None
        again = table.image_states(normalized_image_name(image))
        assert again is pair
    for k in range(10):
        pod = _pod(rng, f"p{k}")
        pod["spec"]["containers"].append({"name": "n", "image": "new:1"})
        _compare(overlaid, pod, np.arange(len(overlaid)))
        _compare(snapshot, pod, np.arange(len(snapshot)))
    # A second overlay on the first: derived from a derived table.
    again_replaced = [NodeInfo(make_node("n3", images=[(["app:v2"], 10 * MB)]))]
    second = overlaid.overlay(again_replaced)
    for k in range(5):
        _compare(second, _pod(rng, f"q{k}"), np.arange(len(second)))


def test_scaled_image_scores_match() -> None:
    """The float product per image, on many random sizes and spreads (an operation order that
    rounds differently is seen here even when the final scores would rarely move)."""
    rng = random.Random(5)
    for total in (1, 3, 7, 10, 97, 5000, 12345):
        sizes = [
            rng.choice([0, 1, rng.randint(1, 1 << 52), rng.randint(1, 1 << 36)])
            for _ in range(3000)
        ]
        counts = [rng.randint(0, total) for _ in sizes]
        got = scaled_image_scores(
            np.array(sizes, dtype=np.int64), np.array(counts, dtype=np.int64), total
        )
        assert got is not None
        want = [
            scaled_image_score(ImageStateSummary(s, c), total)
            for s, c in zip(sizes, counts, strict=True)
        ]
        assert got.tolist() == want, total


def test_calculate_priorities_matches() -> None:
    sums = [0, 1, MIN_THRESHOLD - 1, MIN_THRESHOLD, MIN_THRESHOLD + 1, 500 * MB, 1000 * MB, 1 << 40]
    for n in range(5):
        got = calculate_priorities(np.array(sums, dtype=np.int64), n).tolist()
        assert got == [calculate_priority(s, n) for s in sums], n
    assert MAX_CONTAINER_THRESHOLD == 1000 * MB


def test_declines_on_unsafe_sizes_and_without_snapshot() -> None:
    snapshot = Snapshot.from_objects(
        [make_node("a", images=[(["huge:1"], 1 << 60)]), make_node("b")]
    )
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "huge:1"}]}}
    state = CycleState()
    state.snapshot = snapshot
    plugin = ImageLocality({}, testing.handle())
    rows = np.arange(2)
    assert plugin.score_batch(state, pod, snapshot.table, rows) is None
    assert plugin.score_batch(CycleState(), pod, snapshot.table, rows) is None
