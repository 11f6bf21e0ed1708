"""The workloads of upstream's scheduler_perf, as plain dicts for ``bench/perf.py``.

Modelled on kubernetes v1.36.3 ``test/integration/scheduler_perf``: ``misc/``,
``affinity/``, ``topology_spreading/`` and ``dra/`` ``performance-config.yaml`` and the pod
and node ``templates/``. Each :class:`Workload` names its nodes (``node(i)``: upstream's
``node-default.yaml``, 4 CPU, 32Gi, 110 pods, with the ``kubernetes.io/hostname`` label
scheduler_perf's node preparer adds and the ``labelNodePrepareStrategy`` label round-robin),
its init pods (created *bound*, init pod ``i`` on node ``i % nodes``, where upstream lets the
scheduler under test place them before measuring: the same occupancy for every scheduler),
its measured pods, and its sizes: upstream's 500Nodes and 5000Nodes cases (``Size.source``
names the case a size follows where upstream has no case of that node count).

Differences from upstream, all of them the same for every scheduler measured:

- Namespaces: upstream's ``sched-0`` (init pods) and ``sched-1`` (measured pods) are
  :data:`INIT_NAMESPACE` and ``bench`` (``bench/cluster.py``); the affinity terms name both.
- ``priority: 10`` in upstream's high-priority templates is the PriorityClass
  :data:`HIGH_PRIORITY_CLASS` (value 10): our kube-apiserver runs the Priority admission
  plugin, which rejects a bare priority.
- Measured pods are all created before the scheduler starts (``bench/cluster.py``: pods/s
  between the first and the last bind); the churn of Unschedulable and
  SchedulingWithMixedChurn runs from just before the scheduler starts until its last bind.
- SteadyStateClusterResourceClaimTemplate's measured pods are created up front as well,
  not 10 at a time for 10 s (its ``half_500nodes`` init: 2500 claims allocated, no pod).
- SchedulingWithResourceClaimTemplate's init pods are bound with their claims allocated
  and reserved for them, written by the bench (upstream lets the scheduler do it).
- Gang has no upstream case: it is ``bench/gang.py``'s ``all`` scenario (gangs of 10,
  minCount 10) on ``bench/workload.py``'s realistic nodes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.cluster import BENCH_NAMESPACE
from bench.dra_objects import resource_claim
from bench.workload import make_node

INIT_NAMESPACE = "bench-init"
HIGH_PRIORITY_CLASS = "perf-high"
HIGH_PRIORITY = 10
PAUSE = "registry.k8s.io/pause:3.10.2"
DRA_DEVICES = 10  # upstream's maxClaimsPerNode for the 500-node DRA cases


@dataclass(frozen=True)
class Size:
    """``init`` pods (or allocated claims) and ``measure`` pods for a node count; ``scale``:
    the factor applied to the measured pods by default (and to ``init`` where the workload
    says so), for the cases that would take more than a few minutes here; ``source``: the
    upstream case this follows."""

    init: int
    measure: int
    source: str
    scale: float = 1.0


@dataclass(frozen=True)
class Workload:
    name: str
    sizes: dict[int, Size]
    node: Callable[[int], dict]
    measured_pod: Callable[[str, str], dict] | None  # (name, schedulerName); None: by kind
    init_pods: tuple[Callable[[str], dict], ...] = ()  # round-robin templates (name) -> pod
    kind: str = "pods"  # pods | dra-template | dra-steady | gang
    churn: str | None = None  # create | recreate (upstream's churn modes)
    init_consumed: bool = False  # the scheduler deletes init pods (preemption): fresh ones
    scale_init: bool = True  # --scale also scales the init pods
    extender: bool = True  # kube-scheduler + an extender can run it
    # pods/s from launching the scheduler to its last bind, not from its first bind: where
    # the first bind waits for the work measured (preemption: the victims' deletion).
    rate_from_launch: bool = False
    feature_gates: dict[str, bool] = field(default_factory=dict)
    notes: str = ""

    def size(self, nodes: int, scale: float | None = None) -> tuple[Size, float]:
        """The size for ``nodes`` (one of upstream's, or the 500-node one scaled by
        ``nodes / 500`` for any other count, e.g. ``--quick``) and the factor applied to the
        pod counts (``scale``, else the size's own)."""
        base = self.sizes.get(nodes)
        if base is None:
            ref = self.sizes[500]
            ratio = nodes / 500
            base = Size(
                _scaled(ref.init, ratio),
                _scaled(ref.measure, ratio),
                f"{ref.source} x {nodes}/500",
            )
        factor = base.scale if scale is None else scale
        init = _scaled(base.init, factor) if self.scale_init else base.init
        return Size(init, _scaled(base.measure, factor), base.source, factor), factor


def _scaled(count: int, factor: float) -> int:
    return 0 if count == 0 else max(1, math.ceil(count * factor))


# -- nodes --------------------------------------------------------------------------------


def node_name(i: int) -> str:
    return f"node-{i:05d}"


def default_node(i: int, zones: tuple[str, ...] = (), labels: dict | None = None) -> dict:
    """upstream's ``node-default.yaml``: 4 CPU, 32Gi, 110 pods, Ready; the hostname label,
    and ``topology.kubernetes.io/zone`` round-robin over ``zones`` if any."""
    name = node_name(i)
    node_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    if zones:
        node_labels["topology.kubernetes.io/zone"] = zones[i % len(zones)]
    capacity = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def plain_node(i: int) -> dict:
    return default_node(i)


def zone1_node(i: int) -> dict:
    return default_node(i, ("zone1",))


def moon_node(i: int) -> dict:
    return default_node(i, ("moon-1", "moon-2", "moon-3"))


def dra_node(i: int) -> dict:
    """upstream's ``dra/templates/node-with-dra-test-driver.yaml``."""
    return default_node(i, labels={"node-with-dra": "true"})


def realistic_node(i: int) -> dict:
    """``bench/workload.py``'s node ``i`` (16 CPU, taints on one in ten), as ``bench/gang.py``
    creates them."""
    return make_node(i, random.Random(i))


def churn_node(k: int) -> dict:
    """upstream's ``templates/churn/node-default.yaml``: Ready, room for no pod."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-churn-{k:05d}"},
        "spec": {},
        "status": {
            "capacity": {"pods": "0"},
            "allocatable": {"pods": "0"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


# -- pods ---------------------------------------------------------------------------------


def pod(
    name: str,
    namespace: str = BENCH_NAMESPACE,
    scheduler: str = "default-scheduler",
    *,
    cpu: str = "100m",
    memory: str = "500Mi",
    limits: bool = True,
    labels: dict | None = None,
    affinity: dict | None = None,
    spread: list | None = None,
    priority_class: str | None = None,
) -> dict:
    """upstream's ``pod-default.yaml`` (pause, port 80, 100m / 500Mi requests and limits),
    with the fields its other templates add."""
    resources: dict = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = dict(resources["requests"])
    spec: dict = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "pause",
                "image": PAUSE,
                "ports": [{"containerPort": 80}],
                "resources": resources,
            }
        ],
    }
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta: dict = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _term(color: str, key: str) -> dict:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": key,
        "namespaces": [BENCH_NAMESPACE, INIT_NAMESPACE],
    }


HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def default_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    return pod(name, namespace, sched or "default-scheduler")


def anti_affinity_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-with-pod-anti-affinity.yaml``: green, not two green pods on one host."""
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("green", HOSTNAME)]
        }
    }
    return pod(
        name, namespace, sched or "default-scheduler", labels={"color": "green"}, affinity=affinity
    )


