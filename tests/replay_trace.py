"""A small synthetic trace (format v1 of ``docs/replay.md``) for the fidelity tests: ten nodes
of three shapes (CPU only, 4 GPUs, 8 GPUs as the extended resource ``nvidia.com/gpu``) and
eighty pods arriving over about a quarter of an hour of trace time, running 400-1600 s, the
4-GPU ones giving up after 10 minutes pending, and one that never fits. Generated from a seed,
no external data."""

from __future__ import annotations

import random
import zlib

from extender.replay import gpus

GPU = "nvidia.com/gpu"
MODEL_LABEL = "kube-extender.dev/gpu-model"

# name prefix, count, cpu cores, memory GiB, GPUs, GPU model
SHAPES = (
    ("c", 4, 16, 64, 0, ""),
    ("g4", 4, 32, 128, 4, "T4"),
    ("g8", 2, 64, 256, 8, "V100M32"),
)


def node(name: str, cpu: int, memory_gib: int, gpus: int, model: str) -> dict:
    allocatable = {"cpu": str(cpu), "memory": f"{memory_gib}Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name}
    if gpus:
        allocatable[GPU] = str(gpus)
        labels[MODEL_LABEL] = model
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def pod(namespace: str, name: str, cpu: int, memory_gib: int, gpus: int) -> dict:
    requests = {"cpu": str(cpu), "memory": f"{memory_gib}Gi"}
    resources: dict = {"requests": requests}
    if gpus:
        requests[GPU] = str(gpus)
        resources["limits"] = {GPU: str(gpus)}
    shape = f"shape-c{cpu}-m{memory_gib}-g{gpus}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": shape},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": shape,
                    "uid": f"00000000-0000-4000-8000-{zlib.crc32(shape.encode()):012d}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}
            ],
        },
    }


def small_trace(
    namespace: str = "replay", seed: int = 3, pods: int = 80, gap: float = 12.0, gpu: float = 0.4
) -> dict:
    """``pods`` pods (and one that fits nowhere) arriving ``gap`` seconds apart on average,
    a fraction ``gpu`` of them asking 1, 2 or 4 whole GPUs; the defaults load the cluster
    enough that pods queue for departures (about a tenth wait minutes)."""
    rng = random.Random(seed)
    nodes = [
        node(f"{prefix}-{i}", cpu, memory, gpus, model)
        for prefix, count, cpu, memory, gpus, model in SHAPES
        for i in range(count)
    ]
    entries = []
    t = 0.0
    for i in range(pods):
        t += rng.expovariate(1 / gap)
        if rng.random() < gpu:
            gpus = rng.choice((1, 1, 1, 2, 2, 4))
            cpu, memory = 4 * gpus, 16 * gpus
        else:
            gpus = 0
            cpu = rng.choice((1, 2, 4, 8))
            memory = 4 * cpu
        abandon = round(t + 600, 3) if gpus >= 4 else None
        entries.append(
            {
                "arrival": round(t, 3),
                "pod": pod(namespace, f"p-{i:03d}", cpu, memory, gpus),
                "claims": [],
                "duration": float(rng.randint(400, 1600)),
                "abandon": abandon,
                "node": None,
                "recorded": {"node": None, "scheduled": None},
            }
        )
    # One pod no node can hold: never scheduled on any side, given up after five minutes.
    t = entries[pods // 2]["arrival"]
    entries.insert(
        pods // 2 + 1,
        {
            "arrival": t,
            "pod": pod(namespace, "p-huge", 8, 32, 16),
            "claims": [],
            "duration": 600.0,
            "abandon": t + 300,
            "node": None,
            "recorded": {"node": None, "scheduled": None},
        },
    )
    return {
        "apiVersion": "kube-extender.dev/v1",
        "kind": "Trace",
        "version": 1,
        "metadata": {
            "name": f"fidelity-{seed}",
            "source": "tests/replay_trace.py",
            "gpuMapping": "extended",
            "anonymised": False,
            "createdBy": "tests/replay_trace.py",
            "notes": "synthetic: 10 nodes of 3 shapes, CPU and whole-GPU pods",
        },
        "duration": float(int(entries[-1]["arrival"]) + 1800),
        "nodes": nodes,
        "objects": [],
        "pods": entries,
    }


def dra_trace(namespace: str = "replay-dra", seed: int = 5, pods: int = 24) -> dict:
    """The DRA mapping (``extender/replay/gpus.py``): three nodes of two shareable A100 each
    (one ResourceSlice per node, a ``share`` capacity of 1000 per GPU) and ``pods`` pods, each
    with a claim for one GPU at a share of 250, 500 or 1000, arriving about 20 s apart and
    running 200-600 s; enough for GPUs to be shared and for some pods to wait."""
    rng = random.Random(seed)
    nodes = [node(f"d-{i}", 16, 64, 0, "") for i in range(3)]
    objects = [gpus.device_class(), *(gpus.resource_slice(f"d-{i}", 2, "A100") for i in range(3))]
    entries = []
    t = 0.0
    for i in range(pods):
        t += rng.expovariate(1 / 20)
        name = f"q-{i:03d}"
        share = rng.choice((250, 500, 500, 1000))
        body = pod(namespace, name, 1, 2, 0)
        claim = gpus.resource_claim(gpus.claim_name(name), namespace, 1, share)
        body["spec"]["resourceClaims"] = [
            {"name": gpus.POD_CLAIM, "resourceClaimName": claim["metadata"]["name"]}
        ]
        body["spec"]["containers"][0]["resources"]["claims"] = [{"name": gpus.POD_CLAIM}]
        entries.append(
            {
                "arrival": round(t, 3),
                "pod": body,
                "claims": [claim],
                "duration": float(rng.randint(200, 600)),
                "abandon": None,
                "node": None,
                "recorded": {"node": None, "scheduled": None},
            }
        )
    return {
        "apiVersion": "kube-extender.dev/v1",
        "kind": "Trace",
        "version": 1,
        "metadata": {
            "name": f"fidelity-dra-{seed}",
            "source": "tests/replay_trace.py",
            "gpuMapping": "dra",
            "anonymised": False,
            "createdBy": "tests/replay_trace.py",
            "notes": "synthetic: 3 nodes of 2 shareable GPUs, pods with one claim each",
        },
        "duration": float(int(t) + 900),
        "nodes": nodes,
        "objects": objects,
        "pods": entries,
    }
