"""Seeded generator of valid clusters and pods for the differential conformance tests.

One seed gives one :class:`Case`: namespaces, nodes (labels, taints, allocatable, images,
unschedulable), existing pods already bound through ``spec.nodeName`` and pending pods that
exercise every default filter plugin (requests incl. init containers, sidecars and RuntimeClass
overhead, nodeSelector, node affinity, tolerations, host ports, topology spread, inter-pod
(anti-)affinity, priority, restart rules that need a node's declared feature). The same seed
always gives the same case (``random.Random(seed)``, no other source of randomness), so a
disagreement found by a long run can be replayed.

Everything generated must be accepted by the apiserver: extended resources have requests equal
to limits, toleration ``Exists`` has no value, ``Gt``/``Lt`` take one integer, ``matchFields``
takes one value, host ports are unique within a pod, topology spread pairs are unique...
Objects are plain API dicts without ``schedulerName`` (the harness sets it) and every pod has
``terminationGracePeriodSeconds: 0``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extender.framework.quantity import int_value, milli_value

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
GPU = "example.com/gpu"
HUGEPAGES = "hugepages-2Mi"
FPGA = "example.com/fpga"
HOLD_FINALIZER = "conformance.io/hold"
TERMINATING_ANNOTATION = "conformance.io/terminating"
RUNTIME_CLASS = "conformance-rc"
RUNTIME_CLASS_OVERHEAD = {"cpu": "250m", "memory": "120Mi"}
PRIORITY_CLASSES = {"conformance-high": 1000, "conformance-low": 10}

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TIER = "conformance.io/tier"
RANK = "conformance.io/rank"
SSD = "conformance.io/ssd"
CASE_LABEL = "conformance.io/case"
TEAM = "conformance.io/team"

ZONES = {"zone-a": "region-1", "zone-b": "region-1", "zone-c": "region-2"}
TIERS = ("gold", "silver", "bronze")
TAINT_KEYS = ("dedicated", "gpu", "maintenance")
TAINT_VALUES = ("a", "b")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
APPS = ("web", "db", "cache", "batch")
TEAMS = ("red", "blue")
IMAGES = (
    (PAUSE_IMAGE, 300_000),
    ("registry.example/app:1", 150_000_000),
    ("registry.example/db:2", 600_000_000),
    ("registry.example/big:3", 1_200_000_000),
)
CPUS = ("100m", "250m", "500m", "1", "1500m", "2")
MEMORIES = ("64Mi", "256Mi", "512Mi", "1Gi", "2Gi", "3Gi")
SMALL_CPUS = ("50m", "100m", "100m", "250m", "500m", "1", "2")
SMALL_MEMORIES = ("64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi")
# NodeDeclaredFeatures: what nodes may declare (two the v1.36 registry infers from a pod spec, one
# it knows but never requires, two it does not know) and the restart rule that requires one.
RESTART_ALL = "RestartAllContainersOnContainerExits"
DECLARABLE_FEATURES = (
    RESTART_ALL,
    "UserNamespacesHostNetworkSupport",
    "ExtendWebSocketsToKubelet",
    "ConformanceFeature",
    "Conformance/subFeature",
)
RESTART_ALL_RULE = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "In", "values": [42]},
}


@dataclass
class Case:
    """One generated cluster state plus the pods to evaluate against it."""

    seed: int
    case_id: str
    namespaces: dict[str, dict[str, str]]  # name -> labels
    nodes: list[dict]  # {"metadata", "spec", "status"}; the harness creates then patches status
    existing_pods: list[dict]  # bound: spec.nodeName set
    pending_pods: list[dict]  # spec.schedulerName unset
    needs_runtime_class: bool = False
    # Taint the harness's barrier node NoSchedule, so that it cannot compete (score cases).
    barrier_taint: bool = False
    # Services / ReplicationControllers / ReplicaSets / StatefulSets, created before the pods;
    # a pod's ownerReferences name them (the harness fills in the uid).
    workloads: list[dict] = field(default_factory=list)
    # StorageClasses, CSINodes, PersistentVolumeClaims, PersistentVolumes (volume cases,
    # :mod:`tests.conformance.volumes`), created in this order; a PV's claimRef uid is filled
    # in by the harness, a ``status`` goes through the status subresource.
    storage: list[dict] = field(default_factory=list)
    # DeviceClasses, ResourceSlices, ResourceClaimTemplates, ResourceClaims (DRA cases,
    # :mod:`tests.conformance.dra`), created in this order; a ``status`` (a claim's allocation)
    # goes through the status subresource.
    dra: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]


class Generator:
    """Builds one :class:`Case` from a seed. All choices go through ``self.rng``."""

    def __init__(self, seed: int, pods: int = 25, max_nodes: int = 8) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.num_pods = pods
        self.max_nodes = max_nodes
        self.case_id = f"c{seed}"
        self.ns_a = f"{self.case_id}-a"
        self.ns_b = f"{self.case_id}-b"
        self.nodes: list[dict] = []
        self.existing: list[dict] = []
        self.uses_runtime_class = False
        self.gpus_left: dict[str, int] = {}
        self.used: dict[str, tuple[int, int]] = {}  # node -> (milli cpu, memory) of bound pods
        # Node features and restart rules (NodeDeclaredFeatures) draw from their own stream, so
        # adding them left every other choice of a seed as it was.
        self.feature_rng = random.Random(seed * 7919 + 17)

    # -- helpers --------------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def sample(self, seq, k: int) -> list:
        seq = list(seq)
        return self.rng.sample(seq, min(k, len(seq)))

    def node_label_values(self, key: str) -> list[str]:
        values = {
            n["metadata"]["labels"][key] for n in self.nodes if key in n["metadata"]["labels"]
        }
        return sorted(values)

    # -- case -----------------------------------------------------------------------------

    def case(self) -> Case:
        namespaces = {
            self.ns_a: {TEAM: "red", CASE_LABEL: self.case_id},
            self.ns_b: {TEAM: "blue", CASE_LABEL: self.case_id},
        }
        for i in range(self.rng.randint(3, self.max_nodes)):
            self.nodes.append(self.node(i))
        for node in self.nodes:
            for _ in range(self.rng.choice((0, 0, 1, 1, 2, 3))):
                self.existing.append(self.existing_pod(node, len(self.existing)))
        pending = [self.pending_pod(i) for i in range(self.num_pods)]
        return Case(
            seed=self.seed,
            case_id=self.case_id,
            namespaces=namespaces,
            nodes=self.nodes,
            existing_pods=self.existing,
            pending_pods=pending,
            needs_runtime_class=self.uses_runtime_class,
        )

    # -- nodes ----------------------------------------------------------------------------

    def node(self, index: int) -> dict:
        name = f"{self.case_id}-n{index}"
        labels = {HOSTNAME: name, CASE_LABEL: self.case_id}
        if self.chance(0.9):
            zone = self.pick(ZONES)
            labels[ZONE] = zone
            labels[REGION] = ZONES[zone]
        if self.chance(0.7):
            labels[TIER] = self.pick(TIERS)
        if self.chance(0.7):
            # Mostly integers (Gt/Lt), sometimes not: such a label matches neither.
            labels[RANK] = str(self.rng.randint(1, 10)) if self.chance(0.9) else "high"
        if self.chance(0.4):
            labels[SSD] = "true"
        taints = []
        seen = set()
        for _ in range(self.rng.choice((0, 0, 0, 0, 1, 1, 2))):
            key, effect = self.pick(TAINT_KEYS), self.pick(EFFECTS + ("PreferNoSchedule",))
            if (key, effect) in seen:
                continue
            seen.add((key, effect))
            taint = {"key": key, "effect": effect}
            if self.chance(0.8):
                taint["value"] = self.pick(TAINT_VALUES)
            taints.append(taint)
        spec: dict[str, Any] = {}
        if taints:
            spec["taints"] = taints
        if self.chance(0.1):
            spec["unschedulable"] = True
        allocatable = {
            "cpu": self.pick(("1", "2", "2", "4", "4", "8", "3500m")),
            "memory": self.pick(("2Gi", "4Gi", "8Gi", "8Gi", "16Gi", "3000Mi")),
            "pods": self.pick(("110",) * 10 + ("2", "3", "5")),
        }
        if self.chance(0.9):
            allocatable["ephemeral-storage"] = self.pick(("10Gi", "50Gi"))
        if self.chance(0.4):
            allocatable[GPU] = self.pick(("1", "2", "4"))
        if self.chance(0.3):
            allocatable[HUGEPAGES] = self.pick(("256Mi", "1Gi"))
        images = [
            {"names": [img], "sizeBytes": size}
            for img, size in self.sample(IMAGES, self.rng.randint(0, 3))
        ]
        status: dict[str, Any] = {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "conformance node",
                }
            ],
        }
        if images:
            status["images"] = images
        features = self.declared_features()
        if features:
            status["declaredFeatures"] = features
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": status,
        }

    def declared_features(self) -> list[str]:
        """``status.declaredFeatures``: sorted and unique (the apiserver checks both)."""
        rng = self.feature_rng
        if rng.random() < 0.4:
            return []
        return sorted(rng.sample(DECLARABLE_FEATURES, rng.randint(1, len(DECLARABLE_FEATURES))))

    def restart_rules(self, containers: list[dict], init: list[dict]) -> None:
        """Sometimes a container (or a non-sidecar init container) whose exit with code 42
        restarts the whole pod: the pod then needs RestartAllContainersOnContainerExits."""
        rng = self.feature_rng
        if rng.random() >= 0.15:
            return
        candidates = containers + [c for c in init if c.get("restartPolicy") != "Always"]
        target = rng.choice(candidates)
        target["restartPolicy"] = "Never"
        target["restartPolicyRules"] = [copy.deepcopy(RESTART_ALL_RULE)]

    # -- containers -----------------------------------------------------------------------

    def resources(
        self, node_gpus: int | None = None, big: bool = False, gpu_rate: float = 0.12
    ) -> dict | None:
        """A container's resources; ``None`` for a best-effort container.

        ``node_gpus``: for a bound pod, how many GPUs it may take (0: none).
        """
        if self.chance(0.15):
            return None
        requests: dict[str, str] = {}
        bound = node_gpus is not None
        if self.chance(0.85):
            cpus = CPUS if bound else SMALL_CPUS
            requests["cpu"] = self.pick(cpus + (("3", "4", "6") if big else ()))
        if self.chance(0.8):
            memories = MEMORIES if bound else SMALL_MEMORIES
            requests["memory"] = self.pick(memories + (("6Gi", "12Gi") if big else ()))
        if self.chance(0.1):
            requests["ephemeral-storage"] = self.pick(("1Gi", "20Gi"))
        limits: dict[str, str] = {}
        if node_gpus is not None:
            gpus = node_gpus
        else:
            gpus = self.rng.randint(1, 3) if self.chance(gpu_rate) else 0
        if gpus:
            # Extended resources cannot be overcommitted: requests must equal limits.
            requests[GPU] = limits[GPU] = str(gpus)
        if node_gpus is None and "memory" in requests and self.chance(0.06):
            # Huge pages: requests equal limits, and the container asks for memory too.
            requests[HUGEPAGES] = limits[HUGEPAGES] = self.pick(("128Mi", "512Mi"))
        out: dict[str, Any] = {}
        if requests and self.chance(0.15):
            # Limits only: the apiserver defaults requests to the limits.
            limits.update(requests)
            only_limits = dict(limits)
            return {"limits": only_limits}
        if requests:
            out["requests"] = requests
        if limits:
            out["limits"] = limits
        return out or None

    def container(self, name: str, resources: dict | None, ports: list[dict] | None = None) -> dict:
        container: dict[str, Any] = {"name": name, "image": self.pick(IMAGES)[0]}
        if resources:
            container["resources"] = resources
        if ports:
            container["ports"] = ports
        return container

    def host_ports(self, used: set) -> list[dict]:
        ports = []
        for _ in range(self.rng.randint(1, 2)):
            port = self.pick((80, 443, 8080, 9000))
            protocol = self.pick(("TCP", "TCP", "UDP"))
            host_ip = self.pick((None, None, "127.0.0.1", "10.0.0.1", "0.0.0.0"))
            key = (port, protocol, host_ip or "")
            if key in used:
                continue
            used.add(key)
            entry: dict[str, Any] = {"containerPort": 8000 + len(used), "hostPort": port}
            if protocol != "TCP" or self.chance(0.5):
                entry["protocol"] = protocol
            if host_ip:
                entry["hostIP"] = host_ip
            ports.append(entry)
        return ports

    def pod_level_requests(self, containers: list[dict]) -> dict[str, str]:
        """Pod-level requests (PodLevelResources): at least what all containers ask for."""
        milli_cpu = memory = 0
        for container in containers:
            res = container.get("resources") or {}
            asked = res.get("requests") or res.get("limits") or {}
            if "cpu" in asked:
                milli_cpu += milli_value(asked["cpu"])
            if "memory" in asked:
                memory += int_value(asked["memory"])
        milli_cpu += self.pick((0, 100, 500, 2000))
        memory += self.pick((0, 64, 512, 4096)) * 1024 * 1024
        return {"cpu": f"{milli_cpu}m", "memory": str(memory)}

    # -- existing pods ----------------------------------------------------------------------

    def labels(self) -> dict[str, str]:
        labels = {"app": self.pick(APPS)}
        if self.chance(0.6):
            labels[TEAM] = self.pick(TEAMS)
        return labels

    def existing_pod(self, node: dict, index: int) -> dict:
        node_name = node["metadata"]["name"]
        gpus_left = self.gpus_left.setdefault(
            node_name, int(node["status"]["allocatable"].get(GPU, "0"))
        )
        gpus = self.rng.randint(1, gpus_left) if gpus_left and self.chance(0.4) else 0
        self.gpus_left[node_name] -= gpus
        used: set = set()
        ports = self.host_ports(used) if self.chance(0.25) else None
        resources = self.resources(node_gpus=gpus)
        if not self.fits(node, resources) and self.chance(0.85):
            # Mostly what a scheduler would have allowed; sometimes an overcommitted node.
            resources = self.resources(node_gpus=gpus)
            if not self.fits(node, resources):
                resources = {"limits": {GPU: str(gpus)}} if gpus else None
        self.charge(node, resources)
        spec: dict[str, Any] = {
            "nodeName": node_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [self.container("main", resources, ports)],
        }
        if self.chance(0.15):
            sidecar = self.container(
                "sidecar",
                self.resources(node_gpus=0),
                self.host_ports(used) if self.chance(0.5) else None,
            )
            sidecar["restartPolicy"] = "Always"
            spec["initContainers"] = [sidecar]
        if self.chance(0.2):
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        self.affinity_term(for_existing=True)
                    ]
                }
            }
        elif self.chance(0.1):
            spec["affinity"] = {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        self.affinity_term(for_existing=True)
                    ]
                }
            }
        if self.chance(0.1):
            spec["runtimeClassName"] = RUNTIME_CLASS
            self.uses_runtime_class = True
        namespace = self.ns_a if self.chance(0.75) else self.ns_b
        meta: dict[str, Any] = {
            "name": f"e{index}",
            "namespace": namespace,
            "labels": self.labels(),
        }
        if self.chance(0.08):
            # Deleted but held by a finalizer: terminating, still on the node.
            meta["finalizers"] = [HOLD_FINALIZER]
            meta["annotations"] = {TERMINATING_ANNOTATION: "true"}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    @staticmethod
    def _asked(resources: dict | None) -> tuple[int, int]:
        res = resources or {}
        asked = res.get("requests") or res.get("limits") or {}
        return milli_value(asked.get("cpu", "0")), int_value(asked.get("memory", "0"))

    def fits(self, node: dict, resources: dict | None) -> bool:
        cpu, memory = self._asked(resources)
        used_cpu, used_memory = self.used.get(node["metadata"]["name"], (0, 0))
        alloc = node["status"]["allocatable"]
        return used_cpu + cpu <= milli_value(alloc["cpu"]) and used_memory + memory <= int_value(
            alloc["memory"]
        )

    def charge(self, node: dict, resources: dict | None) -> None:
        cpu, memory = self._asked(resources)
        used_cpu, used_memory = self.used.get(node["metadata"]["name"], (0, 0))
        self.used[node["metadata"]["name"]] = (used_cpu + cpu, used_memory + memory)

    # -- affinity -------------------------------------------------------------------------

    def label_selector(self) -> dict:
        roll = self.rng.random()
        if roll < 0.5:
            return {"matchLabels": {"app": self.pick(APPS)}}
        if roll < 0.8:
            return {
                "matchExpressions": [
                    {"key": "app", "operator": "In", "values": self.sample(APPS, 2)}
                ]
            }
        if roll < 0.9:
            return {
                "matchExpressions": [
                    {"key": TEAM, "operator": self.pick(("Exists", "DoesNotExist"))}
                ]
            }
        return {
            "matchLabels": {TEAM: self.pick(TEAMS)},
            "matchExpressions": [{"key": "app", "operator": "NotIn", "values": [self.pick(APPS)]}],
        }

    def affinity_term(self, for_existing: bool = False) -> dict:
        term: dict[str, Any] = {"topologyKey": self.pick((HOSTNAME, HOSTNAME, ZONE, REGION))}
        roll = self.rng.random()
        # No labelSelector selects no pod; an empty one selects every pod.
        if roll >= 0.1:
            term["labelSelector"] = self.label_selector()
        elif roll >= 0.05:
            term["labelSelector"] = {}
        selector = term.get("labelSelector")
        if not for_existing and selector is not None and TEAM not in repr(selector):
            if self.chance(0.1):
                term[self.pick(("matchLabelKeys", "mismatchLabelKeys"))] = [TEAM]
        roll = self.rng.random()
        if roll < 0.12:
            term["namespaces"] = [self.pick((self.ns_a, self.ns_b))]
        elif roll < 0.2:
            term["namespaceSelector"] = {}
        elif roll < 0.28:
            term["namespaceSelector"] = {"matchLabels": {TEAM: self.pick(TEAMS)}}
        return term

    # -- node affinity ----------------------------------------------------------------------

    def node_selector_requirement(self) -> dict:
        roll = self.rng.random()
        if roll < 0.3:
            values = self.node_label_values(ZONE) or ["zone-a"]
            return {"key": ZONE, "operator": "In", "values": self.sample(values + ["zone-z"], 2)}
        if roll < 0.45:
            return {"key": TIER, "operator": "NotIn", "values": [self.pick(TIERS)]}
        if roll < 0.6:
            return {"key": SSD, "operator": self.pick(("Exists", "DoesNotExist"))}
        if roll < 0.8:
            return {
                "key": RANK,
                "operator": self.pick(("Gt", "Lt")),
                "values": [str(self.rng.randint(1, 9))],
            }
        if roll < 0.9:
            return {
                "key": REGION,
                "operator": "In",
                "values": [self.pick(("region-1", "region-2"))],
            }
        names = [n["metadata"]["name"] for n in self.nodes]
        return {"key": HOSTNAME, "operator": "In", "values": self.sample(names, 2)}

    def node_selector_term(self) -> dict:
        term: dict[str, Any] = {}
        if self.chance(0.03):
            return term  # an empty term matches no node
        if self.chance(0.85):
            term["matchExpressions"] = [
                self.node_selector_requirement() for _ in range(self.rng.randint(1, 2))
            ]
        if not term or self.chance(0.15):
            name = self.pick(n["metadata"]["name"] for n in self.nodes)
            term["matchFields"] = [
                {"key": "metadata.name", "operator": self.pick(("In", "NotIn")), "values": [name]}
            ]
        return term

    # -- tolerations ------------------------------------------------------------------------

    def tolerations(self) -> list[dict]:
        out = []
        taints = [t for n in self.nodes for t in n["spec"].get("taints", ())]
        for _ in range(self.rng.randint(1, 3)):
            roll = self.rng.random()
            if roll < 0.05:
                out.append({"operator": "Exists"})  # tolerates everything
                continue
            if roll < 0.15:
                tol = {"key": UNSCHEDULABLE_TAINT}
                tol.update(
                    self.pick(
                        (
                            {"operator": "Exists", "effect": "NoSchedule"},
                            {"operator": "Exists"},
                            {"operator": "Equal", "value": ""},
                            {"effect": "NoExecute", "operator": "Exists"},
                        )
                    )
                )
                out.append(tol)
                continue
            taint = (
                self.pick(taints)
                if taints
                else {"key": self.pick(TAINT_KEYS), "effect": "NoSchedule"}
            )
            tol: dict[str, Any] = {"key": taint["key"]}
            if self.chance(0.5):
                tol["operator"] = "Exists"
            else:
                tol["value"] = (
                    taint.get("value", "") if self.chance(0.8) else self.pick(TAINT_VALUES)
                )
                if self.chance(0.5):
                    tol["operator"] = "Equal"
            if self.chance(0.7):
                tol["effect"] = taint["effect"] if self.chance(0.85) else self.pick(EFFECTS)
            if tol.get("effect") == "NoExecute" and self.chance(0.3):
                tol["tolerationSeconds"] = 60
            out.append(tol)
        return out

    # -- topology spread --------------------------------------------------------------------

    def spread_constraints(self, labels: dict[str, str]) -> list[dict]:
        out = []
        seen = set()
        for _ in range(self.rng.randint(1, 2)):
            key = self.pick((HOSTNAME, ZONE, ZONE, REGION))
            when = "DoNotSchedule" if self.chance(0.8) else "ScheduleAnyway"
            if (key, when) in seen:
                continue
            seen.add((key, when))
            roll = self.rng.random()
            if roll < 0.55:
                selector: dict | None = {"matchLabels": {"app": labels["app"]}}
            elif roll < 0.9:
                selector = self.label_selector()
            elif roll < 0.95:
                selector = {}
            else:
                selector = None  # counts no pod
            constraint: dict[str, Any] = {
                "maxSkew": self.pick((1, 1, 2, 3)),
                "topologyKey": key,
                "whenUnsatisfiable": when,
            }
            if selector is not None:
                constraint["labelSelector"] = selector
            if when == "DoNotSchedule" and self.chance(0.15):
                constraint["minDomains"] = self.rng.randint(2, 4)
            if self.chance(0.2):
                constraint["nodeAffinityPolicy"] = self.pick(("Honor", "Ignore"))
            if self.chance(0.2):
                constraint["nodeTaintsPolicy"] = self.pick(("Honor", "Ignore"))
            if selector is not None and TEAM in labels and TEAM not in repr(selector):
                if self.chance(0.1):
                    constraint["matchLabelKeys"] = [TEAM]
            out.append(constraint)
        return out

    # -- pending pods -----------------------------------------------------------------------

    def pending_pod(self, index: int) -> dict:
        labels = self.labels()
        used: set = set()
        containers = []
        for c in range(self.rng.choice((1, 1, 1, 2))):
            ports = self.host_ports(used) if self.chance(0.2) else None
            resources = self.resources(big=self.chance(0.15), gpu_rate=0.1 if c == 0 else 0.03)
            containers.append(self.container(f"c{c}", resources, ports))
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0,
            "containers": containers,
        }
        init = []
        if self.chance(0.3):
            for i in range(self.rng.randint(1, 2)):
                init.append(
                    self.container(f"init{i}", self.resources(big=self.chance(0.4), gpu_rate=0.04))
                )
        if self.chance(0.2):
            # A sidecar: a restartable init container, counted like a regular container.
            ports = self.host_ports(used) if self.chance(0.2) else None
            sidecar = self.container("sidecar", self.resources(gpu_rate=0.04), ports)
            sidecar["restartPolicy"] = "Always"
            init.insert(self.rng.randint(0, len(init)), sidecar)
        self.restart_rules(containers, init)
        if init:
            spec["initContainers"] = init
        if self.chance(0.08):
            spec["resources"] = {"requests": self.pod_level_requests(containers + init)}
        if self.chance(0.1):
            spec["runtimeClassName"] = RUNTIME_CLASS
            self.uses_runtime_class = True
        if self.chance(0.2):
            selector = {}
            for _ in range(self.rng.choice((1, 1, 2))):
                key = self.pick((ZONE, TIER, SSD, REGION, HOSTNAME))
                values = self.node_label_values(key) or ["none"]
                selector[key] = self.pick(values + ["nomatch"])
            spec["nodeSelector"] = selector
        if self.chance(0.03):
            # An extended resource no node has.
            containers[0].setdefault("resources", {}).setdefault("requests", {})[FPGA] = "1"
            containers[0]["resources"].setdefault("limits", {})[FPGA] = "1"
        affinity: dict[str, Any] = {}
        if self.chance(0.25):
            affinity["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        self.node_selector_term() for _ in range(self.rng.randint(1, 2))
                    ]
                }
            }
        if self.chance(0.15):
            affinity.setdefault("nodeAffinity", {})[
                "preferredDuringSchedulingIgnoredDuringExecution"
            ] = [{"weight": self.rng.randint(1, 100), "preference": self.node_selector_term()}]
        if self.chance(0.15):
            affinity["podAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    self.affinity_term() for _ in range(self.rng.randint(1, 2))
                ]
            }
        if self.chance(0.2):
            affinity["podAntiAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    self.affinity_term() for _ in range(self.rng.randint(1, 2))
                ]
            }
        if self.chance(0.1):
            affinity.setdefault("podAffinity", {})[
                "preferredDuringSchedulingIgnoredDuringExecution"
            ] = [{"weight": self.rng.randint(1, 100), "podAffinityTerm": self.affinity_term()}]
        if affinity:
            spec["affinity"] = affinity
        if self.chance(0.5):
            spec["tolerations"] = self.tolerations()
        if self.chance(0.4):
            spec["topologySpreadConstraints"] = self.spread_constraints(labels)
        if self.chance(0.2):
            spec["priorityClassName"] = self.pick(PRIORITY_CLASSES)
        namespace = self.ns_a if self.chance(0.85) else self.ns_b
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{index}", "namespace": namespace, "labels": labels},
            "spec": spec,
        }


def generate(seed: int, pods: int = 25, max_nodes: int = 8) -> Case:
    """The case for ``seed``: same seed, same case."""
    return Generator(seed, pods=pods, max_nodes=max_nodes).case()


def runtime_class() -> dict:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": RUNTIME_CLASS},
        "handler": "runc",
        "overhead": {"podFixed": dict(RUNTIME_CLASS_OVERHEAD)},
    }


def priority_classes() -> list[dict]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": "Never",
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


def clone(obj: dict) -> dict:
    return copy.deepcopy(obj)


# -- clear-choice cases for the scoring comparison ----------------------------------------


def _plain_node(
    case_id: str,
    index: int,
    *,
    taints: list[dict] | None = None,
    labels: dict[str, str] | None = None,
    images: list[tuple[str, int]] | None = None,
) -> dict:
    name = f"{case_id}-n{index}"
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "50Gi"}
    status: dict[str, Any] = {
        "capacity": dict(allocatable),
        "allocatable": allocatable,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
    }
    if images:
        status["images"] = [{"names": [img], "sizeBytes": size} for img, size in images]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {HOSTNAME: name, CASE_LABEL: case_id, ZONE: "zone-a", **(labels or {})},
        },
        "spec": {"taints": taints} if taints else {},
        "status": status,
    }


def _pod(
    name: str,
    namespace: str,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    image: str = PAUSE_IMAGE,
    node_name: str | None = None,
    **spec_fields: Any,
) -> dict:
    container: dict[str, Any] = {"name": "main", "image": image}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
        **spec_fields,
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def _controller(api_version: str, kind: str, name: str, selector: dict, labels: dict) -> dict:
    """A ReplicaSet / StatefulSet / ReplicationController (``v1``: a map selector) whose pod
    template carries ``labels``; with no controller manager it never creates a pod."""
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": PAUSE_IMAGE}]},
    }
    spec: dict[str, Any] = {"replicas": 0, "selector": selector, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _service(name: str, selector: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": selector, "ports": [{"port": 80}]},
    }


def _owned(pod: dict, controller: dict) -> dict:
    """``pod`` with ``controller`` as its controlling owner (the harness fills in the uid)."""
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": controller["apiVersion"],
            "kind": controller["kind"],
            "name": controller["metadata"]["name"],
            "uid": "",
            "controller": True,
        }
    ]
    return pod


def clear_choice_cases() -> list[tuple[Case, str]]:
    """Hand-made cases where one node is clearly best; (case, that node).

    Each isolates one score plugin: the other nodes are equal for every other plugin (or
    worse), so a correct implementation cannot pick another node, ties included.
    """
    cases: list[tuple[Case, str]] = []

    def case(
        name: str,
        nodes: list[dict],
        existing: list[dict],
        pod: dict,
        best: int,
        workloads: list[dict] | None = None,
    ) -> None:
        case_id = f"score-{name}"
        ns = f"{case_id}-a"
        for obj in (*existing, pod, *(workloads or ())):
            obj["metadata"]["namespace"] = ns
        cases.append(
            (
                Case(
                    seed=0,
                    case_id=case_id,
                    namespaces={ns: {TEAM: "red", CASE_LABEL: case_id}},
                    nodes=nodes,
                    existing_pods=existing,
                    pending_pods=[pod],
                    barrier_taint=True,
                    workloads=workloads or [],
                ),
                f"{case_id}-n{best}",
            )
        )

    # NodeResourcesFit LeastAllocated (and BalancedAllocation): n2 is the only empty node.
    cid = "score-least-allocated"
    nodes = [_plain_node(cid, i) for i in range(4)]
    existing = [
        _pod(f"load{i}", "", cpu="3", memory="6Gi", node_name=f"{cid}-n{i}") for i in (0, 1, 3)
    ]
    case("least-allocated", nodes, existing, _pod("p", "", cpu="500m", memory="512Mi"), 2)

    # TaintToleration: every node but n2 has an untolerated PreferNoSchedule taint.
    cid = "score-prefer-no-schedule"
    taint = [{"key": "dedicated", "value": "a", "effect": "PreferNoSchedule"}]
    nodes = [_plain_node(cid, i, taints=None if i == 2 else taint) for i in range(4)]
    case("prefer-no-schedule", nodes, [], _pod("p", "", cpu="500m", memory="512Mi"), 2)

    # Both at once, pointing at the same node: n1 is empty and untainted.
    cid = "score-both"
    nodes = [_plain_node(cid, i, taints=taint if i in (0, 2) else None) for i in range(4)]
    existing = [
        _pod(f"load{i}", "", cpu="3500m", memory="7Gi", node_name=f"{cid}-n{i}") for i in (0, 2, 3)
    ]
    case("both", nodes, existing, _pod("p", "", cpu="250m", memory="256Mi"), 1)

    # ImageLocality: only n1 has the pod's (large) image.
    cid = "score-image-locality"
    big = "registry.example/big:3"
    nodes = [
        _plain_node(cid, i, images=[(big, 1_200_000_000)] if i == 1 else None) for i in range(4)
    ]
    case("image-locality", nodes, [], _pod("p", "", cpu="100m", image=big), 1)

    # NodeAffinity preferred term: only n3 is gold.
    cid = "score-node-affinity"
    nodes = [_plain_node(cid, i, labels={TIER: "gold" if i == 3 else "bronze"}) for i in range(4)]
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": TIER, "operator": "In", "values": ["gold"]}]
                    },
                }
            ]
        }
    }
    case("node-affinity", nodes, [], _pod("p", "", cpu="100m", affinity=preferred), 3)

    # InterPodAffinity preferred term: the only db pod runs on n1.
    cid = "score-pod-affinity"
    nodes = [_plain_node(cid, i) for i in range(4)]
    existing = [_pod("db", "", labels={"app": "db"}, node_name=f"{cid}-n1")]
    affinity = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": HOSTNAME,
                    },
                }
            ]
        }
    }
    case("pod-affinity", nodes, existing, _pod("p", "", cpu="100m", affinity=affinity), 1)

    # PodTopologySpread ScheduleAnyway: web pods everywhere but n2.
    cid = "score-spread"
    nodes = [_plain_node(cid, i) for i in range(4)]
    existing = [
        _pod(f"web{i}", "", labels={"app": "web"}, node_name=f"{cid}-n{i}") for i in (0, 1, 3)
    ]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    pod = _pod("p", "", cpu="100m", labels={"app": "web"}, topologySpreadConstraints=spread)
    case("spread", nodes, existing, pod, 2)

    default_spread_cases(case)
    return cases


def default_spread_cases(case: Callable[..., None]) -> None:
    """PodTopologySpread's System default constraints (hostname maxSkew 3, zone maxSkew 5,
    ScheduleAnyway) on pods without constraints of their own, with the selector upstream's
    ``DefaultSelector`` (``pkg/scheduler/framework/plugins/helper/spread.go``) derives from the
    pod's controlling ReplicaSet / StatefulSet / ReplicationController or the Services
    selecting it.

    In each case the best node holds no pod of the workload but one unrelated, *larger* pod
    (200m where the workload's pods ask 100m): without default spreading every resource score
    points away from it, so a scheduler that misses the selector picks another node.
    """
    # ReplicaSet with matchLabels and matchExpressions: fe pods on n0, n1, n3; n2 runs a be pod
    # (app=web too, so ignoring the matchExpressions would count it).
    cid = "score-default-spread-rs"
    fe, be = {"app": "web", "tier": "fe"}, {"app": "web", "tier": "be"}
    rs_selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
    }
    rs = _controller("apps/v1", "ReplicaSet", "web", rs_selector, fe)
    nodes = [_plain_node(cid, i) for i in range(4)]
    existing = [
        _owned(_pod(f"web{i}", "", cpu="100m", labels=fe, node_name=f"{cid}-n{i}"), rs)
        for i in (0, 1, 3)
    ]
    existing.append(_pod("other", "", cpu="200m", labels=be, node_name=f"{cid}-n2"))
    pod = _owned(_pod("p", "", cpu="100m", labels=fe), rs)
    case("default-spread-rs", nodes, existing, pod, 2, workloads=[rs])

    # StatefulSet over two zones: db pods on n0, n1 (zone-a) and n3 (zone-b): n2 is empty of
    # them and in the emptier zone.
    cid = "score-default-spread-sts"
    db = {"app": "db"}
    sts = _controller("apps/v1", "StatefulSet", "db", {"matchLabels": db}, db)
    nodes = [_plain_node(cid, i, labels={ZONE: "zone-a" if i < 2 else "zone-b"}) for i in range(4)]
    existing = [
        _owned(_pod(f"db{i}", "", cpu="100m", labels=db, node_name=f"{cid}-n{i}"), sts)
        for i in (0, 1, 3)
    ]
    existing.append(_pod("other", "", cpu="200m", labels={"app": "x"}, node_name=f"{cid}-n2"))
    pod = _owned(_pod("p", "", cpu="100m", labels=db), sts)
    case("default-spread-sts", nodes, existing, pod, 2, workloads=[sts])

    # ReplicationController (a map selector): api pods on n1, n2, n3.
    cid = "score-default-spread-rc"
    api = {"app": "api"}
    rc = _controller("v1", "ReplicationController", "api", api, api)
    nodes = [_plain_node(cid, i) for i in range(4)]
    existing = [
        _owned(_pod(f"api{i}", "", cpu="100m", labels=api, node_name=f"{cid}-n{i}"), rc)
        for i in (1, 2, 3)
    ]
    existing.append(_pod("other", "", cpu="200m", labels={"app": "x"}, node_name=f"{cid}-n0"))
    pod = _owned(_pod("p", "", cpu="100m", labels=api), rc)
    case("default-spread-rc", nodes, existing, pod, 0, workloads=[rc])

    # Bare pods (no owner) that two Services select: their selectors merge into
    # app=cache,tier=hot; cache pods of the cold tier do not count.
    cid = "score-default-spread-svc"
    hot, cold = {"app": "cache", "tier": "hot"}, {"app": "cache", "tier": "cold"}
    services = [_service("cache", {"app": "cache"}), _service("hot", {"tier": "hot"})]
    nodes = [_plain_node(cid, i) for i in range(4)]
    existing = [
        _pod(f"hot{i}", "", cpu="100m", labels=hot, node_name=f"{cid}-n{i}") for i in (0, 1, 2)
    ]
    existing.append(_pod("cold", "", cpu="200m", labels=cold, node_name=f"{cid}-n3"))
    case(
        "default-spread-svc",
        nodes,
        existing,
        _pod("p", "", cpu="100m", labels=hot),
        3,
        workloads=services,
    )
