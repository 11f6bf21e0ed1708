"""InterPodAffinity: required and preferred pod (anti-)affinity (upstream
``pkg/scheduler/framework/plugins/interpodaffinity``, split the same way).

Contract
* Reads the incoming pod's ``spec.affinity.podAffinity`` / ``podAntiAffinity``, the parsed
  affinity terms of the pods already on the snapshot's nodes, node labels and — for terms with
  a non-empty ``namespaceSelector`` — namespace labels through ``handle.namespace_labels(ns)``
  (no handle, or an unknown namespace, means no labels). Mutates nothing but its CycleState keys
  ``"PreFilterInterPodAffinity"`` and ``"PreScoreInterPodAffinity"``.
* PreFilter counts, per topology pair ``(key, value)``: existing pods whose required
  anti-affinity terms match the incoming pod; existing pods matching *all* the incoming pod's
  required affinity terms; existing pods matching each incoming required anti-affinity term.
  It answers Skip when the pod has no required terms and no existing pod's anti-affinity
  matches it. The counts are cloned for simulations and updated by ``add_pod``/``remove_pod``.
* Filter, in order: incoming required affinity (UnschedulableAndUnresolvable
  ``node(s) didn't match pod affinity rules``; a pod matching its own terms passes when no pod
  anywhere matches them — the first pod of a group); incoming required anti-affinity
  (Unschedulable ``node(s) didn't match pod anti-affinity rules``); existing pods' required
  anti-affinity (Unschedulable ``node(s) didn't satisfy existing pods anti-affinity rules``).
* Score: per topology pair, ``+weight`` / ``-weight`` for the incoming pod's preferred
  affinity / anti-affinity terms matching an existing pod, ``+hardPodAffinityWeight`` for each
  existing pod's required affinity term matching the incoming pod, ``±weight`` for existing pods'
  preferred terms matching it. A node's raw score is the sum over its pairs; NormalizeScore maps
  min..max to 0..100 (all 0 when min == max). PreScore answers Skip when nothing matched, or —
  with ``ignorePreferredTermsOfExistingPods`` — when the incoming pod has no preferred terms (as
  upstream, that flag only enables this early Skip).

Modules, as upstream's files: :mod:`.filtering` (PreFilter/Filter), :mod:`.scoring`
(PreScore/Score/NormalizeScore), :mod:`.plugin` (the plugin class, its args and events), and
:mod:`.common` for what they share. Each batch form and each count from the table's label-pair
index sits next to the per-node code it must equal.
"""

from __future__ import annotations

from .common import NamespaceLabels, term_matches
from .filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from .plugin import InterPodAffinity
from .scoring import PRE_SCORE_STATE_KEY

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "PRE_SCORE_STATE_KEY",
    "InterPodAffinity",
    "NamespaceLabels",
    "term_matches",
]