def affinity_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-with-pod-affinity.yaml``: blue, in a zone with a blue pod."""
    affinity = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE)]}
    }
    return pod(
        name, namespace, sched or "default-scheduler", labels={"color": "blue"}, affinity=affinity
    )


def _preferred(kind: str, color: str) -> dict:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"podAffinityTerm": _term(color, HOSTNAME), "weight": 1}
            ]
        }
    }


def preferred_affinity_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-with-preferred-pod-affinity.yaml``: red, rather with a red pod on its host."""
    return pod(
        name,
        namespace,
        sched or "default-scheduler",
        labels={"color": "red"},
        affinity=_preferred("podAffinity", "red"),
    )


def preferred_anti_affinity_pod(
    name: str, namespace: str = BENCH_NAMESPACE, sched: str = ""
) -> dict:
    """``pod-with-preferred-pod-anti-affinity.yaml``: yellow, rather alone on its host."""
    return pod(
        name,
        namespace,
        sched or "default-scheduler",
        labels={"color": "yellow"},
        affinity=_preferred("podAntiAffinity", "yellow"),
    )


def node_affinity_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-with-node-affinity.yaml``: zone In (zone1, zone2)."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
                        ]
                    }
                ]
            }
        }
    }
    return pod(name, namespace, sched or "default-scheduler", affinity=affinity)


