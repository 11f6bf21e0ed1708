"""InterPodAffinity, as upstream ``pkg/scheduler/framework/plugins/interpodaffinity``.

The plugin is :class:`InterPodAffinity`; the other names are re-exported for the tests.
"""

from __future__ import annotations

from .plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
    NamespaceLabels,
    term_matches,
)

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "PRE_SCORE_STATE_KEY",
    "InterPodAffinity",
    "NamespaceLabels",
    "term_matches",
]
