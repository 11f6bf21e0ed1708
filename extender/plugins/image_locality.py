"""ImageLocality (Score): prefer nodes that already have the pod's images (spec §7.12).

For each container and init container image on the node, add its size scaled by the share of
nodes that have it (spreading: an image on every node earns little). The sum is clamped to
``[23 MiB, 1000 MiB x containers]`` and mapped to 0..100. Reads ``NodeInfo.image_states`` (filled
by the snapshot); mutates nothing.
"""

from __future__ import annotations

from typing import Any

from extender.framework.cycle_state import CycleState
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import Status
from extender.framework.types import NodeInfo

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ``:latest`` when the name has no tag after its last ``/``, as the kubelet reports it."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


class ImageLocality:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        spec = pod.get("spec") or {}
        containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
        snapshot = state.snapshot
        total_nodes = len(snapshot) if snapshot is not None else 1
        total = 0
        if total_nodes:
            for container in containers:
                image = container.get("image")
                if not image:
                    continue
                summary = node_info.image_states.get(normalized_image_name(image))
                if summary is None:
                    continue
                total += int(summary.size * (summary.num_nodes / total_nodes))
        max_threshold = MAX_CONTAINER_THRESHOLD * len(containers)
        if total < MIN_THRESHOLD:
            total = MIN_THRESHOLD
        elif total > max_threshold:
            total = max_threshold
        if max_threshold <= MIN_THRESHOLD:
            return 0, None
        return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD), None

    def score_extensions(self) -> None:
        return None
