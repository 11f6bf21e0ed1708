"""ImageLocality (upstream ``pkg/scheduler/framework/plugins/imagelocality``): name normalization,
spread scaling, thresholds."""

from __future__ import annotations

import pytest

from extender import testing
from extender.framework.cycle_state import CycleState
from extender.framework.node_info import NodeInfo
from extender.framework.status import Code
from extender.plugins.image_locality import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)
from tests.unit.builders import make_node, make_pod

from .helpers import score_all

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.27", "nginx:1.27"),
        ("library/nginx", "library/nginx:latest"),
        ("gcr.io/team/app", "gcr.io/team/app:latest"),
        ("gcr.io/team/app:v2", "gcr.io/team/app:v2"),
        ("registry:5000/app", "registry:5000/app:latest"),  # a port is not a tag
        ("registry:5000/app:v1", "registry:5000/app:v1"),
        ("app@sha256:0123abcd", "app@sha256:0123abcd"),  # a digest is left alone
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def test_thresholds() -> None:
    assert MIN_THRESHOLD == 23 * MB and MAX_CONTAINER_THRESHOLD == 1000 * MB
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(23 * MB, 1) == 0
    assert calculate_priority(1000 * MB, 1) == 100
    assert calculate_priority(5000 * MB, 1) == 100
    assert calculate_priority(1000 * MB, 2) == 100 * 977 // 1977  # 49
    assert calculate_priority(0, 0) == 0


def container(image: str) -> dict:
    return {"name": image.replace(":", "-").replace("/", "-"), "image": image}


def test_spread_scaling_one_container() -> None:
    nodes = [
        make_node("has1", images=[(["app:v1"], 500 * MB)]),
        make_node("has2", images=[(["app:v1"], 500 * MB)]),
        make_node("none1"),
        make_node("none2", images=[(["other:v1"], 900 * MB)]),
    ]
    pod = make_pod("p", containers=[container("app:v1")])
    # 500 MB x 2/4 = 250 MB; 100 x (250 - 23) // (1000 - 23) = 23
    assert score_all(ImageLocality({}, testing.handle()), pod, nodes) == {
        "has1": 23,
        "has2": 23,
        "none1": 0,
        "none2": 0,
    }


def test_init_containers_untagged_images_and_sum() -> None:
    nodes = [
        make_node("n1", images=[(["big:latest"], 1200 * MB), (["small:1.0"], 200 * MB)]),
        make_node("n2", images=[(["big:latest"], 1200 * MB)]),
        make_node("n3", images=[(["small:1.0"], 200 * MB)]),
        make_node("n4", images=[(["small:1.0", "small@sha256:00ff"], 200 * MB)]),
    ]
    pod = make_pod("p", containers=[container("big")], initContainers=[container("small:1.0")])
    # big: 1200 x 2/4 = 600 MB; small: 200 x 3/4 = 150 MB; N = 2 -> max 2000 MB
    # n1 750 -> 100 x 727 // 1977 = 36; n2 600 -> 29; n3, n4 150 -> 6
    assert score_all(ImageLocality({}, testing.handle()), pod, nodes) == {
        "n1": 36,
        "n2": 29,
        "n3": 6,
        "n4": 6,
    }


def test_clamped_to_max_and_min() -> None:
    nodes = [
        make_node(f"n{i}", images=[(["huge:latest"], 5000 * MB), (["tiny:latest"], 20 * MB)])
        for i in range(3)
    ]
    assert score_all(
        ImageLocality({}, testing.handle()), make_pod("p", containers=[container("huge")]), nodes
    ) == {
        "n0": 100,
        "n1": 100,
        "n2": 100,
    }
    assert score_all(
        ImageLocality({}, testing.handle()), make_pod("p", containers=[container("tiny")]), nodes
    ) == {
        "n0": 0,
        "n1": 0,
        "n2": 0,
    }


def test_tag_must_match() -> None:
    nodes = [make_node("n", images=[(["app:v1"], 900 * MB)])]
    plugin = ImageLocality({}, testing.handle())
    assert score_all(plugin, make_pod("p", containers=[container("app")]), nodes) == {"n": 0}
    assert score_all(plugin, make_pod("p", containers=[container("app:v2")]), nodes) == {"n": 0}
    # 900 x 1/1 -> 100 x 877 // 977 = 89
    assert score_all(plugin, make_pod("p", containers=[container("app:v1")]), nodes) == {"n": 89}


def test_digest_reference() -> None:
    nodes = [make_node("n", images=[(["app@sha256:00ff", "app:v1"], 500 * MB)])]
    pod = make_pod("p", containers=[container("app@sha256:00ff")])
    # 100 x 477 // 977 = 48
    assert score_all(ImageLocality({}, testing.handle()), pod, nodes) == {"n": 48}


def test_image_volumes_add_to_the_sum_but_not_to_the_count() -> None:
    nodes = [make_node("n1", images=[(["data:v1"], 500 * MB)]), make_node("n2")]
    pod = make_pod(
        "p",
        containers=[container("app:v1")],
        volumes=[
            {"name": "data", "image": {"reference": "data:v1"}},
            {"name": "tmp", "emptyDir": {}},
        ],
    )
    # 500 x 1/2 = 250 MB; N = 1 container (v1.36: volumes are not counted) -> 23
    assert score_all(ImageLocality({}, testing.handle()), pod, nodes) == {"n1": 23, "n2": 0}


def test_score_without_a_snapshot_is_an_error() -> None:
    state = CycleState()
    plugin = ImageLocality({}, testing.handle())
    pod = make_pod("p", containers=[container("app:v1")])
    info = NodeInfo(make_node("n", images=[(["app:v1"], 500 * MB)]))
    value, status = plugin.score(state, pod, info)
    assert value == 0 and status is not None and status.code == Code.ERROR


def test_no_normalize() -> None:
    assert ImageLocality({}, testing.handle()).score_extensions() is None
