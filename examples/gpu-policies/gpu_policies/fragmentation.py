"""GPUFragmentation: fragmentation gradient descent (FGD), Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23.

Contract (what a scheduler running this plugin can rely on):

* **Task types.** A pod's task type is ``(cpu, gpus, milli, models, memory)``: its CPU
  request (milli), how many GPUs it asks, the milli-GPUs of each (1000: whole GPUs), the GPU
  models it accepts (empty: any) and its memory request (bytes), read by
  :mod:`gpu_policies.gpus` in either mapping (extended resource ``nvidia.com/gpu``, or DRA
  devices with a consumable ``share``). The workload is a
  distribution ``p`` over task types: the ``taskTypes`` of the args if given, else learnt from
  the pods the plugin has seen: every pod at PreFilter (once per UID, whether it fits or not)
  and, at the first cycle, the pods already on the nodes. The ``maxTaskTypes`` most frequent
  types are kept (ties: in the order first seen), their frequencies normalized to sum 1; the
  learnt distribution is refreshed whenever the number of pods seen has grown by 5 % (and at
  each of the first 20 pods).
* **Fragmentation of a node** (the paper's definition): for a task type ``m``, the node's GPU
  capacity that ``m`` cannot use, ``F(n, m)``: all its free milli-GPUs when ``m`` asks no GPU,
  when the node's model is not one ``m`` accepts, or when ``m`` does not fit on the node (not
  enough free CPU or memory, or fewer than ``gpus`` GPUs with ``milli`` free each); otherwise
  the free milli-GPUs of the GPUs with less than ``milli`` free. The node's expected
  fragmentation is ``F(n) = sum over m of p(m) * F(n, m)``. A node without GPUs has none.
  Memory is checked as well as CPU, as the replay's fragmentation metric does
  (``extender/replay/metrics.py``; the paper's simulator checks CPU only).
* **Score**: ``F(n) - F(n + pod)``, minus the increase of the node's expected fragmentation
  when the pod is placed on it (its CPU taken, its GPUs taken from the GPUs the allocator
  would give it: the first that fit in device order). **NormalizeScore** maps the feasible
  nodes' values linearly onto 0..100 (the least increase 100, the largest 0; all equal: 100).
  A node where the pod's GPUs do not fit scores 0 (Filter normally removed it). A CPU-only pod
  is scored too: its CPU may leave a GPU node's GPUs stranded, so it goes where that costs
  least (a node without GPUs costs nothing).
* **PreFilter** only records the pod's task type; it never rejects (so no queueing hints:
  ``events_to_register`` is empty). No Filter: the fit is NodeResourcesFit's (extended
  resource) or DynamicResources' (DRA).

Args (``pluginConfig``), validated by :class:`GPUFragmentationArgs` when the config loads:
where the GPUs are (:class:`~gpu_policies.gpus.GPUArgs`), ``maxTaskTypes`` (default 64) and
``taskTypes``: a fixed distribution, a list of ``{cpu: "4", memory: "16Gi", gpus: 1,
gpuMilli: 500, models: ["V100M32"], weight: 0.3}`` (``cpu`` and ``memory`` quantities,
default 0; ``gpus`` default 0;
``gpuMilli`` 1..1000, default 1000; ``models`` default any; ``weight`` > 0, default 1;
weights are normalized).

Differences from the paper's simulator (``hkust-adsl/kubernetes-scheduler-simulator``,
``pkg/simulator/plugin/fgd_score.go``): it maps the decrease through a sigmoid and, for a
shared pod, scores the best GPU of the node (and then binds the pod there); a Kubernetes
Score plugin does not choose the device, so the GPU the allocator would pick is scored. The
learnt distribution is the seen pods', not the whole trace's known in advance.

Reads ``reads = (PODS, RESOURCE_SLICES, RESOURCE_CLAIMS)``. Imports only
``extender.framework``. State across cycles: the task-type counts (guarded by a lock), a memo
of node fragmentation values (cleared when the distribution changes), the parsed slices and
nodes' GPUs (:class:`~gpu_policies.gpus.GPUView`); within a cycle, nodes of one GPU shape and
CPU bracket are scored once.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter
from dataclasses import dataclass, field

from marshmallow import Schema, ValidationError, fields, validate, validates

from extender.framework import (
    MAX_NODE_SCORE,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ClusterEventWithHint,
    CycleState,
    Handle,
    Lister,
    NodeInfo,
    NodeScore,
    PodInfo,
    Status,
)

from .gpus import (
    MILLI,
    Device,
    GPUArgs,
    GPUConfig,
    GPUView,
    NodeGPUs,
    PodGPUs,
    memory_bytes,
    milli_units,
    pod_gpus,
)

STATE_KEY = "PreScoreGPUFragmentation"
DEFAULT_MAX_TASK_TYPES = 64
# The learnt distribution is derived again when the pods seen grew by this factor.
REFRESH_GROWTH = 1.05
# A Score value no real decrease reaches: "the pod's GPUs do not fit on this node".
UNFIT = -(2**62)
MEMO_LIMIT = 200_000


@dataclass(frozen=True)
class TaskType:
    """One kind of pod: CPU milli, GPUs, milli-GPUs of each, accepted models (empty: any)."""

    cpu: int
    gpus: int
    milli: int
    models: frozenset[str] = frozenset()
    memory: int = 0


class TaskTypeArgs(Schema):
    cpu = fields.Raw(load_default="0")
    memory = fields.Raw(load_default="0")
    gpus = fields.Integer(load_default=0, validate=validate.Range(min=0, max=1024))
    gpu_milli = fields.Integer(
        data_key="gpuMilli", load_default=MILLI, validate=validate.Range(min=1, max=MILLI)
    )
    models = fields.List(fields.String(validate=validate.Length(min=1)), load_default=list)
    weight = fields.Float(load_default=1.0, validate=validate.Range(min=0, min_inclusive=False))

    @validates("cpu")
    def _cpu(self, value: object, **kwargs: object) -> None:
        parsed = None if isinstance(value, bool) else milli_units(value)
        if parsed is None:
            raise ValidationError(f"must be a quantity (e.g. 500m, 4): {value!r}")
        if parsed < 0:
            raise ValidationError("must not be negative")

    @validates("memory")
    def _memory(self, value: object, **kwargs: object) -> None:
        parsed = None if isinstance(value, bool) else memory_bytes(value)
        if parsed is None:
            raise ValidationError(f"must be a quantity (e.g. 512Mi, 16Gi): {value!r}")
        if parsed < 0:
            raise ValidationError("must not be negative")


class GPUFragmentationArgs(GPUArgs):
    """GPUFragmentation's args: where the GPUs are, the task types."""

    max_task_types = fields.Integer(
        data_key="maxTaskTypes",
        load_default=DEFAULT_MAX_TASK_TYPES,
        validate=validate.Range(min=1, max=4096),
    )
    task_types = fields.List(fields.Nested(TaskTypeArgs), data_key="taskTypes", load_default=None)


