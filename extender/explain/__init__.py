"""``kube-extender explain`` and ``simulate``: why a pod is Pending, where it would land.

* :mod:`.engine`   one pod, one snapshot: every node's Filter verdict, every score, the
  chosen node(s), the FitError and a dry-run preemption (no eviction, no API write).
* :mod:`.render`   the stable JSON/YAML shape (``docs/explain.md``), the 80-column table.
* :mod:`.cluster`  reading a cluster once (live, read-only) or from a dump.
* :mod:`.simulate` offline what-if: schedule new pods into a dumped cluster.
* :mod:`.gang`     pod groups (gangs): the scheduler's pod group cycle, the quorum, the member
  that blocks it (feature gates GenericWorkload, GangScheduling).
"""

from .engine import SCHEMA_VERSION, Explainer, Explanation, NodeVerdict, PreemptionOutcome

__all__ = ["SCHEMA_VERSION", "Explainer", "Explanation", "NodeVerdict", "PreemptionOutcome"]
