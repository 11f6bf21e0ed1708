"""Explain's detail for nodes DynamicResources rejects: which claim and request got no devices
there and why (:func:`extender.dra.structured.diagnose.diagnose`).

The Filter status stays upstream's (``cannot allocate all claims``, ``resourceclaim not available
on the node``: what kube-scheduler prints); the detail sits beside it in the explanation. It is
computed after Filter from the plugin's PreFilter state of the same cycle (the allocator's inputs),
read-only, and never changes a verdict.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from extender.framework.cycle_state import CycleState
from extender.framework.snapshot import Snapshot
from extender.plugins.dynamicresources.claims import allocation, kobj
from extender.plugins.dynamicresources.dynamic_resources import (
    ERR_CANNOT_ALLOCATE,
    ERR_NOT_AVAILABLE,
    NAME,
    STATE_KEY,
)

if TYPE_CHECKING:
    from extender.dra.structured.diagnose import RequestDiagnosis

log = logging.getLogger(__name__)


def device_owners(claims: list[dict]) -> dict[tuple[str, str, str], list[str]]:
    """(driver, pool, device) -> the allocated claims holding it."""
    owners: dict[tuple[str, str, str], list[str]] = {}
    for claim in claims:
        alloc = allocation(claim)
        if alloc is None:
            continue
        for result in (alloc.get("devices") or {}).get("results") or ():
            device = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            owners.setdefault(device, []).append(kobj(claim))
    return owners


def add_details(fwk: Any, state: CycleState, snapshot: Snapshot, verdicts: list[Any]) -> None:
    """Set ``detail`` and ``devices`` of each verdict DynamicResources rejected."""
    rejected = [
        v
        for v in verdicts
        if v.status is not None
        and v.status.plugin == NAME
        and (ERR_CANNOT_ALLOCATE in v.status.reasons or ERR_NOT_AVAILABLE in v.status.reasons)
    ]
    if not rejected:
        return
    s = state.get(STATE_KEY)
    plugin = fwk.plugins.get(NAME)
    if s is None or plugin is None:
        return
    try:
        owners = device_owners(plugin.tracker.list())
    except Exception:  # a detail must never take the explanation down
        owners = {}
    diagnoser: list[Any] = []  # built on first use, shared by the nodes
    for verdict in rejected:
        info = snapshot.get(verdict.name)
        if info is None:
            continue
        try:
            found = _diagnose_node(s, info, owners, diagnoser)
        except Exception as exc:  # said in the detail, never a traceback
            log.debug("DRA diagnosis of node %s", verdict.name, exc_info=True)
            verdict.detail = [f"(no DRA detail: the diagnosis failed: {type(exc).__name__}: {exc})"]
            continue
        verdict.devices = [
            {"claim": d.claim, "request": d.request, "reason": d.reason, "message": d.message}
            for d in found
        ]
        verdict.detail = [d.text() for d in found]


def _diagnose_node(s: Any, info: Any, owners: dict, diagnoser: list[Any]) -> list[RequestDiagnosis]:
    # Imported here: a profile without DRA claims never loads CEL.
    from extender.dra.structured.diagnose import Diagnoser, RequestDiagnosis

    out: list[RequestDiagnosis] = []
    # Allocated claims whose devices this node cannot reach.
    for index, claim in s.claims.all():
        selector = s.informations[index].available_on_nodes
        if selector is not None and not selector.matches(info.name, info.labels):
            out.append(
                RequestDiagnosis(
                    kobj(claim),
                    "",
                    "AllocatedElsewhere",
                    "is allocated already, to devices this node cannot reach (its allocation's "
                    "node selector does not match the node)",
                )
            )
    allocator = s.allocator
    if allocator is None or out:
        return out
    extended = s.claims.extended_resource_claim()
    claims = [c for _, c in s.claims.to_allocate() if c is not extended]
    if not claims:
        return out
    if not diagnoser:
        # The cycle's allocator inputs; a fresh allocator of our own, so the cycle's is
        # never asked anything Filter did not ask.
        diagnoser.append(
            Diagnoser(
                allocator.features,
                allocator.allocated_state,
                allocator.class_lister,
                allocator.all_slices,
                allocator.cel_cache,
            )
        )
    return diagnoser[0].diagnose(info.node, claims, owners)
