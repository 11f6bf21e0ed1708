"""Helpers shared by several plugins (upstream ``plugins/helper``)."""

from __future__ import annotations

from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.types import NodeScore


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale scores to ``0..max_priority`` by the maximum; ``reverse`` flips them (spec §7.8).

    All zero: every score becomes ``max_priority`` when reversed, else stays 0.
    """
    highest = max((s.score for s in scores), default=0)
    if highest == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = max_priority * s.score // highest
        s.score = max_priority - score if reverse else score


__all__ = ["MAX_NODE_SCORE", "default_normalize_score"]
