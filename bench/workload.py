"""Realistic synthetic clusters for the benchmarks: nodes as the API serves them (labels,
taints, allocatable, conditions, images) and running pods with requests and owner labels."""

from __future__ import annotations

import random

ZONES = ["zone-a", "zone-b", "zone-c"]
INSTANCE_TYPES = ["m5.xlarge", "m5.2xlarge", "c5.4xlarge", "r5.2xlarge"]
APPS = [f"app-{i}" for i in range(40)]
IMAGES = [f"registry.example.com/team/app-{i}:v{i % 7}" for i in range(60)]


def make_node(i: int, rng: random.Random) -> dict:
    name = f"node-{i:05d}"
    zone = ZONES[i % len(ZONES)]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": rng.choice(INSTANCE_TYPES),
        "topology.kubernetes.io/region": "region-1",
        "topology.kubernetes.io/zone": zone,
        "pool": f"pool-{i % 8}",
    }
    taints = []
    if i % 10 == 0:
        taints.append({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
    if i % 7 == 0:
        taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
    images = [
        {
            "names": [image, image.replace(":", "@sha256:") + "0" * 10],
            "sizeBytes": rng.randint(20, 900) << 20,
        }
        for image in rng.sample(IMAGES, 12)
    ]
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "metadata": {
            "name": name,
            "uid": f"node-uid-{i}",
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                {"type": "MemoryPressure", "status": "False"},
                {"type": "DiskPressure", "status": "False"},
                {"type": "PIDPressure", "status": "False"},
            ],
            "images": images,
            "nodeInfo": {"kubeletVersion": "v1.36.2", "osImage": "Debian GNU/Linux 13"},
        },
    }


def make_running_pod(node: dict, j: int, rng: random.Random) -> dict:
    app = rng.choice(APPS)
    node_name = node["metadata"]["name"]
    return {
        "metadata": {
            "name": f"{app}-{node_name}-{j}",
            "namespace": f"ns-{hash(app) % 5}",
            "uid": f"pod-{node_name}-{j}",
            "labels": {"app": app, "pod-template-hash": "abc123"},
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": f"{app}-abc123", "controller": True}
            ],
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "priority": 0,
            "containers": [
                {
                    "name": "main",
                    "image": rng.choice(IMAGES),
                    "resources": {
                        "requests": {
                            "cpu": f"{rng.choice([100, 250, 500, 1000])}m",
                            "memory": f"{rng.choice([128, 256, 512, 1024])}Mi",
                        }
                    },
                    "ports": [{"containerPort": 8080}],
                }
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        },
        "status": {"phase": "Running"},
    }


def make_cluster(num_nodes: int, pods_per_node: int = 10, seed: int = 1) -> tuple[list, list]:
    rng = random.Random(seed)
    nodes = [make_node(i, rng) for i in range(num_nodes)]
    pods = [make_running_pod(node, j, rng) for node in nodes for j in range(pods_per_node)]
    return nodes, pods


def make_pending_pod(name: str = "bench-pod-7") -> dict:
    """A typical web pod: requests, a preferred zone, a toleration, spread by hostname."""
    return {
        "metadata": {
            "name": name,
            "namespace": "ns-1",
            "uid": f"uid-{name}",
            "labels": {"app": "app-3"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "priority": 0,
            "containers": [
                {
                    "name": "main",
                    "image": IMAGES[3],
                    "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                }
            ],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["zone-a"],
                                    }
                                ]
                            },
                        }
                    ]
                }
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "app-3"}},
                }
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        },
        "status": {"phase": "Pending"},
    }


# -- the `spread` workloads: upstream scheduler_perf's TopologySpreading ------------------


