"""ImageLocality (Score): prefer nodes that already have the pod's images (upstream
``pkg/scheduler/framework/plugins/imagelocality``).

For each init container, container and image volume (``volumes[].image.reference``) whose image
(name normalized: ``:latest`` added when it has no tag) is on the node, add the image size scaled
by its spread, ``num_nodes_having_it / total_nodes`` (an image on few nodes earns little, which
avoids piling pods onto one node). The sum is clamped to ``[23 MiB, 1000 MiB x N]`` with ``N`` =
number of init containers + containers, and mapped linearly to 0..100 (integer division).

As in v1.36, image volumes add to the sum but not to ``N`` (upstream fixed that after 1.36, in
kubernetes#138951). Total nodes = ``len(state.snapshot)``. Reads ``NodeInfo.image_states``
(filled by the snapshot); mutates nothing. No NormalizeScore.

``score_batch`` answers for every row of the node table (:mod:`extender.framework.columns`,
image columns read from the same ``image_states``) what ``score`` answers per node: the same
float spread and product per image, truncated to int64, summed in int64, then the same integer
thresholds.
"""

from __future__ import annotations

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState
from extender.framework.handle import Handle
from extender.framework.node_info import ImageStateSummary, NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.status import Status

NAME = "ImageLocality"
MB = 1024 * 1024
# About the 90th-percentile range of image sizes in registries.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ``:latest`` when there is no tag after the last ``/`` (a registry port is no tag).

    Digests (``name@sha256:...``) contain a ``:`` after the last ``/`` and are left alone.
    """
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(state: ImageStateSummary, total_nodes: int) -> int:
    spread = state.num_nodes / total_nodes
    return int(state.size * spread)  # float product truncated, as upstream's int64(float64)


def scaled_image_scores(
    sizes: np.ndarray, counts: np.ndarray, total_nodes: int
) -> np.ndarray | None:
    """:func:`scaled_image_score` elementwise: int -> float, true division, product, truncation
    toward zero, the same IEEE operations. Absent images (0, 0) give 0, as skipping them does.
    ``None`` if a product does not fit int64."""
    scaled = sizes.astype(np.float64) * (counts.astype(np.float64) / total_nodes)
    if len(scaled) and float(np.abs(scaled).max()) >= 2.0**62:
        return None
    return scaled.astype(np.int64)


def pod_images(pod: dict) -> list[str]:
    """Images of init containers, containers and image volumes, in that order."""
    spec = pod.get("spec") or {}
    images = [c.get("image") or "" for c in spec.get("initContainers") or ()]
    images += [c.get("image") or "" for c in spec.get("containers") or ()]
    for volume in spec.get("volumes") or ():
        image = volume.get("image")
        if image is not None:
            images.append(image.get("reference") or "")
    return images


def sum_image_scores(node_info: NodeInfo, pod: dict, total_nodes: int) -> int:
    total = 0
    for image in pod_images(pod):
        state = node_info.image_states.get(normalized_image_name(image))
        if state is not None:
            total += scaled_image_score(state, total_nodes)
    return total


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    if max_threshold == MIN_THRESHOLD:
        return 0  # unreachable for N >= 1; avoids a division by zero
    # Go integer division truncates toward zero; both operands are >= 0 here except for N == 0,
    # where the numerator is 0 anyway.
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def calculate_priorities(sum_scores: np.ndarray, num_containers: int) -> np.ndarray:
    """:func:`calculate_priority` elementwise (int64, ``//`` floors as Python's)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(
        sum_scores < MIN_THRESHOLD,
        MIN_THRESHOLD,
        np.where(sum_scores > max_threshold, max_threshold, sum_scores),
    )
    if max_threshold == MIN_THRESHOLD:
        return np.zeros(len(sum_scores), dtype=np.int64)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name = NAME

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        snapshot = state.snapshot
        if snapshot is None:
            return 0, Status.error("no snapshot in the cycle state", plugin=NAME)
        total_nodes = len(snapshot)
        if total_nodes == 0:
            return 0, None
        spec = pod.get("spec") or {}
        num_containers = len(spec.get("initContainers") or ()) + len(spec.get("containers") or ())
        return calculate_priority(
            sum_image_scores(node_info, pod, total_nodes), num_containers
        ), None

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for the table's ``rows``; ``None`` (score per node) without a snapshot
        or when an image's amounts are not int64-safe."""
        snapshot = state.snapshot
        if snapshot is None:
            return None  # per node: the error status
        total_nodes = len(snapshot)
        if total_nodes == 0:
            return np.zeros(len(rows), dtype=np.int64)
        spec = pod.get("spec") or {}
        num_containers = len(spec.get("initContainers") or ()) + len(spec.get("containers") or ())
        if MAX_NODE_SCORE * MAX_CONTAINER_THRESHOLD * num_containers >= 2**62:
            return None
        sums = np.zeros(len(rows), dtype=np.int64)
        images = pod_images(pod)
        for image in images:
            columns = table.image_states(normalized_image_name(image))
            if columns is None:
                return None
            sizes, counts = columns[0][rows], columns[1][rows]
            scaled = scaled_image_scores(sizes, counts, total_nodes)
            if scaled is None or (len(rows) and int(np.abs(scaled).max()) * len(images) >= 2**62):
                return None
            sums += scaled
        return calculate_priorities(sums, num_containers)

    def score_extensions(self) -> None:
        return None
