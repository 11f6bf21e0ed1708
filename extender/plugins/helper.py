"""Helpers shared by several plugins (upstream ``plugins/helper``); they live in the public
plugin API, :mod:`extender.framework`, and are re-exported here for in-tree imports."""

from __future__ import annotations

from extender.framework.normalize import (
    MAX_NODE_SCORE,
    default_normalize_score,
    default_normalize_score_batch,
)

__all__ = ["MAX_NODE_SCORE", "default_normalize_score", "default_normalize_score_batch"]