def spread_pod(
    i: int, name: str, namespace: str, scheduler_name: str, when: str = "DoNotSchedule"
) -> dict:
    """Pod ``i`` of upstream scheduler_perf's TopologySpreading workload
    (``test/integration/scheduler_perf/templates/pod-with-topology-spreading.yaml``): label
    ``color: blue``, one zone constraint, maxSkew 5, selecting ``color: blue``, 100m/500Mi.
    ``when``: ``ScheduleAnyway`` for PreferredTopologySpreading
    (``pod-with-preferred-topology-spreading.yaml``)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {"color": "blue"},
        },
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "topologySpreadConstraints": [
                {
                    "maxSkew": 5,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": when,
                    "labelSelector": {"matchLabels": {"color": "blue"}},
                }
            ],
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "500Mi"},
                        "limits": {"cpu": "100m", "memory": "500Mi"},
                    },
                }
            ],
        },
    }


def preferred_spread_pod(i: int, name: str, namespace: str, scheduler_name: str) -> dict:
    """Pod ``i`` of PreferredTopologySpreading: :func:`spread_pod` with ScheduleAnyway."""
    return spread_pod(i, name, namespace, scheduler_name, "ScheduleAnyway")


# -- the `mixed` workload: 20 workloads of five kinds, pods interleaved -------------------

MIXED_KINDS = (
    "requests",  # only its own requests
    "zone-spread",  # topologySpreadConstraints zone, maxSkew 1, DoNotSchedule
    "anti-affinity",  # preferred podAntiAffinity on hostname (weight 100)
    "node-affinity",  # required nodeAffinity (two of eight pools) + toleration of dedicated=gpu
    "host-spread",  # topologySpreadConstraints hostname, maxSkew 1, ScheduleAnyway
)
MIXED_WORKLOADS = 20
_MIXED_CPU = ("50m", "100m", "250m", "500m")
_MIXED_MEM = ("64Mi", "128Mi", "256Mi", "512Mi")


def mixed_workload(w: int) -> dict:
    """Workload ``w`` (0..19) of `mixed`: its kind, app label, requests and scheduling spec."""
    kind = MIXED_KINDS[w % len(MIXED_KINDS)]
    app = f"mixed-{w:02d}"
    selector = {"matchLabels": {"app": app}}
    spec: dict = {}
    if kind == "zone-spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
    elif kind == "anti-affinity":
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": selector,
                        },
                    }
                ]
            }
        }
    elif kind == "node-affinity":
        pools = [f"pool-{w % 8}", f"pool-{(w + 1) % 8}"]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": pools}]}
                    ]
                }
            }
        }
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ]
    elif kind == "host-spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": selector,
            }
        ]
    return {
        "kind": kind,
        "app": app,
        "requests": {
            "cpu": _MIXED_CPU[w % len(_MIXED_CPU)],
            "memory": _MIXED_MEM[(w // len(_MIXED_CPU)) % len(_MIXED_MEM)],
        },
        "spec": spec,
    }


def mixed_pod(i: int, name: str, namespace: str, scheduler_name: str) -> dict:
    """Pod ``i`` of `mixed`: workload ``i % 20``, so consecutive pods never share a spec."""
    w = mixed_workload(i % MIXED_WORKLOADS)
    spec = {
        "schedulerName": scheduler_name,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": dict(w["requests"])},
            }
        ],
    }
    spec.update(w["spec"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {"app": w["app"]},
        },
        "spec": spec,
    }


def describe_mixed() -> str:
    """The exact shape of `mixed`, one line per workload (printed by the benchmarks)."""
    lines = [
        f"workload `mixed`: {MIXED_WORKLOADS} workloads, pod i -> workload i % {MIXED_WORKLOADS}"
        " (consecutive pods never share a spec); nodes: 10 % tainted dedicated=gpu:NoSchedule,"
        " 1/7 spot=true:PreferNoSchedule, 3 zones, 8 pools"
    ]
    for w in range(MIXED_WORKLOADS):
        d = mixed_workload(w)
        extra = ""
        if d["kind"] == "node-affinity":
            affinity = d["spec"]["affinity"]["nodeAffinity"]
            required = affinity["requiredDuringSchedulingIgnoredDuringExecution"]
            term = required["nodeSelectorTerms"][0]
            extra = " pool In " + ",".join(term["matchExpressions"][0]["values"])
        lines.append(
            f"  {d['app']}: {d['kind']:<13} cpu {d['requests']['cpu']:>4} "
            f"memory {d['requests']['memory']:>5}{extra}"
        )
    return "\n".join(lines)
