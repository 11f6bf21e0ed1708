"""The watch-fed cache skips a malformed object with a log line instead of crashing the loop."""

from __future__ import annotations

import logging

import pytest

from extender.cache.cache import Cache
from tests.unit.builders import make_node, make_pod


def test_malformed_node_and_pod_are_skipped_with_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Failed before: QuantityError escaped add_node/add_pod (the informer's handler)."""
    cache = Cache()
    good = make_node("n1")
    cache.add_node(good)
    bad = make_node("n1")
    bad["status"]["allocatable"]["cpu"] = "abc"
    with caplog.at_level(logging.ERROR):
        cache.add_node(bad)
        cache.add_node({**make_node("n2"), "status": {"allocatable": {"memory": [1]}}})
        pod = make_pod("p", node_name="n1", cpu="1")
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "NaN"
        cache.add_pod(pod)
    assert "node n1 skipped: malformed object" in caplog.text
    assert "skipped: malformed object" in caplog.text.split("node n1")[1]
    snapshot = cache.snapshot()
    assert [info.name for info in snapshot] == ["n1"]
    assert snapshot.get("n1").allocatable.milli_cpu == 4000  # the good version kept
    assert snapshot.get("n1").pods == []


def test_huge_quantity_from_the_api_saturates() -> None:
    cache = Cache()
    node = make_node("n1")
    node["status"]["allocatable"]["memory"] = "1e999999"
    cache.add_node(node)
    assert cache.snapshot().get("n1").allocatable.memory == (1 << 63) - 1