def task_type(pod: PodGPUs, cpu: int, memory: int = 0) -> TaskType:
    """The task type of a pod with this GPU demand, CPU (milli) and memory (bytes) request."""
    if not pod.wants_gpus:
        return TaskType(cpu, 0, 0, memory=memory)
    gpus = max(pod.count, len(pod.allocated), 1)
    # DRA shares are in the devices' units; read as milli-GPUs of a 1000-unit GPU here (the
    # mapping's), the node converts the pod's own demand with its devices' capacity.
    milli = MILLI if pod.units is None else max(1, min(MILLI, -(-pod.units // MILLI)))
    return TaskType(cpu, gpus, milli if pod.dra else pod.milli, pod.models, memory)


@dataclass(frozen=True)
class Distribution:
    """The task types and their probabilities, with what the fragmentation needs sorted."""

    types: tuple[TaskType, ...]
    weights: tuple[float, ...]

    @classmethod
    def of(cls, counts: dict[TaskType, float], limit: int) -> Distribution:
        # Most frequent first; ties keep the first-seen order (dicts keep insertion order).
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:limit]
        total = sum(w for _, w in ranked)
        if total <= 0:
            return cls((), ())
        return cls(tuple(t for t, _ in ranked), tuple(w / total for _, w in ranked))

    def cpu_thresholds(self) -> list[int]:
        return sorted({t.cpu for t in self.types})

    def memory_thresholds(self) -> list[int]:
        return sorted({t.memory for t in self.types})


def node_fragmentation(
    dist: Distribution, free: list[int], model: str, cpu_free: int, memory_free: int
) -> float:
    """``F(n)``: the expected free milli-GPUs the task types cannot use (module docstring)."""
    total = sum(free)
    if total <= 0:
        return 0.0
    frag = 0.0
    for kind, p in zip(dist.types, dist.weights, strict=True):
        if (
            kind.gpus == 0
            or (kind.models and model not in kind.models)
            or cpu_free < kind.cpu
            or memory_free < kind.memory
            or sum(1 for f in free if f >= kind.milli) < kind.gpus
        ):
            frag += p * total
        else:
            frag += p * sum(f for f in free if f < kind.milli)
    return frag


@dataclass
class _State:
    """Per cycle: the pod's demand and CPU, the DRA devices of each node, the distribution."""

    pod: PodGPUs
    cpu: int
    memory: int
    devices: dict[str, list[Device]]
    dist: Distribution
    claims: Lister
    # Nodes of one shape and CPU bracket score alike: shape, brackets -> score.
    memo: dict[tuple, int] = field(default_factory=dict)

    def clone(self) -> _State:
        return self  # read-only after PreScore


class GPUFragmentation:
    name = "GPUFragmentation"
    args_schema = GPUFragmentationArgs
    reads = (PODS, RESOURCE_SLICES, RESOURCE_CLAIMS)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.config = GPUConfig.from_args(args)
        self.handle = handle
        self.view = GPUView(self.config)
        self.limit: int = args.get("max_task_types") or DEFAULT_MAX_TASK_TYPES
        self._lock = threading.Lock()
        self._counts: Counter[TaskType] = Counter()
        self._seen: set[str] = set()
        self._seeded = False
        self._next_refresh = 1
        self._memo: dict[tuple, float] = {}
        self._thresholds: list[int] = []
        self._memory_thresholds: list[int] = []
        fixed = args.get("task_types")
        self.fixed = fixed is not None
        if fixed is not None:
            counts: dict[TaskType, float] = {}
            for entry in fixed:
                kind = TaskType(
                    milli_units(entry["cpu"]) or 0,
                    entry["gpus"],
                    entry["gpu_milli"] if entry["gpus"] else 0,
                    frozenset(entry["models"]),
                    memory_bytes(entry["memory"]) or 0,
                )
                counts[kind] = counts.get(kind, 0.0) + entry["weight"]
            self._set_distribution(Distribution.of(counts, self.limit))
        else:
            self._set_distribution(Distribution((), ()))

    # -- the distribution ---------------------------------------------------------------------

    def _set_distribution(self, dist: Distribution) -> None:
        self.dist = dist
        self._thresholds = dist.cpu_thresholds()
        self._memory_thresholds = dist.memory_thresholds()
        self._memo = {}

    def _record(self, uid: str, kind: TaskType) -> None:
        if uid in self._seen:
            return
        self._seen.add(uid)
        self._counts[kind] += 1

    def _observe(self, state: CycleState, pod: dict, kind: TaskType) -> None:
        """Count the pod (and, the first time, the pods on the nodes) and refresh the learnt
        distribution when it grew enough."""
        with self._lock:
            if not self._seeded:
                self._seeded = True
                claims = self.handle.lister(RESOURCE_CLAIMS)
                for info in state.snapshot or ():
                    for placed in info.pods:
                        demand = pod_gpus(placed.pod, claims, self.config, placed)
                        requests = placed.requests
                        placed_kind = task_type(demand, requests.milli_cpu, requests.memory)
                        self._record(placed.uid, placed_kind)
            meta = pod.get("metadata") or {}
            self._record(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}", kind)
            seen = sum(self._counts.values())
            if seen >= self._next_refresh:
                self._set_distribution(Distribution.of(dict(self._counts), self.limit))
                self._next_refresh = max(seen + 1, math.ceil(seen * REFRESH_GROWTH))

    # -- PreFilter ----------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[None, Status | None]:
        if not self.fixed:
            demand = pod_gpus(pod, self.handle.lister(RESOURCE_CLAIMS), self.config)
            requests = PodInfo(pod).requests
            self._observe(state, pod, task_type(demand, requests.milli_cpu, requests.memory))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # -- PreScore, Score, NormalizeScore ------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        self._prepare(state, pod)
        return None

    def _prepare(self, state: CycleState, pod: dict) -> _State:
        claims = self.handle.lister(RESOURCE_CLAIMS)
        demand = pod_gpus(pod, claims, self.config)
        requests = PodInfo(pod).requests
        if not self.fixed:  # PreFilter did it, unless the profile runs only PreScore and Score
            self._observe(state, pod, task_type(demand, requests.milli_cpu, requests.memory))
        devices = self.view.devices(self.handle.lister(RESOURCE_SLICES).list())
        data = _State(demand, requests.milli_cpu, requests.memory, devices, self.dist, claims)
        state.write(STATE_KEY, data)
        return data

    def _brackets(self, cpu: int, memory: int) -> tuple[int, int]:
        """F depends on the free CPU and memory only through which task types they hold."""
        return (
            bisect.bisect_right(self._thresholds, cpu),
            bisect.bisect_right(self._memory_thresholds, memory),
        )

    def _fragmentation(
        self, dist: Distribution, free: list[int], model: str, cpu: int, memory: int
    ) -> float:
        if not free or not any(free):
            return 0.0
        key = (self._brackets(cpu, memory), model, tuple(sorted(free)))
        memo = self._memo if dist is self.dist else {}
        value = memo.get(key)
        if value is None:
            value = node_fragmentation(dist, free, model, cpu, memory)
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[key] = value
        return value

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, None]:
        # PreScore left it; a profile that enables Score alone gets it here.
        data: _State = state.get(STATE_KEY) or self._prepare(state, pod)
        node: NodeGPUs = self.view.node(node_info, data.devices, data.claims)
        if not node.free:  # no GPU: no fragmentation, before or after; no room for GPUs
            return (UNFIT if data.pod.wants_gpus else 0), None
        key = None
        if not data.pod.allocated:
            key = (
                node.shape(),
                self._brackets(node.cpu_free, node.memory_free),
                self._brackets(node.cpu_free - data.cpu, node.memory_free - data.memory),
            )
            known = data.memo.get(key)
            if known is not None:
                return known, None
        value = self._score(data, node)
        if key is not None:
            data.memo[key] = value
        return value, None

    def _score(self, data: _State, node: NodeGPUs) -> int:
        if data.pod.wants_gpus:
            chosen = node.place(data.pod)
            if not chosen:
                return UNFIT
            free = node.after(data.pod, chosen)
        else:
            free = node.free
        before = self._fragmentation(
            data.dist, node.free, node.model, node.cpu_free, node.memory_free
        )
        after = self._fragmentation(
            data.dist,
            free,
            node.model,
            node.cpu_free - data.cpu,
            node.memory_free - data.memory,
        )
        return round(before - after)

    def score_extensions(self) -> GPUFragmentation:
        return self

    def normalize_score(
        self, state: CycleState, pod: dict, scores: list[NodeScore]
    ) -> Status | None:
        fitting = [s.score for s in scores if s.score != UNFIT]
        if not fitting:
            for entry in scores:
                entry.score = 0
            return None
        low, high = min(fitting), max(fitting)
        for entry in scores:
            if entry.score == UNFIT:
                entry.score = 0
            elif high == low:
                entry.score = MAX_NODE_SCORE
            else:
                entry.score = MAX_NODE_SCORE * (entry.score - low) // (high - low)
        return None

    # -- queueing hints -----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The plugin rejects no pod: no event makes one schedulable because of it."""
        return []
