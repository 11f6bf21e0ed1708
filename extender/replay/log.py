"""The replay log: what happened in one replay, in virtual time, as one JSON-able dict that
the metrics read (``extender.replay.metrics``) whoever wrote it (the virtual-time engine, or
the live replay against a real cluster).

Version 1::

    {"version": 1, "policy", "config", "seed", "trace": {"name", "source", "gpuMapping"},
     "nodes": [{"name", "cpu" (milli), "memory" (bytes), "labels",
                "gpus": [{"id": "<node>/<device>", "model", "milli": 1000}]}],
     "pods": {"<ns>/<name>": {"cpu", "memory", "gpus", "gpuMilli", "owner", "arrival"}},
     "events": [[t, "arrive", key], [t, "bind", key, node, [[gpu id, milli], ...]],
                [t, "fail", key], [t, "preempt", key, node, preemptor],
                [t, "leave", key, node, "completed" | "end"], [t, "abandon", key]],
     "end", "wall_seconds", "cycles"}

A binding's GPUs are the devices its ResourceClaims were allocated with their consumed
``share`` (the DRA mapping), or, for whole GPUs asked as the extended resource
``nvidia.com/gpu``, the lowest-numbered free GPUs of the node as a device plugin would hand
them out, each 1000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from extender.framework.quantity import milli_value
from extender.framework.resources import Resource, pod_requests

from .gpus import GPU_MILLI as FULL
from .gpus import GPU_MODEL_LABEL, GPU_RESOURCE, MODEL_ATTRIBUTE, SHARE
from .trace import Trace

LOG_VERSION = 1


def pod_shape(pod: dict, claims: list[dict]) -> dict[str, Any]:
    """A pod's requests for the log: CPU (milli), memory (bytes), GPUs, the per-GPU share and
    the GPU models it accepts (``gpuModel``: ``"A|B"``; ``None``: any)."""
    requests = pod_requests(pod)
    gpus = requests.scalar.get(GPU_RESOURCE, 0)
    milli = FULL if gpus else 0
    models = _affinity_models(pod)
    for claim in claims:
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            exactly = request.get("exactly") or request
            count = int(exactly.get("count") or 1)
            share = ((exactly.get("capacity") or {}).get("requests") or {}).get(SHARE)
            gpus += count
            milli = max(milli, milli_value(share) // 1000 if share is not None else FULL)
            for selector in exactly.get("selectors") or ():
                models += _selector_models((selector.get("cel") or {}).get("expression", ""))
    return {
        "cpu": requests.milli_cpu,
        "memory": requests.memory,
        "gpus": gpus,
        "gpuMilli": milli,
        "gpuModel": "|".join(models) or None,
    }


def _affinity_models(pod: dict) -> list[str]:
    """The models a required node affinity on the model label admits (the extended mapping)."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return [
        value
        for term in required.get("nodeSelectorTerms") or ()
        for expression in term.get("matchExpressions") or ()
        if expression.get("key") == GPU_MODEL_LABEL and expression.get("operator") == "In"
        for value in expression.get("values") or ()
    ]


def _selector_models(expression: str) -> list[str]:
    """The models named by a model selector as :func:`extender.replay.gpus.model_selector`
    writes it (``...model == "A"`` or ``...model in ["A", "B"]``)."""
    _, found, rest = expression.partition(f".{MODEL_ATTRIBUTE}")
    return re.findall(r'"([^"]+)"', rest) if found else []


def _owner(pod: dict) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller", True):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return None


