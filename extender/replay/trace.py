"""The trace format, version 1: a workload to replay, as one JSON document.

A trace holds the cluster at its start (``nodes``: Node objects as the API serves them;
``objects``: every other object present from t=0, e.g. DeviceClasses, ResourceSlices,
Namespaces, PriorityClasses, ReplicaSets) and the pods that arrive, each with its arrival time
in seconds from the trace's start, the ResourceClaims created with it, how long it runs once
bound (``duration``; ``null``: to the end), when it is given up if still pending (``abandon``,
absolute; ``null``: never), the node it is already bound to when it is part of the initial
state (``node``), and what really happened to it (``recorded``). ``duration`` at the top is
the window's end: a replay stops there. A name ending in ``.gz`` is gzip-compressed.

:func:`load` and :func:`save` read and write it; :func:`parse` validates a decoded document.
Every problem is a :class:`TraceError` naming the field, e.g.
``pods[12].arrival: must be a number >= 0``. Pods are kept sorted by arrival (a stable sort:
pods arriving together keep their order). ``docs/replay.md`` documents the format.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

API_VERSION = "kube-extender.dev/v1"
KIND = "Trace"
VERSION = 1
GPU_MAPPINGS = ("dra", "extended", "none")


class TraceError(ValueError):
    """A trace that cannot be read or is not valid; the message names the field."""


@dataclass
class TracePod:
    """One pod of the trace: what is created at ``arrival`` and what happens to it."""

    arrival: float
    pod: dict
    claims: list[dict] = field(default_factory=list)
    duration: float | None = None
    abandon: float | None = None
    node: str | None = None
    recorded: dict = field(default_factory=lambda: {"node": None, "scheduled": None})

    @property
    def key(self) -> str:
        """``namespace/name``, the pod's key in a replay log."""
        meta = self.pod.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"

    def to_json(self) -> dict:
        return {
            "arrival": self.arrival,
            "pod": self.pod,
            "claims": self.claims,
            "duration": self.duration,
            "abandon": self.abandon,
            "node": self.node,
            "recorded": self.recorded,
        }


@dataclass
class Trace:
    """A trace: the cluster at t=0 and the pods that arrive, sorted by arrival."""

    metadata: dict
    duration: float
    nodes: list[dict] = field(default_factory=list)
    objects: list[dict] = field(default_factory=list)
    pods: list[TracePod] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def gpu_mapping(self) -> str:
        return str(self.metadata.get("gpuMapping") or "none")

    def to_json(self) -> dict:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "version": VERSION,
            "metadata": self.metadata,
            "duration": self.duration,
            "nodes": self.nodes,
            "objects": self.objects,
            "pods": [p.to_json() for p in sorted(self.pods, key=_arrival)],
        }


def _arrival(pod: TracePod) -> float:
    return pod.arrival


# --- reading and writing ---------------------------------------------------------------------


def load(path: str | Path) -> Trace:
    """The trace in ``path`` (gzip-compressed when the name ends in ``.gz``), validated."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (OSError, EOFError) as exc:  # unreadable, or not gzip (gzip.BadGzipFile is OSError)
        raise TraceError(f"{path}: cannot read: {exc}") from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"{path}: not JSON: {exc}") from None
    try:
        return parse(doc)
    except TraceError as exc:
        raise TraceError(f"{path}: {exc}") from None


def save(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` to ``path`` (gzip-compressed when the name ends in ``.gz``), after the
    same validation :func:`load` does, so a written trace always loads."""
    doc = trace.to_json()
    parse(doc)
    raw = orjson.dumps(doc)
    path = Path(path)
    if path.name.endswith(".gz"):
        # mtime 0: the same trace gives the same bytes.
        raw = gzip.compress(raw, compresslevel=6, mtime=0)
    path.write_bytes(raw)


# --- validation ------------------------------------------------------------------------------


def compress_arrivals(trace: Trace, factor: float, *, after: float = 0.0) -> Trace:
    """The trace with the pods arriving ``factor`` times as fast after time ``after``: each
    arrival and abandonment past ``after`` moves to ``after + (t - after) / factor``, durations
    stay, so about ``factor`` times as many pods run at once (the load-inflation of trace
    studies such as the FGD paper's, for a trace whose cluster is mostly idle). The window's
    end moves as an arrival would: pods that ran to the end of the recording are still
    running at the end of the compressed one."""
    if not (math.isfinite(factor) and factor > 0):
        raise TraceError(f"factor: must be a number > 0, not {factor!r}")

    def moved(t: float) -> float:
        return t if t <= after else after + (t - after) / factor

    pods = []
    for entry in trace.pods:
        abandon = None if entry.abandon is None else moved(entry.abandon)
        pods.append(
            TracePod(
                arrival=moved(entry.arrival),
                pod=entry.pod,
                claims=entry.claims,
                duration=entry.duration,
                abandon=abandon,
                node=entry.node,
                recorded=entry.recorded,
            )
        )
    metadata = {**trace.metadata, "arrivalsCompressed": {"factor": factor, "after": after}}
    return Trace(
        metadata=metadata,
        duration=moved(trace.duration),
        nodes=trace.nodes,
        objects=trace.objects,
        pods=pods,
    )


