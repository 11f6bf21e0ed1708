"""The scheduling framework: statuses, cycle state, NodeInfo/snapshot, plugin protocols and
the profile runner. See ``docs/`` for the stage-by-stage tour."""

from .cycle_state import CycleState, StateNotFound
from .profile import PluginSpec, Profile
from .registry import Registry
from .runtime import Framework, ProfileError
from .schedule import Diagnosis, FitError, SchedulingAlgorithm, SchedulingError, fit_error_message
from .status import Code, Status
from .types import NodeInfo, NodeScore, PodInfo, PreFilterResult, QueuedPodInfo, Snapshot

__all__ = [
    "Code",
    "CycleState",
    "Diagnosis",
    "FitError",
    "Framework",
    "NodeInfo",
    "NodeScore",
    "PluginSpec",
    "PodInfo",
    "PreFilterResult",
    "Profile",
    "ProfileError",
    "QueuedPodInfo",
    "Registry",
    "SchedulingAlgorithm",
    "SchedulingError",
    "Snapshot",
    "StateNotFound",
    "Status",
    "fit_error_message",
]
