"""The fidelity comparison of two replay logs (extender/replay/fidelity.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from extender.replay.engine import replay
from extender.replay.fidelity import Tolerance, bindings_per_shape, compare, figures, shape_of
from extender.replay.trace import parse
from tests.replay_trace import small_trace

from .test_engine import MOST_ALLOCATED, PROFILE


@pytest.fixture(scope="module")
def trace():
    return parse(small_trace(namespace="fidelity"))


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("configs")
    paths = {"default": directory / "default.yaml", "most": directory / "most.yaml"}
    paths["default"].write_text(PROFILE)
    paths["most"].write_text(MOST_ALLOCATED)
    return paths


@pytest.fixture(scope="module")
def most(trace, configs) -> list[dict]:
    return [replay(trace, configs["most"], seed=seed) for seed in (0, 1)]


def test_a_log_agrees_with_itself_and_its_figures_are_counted(most: list[dict]) -> None:
    agreement = compare(most[0], most[0])
    assert agreement.agrees, agreement.summary()
    assert all(distance == 0 for *_, distance in agreement.differences.values())
    counted = figures(most[0])
    assert counted["pods"] == 81
    assert counted["scheduled"] + counted["never_scheduled"] == 81
    assert counted["never_scheduled"] >= 1  # p-huge fits nowhere
    assert sum(counted["per_shape"].values()) == counted["scheduled"]


def test_another_policy_is_told_apart(trace, configs, most: list[dict]) -> None:
    spread = replay(trace, configs["default"], seed=0)
    agreement = compare(most, spread)
    assert not agreement.agrees
    assert any(f.startswith("nodes over time") for f in agreement.failures), agreement.summary()


def test_a_moved_binding_is_a_difference_in_shapes_beyond_the_tolerance(
    most: list[dict],
) -> None:
    moved = copy.deepcopy(most[0])
    cpu_nodes = [n["name"] for n in moved["nodes"] if not n["gpus"]]
    changed = 0
    for event in moved["events"]:
        if event[1] == "bind" and not event[4] and event[3] not in cpu_nodes:
            event[3] = cpu_nodes[0]
            changed += 1
    assert changed > 3
    agreement = compare(most[0], moved, Tolerance(nodes=100))
    assert [f for f in agreement.failures if f.startswith("bindings on")], agreement.summary()
    assert compare(most[0], moved, Tolerance(shape=changed, nodes=100)).agrees


def test_several_references_are_a_range(most: list[dict]) -> None:
    """The compared log is held against the range the references span: agreeing with
    either reference means agreeing with both together."""
    together = compare(most, most[1])
    assert together.agrees, together.summary()
    for low, high, value, distance in together.differences.values():
        assert distance == 0 and low <= value <= high


def test_figures_follow_bindings_and_departures() -> None:
    log = {
        "nodes": [
            {"name": "a", "cpu": 4000, "memory": 4 * 2**30, "labels": {}, "gpus": []},
            {"name": "b", "cpu": 4000, "memory": 4 * 2**30, "labels": {}, "gpus": []},
        ],
        "pods": {
            "ns/p": {
                "cpu": 2000,
                "memory": 2**30,
                "gpus": 0,
                "gpuMilli": 0,
                "owner": None,
                "arrival": 0.0,
            }
        },
        "events": [
            [0.0, "arrive", "ns/p"],
            [10.0, "bind", "ns/p", "a", []],
            [50.0, "leave", "ns/p", "a", "completed"],
        ],
        "end": 100.0,
    }
    counted = figures(log, points=11)  # t = 0, 10, ..., 100
    assert counted["series"]["nodes"] == [0.0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert counted["series"]["cpu"][1] == 0.25
    assert counted["series"]["pending"][:2] == [1.0, 0.0]
    assert counted["queueing_p50"] == 10.0
    assert bindings_per_shape(log) == {"cpu 4, mem 4Gi, gpu 0": 1}
    assert shape_of(log["nodes"][0]) == "cpu 4, mem 4Gi, gpu 0"


def test_logs_of_different_traces_are_refused(most: list[dict]) -> None:
    other = copy.deepcopy(most[0])
    other["pods"]["elsewhere/p"] = other["pods"].popitem()[1]
    with pytest.raises(ValueError, match="not of the same trace"):
        compare(most[0], other)