def without_departures(trace: Trace) -> Trace:
    """The trace with every pod running to the end and none abandoned: the cluster fills up
    in the trace's order, as in the FGD paper's experiments (its pods are submitted until
    the cluster is full, never leaving), which ask how much of the cluster a policy can
    allocate before pods no longer fit."""
    pods = [
        TracePod(
            arrival=entry.arrival,
            pod=entry.pod,
            claims=entry.claims,
            duration=None,
            abandon=None,
            node=entry.node,
            recorded=entry.recorded,
        )
        for entry in trace.pods
    ]
    metadata = {**trace.metadata, "departures": False}
    return Trace(metadata, trace.duration, trace.nodes, trace.objects, pods)


def parse(doc: Any) -> Trace:
    """A decoded trace document as a :class:`Trace`; :class:`TraceError` naming the first
    invalid field."""
    if not isinstance(doc, dict):
        raise TraceError("must be a JSON object (a Trace)")
    if doc.get("apiVersion") != API_VERSION:
        raise TraceError(f"apiVersion: must be {API_VERSION!r}, not {doc.get('apiVersion')!r}")
    if doc.get("kind") != KIND:
        raise TraceError(f"kind: must be {KIND!r}, not {doc.get('kind')!r}")
    if doc.get("version") != VERSION:
        raise TraceError(
            f"version: {doc.get('version')!r} is not supported (this kube-extender reads "
            f"version {VERSION})"
        )
    metadata = _object(doc.get("metadata"), "metadata")
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        raise TraceError("metadata.name: must be a non-empty string")
    mapping = metadata.get("gpuMapping", "none")
    if mapping not in GPU_MAPPINGS:
        raise TraceError(f"metadata.gpuMapping: must be one of {', '.join(GPU_MAPPINGS)}")
    duration = _number(doc.get("duration"), "duration")

    nodes = _list(doc.get("nodes"), "nodes")
    node_names: set[str] = set()
    for i, node in enumerate(nodes):
        name = _named(node, f"nodes[{i}]")
        if name in node_names:
            raise TraceError(f"nodes[{i}].metadata.name: {name!r} appears twice")
        node_names.add(name)
        status = _object(node.get("status", {}), f"nodes[{i}].status")
        _object(status.get("allocatable", {}), f"nodes[{i}].status.allocatable")

    objects = _list(doc.get("objects", []), "objects")
    for i, obj in enumerate(objects):
        _named(obj, f"objects[{i}]")
        if not isinstance(obj.get("kind"), str) or not obj["kind"]:
            raise TraceError(f"objects[{i}].kind: must be a non-empty string")

    pods = [
        _trace_pod(p, f"pods[{i}]", node_names, duration)
        for i, p in enumerate(_list(doc.get("pods"), "pods"))
    ]
    keys: set[str] = set()
    for i, pod in enumerate(pods):
        if pod.key in keys:
            raise TraceError(f"pods[{i}].pod.metadata: {pod.key!r} appears twice")
        keys.add(pod.key)
    pods.sort(key=_arrival)
    return Trace(metadata=metadata, duration=duration, nodes=nodes, objects=objects, pods=pods)


def _trace_pod(entry: Any, where: str, node_names: set[str], end: float) -> TracePod:
    entry = _object(entry, where)
    arrival = _number(entry.get("arrival"), f"{where}.arrival")
    if arrival > end:
        raise TraceError(f"{where}.arrival: {arrival} is after the trace's duration {end}")
    pod = _object(entry.get("pod"), f"{where}.pod")
    _named(pod, f"{where}.pod")
    if (pod.get("spec") or {}).get("nodeName"):
        raise TraceError(
            f"{where}.pod.spec.nodeName: must be unset (a pod bound from the start names its "
            f"node in {where}.node)"
        )
    claims = _list(entry.get("claims", []), f"{where}.claims")
    for j, claim in enumerate(claims):
        _named(claim, f"{where}.claims[{j}]")
    duration = _optional_number(entry.get("duration"), f"{where}.duration")
    abandon = _optional_number(entry.get("abandon"), f"{where}.abandon")
    if abandon is not None and abandon < arrival:
        raise TraceError(f"{where}.abandon: {abandon} is before the pod's arrival {arrival}")
    node = entry.get("node")
    if node is not None and (not isinstance(node, str) or node not in node_names):
        raise TraceError(f"{where}.node: {node!r} is not a node of the trace")
    recorded = _object(entry.get("recorded", {}), f"{where}.recorded")
    recorded_node = recorded.get("node")
    if recorded_node is not None and not isinstance(recorded_node, str):
        raise TraceError(f"{where}.recorded.node: must be a node name or null")
    scheduled = _optional_number(recorded.get("scheduled"), f"{where}.recorded.scheduled")
    return TracePod(
        arrival=arrival,
        pod=pod,
        claims=claims,
        duration=duration,
        abandon=abandon,
        node=node,
        recorded={"node": recorded_node, "scheduled": scheduled},
    )


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise TraceError(f"{where}: must be an object")
    return value


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise TraceError(f"{where}: must be a list")
    return value


def _named(obj: Any, where: str) -> str:
    """The object's ``metadata.name``, which must be a non-empty string."""
    obj = _object(obj, where)
    name = _object(obj.get("metadata"), f"{where}.metadata").get("name")
    if not isinstance(name, str) or not name:
        raise TraceError(f"{where}.metadata.name: must be a non-empty string")
    return name


def _number(value: Any, where: str) -> float:
    """A finite number >= 0 (not a bool) as a float."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise TraceError(f"{where}: must be a number >= 0")
    return float(value)


def _optional_number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise TraceError(f"{where}: must be a number >= 0 or null")
    return float(value)
