"""PrioritySort (QueueSort): higher priority first, then earlier enqueue time (upstream
``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``)."""

from __future__ import annotations

from extender.framework.handle import Handle
from extender.framework.pod_info import QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def __init__(self, args: dict, handle: Handle) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)
