"""``POST /explain``: the filter verb's body (either node mode) answered with the per-node,
per-plugin breakdown of ``kube-extender explain -o json`` (``docs/explain.md``).

Read-only: preemption runs on a dry-run twin of the service's framework (no eviction, no
API write); the candidate nodes are the ones the body names, over the service's snapshot.
"""

from __future__ import annotations

from typing import Any

from extender.explain.engine import Explainer
from extender.explain.render import to_dict

from .service import ExtenderService


def explain(service: ExtenderService, explainer: Explainer, args: dict) -> dict[str, Any]:
    """``explainer`` is built once per app over ``service.fwk`` (its dry-run twin is reused)."""
    missing: list[str] = []
    if args["nodes"] is None:
        snapshot, candidates, missing = service.snapshot_for_names(args["node_names"])
    else:
        snapshot, candidates = service.snapshot_for_nodes(args["nodes"])
    result = to_dict(explainer.explain(args["pod"], snapshot, candidates))
    result["missingNodes"] = missing
    return result
