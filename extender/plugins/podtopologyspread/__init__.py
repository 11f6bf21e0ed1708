"""PodTopologySpread: spread matching pods evenly over topology domains (upstream
``pkg/scheduler/framework/plugins/podtopologyspread``, split the same way).

Contract
* Reads the incoming pod's ``spec.topologySpreadConstraints`` (or the profile's default
  constraints, see below), node labels/taints and the pods already on the nodes of the cycle's
  snapshot. Mutates nothing but its own CycleState keys ``"PreFilterPodTopologySpread"`` and
  ``"PreScorePodTopologySpread"``.
* Hard constraints (``whenUnsatisfiable: DoNotSchedule``) are checked in PreFilter/Filter; soft
  ones (``ScheduleAnyway``) are scored in PreScore/Score/NormalizeScore. A pod without
  constraints of the relevant kind makes PreFilter/PreScore answer Skip.
* Counting: a node is *eligible* for a constraint when it has every constraint's topology key
  and passes the constraint's inclusion policies (``nodeAffinityPolicy`` Honor (default): the
  pod's nodeSelector/required node affinity must match; ``nodeTaintsPolicy`` Honor (default
  Ignore): the node's NoSchedule/NoExecute taints must be tolerated). A domain's count is the
  number of pods on eligible nodes of that domain that are in the incoming pod's namespace, match
  the constraint's selector (``labelSelector`` plus ``matchLabelKeys`` values taken from the
  incoming pod) and are not terminating (``metadata.deletionTimestamp`` unset). As upstream, an
  empty selector (``labelSelector: {}``) counts no pods, while a missing one matches nothing.
* Filter: ``skew = count(node's domain) + (1 if the pod matches the selector) - global min``,
  where the global minimum is 0 while fewer than ``minDomains`` domains exist. ``skew >
  maxSkew`` → Unschedulable; a node lacking a topology key → UnschedulableAndUnresolvable.
  Upstream keeps only the two smallest domains ("critical paths") and can overestimate the
  minimum after simulated pod additions; here the exact minimum is recomputed, which equals
  upstream whenever upstream's answer does not depend on map iteration order.
* Score: per node ``round(Σ count × ln(size + 2) + (maxSkew − 1))``; nodes lacking a key are
  ignored (final score 0); normalisation is reversed min/max so fewer matching pods score higher.

Default constraints (``defaultingType``): ``System`` (the default) uses hostname maxSkew 3 and
zone maxSkew 5, both ScheduleAnyway; ``List`` uses ``defaultConstraints``. They apply only to a
pod without any constraints, and only with the selector upstream derives from the Services
selecting the pod and the pod's controlling ReplicationController/ReplicaSet/StatefulSet
(``helper.DefaultSelector``). An empty derived selector means *no* default constraints. This
plugin reads those objects from the handle's listers (``reads`` declares the kinds, so both
shells watch them); a pod that no Service or controller selects gets no default spreading
(PreScore Skip), as upstream. With System defaulting, nodes missing a default key are not
ignored (hostname spreading still works on nodes without a zone label).

Modules, as upstream's files: :mod:`.common` (constraints, counting, the default selector),
:mod:`.filtering` (PreFilter/Filter), :mod:`.scoring` (PreScore/Score/NormalizeScore),
:mod:`.plugin` (the plugin class, its args and events). Each batch form and each count from the
table's label-pair index sits next to the per-node code it must equal.
"""

from __future__ import annotations

from .common import DO_NOT_SCHEDULE, count_pods_matching, default_selector, node_has_all_keys
from .filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
)
from .plugin import PodTopologySpread

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