@dataclass
class ReplayLog:
    head: dict[str, Any]
    nodes: list[dict] = field(default_factory=list)
    pods: dict[str, dict] = field(default_factory=dict)
    events: list[list] = field(default_factory=list)
    # node -> GPU ids in order, and the whole GPUs taken through the extended resource.
    _gpu_ids: dict[str, list[str]] = field(default_factory=dict)
    _taken: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> gpu id -> pod

    @classmethod
    def start(cls, trace: Trace, *, policy: str, config: str, seed: int) -> ReplayLog:
        meta = trace.metadata
        return cls(
            {
                "version": LOG_VERSION,
                "policy": policy,
                "config": config,
                "seed": seed,
                "trace": {
                    "name": meta.get("name", ""),
                    "source": meta.get("source", ""),
                    "gpuMapping": meta.get("gpuMapping", ""),
                },
            }
        )

    def nodes_from(self, nodes: list[dict], objects: list[dict]) -> None:
        devices: dict[str, list[dict]] = {}
        for obj in objects:
            if obj.get("kind") != "ResourceSlice":
                continue
            spec = obj.get("spec") or {}
            node_name = str(spec.get("nodeName") or "")
            for device in spec.get("devices") or ():
                attributes = device.get("attributes") or {}
                model = (attributes.get("model") or {}).get("string", "")
                capacity = ((device.get("capacity") or {}).get(SHARE) or {}).get("value")
                devices.setdefault(node_name, []).append(
                    {
                        "id": f"{node_name}/{device['name']}",
                        "model": model,
                        "milli": milli_value(capacity) // 1000 if capacity else FULL,
                    }
                )
        for node in nodes:
            meta, status = node.get("metadata") or {}, node.get("status") or {}
            name = meta["name"]
            allocatable = Resource.from_list(status.get("allocatable") or {})
            gpus = devices.get(name)
            if gpus is None:
                model = (meta.get("labels") or {}).get(GPU_MODEL_LABEL, "")
                count = allocatable.scalar.get(GPU_RESOURCE, 0)
                gpus = [
                    {"id": f"{name}/gpu-{i}", "model": model, "milli": FULL} for i in range(count)
                ]
            self._gpu_ids[name] = [g["id"] for g in gpus]
            self.nodes.append(
                {
                    "name": name,
                    "cpu": allocatable.milli_cpu,
                    "memory": allocatable.memory,
                    "labels": meta.get("labels") or {},
                    "gpus": gpus,
                }
            )

    def arrived(self, t: float, key: str, pod: dict, claims: list[dict]) -> None:
        self.pods.setdefault(key, {**pod_shape(pod, claims), "owner": _owner(pod), "arrival": t})
        self.events.append([t, "arrive", key])

    def bound(self, t: float, key: str, node: str, pod: dict, claims: list[dict]) -> None:
        gpus: list[list] = []
        for claim in claims:
            allocation = (claim.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or ():
                share = (result.get("consumedCapacity") or {}).get(SHARE)
                milli = milli_value(share) // 1000 if share is not None else FULL
                gpus.append([f"{node}/{result.get('device')}", milli])
        wanted = pod_requests(pod).scalar.get(GPU_RESOURCE, 0)
        if wanted and not gpus:
            taken = self._taken.setdefault(node, {})
            free = [g for g in self._gpu_ids.get(node, ()) if g not in taken]
            for gpu in free[:wanted]:
                taken[gpu] = key
                gpus.append([gpu, FULL])
        self.events.append([t, "bind", key, node, gpus])

    def _release(self, key: str, node: str) -> None:
        taken = self._taken.get(node)
        if taken:
            for gpu in [g for g, owner in taken.items() if owner == key]:
                del taken[gpu]

    def failed(self, t: float, key: str) -> None:
        self.events.append([t, "fail", key])

    def preempted(self, t: float, key: str, node: str, preemptor: str = "") -> None:
        self._release(key, node)
        self.events.append([t, "preempt", key, node, preemptor])

    def left(self, t: float, key: str, node: str, why: str) -> None:
        self._release(key, node)
        self.events.append([t, "leave", key, node, why])

    def abandoned(self, t: float, key: str) -> None:
        self.events.append([t, "abandon", key])

    def finish(self, *, end: float, wall_seconds: float, cycles: int) -> dict:
        return {
            **self.head,
            "nodes": self.nodes,
            "pods": self.pods,
            "events": self.events,
            "end": end,
            "wall_seconds": round(wall_seconds, 3),
            "cycles": cycles,
        }
