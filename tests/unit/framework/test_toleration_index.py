"""The toleration index answers exactly as the plain scan (``v1.Toleration.ToleratesTaint``
over every toleration), on random tolerations and taints over a small alphabet so that keys,
values and effects collide often; and many tolerations against many taints cost about their
sum, not their product."""

from __future__ import annotations

import random

import pytest

from extender.framework import labels
from extender.framework.labels import (
    INDEX_TOLERATIONS_FROM,
    TolerationIndex,
    find_untolerated_taint,
    tolerates,
)

KEYS = ("", "a", "b", "node.kubernetes.io/unschedulable")
VALUES = ("", "x", "y")
EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = (None, "Equal", "Exists", "Lt")


def random_toleration(rng: random.Random) -> dict:
    toleration = {}
    for field, choices in (
        ("key", KEYS),
        ("value", VALUES),
        ("effect", EFFECTS),
        ("operator", OPERATORS),
    ):
        choice = rng.choice(choices)
        if choice is not None and (choice or rng.random() < 0.5):
            toleration[field] = choice
    return toleration


def random_taint(rng: random.Random) -> dict:
    taint = {"key": rng.choice(KEYS[1:]), "effect": rng.choice(EFFECTS[1:])}
    value = rng.choice(VALUES)
    if value or rng.random() < 0.5:
        taint["value"] = value
    return taint


@pytest.mark.parametrize("seed", range(40))
def test_the_index_answers_as_the_scan(seed: int) -> None:
    rng = random.Random(seed)
    tolerations = [random_toleration(rng) for _ in range(rng.randint(0, 40))]
    index = TolerationIndex(tolerations)
    for _ in range(200):
        taint = random_taint(rng)
        assert index.tolerates(taint) == tolerates(tolerations, taint), (tolerations, taint)
    taints = [random_taint(rng) for _ in range(rng.randint(0, 12))]
    effects = ("NoSchedule", "NoExecute")
    first = next(
        (t for t in taints if t["effect"] in effects and not tolerates(tolerations, t)), None
    )
    assert find_untolerated_taint(taints, tolerations, effects) is first


def test_many_tolerations_against_many_taints_cost_their_sum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """5000 tolerations, 300 taints they tolerate and one they do not: the one-toleration
    check is never called (the scan would call it about 700,000 times)."""
    calls = 0
    plain = labels.toleration_tolerates

    def counted(toleration: dict, taint: dict) -> bool:
        nonlocal calls
        calls += 1
        return plain(toleration, taint)

    monkeypatch.setattr(labels, "toleration_tolerates", counted)
    tolerations = [
        {"key": f"t{i}", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
        for i in range(5000)
    ]
    taints = [{"key": f"t{16 * i}", "value": "v", "effect": "NoSchedule"} for i in range(300)]
    taints.append({"key": "other", "value": "v", "effect": "NoSchedule"})
    assert len(tolerations) >= INDEX_TOLERATIONS_FROM
    assert find_untolerated_taint(taints, tolerations, ("NoSchedule",)) is taints[-1]
    assert calls == 0
