"""Alibaba's ``cluster-trace-gpu-v2023`` ("openb", the trace of the ATC'23 paper "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent") as a
trace (:mod:`extender.replay.trace`).

Inputs: a node list (``openb_node_list_*.csv``: ``sn,cpu_milli,memory_mib,gpu,model``) and a
pod list (``openb_pod_list_*.csv``: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,
qos,pod_phase,creation_time,deletion_time,scheduled_time``; times in seconds). The files are
pinned at a commit of ``alibaba/clusterdata`` with their sha256 (:data:`SHA256`);
:func:`ensure` finds them in the cache or downloads them.

What each pod becomes:

* ``arrival`` = ``creation_time`` - the earliest ``creation_time`` of the imported pods.
* A scheduled pod (``scheduled_time`` set): ``duration`` = ``deletion_time`` -
  ``scheduled_time`` (it runs that long once bound, wherever and whenever the replay binds it),
  ``abandon`` null (a pod the replay cannot place stays pending to the end), ``recorded`` =
  ``{"node": null, "scheduled": scheduled_time offset}`` (openb does not say which node).
* A pod never scheduled (``scheduled_time`` empty, ``pod_phase`` Pending): ``abandon`` =
  its ``deletion_time`` offset (its owner gave up then: if the replay has not placed it by
  then, it is deleted as "abandoned"), ``duration`` null (the trace does not say how long it
  would have run: placed by a better policy, it runs to the end of the window).
* A pod list without time columns (the ``multigpu*`` lists): pods arrive one a second in file
  order and run to the end.
* ``duration`` of the trace: the last time in the imported rows (creation, scheduling or
  deletion), as an offset.
* ``qos`` (LS, BE, Burstable, Guaranteed) is kept as the label ``kube-extender.dev/qos`` and
  ``pod_phase`` as the annotation ``kube-extender.dev/openb-phase``: no PriorityClass, so
  nothing preempts anything unless a policy adds priorities.
* Owners: openb has none; each pod gets a ReplicaSet owner per shape (cpu, memory, GPUs,
  ``gpu_milli``, ``gpu_spec``), ``openb-shape-<k>`` numbered by first arrival, with the label
  ``kube-extender.dev/workload`` its selector matches. The ReplicaSets are objects of the
  trace, so PodTopologySpread's system default constraints spread each shape over nodes.
* Requests: cpu ``<cpu_milli>m``, memory ``<memory_mib>Mi``; GPUs per ``gpu_mapping``
  (:mod:`extender.replay.gpus`): ``extended`` asks ``num_gpu`` whole ``nvidia.com/gpu`` (a
  shared GPU becomes a whole one; ``gpu_spec`` a required node affinity on the model label);
  ``dra`` gives the pod a ResourceClaim for ``num_gpu`` GPUs with ``share`` = ``gpu_milli``
  each (``gpu_spec`` a CEL selector on the model).

Nodes: Node objects named by ``sn`` with ``kubernetes.io/hostname``, ``kubernetes.io/os``,
``kubernetes.io/arch`` and (GPU nodes) ``kube-extender.dev/gpu-model`` labels, allocatable =
capacity = cpu, memory, 110 pods and, in the extended mapping, ``nvidia.com/gpu``; in the DRA
mapping each GPU node has a ResourceSlice instead. What each mapping loses: ``docs/replay.md``.

Bad input is an :class:`OpenbError` naming the file, the row (as a spreadsheet counts: the
header is row 1) and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from extender.replay import gpus
from extender.replay.importers import fetch
from extender.replay.trace import Trace, TracePod

REPOSITORY = "alibaba/clusterdata"
COMMIT = "7a6c496e4f4b6ce6150be8f881cb051bf2abff42"
URL = "https://raw.githubusercontent.com/{repository}/{commit}/cluster-trace-gpu-v2023/csv/{file}"

# The pinned files (at COMMIT) and their sha256, as ``sha256sum`` prints them.
_PINNED = """
5a85c2af79c66a1efff8bbcbda430400aae56d8431370d738480967e1a9c6b15  openb_node_list_all_node.csv
2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5  openb_node_list_gpu_node.csv
1bc3fd9ee5c1468ccd018f624d9222746e08d59f963f66b925804734271c0eaa  openb_pod_list_cpu0.csv
8ed554026d041b15ff21ddc104d9a21dbd9a93c496262fa23ef7b5be27e220dc  openb_pod_list_cpu037.csv
747f43247bffc2b0bb081d7f61f0705ca8d390dafc0b647e642c92f3baf3ba1e  openb_pod_list_cpu050.csv
f8a2b031461b54d7b9f06d55473c2371eb3357b78a255c646bdca5e0833a8a2f  openb_pod_list_cpu072.csv
bec1c33fbdde61fd463877534ec79b393aec73e1cbb22d55fab9f166ac480982  openb_pod_list_cpu100.csv
b7e9d8a1a601da84d6e0b4110b19ef5001be5e4796d33e7b82f166ba95161f87  openb_pod_list_cpu200.csv
87bebd4d012faa8305ce1fd82737f51cf03361aac28b75d42e34aa656d7f4ee0  openb_pod_list_cpu235.csv
134c21ff96d57533df8a37b67632972884fec9396e77cd0898ddc370cc8e607d  openb_pod_list_cpu250.csv
76528825f40ee662cb098b3b6e683c1efd9f87a0c8af7e628df1f32c639636d1  openb_pod_list_cpu300.csv
1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8  openb_pod_list_default.csv
12dbc07d6a49bf8641e2275a2ff5bf7be74b5df7d148d531e135b140b95f9a3d  openb_pod_list_gpushare100.csv
9be2d0efb52e242c32e23dd184cc5fcc1983478c6c9c02cbb6b4b62925c0ffcd  openb_pod_list_gpushare20.csv
d83ce79a4eb6987524bedbb0c65e41aed3a36bf6c1b78b86234c3687a07e1d40  openb_pod_list_gpushare40.csv
d31809628128a1f24491086eda4af3e23882b9213d3ef57a56ee2d1af69492fe  openb_pod_list_gpushare60.csv
88b6649369ced40d0fde287d2498ea61ff4b05fccba8bdc95daf6042f2f8431e  openb_pod_list_gpushare80.csv
8f1c0ef7e4e511e982bd2818898ba22ee6d273bf5fce124b7ace285b5928cf4e  openb_pod_list_gpuspec05.csv
2dc7e4cb9480484f08539720b433a9ec9ab5d76b396f3f7557c53a2ff78a7611  openb_pod_list_gpuspec10.csv
6b9b89ab8913c1c074e994e98f548cf1a872fc5f76f2442ca8cd514a478b00a9  openb_pod_list_gpuspec20.csv
9d030679a2ccd7e27a7ec9ff15baff34480d22a0012515691fc187e3f35ee68c  openb_pod_list_gpuspec25.csv
eca4f746db1e5b25864ad021b55ece3943e101a3ebd4574d09dcb95c46117652  openb_pod_list_gpuspec33.csv
d9ec6f6c74fb980cc0b81239470c6353fceea077ea9abd610003b604c7cc2b01  openb_pod_list_multigpu20.csv
a5e479c6444b1d83eef848159cf00c3cfa13441b2d1e2c113c391b91f1cc5b11  openb_pod_list_multigpu30.csv
32c9e8731ca07ef96108aa65f2a289bb9aacb47f642ed9e3789f99b242df60eb  openb_pod_list_multigpu40.csv
206f2f5959db30ecb7c44e7f13197c8ec50b7a35558ad3777cc3662ef0fe5373  openb_pod_list_multigpu50.csv
"""
SHA256 = {name: digest for digest, name in (line.split() for line in _PINNED.split("\n") if line)}
NODE_PREFIX, POD_PREFIX = "openb_node_list_", "openb_pod_list_"
NODE_LISTS = tuple(n[len(NODE_PREFIX) : -4] for n in SHA256 if n.startswith(NODE_PREFIX))
POD_LISTS = tuple(n[len(POD_PREFIX) : -4] for n in SHA256 if n.startswith(POD_PREFIX))

NAMESPACE = "default"
QOS_LABEL = "kube-extender.dev/qos"
WORKLOAD_LABEL = "kube-extender.dev/workload"
PHASE_ANNOTATION = "kube-extender.dev/openb-phase"
MAX_PODS = "110"  # the kubelet's default maxPods
IMAGE = "registry.k8s.io/pause:3.10"

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIME_COLUMNS = ("creation_time", "deletion_time", "scheduled_time")

# Object names (DNS-1123 subdomains, lower case) and GPU models (label values, safe in CEL).
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_MODEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


class OpenbError(ValueError):
    """Bad openb input: the message names the file, row and column (or the file)."""


def node_list_file(name: str) -> str:
    return f"{NODE_PREFIX}{name}.csv"


def pod_list_file(name: str) -> str:
    return f"{POD_PREFIX}{name}.csv"


def ensure(
    files: list[str],
    directory: Path | None = None,
    *,
    fetch_missing: bool = False,
    get: Callable[[str], bytes] = fetch.download,
) -> list[Path]:
    """The pinned openb ``files`` in ``directory`` (default: the cache,
    ``$KUBE_EXTENDER_CACHE/traces/openb``), sha256-checked, downloaded from the pinned commit
    when missing and ``fetch_missing``. :class:`fetch.FetchError` otherwise."""
    unknown = [f for f in files if f not in SHA256]
    if unknown:
        raise fetch.FetchError(f"{unknown[0]}: not a file of the openb trace")
    pinned = {
        f: (URL.format(repository=REPOSITORY, commit=COMMIT, file=f), SHA256[f]) for f in files
    }
    return fetch.ensure(
        directory or fetch.trace_cache("openb"), pinned, fetch=fetch_missing, get=get
    )


# --- reading the CSV files --------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRow:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True)
class PodRow:
    row: int  # in the file, the header being row 1
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...]
    qos: str
    phase: str
    created: float | None
    deleted: float | None
    scheduled: float | None


class _Rows:
    """The rows of one CSV file as dicts, with the file's name and the row number for
    errors."""

    def __init__(self, path: Path, required: tuple[str, ...]) -> None:
        self.path = path
        try:
            self.text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise OpenbError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise OpenbError(f"{path}: cannot read: {exc}") from None
        self.reader = csv.reader(io.StringIO(self.text, newline=""))
        try:
            header = next(self.reader)
        except StopIteration:
            raise OpenbError(f"{path}: empty (no header row)") from None
        except csv.Error as exc:
            raise OpenbError(f"{path}, row 1: {exc}") from None
        self.columns = [c.strip() for c in header]
        missing = [c for c in required if c not in self.columns]
        if missing:
            raise OpenbError(
                f"{path}: missing column(s) {', '.join(missing)} (the header has "
                f"{','.join(self.columns)})"
            )
        self.row = 1

    def __iter__(self) -> Iterator[dict[str, str]]:
        while True:
            try:
                values = next(self.reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise OpenbError(f"{self.path}, row {self.reader.line_num}: {exc}") from None
            self.row = self.reader.line_num
            if not values or all(not v.strip() for v in values):
                continue
            if len(values) != len(self.columns):
                raise OpenbError(
                    f"{self.path}, row {self.row}: {len(values)} values for "
                    f"{len(self.columns)} columns"
                )
            yield {c: v.strip() for c, v in zip(self.columns, values, strict=True)}

    def error(self, column: str, value: str, problem: str) -> OpenbError:
        return OpenbError(f"{self.path}, row {self.row}, column {column}: {value!r} {problem}")

    def whole(self, values: dict[str, str], column: str) -> int:
        value = values[column]
        if not value.isdigit():
            raise self.error(column, value, "is not a whole number >= 0")
        return int(value)

    def time(self, values: dict[str, str], column: str) -> float | None:
        value = values.get(column, "")
        if value == "":
            return None
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not math.isfinite(seconds) or seconds < 0:
            raise self.error(column, value, "is not a time in seconds >= 0")
        return seconds

    def name(self, values: dict[str, str], column: str) -> str:
        value = values[column]
        if not _NAME.fullmatch(value):
            raise self.error(column, value, "is not a valid name (lower-case DNS-1123)")
        return value

    def unique_name(self, values: dict[str, str], column: str, seen: set[str]) -> str:
        """``name``, refused when an earlier row had it (added to ``seen``)."""
        value = self.name(values, column)
        if value in seen:
            raise self.error(column, value, "appears twice")
        seen.add(value)
        return value

    def models(self, values: dict[str, str], column: str) -> tuple[str, ...]:
        value = values.get(column, "")
        if not value:
            return ()
        models = tuple(value.split("|"))
        for model in models:
            if not _MODEL.fullmatch(model):
                raise self.error(column, value, "is not GPU models separated by '|'")
        return models


def read_nodes(path: Path) -> list[NodeRow]:
    rows = _Rows(path, NODE_COLUMNS)
    nodes: list[NodeRow] = []
    seen: set[str] = set()
    for values in rows:
        name = rows.unique_name(values, "sn", seen)
        count = rows.whole(values, "gpu")
        model = values["model"]
        if count and not _MODEL.fullmatch(model):
            raise rows.error("model", model, "is not a GPU model (required when gpu > 0)")
        cpu = rows.whole(values, "cpu_milli")
        nodes.append(NodeRow(name, cpu, rows.whole(values, "memory_mib"), count, model))
    if not nodes:
        raise OpenbError(f"{path}: no nodes")
    return nodes


def read_pods(path: Path) -> list[PodRow]:
    rows = _Rows(path, POD_COLUMNS)
    timed = "creation_time" in rows.columns
    if timed and not all(c in rows.columns for c in TIME_COLUMNS):
        missing = [c for c in TIME_COLUMNS if c not in rows.columns]
        raise OpenbError(f"{path}: missing column(s) {', '.join(missing)}")
    pods: list[PodRow] = []
    seen: set[str] = set()
    for values in rows:
        name = rows.unique_name(values, "name", seen)
        num_gpu = rows.whole(values, "num_gpu")
        gpu_milli = rows.whole(values, "gpu_milli")
        if num_gpu and not 1 <= gpu_milli <= gpus.GPU_MILLI:
            raise rows.error("gpu_milli", values["gpu_milli"], "is not in 1..1000 (num_gpu > 0)")
        created = deleted = scheduled = None
        if timed:
            created = rows.time(values, "creation_time")
            if created is None:
                raise rows.error("creation_time", "", "is required")
            deleted = rows.time(values, "deletion_time")
            scheduled = rows.time(values, "scheduled_time")
            if scheduled is not None and scheduled < created:
                raise rows.error(
                    "scheduled_time", values["scheduled_time"], "is before creation_time"
                )
            if deleted is not None and deleted < max(created, scheduled or 0.0):
                raise rows.error(
                    "deletion_time", values["deletion_time"], "is before creation or scheduling"
                )
        pods.append(
            PodRow(
                row=rows.row,
                name=name,
                cpu_milli=rows.whole(values, "cpu_milli"),
                memory_mib=rows.whole(values, "memory_mib"),
                num_gpu=num_gpu,
                gpu_milli=gpu_milli if num_gpu else 0,
                models=rows.models(values, "gpu_spec") if num_gpu else (),
                qos=values.get("qos", ""),
                phase=values.get("pod_phase", ""),
                created=created,
                deleted=deleted,
                scheduled=scheduled,
            )
        )
    return pods


# --- building the trace -----------------------------------------------------------------------


def _uid(kind: str, name: str) -> str:
    """A stable uid: the same import gives the same trace."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"openb/{kind}/{name}"))


