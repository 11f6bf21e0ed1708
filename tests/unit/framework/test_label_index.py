"""NodeInfo's label index: ``candidates(selector)`` never loses a pod the selector matches,
through add_pod / remove_pod on NodeInfos and their clones (copy on write).

The reference is the walk the plugins did before: every pod of ``NodeInfo.pods``.
"""

from __future__ import annotations

import random

import pytest

from extender.framework.labels import LabelSelector
from extender.framework.node_info import NodeInfo
from extender.framework.pod_info import PodInfo
from tests.unit.builders import make_node, make_pod

KEYS = ("app", "tier", "env", "team")
VALUES = ("a", "b", "c", "")


def random_labels(rng: random.Random) -> dict[str, str]:
    return {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.6}


def random_requirement(rng: random.Random) -> dict:
    op = rng.choice(("In", "In", "NotIn", "Exists", "DoesNotExist"))
    req: dict = {"key": rng.choice(KEYS), "operator": op}
    if op in ("In", "NotIn"):
        # Duplicated values and (for In) no value at all are legal input here.
        req["values"] = [rng.choice(VALUES) for _ in range(rng.randint(0, 3))]
    return req


def random_selector(rng: random.Random) -> dict | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return {}
    selector: dict = {}
    if rng.random() < 0.6:
        selector["matchLabels"] = {
            k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(1, 2))
        }
    if rng.random() < 0.6:
        selector["matchExpressions"] = [random_requirement(rng) for _ in range(rng.randint(1, 3))]
    return selector


def random_pod(rng: random.Random, i: int) -> PodInfo:
    pod = make_pod(
        f"p{i}",
        namespace=rng.choice(("default", "ns1")),
        labels=random_labels(rng),
        node_name="n",
    )
    if rng.random() < 0.2:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return PodInfo(pod)


def compiled(rng: random.Random, n: int) -> list[LabelSelector]:
    selectors = [LabelSelector(random_selector(rng)) for _ in range(n)]
    # matchLabelKeys adds a pair after construction.
    extra = LabelSelector({"matchExpressions": [{"key": "env", "operator": "Exists"}]})
    extra.add_equals("app", "a")
    return [*selectors, extra]


def assert_index_exact(info: NodeInfo, selectors: list[LabelSelector]) -> None:
    for selector in selectors:
        found = list(info.candidates(selector))
        # Candidates are pods of this node ...
        assert {id(p) for p in found} <= {id(p) for p in info.pods}
        # ... and every pod the selector matches is one of them.
        matching = [p for p in info.pods if selector.matches(p.labels)]
        assert {id(p) for p in matching} <= {id(p) for p in found}, selector.key
        # ... as often as they are on the node (a PodInfo added twice counts twice).
        assert sum(selector.matches(p.labels) for p in found) == len(matching)
    # A single pair is looked up exactly: the bucket holds just the pods with that label.
    for key in KEYS:
        for value in VALUES:
            bucket = info.candidates(LabelSelector({"matchLabels": {key: value}}))
            expected = [p for p in info.pods if p.labels.get(key) == value]
            assert sorted(id(p) for p in bucket) == sorted(id(p) for p in expected)
    # No bucket or In union offers a pod more often than the node holds it.
    for selector in selectors:
        found = list(info.candidates(selector))
        for p in found:
            assert sum(q is p for q in found) <= sum(q is p for q in info.pods)


@pytest.mark.parametrize("seed", range(40))
def test_candidates_cover_matches_through_adds_removes_and_clones(seed: int) -> None:
    rng = random.Random(seed)
    selectors = compiled(rng, 25)
    infos = [NodeInfo(make_node("n"))]
    serial = 0
    for _step in range(60):
        info = rng.choice(infos)
        action = rng.random()
        if action < 0.5 or not info.pods:
            serial += 1
            # The same PodInfo may sit on a NodeInfo and its clones, even twice on one.
            pod = rng.choice(infos[0].pods) if rng.random() < 0.1 and infos[0].pods else None
            if pod is None:
                pod = random_pod(rng, serial)
            info.add_pod(pod)
        elif action < 0.8:
            assert info.remove_pod(rng.choice(info.pods).key) is not None
        else:
            infos.append(info.clone())
        for each in infos:
            assert_index_exact(each, selectors)


def test_clone_does_not_see_later_changes_of_the_original() -> None:
    info = NodeInfo(make_node("n"), [make_pod("a", labels={"app": "x"}, node_name="n")])
    copy = info.clone()
    info.add_pod(make_pod("b", labels={"app": "x"}, node_name="n"))
    assert copy.remove_pod(info.pods[0].key) is not None
    selector = LabelSelector({"matchLabels": {"app": "x"}})
    assert [p.name for p in info.candidates(selector)] == ["a", "b"]
    assert list(copy.candidates(selector)) == []
    assert [p.name for p in info.clone().candidates(selector)] == ["a", "b"]


def test_non_selective_selectors_walk_every_pod() -> None:
    info = NodeInfo(
        make_node("n"),
        [make_pod("a", labels={"app": "x"}, node_name="n"), make_pod("b", node_name="n")],
    )
    for selector in (
        {},
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]},
        {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
        # A null matchLabels value (webhook input) matches pods lacking the key.
        {"matchLabels": {"app": None}},
    ):
        assert list(info.candidates(LabelSelector(selector))) == info.pods
    assert list(info.candidates(LabelSelector(None))) == []
    in_dup = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "x", "y"]}]}
    assert [p.name for p in info.candidates(LabelSelector(in_dup))] == ["a"]
