"""RackSpread: keep pods off nodes under maintenance, spread an app's pods across racks.

Contract (what a scheduler running this plugin can rely on):

* **Filter**: a node whose annotation ``example.com/maintenance`` is set (non-empty and not
  ``"false"``, any case) is rejected as UnschedulableAndUnresolvable with the reason
  :data:`ERR_REASON_MAINTENANCE` (only a change to the node helps; preemption does not try).
* **PreScore**: for a pod with the label ``appLabel`` (default ``app``), count the pods of
  the same app (same namespace, same label value) already assigned in each rack; a rack is
  the value of the node label ``rackLabel`` (default ``example.com/rack``) and its pods are
  those on every node of the cycle's snapshot with that value. A pod without ``appLabel``
  skips the plugin's Score (``SKIP``).
* **Score / NormalizeScore**: the least-loaded rack among the feasible nodes scores 100, a
  rack with more of the app's pods proportionally less, never 0:
  ``100 * (max - count + 1) // (max - min + 1)``; a node without ``rackLabel`` scores 0.
  Ties (racks with equal counts) score equally.
* **Queueing hints** (standalone scheduler): a pod this plugin rejected is retried when a
  node is added or its annotations change.

Args (``pluginConfig``), validated by :class:`RackSpreadArgs` when the config loads:
``appLabel`` and ``rackLabel``, non-empty strings; anything else is a config error.

Reads the NodeInfos and the pods on them, hence ``reads = (PODS,)``: the extender then
watches the cluster's assigned pods (and ``serve --offline`` refuses the plugin, since it would
see no pods). Mutates nothing but its own CycleState key and the scores it normalizes. Imports
only ``extender.framework``, the stable plugin API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from marshmallow import Schema, fields, validate

from extender.framework import (
    MAX_NODE_SCORE,
    PODS,
    SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    Resource,
    Status,
    unresolvable,
)

MAINTENANCE_ANNOTATION = "example.com/maintenance"
ERR_REASON_MAINTENANCE = "node(s) were under maintenance"
STATE_KEY = "PreScoreRackSpread"


class RackSpreadArgs(Schema):
    """The plugin's args; unknown fields and empty labels are rejected when the config loads."""

    app_label = fields.String(
        data_key="appLabel", load_default="app", validate=validate.Length(min=1)
    )
    rack_label = fields.String(
        data_key="rackLabel", load_default="example.com/rack", validate=validate.Length(min=1)
    )


@dataclass
class _PreScoreState:
    """Per cycle: the app's pod count in each rack, and the rack of each feasible node."""

    counts: dict[str, int] = field(default_factory=dict)
    rack_of: dict[str, str | None] = field(default_factory=dict)

    def clone(self) -> _PreScoreState:
        return self  # read-only after PreScore


def under_maintenance(node: dict) -> bool:
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(MAINTENANCE_ANNOTATION, "")
    return value != "" and value.lower() != "false"


class RackSpread:
    name = "RackSpread"
    args_schema = RackSpreadArgs
    reads = (PODS,)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.app_label: str = args["app_label"]
        self.rack_label: str = args["rack_label"]

    # -- Filter ---------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: dict, node_info: NodeInfo) -> Status | None:
        if under_maintenance(node_info.node):
            return unresolvable(ERR_REASON_MAINTENANCE)
        return None

    # -- PreScore, Score, NormalizeScore ---------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        meta = pod.get("metadata") or {}
        app = (meta.get("labels") or {}).get(self.app_label)
        if app is None:
            return SKIP
        namespace = meta.get("namespace") or "default"
        data = _PreScoreState(rack_of={n.name: n.labels.get(self.rack_label) for n in nodes})
        wanted = {rack for rack in data.rack_of.values() if rack is not None}
        data.counts = dict.fromkeys(wanted, 0)
        # Every node of the cycle counts, feasible or not: a rack's load includes its pods on
        # a node that is full or under maintenance.
        for info in state.snapshot if state.snapshot is not None else nodes:
            rack = info.labels.get(self.rack_label)
            if rack not in wanted:
                continue
            data.counts[rack] += sum(
                1
                for p in info.pods
                if p.namespace == namespace and p.labels.get(self.app_label) == app
            )
        state.write(STATE_KEY, data)
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, None]:
        # The raw score is the rack's count (0 without a rack); NormalizeScore maps it.
        data: _PreScoreState = state.read(STATE_KEY)
        rack = data.rack_of.get(node_info.name)
        return (0 if rack is None else data.counts[rack]), None

    def score_extensions(self) -> RackSpread:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        data: _PreScoreState = state.read(STATE_KEY)
        racked = [s for s in scores if data.rack_of.get(s.name) is not None]
        if not racked:
            for entry in scores:
                entry.score = 0
            return None
        low = min(s.score for s in racked)
        high = max(s.score for s in racked)
        for entry in scores:
            if data.rack_of.get(entry.name) is None:
                entry.score = 0
            else:
                entry.score = MAX_NODE_SCORE * (high - entry.score + 1) // (high - low + 1)
        return None

    # -- queueing hints (standalone scheduler) ----------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node this plugin rejected may fit once added or its annotations change."""
        actions = ActionType.ADD | ActionType.UPDATE_NODE_ANNOTATION
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, actions))]