def _spread(when: str) -> list:
    return [
        {
            "maxSkew": 5,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]


def spreading_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-with-topology-spreading.yaml``: blue, zone maxSkew 5, DoNotSchedule."""
    return pod(
        name,
        namespace,
        sched or "default-scheduler",
        labels={"color": "blue"},
        spread=_spread("DoNotSchedule"),
    )


def preferred_spreading_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-with-preferred-topology-spreading.yaml``: the same, ScheduleAnyway."""
    return pod(
        name,
        namespace,
        sched or "default-scheduler",
        labels={"color": "blue"},
        spread=_spread("ScheduleAnyway"),
    )


def low_priority_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-low-priority.yaml``: 900m, priority 0: four fill a node's 4 CPUs to 3.6."""
    return pod(name, namespace, sched or "default-scheduler", cpu="900m")


def high_priority_pod(name: str, namespace: str = BENCH_NAMESPACE, sched: str = "") -> dict:
    """``pod-high-priority.yaml``: 3 CPUs, priority 10: fits only by preempting."""
    return pod(
        name,
        namespace,
        sched or "default-scheduler",
        cpu="3000m",
        priority_class=HIGH_PRIORITY_CLASS,
    )


def high_priority_large_cpu_pod(
    name: str, namespace: str = BENCH_NAMESPACE, sched: str = ""
) -> dict:
    """``pod-high-priority-large-cpu.yaml``: 9 CPUs, priority 10: fits no node, preempting
    or not (the churn of Unschedulable and SchedulingWithMixedChurn)."""
    return pod(
        name,
        namespace,
        sched or "default-scheduler",
        cpu="9",
        limits=False,
        priority_class=HIGH_PRIORITY_CLASS,
    )


def churn_service(k: int) -> dict:
    """``templates/churn/service-default.yaml``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"service-churn-{k:05d}", "namespace": BENCH_NAMESPACE},
        "spec": {
            "selector": {"app": "foo"},
            "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}],
        },
    }


def measured(template: Callable[..., dict]) -> Callable[[str, str], dict]:
    """``template`` as a measured pod: namespace ``bench``, schedulerName = the scheduler's."""
    return lambda name, scheduler: template(name, BENCH_NAMESPACE, scheduler)


def init(template: Callable[..., dict]) -> Callable[[str], dict]:
    """``template`` as an init pod: namespace :data:`INIT_NAMESPACE` (bound by the bench)."""
    return lambda name: template(name, INIT_NAMESPACE)


# -- DRA ----------------------------------------------------------------------------------


def dra_device(i: int, nodes: int) -> tuple[str, str]:
    """(node, device) of init claim ``i``: round-robin over the nodes, then the devices."""
    return node_name(i % nodes), f"instance-{i // nodes}"


def init_claim(name: str) -> dict:
    """``dra/templates/resourceclaim.yaml``: one device of ``test-class``."""
    return resource_claim(name, INIT_NAMESPACE)


def init_claim_pod(name: str, claim: str) -> dict:
    """``dra/templates/pod-with-claim-ref.yaml``-like: an init pod using claim ``claim``."""
    out = pod(name, INIT_NAMESPACE, limits=False)
    container = out["spec"]["containers"][0]
    container.pop("ports")
    container["resources"] = {"claims": [{"name": "resource"}]}
    out["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimName": claim}]
    return out


# -- the workloads ------------------------------------------------------------------------

GANG_FEATURE_GATES = {"GenericWorkload": True, "GangScheduling": True}
GANG_SIZE = 10

WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "SchedulingBasic",
        {500: Size(500, 1000, "500Nodes"), 5000: Size(1000, 1000, "5000Nodes")},
        plain_node,
        measured(default_pod),
        (init(default_pod),),
    ),
    Workload(
        "SchedulingPodAntiAffinity",
        {500: Size(100, 400, "500Nodes"), 5000: Size(1000, 1000, "5000Nodes")},
        plain_node,
        measured(anti_affinity_pod),
        (init(anti_affinity_pod),),
    ),
    Workload(
        "SchedulingPodAffinity",
        {500: Size(500, 1000, "500Nodes"), 5000: Size(5000, 1000, "5000Nodes")},
        zone1_node,
        measured(affinity_pod),
        (init(affinity_pod),),
    ),
    Workload(
        "SchedulingPreferredPodAffinity",
        {500: Size(500, 1000, "500Nodes"), 5000: Size(5000, 1000, "5000Nodes")},
        plain_node,
        measured(preferred_affinity_pod),
        (init(preferred_affinity_pod),),
    ),
    Workload(
        "SchedulingPreferredPodAntiAffinity",
        {500: Size(500, 1000, "500Nodes"), 5000: Size(5000, 1000, "5000Nodes")},
        plain_node,
        measured(preferred_anti_affinity_pod),
        (init(preferred_anti_affinity_pod),),
    ),
    Workload(
        "TopologySpreading",
        {500: Size(1000, 1000, "500Nodes"), 5000: Size(5000, 2000, "5000Nodes")},
        moon_node,
        measured(spreading_pod),
        (init(default_pod),),
    ),
    Workload(
        "PreferredTopologySpreading",
        {500: Size(1000, 1000, "500Nodes"), 5000: Size(5000, 2000, "5000Nodes")},
        moon_node,
        measured(preferred_spreading_pod),
        (init(default_pod),),
    ),
    Workload(
        "SchedulingNodeAffinity",
        {500: Size(500, 1000, "500Nodes"), 5000: Size(5000, 1000, "5000Nodes")},
        zone1_node,
        measured(node_affinity_pod),
        (init(node_affinity_pod),),
    ),
    Workload(
        "MixedSchedulingBasePod",
        # init: initPods of each of the five templates (upstream: 200 / 2000 each).
        {500: Size(1000, 1000, "500Nodes"), 5000: Size(10000, 1000, "5000Nodes")},
        zone1_node,
        measured(default_pod),
        (
            init(default_pod),
            init(affinity_pod),
            init(anti_affinity_pod),
            init(preferred_affinity_pod),
            init(preferred_anti_affinity_pod),
        ),
        notes="init pods: the five templates in turn",
    ),
    Workload(
        "Unschedulable",
        {
            500: Size(10, 1000, "500Nodes/10Init/1kPods"),
            5000: Size(100, 1000, "5kNodes/100Init/1kPods"),
        },
        plain_node,
        measured(default_pod),
        (init(default_pod),),
        churn="create",
        notes="churn: a 9-CPU priority-10 pod every 200 ms",
    ),
    Workload(
        "PreemptionBasic",
        {
            500: Size(2000, 500, "PreemptionBasic 1000Nodes, halved"),
            5000: Size(20000, 5000, "PreemptionAsync 5000Nodes", scale=0.2),
        },
        plain_node,
        measured(high_priority_pod),
        (init(low_priority_pod),),
        init_consumed=True,
        rate_from_launch=True,
        scale_init=False,  # four 900m pods a node: fewer would leave room without preempting
        notes="init: 4 low-priority 900m pods per node; measured: 3-CPU priority-10 pods",
    ),
    Workload(
        "SchedulingWithMixedChurn",
        {500: Size(0, 1000, "1000Nodes, nodes halved"), 5000: Size(0, 2000, "5000Nodes")},
        plain_node,
        measured(default_pod),
        churn="recreate",
        notes="churn: a node, a 9-CPU priority-10 pod and a service recreated every 1 s",
    ),
    Workload(
        "SchedulingWithResourceClaimTemplate",
        {500: Size(2500, 2500, "5000pods_500nodes")},
        dra_node,
        None,
        kind="dra-template",
        extender=False,
        notes=f"{DRA_DEVICES} devices a node; init pods bound with their claims allocated",
    ),
    Workload(
        "SteadyStateClusterResourceClaimTemplate",
        {500: Size(2500, 1000, "half_500nodes")},
        dra_node,
        None,
        kind="dra-steady",
        extender=False,
        notes=f"{DRA_DEVICES} devices a node; init: allocated claims without pods",
    ),
    Workload(
        "Gang",
        {500: Size(0, 1000, "bench/gang.py all"), 5000: Size(0, 1000, "bench/gang.py all")},
        realistic_node,
        None,
        kind="gang",
        extender=False,
        feature_gates=GANG_FEATURE_GATES,
        notes=f"gangs of {GANG_SIZE}, minCount {GANG_SIZE}",
    ),
)

BY_NAME = {w.name: w for w in WORKLOADS}


def init_pod(workload: Workload, i: int, total: int, nodes: int) -> dict:
    """Init pod ``i`` of ``total`` of a pods workload, bound to node ``i % nodes``: the
    templates one block after the other, as upstream's createPods ops run (so no two
    required-anti-affinity pods share a node while a block has no more pods than nodes)."""
    per_template = math.ceil(total / len(workload.init_pods))
    template = workload.init_pods[i // per_template]
    out = template(f"init-{i:05d}")
    out["spec"]["nodeName"] = node_name(i % nodes)
    return out
