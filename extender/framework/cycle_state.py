"""CycleState: per-attempt data shared by the plugins of one scheduling attempt.

Plugins write under their own keys (by convention ``"PreFilter" + plugin name``). Values that
are stored must provide ``clone()`` when the framework simulates other pods (nominated pods,
preemption dry runs); values without it are treated as immutable and shared.
"""

from __future__ import annotations

import threading
from typing import Any

from .pod_info import PodInfo

# Where the runtime keeps ``(nodes, table, rows)``: the node table rows of the feasible nodes
# (that exact list), as the batch filter found them. PreScore and Score read the rows here
# instead of looking the nodes up in the table again.
SCORE_ROWS_KEY = "ScoreRows"


class StateNotFound(KeyError):
    """Raised by :meth:`CycleState.read` for a missing key; plugins turn it into an Error."""


class CycleState:
    __slots__ = (
        "_data",
        "_lock",
        "skip_filter_plugins",
        "skip_score_plugins",
        "pods_to_activate",
        "record_plugin_metrics",
        "snapshot",
        "deadline",
        "budget",
        "pod_group_states",
        "pod_info",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # key "namespace/name" -> pod dict; activated at the end of a successful cycle.
        self.pods_to_activate: dict[str, dict] = {}
        self.record_plugin_metrics = False
        # The cluster snapshot of this cycle (set by the runtime before PreFilter). Kept here,
        # not on the framework, so concurrent webhook requests each see their own.
        self.snapshot: Any = None
        # The pod budget (extender.framework.budget): when this attempt must end, as a
        # time.monotonic() value, and its length in seconds; None: no budget.
        self.deadline: float | None = None
        self.budget: float | None = None
        # Set for the pod attempts of a pod group scheduling cycle (upstream
        # ``SetPodGroupSchedulingCycle``): the cycle's own copies of the pod group states, which
        # it assumes pods into; ``None`` in a pod-by-pod cycle and in the binding cycle.
        self.pod_group_states: dict[tuple[str, str], Any] | None = None
        # The PodInfo of the pod being scheduled, when the caller has one (the scheduler's
        # queue entry): plugins that need the parsed pod take it (:meth:`parsed_pod`)
        # instead of parsing the pod again. None: they parse it.
        self.pod_info: PodInfo | None = None

    def write(self, key: str, value: Any) -> None:
        with self._lock:
            self._data[key] = value

    def read(self, key: str) -> Any:
        # Plain dict reads are atomic under the GIL; the lock guards writers only.
        try:
            return self._data[key]
        except KeyError:
            raise StateNotFound(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def clone(self) -> CycleState:
        copy = CycleState()
        with self._lock:
            for key, value in self._data.items():
                clone = getattr(value, "clone", None)
                copy._data[key] = clone() if clone is not None else value
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.pods_to_activate = dict(self.pods_to_activate)
        copy.record_plugin_metrics = self.record_plugin_metrics
        copy.snapshot = self.snapshot
        copy.deadline = self.deadline
        copy.budget = self.budget
        copy.pod_group_states = self.pod_group_states
        copy.pod_info = self.pod_info
        return copy

    def parsed_pod(self, pod: dict) -> PodInfo:
        """The :class:`~extender.framework.pod_info.PodInfo` of ``pod``: :attr:`pod_info`
        when it is this very pod's, else parsed (may raise ``ValueError``)."""
        info = self.pod_info
        if info is not None and info.pod is pod:
            return info
        return PodInfo(pod)
