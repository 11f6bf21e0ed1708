"""Score normalization helpers for plugins (upstream
``pkg/scheduler/framework/plugins/helper/normalize_score.go``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import numpy as np

from .results import NodeScore

if TYPE_CHECKING:
    from .cycle_state import CycleState
    from .node_info import NodeInfo
    from .status import Status

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale ``scores`` in place to ``0..max_priority`` by their maximum (upstream
    ``pkg/scheduler/framework/plugins/helper/normalize_score.go``).

    ``reverse`` flips them (``max_priority - score``), for "fewer is better" plugins. All
    zero: every score becomes ``max_priority`` when reversed, else stays 0. Scores are
    expected to be non-negative.
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


def default_normalize_score_batch(
    max_priority: int, reverse: bool, scores: np.ndarray
) -> np.ndarray:
    """:func:`default_normalize_score` over an int64 array: a new array, the same integers."""
    highest = int(scores.max()) if len(scores) else 0
    if highest == 0:
        return np.full(len(scores), max_priority, dtype=np.int64) if reverse else scores.copy()
    scaled = max_priority * scores // highest
    return max_priority - scaled if reverse else scaled


class DefaultNormalize:
    """Mixin for a Score plugin whose NormalizeScore is upstream's usual one
    (``helper.DefaultNormalizeScore(framework.MaxNodeScore, reverse, scores)``): its
    ``score_extensions`` is itself, normalizing with :func:`default_normalize_score` (and
    :func:`default_normalize_score_batch` for batch scores). Set ``normalize_reverse = True``
    on the class for "fewer is better" scores."""

    normalize_reverse: ClassVar[bool] = False

    def score_extensions(self) -> Self:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, self.normalize_reverse, scores)
        return None

    def normalize_score_batch(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo], scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize_score_batch(MAX_NODE_SCORE, self.normalize_reverse, scores)
