"""The chaos soak's seeded workload: node and pod shapes for one pool of nodes.

Each pool is scheduled by one scheduler and isolated from the others: its nodes carry
``chaos.io/pool: <pool>`` and zones of their own (``<pool>-z0``...), its pods select the pool
with a nodeSelector and their affinity and spread labels carry the pool name. So two schedulers
never race for one node (which would over-commit it without any bug) and the invariants can be
checked pool by pool.

Gangs (the sa pool only, feature gates GenericWorkload and GangScheduling): a
``scheduling.k8s.io/v1alpha2`` PodGroup with the Gang policy and ``minCount`` <= N, and N member
pods (2-5) naming it in ``spec.schedulingGroup.podGroupName``. The members of one gang are
identical (requests and node constraints), so that the checker can count exactly how many of
them the free room holds: for identical pods whose filters depend on the node alone, every
greedy placement fits as many as the best one, so "a placement exists" is a proof the
scheduler's pod group cycle must find one too (see invariants.place_gang).
"""

from __future__ import annotations

import random
from typing import Any

POOL = "chaos.io/pool"
GANG = "chaos.io/gang"  # a gang member's label: its PodGroup's name
GANG_SIZE = "chaos.io/members"  # the PodGroup's annotation: how many members the soak made
PODGROUP_API = "/apis/scheduling.k8s.io/v1alpha2"
ZONE = "topology.kubernetes.io/zone"
DISK = "chaos.io/disk"
TAINT = "chaos.io/dedicated"
HOST_PORTS = (8080, 8081)
ZONES = 3

# name -> weight: the kinds of pods the workload creates.
POD_KINDS = {
    "plain": 30,
    "hostport": 8,
    "ssd": 8,  # required node affinity
    "prefer-zone": 5,  # preferred node affinity (not an invariant)
    "tolerates": 6,
    "anti": 8,  # required anti-affinity per host against its own kind
    "anchor": 6,  # what "affine" pods need in their zone
    "affine": 6,  # required pod affinity per zone to an anchor
    "spread": 10,  # DoNotSchedule spread over zones, maxSkew 1
    "spread-soft": 4,  # ScheduleAnyway spread (not an invariant)
    "big": 4,  # 3.5 CPUs: often fits nowhere
    "nowhere": 2,  # selects a disk no node has: never fits
    "prefer-anti": 3,  # preferred anti-affinity (not an invariant)
}


def node_body(pool: str, name: str, rng: random.Random) -> tuple[dict, dict]:
    """(labels, taints-spec) of a new node of ``pool``."""
    labels = {
        POOL: pool,
        ZONE: f"{pool}-z{rng.randrange(ZONES)}",
        DISK: rng.choice(["ssd", "hdd"]),
    }
    taints = []
    if rng.random() < 0.2:
        taints.append({"key": TAINT, "value": pool, "effect": "NoSchedule"})
    return labels, {"taints": taints} if taints else {}


def _term(key: str, values: list[str]) -> dict:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}


def pod_spec(pool: str, kind: str, rng: random.Random) -> tuple[dict[str, str], dict, dict]:
    """(labels, requests, extra spec fields) of a pod of ``kind`` in ``pool``."""
    labels = {"chaos.io/kind": kind, POOL: pool}
    cpu = rng.choice(["100m", "200m", "250m", "500m", "750m", "1"])
    memory = rng.choice(["128Mi", "256Mi", "512Mi", "1Gi"])
    spec: dict[str, Any] = {"nodeSelector": {POOL: pool}}
    if kind == "hostport":
        port = rng.choice(HOST_PORTS)
        spec["__ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    elif kind == "ssd":
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [_term(DISK, ["ssd"])]
                }
            }
        }
    elif kind == "prefer-zone":
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": _term(ZONE, [f"{pool}-z0"])}
                ]
            }
        }
    elif kind == "tolerates":
        spec["tolerations"] = [
            {"key": TAINT, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
        ]
    elif kind in ("anti", "prefer-anti"):
        term = {
            "labelSelector": {"matchLabels": {"chaos.io/kind": kind, POOL: pool}},
            "topologyKey": "kubernetes.io/hostname",
        }
        if kind == "anti":
            spec["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        else:
            spec["affinity"] = {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": term}
                    ]
                }
            }
    elif kind == "affine":
        term = {
            "labelSelector": {"matchLabels": {"chaos.io/kind": "anchor", POOL: pool}},
            "topologyKey": ZONE,
        }
        required = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        spec["affinity"] = {"podAffinity": required}
    elif kind in ("spread", "spread-soft"):
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule" if kind == "spread" else "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"chaos.io/kind": kind, POOL: pool}},
            }
        ]
    elif kind == "big":
        cpu, memory = "3500m", "1Gi"
    elif kind == "nowhere":
        spec["nodeSelector"] = {POOL: pool, DISK: "nvme"}
    return labels, {"cpu": cpu, "memory": memory}, spec


def pod_object(
    name: str, namespace: str, scheduler: str, labels: dict, requests: dict, spec: dict
) -> dict:
    spec = dict(spec)
    container: dict[str, Any] = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": requests},
    }
    ports = spec.pop("__ports", None)
    if ports:
        container["ports"] = ports
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [container],
            **spec,
        },
    }


def pick_kind(rng: random.Random) -> str:
    kinds = list(POD_KINDS)
    return rng.choices(kinds, weights=[POD_KINDS[k] for k in kinds])[0]


# name -> weight: the shapes of a gang's (identical) members; filters that depend on the node
# alone, so the checker can count the room exactly.
GANG_KINDS = {"plain": 6, "ssd": 2, "tolerates": 2}


def gang_shape(pool: str, rng: random.Random) -> tuple[int, int, dict, dict, dict]:
    """(members, minCount, labels, requests, extra spec fields) of a new gang in ``pool``."""
    size = rng.randint(2, 5)
    min_count = rng.randint(2, size)
    kinds = list(GANG_KINDS)
    kind = rng.choices(kinds, weights=[GANG_KINDS[k] for k in kinds])[0]
    pod_labels, _, spec = pod_spec(pool, kind, rng)
    pod_labels["chaos.io/kind"] = f"gang-{kind}"
    cpu = rng.choice(["250m", "500m", "1", "1500m"])
    memory = rng.choice(["256Mi", "512Mi", "1Gi", "2Gi"])
    return size, min_count, pod_labels, {"cpu": cpu, "memory": memory}, spec


def pod_group_object(name: str, namespace: str, min_count: int, size: int) -> dict:
    """A PodGroup with the Gang policy; ``size`` (the members the soak makes) as an annotation."""
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "annotations": {GANG_SIZE: str(size)}},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def gang_member(
    name: str, namespace: str, scheduler: str, group: str, labels: dict, requests: dict, spec: dict
) -> dict:
    """A member pod of PodGroup ``group``."""
    spec = {**spec, "schedulingGroup": {"podGroupName": group}}
    return pod_object(name, namespace, scheduler, {**labels, GANG: group}, requests, spec)
