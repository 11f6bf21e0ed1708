"""PodTopologySpread, as upstream ``pkg/scheduler/framework/plugins/podtopologyspread``.

The plugin is :class:`PodTopologySpread`; the other names are re-exported for the tests.
"""

from __future__ import annotations

from .plugin import (
    DO_NOT_SCHEDULE,
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PodTopologySpread,
    count_pods_matching,
    default_selector,
    node_has_all_keys,
)

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PRE_FILTER_STATE_KEY",
    "PodTopologySpread",
    "count_pods_matching",
    "default_selector",
    "node_has_all_keys",
]