def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def node_object(row: NodeRow, mapping: str) -> dict:
    labels = {
        "kubernetes.io/hostname": row.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    resources = {"cpu": _cpu(row.cpu_milli), "memory": f"{row.memory_mib}Mi", "pods": MAX_PODS}
    if row.gpus:
        labels[gpus.GPU_MODEL_LABEL] = row.model
        if mapping == "extended":
            resources[gpus.GPU_RESOURCE] = str(row.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": row.name, "uid": _uid("Node", row.name), "labels": labels},
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def _shape(row: PodRow) -> tuple:
    return (row.cpu_milli, row.memory_mib, row.num_gpu, row.gpu_milli, row.models)


def _pod_spec(row: PodRow, mapping: str) -> dict:
    requests = {"cpu": f"{row.cpu_milli}m", "memory": f"{row.memory_mib}Mi"}
    container: dict = {"name": "main", "image": IMAGE, "resources": {"requests": requests}}
    spec: dict = {
        "containers": [container],
        "schedulerName": "default-scheduler",
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if row.num_gpu and mapping == "extended":
        whole = str(gpus.extended_gpus(row.num_gpu, row.gpu_milli))
        requests[gpus.GPU_RESOURCE] = whole
        container["resources"]["limits"] = {gpus.GPU_RESOURCE: whole}
        if row.models:
            spec["affinity"] = gpus.model_affinity(row.models)
    elif row.num_gpu and mapping == "dra":
        container["resources"]["claims"] = [{"name": gpus.POD_CLAIM}]
        spec["resourceClaims"] = [
            {"name": gpus.POD_CLAIM, "resourceClaimName": gpus.claim_name(row.name)}
        ]
    return spec


def build(
    nodes: list[NodeRow],
    pods: list[PodRow],
    *,
    mapping: str = "dra",
    name: str = "openb",
    source: str = "openb",
    limit_pods: int | None = None,
    provenance: dict | None = None,
) -> Trace:
    """The trace of ``nodes`` and ``pods`` (the first ``limit_pods`` by creation time) with
    GPUs as ``mapping`` says (``dra`` or ``extended``)."""
    if mapping not in gpus.MAPPINGS:
        raise OpenbError(f"gpu mapping {mapping!r}: must be one of {', '.join(gpus.MAPPINGS)}")
    timed = any(p.created is not None for p in pods)
    order = sorted(range(len(pods)), key=lambda i: (pods[i].created or 0.0, i))
    if limit_pods is not None:
        order = order[:limit_pods]
    chosen = [pods[i] for i in order]
    start = min((p.created or 0.0 for p in chosen), default=0.0)

    shapes: dict[tuple, str] = {}
    counts: dict[str, int] = {}
    first: dict[str, PodRow] = {}
    trace_pods: list[TracePod] = []
    end = 0.0
    for index, row in enumerate(chosen):
        shape = shapes.setdefault(_shape(row), f"openb-shape-{len(shapes)}")
        counts[shape] = counts.get(shape, 0) + 1
        first.setdefault(shape, row)
        trace_pods.append(_trace_pod(row, index, start, timed, shape, mapping))
        for t in (row.created, row.scheduled, row.deleted):
            if t is not None:
                end = max(end, t - start)
    if not timed:
        end = float(len(chosen))

    objects: list[dict] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    ]
    if mapping == "dra":
        objects.append(gpus.device_class())
    for shape, count in counts.items():
        objects.append(_replica_set(shape, count, _pod_spec(first[shape], mapping)))
    if mapping == "dra":
        objects += [gpus.resource_slice(n.name, n.gpus, n.model) for n in nodes if n.gpus]

    metadata = {
        "name": name,
        "source": source,
        "gpuMapping": mapping,
        "anonymised": False,
        "createdBy": "kube-extender import openb",
        "notes": NOTES if timed else NOTES_UNTIMED,
    }
    if provenance:
        metadata["upstream"] = provenance
    return Trace(
        metadata=metadata,
        duration=end,
        nodes=[node_object(n, mapping) for n in nodes],
        objects=objects,
        pods=trace_pods,
    )


NOTES = (
    "openb (alibaba/clusterdata cluster-trace-gpu-v2023): arrival = creation_time offset; "
    "scheduled pods run deletion_time - scheduled_time once bound; never-scheduled pods are "
    "abandoned at their deletion_time offset and run to the end if placed; qos is the label "
    f"{QOS_LABEL}; one ReplicaSet owner per pod shape."
)
NOTES_UNTIMED = (
    "openb (alibaba/clusterdata cluster-trace-gpu-v2023), a pod list without times: pods "
    "arrive one a second in file order and run to the end; one ReplicaSet owner per pod shape."
)


def _trace_pod(
    row: PodRow, index: int, start: float, timed: bool, shape: str, mapping: str
) -> TracePod:
    labels = {WORKLOAD_LABEL: shape}
    if row.qos:
        labels[QOS_LABEL] = row.qos
    metadata: dict = {
        "name": row.name,
        "namespace": NAMESPACE,
        "uid": _uid("Pod", row.name),
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": shape,
                "uid": _uid("ReplicaSet", shape),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if row.phase:
        metadata["annotations"] = {PHASE_ANNOTATION: row.phase}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": _pod_spec(row, mapping),
        "status": {"phase": "Pending"},
    }
    claims = []
    if row.num_gpu and mapping == "dra":
        claims.append(
            gpus.resource_claim(
                gpus.claim_name(row.name), NAMESPACE, row.num_gpu, row.gpu_milli, row.models
            )
        )
    if not timed:
        return TracePod(arrival=float(index), pod=pod, claims=claims)
    created = row.created or 0.0
    duration = abandon = scheduled = None
    if row.scheduled is not None:
        scheduled = row.scheduled - start
        if row.deleted is not None:
            duration = row.deleted - row.scheduled
    elif row.deleted is not None:
        abandon = row.deleted - start
    return TracePod(
        arrival=created - start,
        pod=pod,
        claims=claims,
        duration=duration,
        abandon=abandon,
        recorded={"node": None, "scheduled": scheduled},
    )


def _replica_set(name: str, replicas: int, template_spec: dict) -> dict:
    labels = {WORKLOAD_LABEL: name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": _uid("ReplicaSet", name),
            "labels": labels,
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": template_spec},
        },
    }


def import_openb(
    nodes_csv: Path,
    pods_csv: Path,
    *,
    mapping: str = "dra",
    limit_pods: int | None = None,
) -> Trace:
    """Read and build: the trace named after the pod list (``openb-default`` for
    ``openb_pod_list_default.csv``); when both files are the pinned ones (by sha256), the
    trace's ``metadata.upstream`` names the repository and commit."""
    nodes = read_nodes(nodes_csv)
    pods = read_pods(pods_csv)
    stem = pods_csv.name.removesuffix(".csv")
    name = "openb-" + stem.removeprefix(POD_PREFIX).replace("_", "-").lower()
    provenance = None
    if all(
        SHA256.get(p.name) == fetch.sha256_of(p) for p in (nodes_csv, pods_csv)
    ):  # the pinned files
        provenance = {
            "repository": REPOSITORY,
            "commit": COMMIT,
            "nodes": nodes_csv.name,
            "pods": pods_csv.name,
        }
    return build(
        nodes,
        pods,
        mapping=mapping,
        name=name,
        source=f"openb:{pods_csv.name}",
        limit_pods=limit_pods,
        provenance=provenance,
    )
