"""Seeded volume cases for the differential conformance tests (issue 13, item 6).

One seed gives one :class:`~tests.conformance.generator.Case` whose ``storage`` holds the
StorageClasses, PersistentVolumes, PersistentVolumeClaims and CSINodes of the case, in creation
order, and whose pods use them: VolumeBinding (bound claims whose PV has node affinity, unbound
WaitForFirstConsumer claims that do or do not match an available static PV by class, capacity,
access modes and node affinity, dynamic provisioning with ``allowedTopologies``, a missing
claim, an unbound Immediate claim), VolumeZone (zone/region labels on bound PVs, multi-zone
values), VolumeRestrictions (ReadWriteOncePod claims used by a bound pod, inline GCE PDs) and
NodeVolumeLimits (CSINode allocatable counts, bound pods using CSI PVs).

There is no kube-controller-manager, so no PV binder runs: a bound pair is created bound (the
PVC with ``spec.volumeName`` and the ``pv.kubernetes.io/bind-completed`` annotation, its status
``Bound``; the PV with a ``claimRef`` whose uid the harness fills in, its status ``Bound``);
static PVs get status ``Available`` (what the PV controller would write; the binder ignores
PVs in other phases). Objects whose ``status`` is set get it through the status subresource.
Cluster-scoped objects carry the case label, so the harness deletes them at teardown.
"""

from __future__ import annotations

import random
from typing import Any

from .generator import CASE_LABEL, HOSTNAME, PAUSE_IMAGE, REGION, TEAM, ZONE, ZONES, Case

DRIVER = "csi.conformance.io"
OTHER_DRIVER = "other.conformance.io"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
MULTI_ZONE_DELIMITER = "__"
DISK = "conformance.io/disk"  # a PV label claims select on
DISKS = ("fast", "slow")
PV_SIZES = ("1Gi", "2Gi", "5Gi", "10Gi")
CLAIM_SIZES = ("500Mi", "1Gi", "2Gi", "5Gi", "20Gi")
ACCESS_MODES = (
    ["ReadWriteOnce"],
    ["ReadWriteOnce"],
    ["ReadWriteMany"],
    ["ReadOnlyMany"],
    ["ReadWriteOnce", "ReadOnlyMany"],
)


class VolumeGenerator:
    """Builds one volume :class:`Case` from a seed. All choices go through ``self.rng``."""

    def __init__(self, seed: int, pods: int = 25, max_nodes: int = 6) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.num_pods = pods
        self.max_nodes = max_nodes
        self.case_id = f"v{seed}"
        self.ns = f"{self.case_id}-a"
        self.nodes: list[dict] = []
        self.classes: list[dict] = []
        self.pvs: list[dict] = []
        self.pvcs: list[dict] = []
        self.csinodes: list[dict] = []
        self.existing: list[dict] = []
        # claims a pending pod can use, by what they exercise
        self.bound_claims: list[str] = []
        self.rwop_used: list[str] = []
        self.unbound_wffc: list[str] = []
        self.unbound_immediate: list[str] = []
        self.n_pv = 0
        self.n_pvc = 0
        self.n_disk = 0

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def name(self, suffix: str) -> str:
        return f"{self.case_id}-{suffix}"

    # -- case -----------------------------------------------------------------------------

    def case(self) -> Case:
        for i in range(self.rng.randint(3, self.max_nodes)):
            self.nodes.append(self.node(i))
        self.storage_classes()
        for node in self.nodes:
            if self.chance(0.7):
                self.csinodes.append(self.csinode(node))
        for _ in range(self.rng.randint(3, 8)):
            self.static_pv()
        for _ in range(self.rng.randint(0, 2)):
            self.prebound_pair()
        if self.chance(0.3):
            self.lost_claim()
        for _ in range(self.rng.randint(4, 9)):
            self.bound_pair()
        for _ in range(self.rng.randint(3, 7)):
            self.unbound_claim(self.pick(self.wffc_classes()))
        for _ in range(self.rng.randint(0, 2)):
            self.unbound_claim(self.name("sc-imm"))
            self.unbound_immediate.append(self.pvcs[-1]["metadata"]["name"])
        self.existing_pods()
        pending = [self.pending_pod(i) for i in range(self.num_pods)]
        return Case(
            seed=self.seed,
            case_id=self.case_id,
            namespaces={self.ns: {TEAM: "red", CASE_LABEL: self.case_id}},
            nodes=self.nodes,
            existing_pods=self.existing,
            pending_pods=pending,
            storage=[*self.classes, *self.csinodes, *self.pvcs, *self.pvs],
        )

    # -- nodes, classes, CSINodes ---------------------------------------------------------

    def node(self, index: int) -> dict:
        name = self.name(f"n{index}")
        labels = {HOSTNAME: name, CASE_LABEL: self.case_id}
        if self.chance(0.85):
            zone = self.pick(ZONES)
            labels[ZONE] = zone
            if self.chance(0.9):
                labels[REGION] = ZONES[zone]
        allocatable = {"cpu": "8", "memory": "16Gi", "pods": "110", "ephemeral-storage": "50Gi"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {
                "capacity": dict(allocatable),
                "allocatable": allocatable,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            },
        }

    def node_zones(self) -> list[str]:
        return sorted(
            {n["metadata"]["labels"][ZONE] for n in self.nodes if ZONE in n["metadata"]["labels"]}
        )

    def storage_classes(self) -> None:
        def sc(suffix: str, provisioner: str, mode: str | None, topology: list[str] | None) -> None:
            obj: dict[str, Any] = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": self.name(suffix), "labels": {CASE_LABEL: self.case_id}},
                "provisioner": provisioner,
            }
            if mode:
                obj["volumeBindingMode"] = mode
            if topology:
                obj["allowedTopologies"] = [
                    {"matchLabelExpressions": [{"key": ZONE, "values": topology}]}
                ]
            self.classes.append(obj)

        zones = list(ZONES)
        sc("sc-imm", DRIVER, None if self.chance(0.5) else "Immediate", None)
        sc("sc-static", NO_PROVISIONER, "WaitForFirstConsumer", None)
        sc("sc-static2", NO_PROVISIONER, "WaitForFirstConsumer", None)
        sc("sc-dyn", DRIVER, "WaitForFirstConsumer", None)
        sc(
            "sc-dyn-topo",
            self.pick((DRIVER, OTHER_DRIVER)),
            "WaitForFirstConsumer",
            sorted(self.rng.sample(zones, self.rng.randint(1, 2))),
        )

    def wffc_classes(self) -> list[str]:
        return [self.name(s) for s in ("sc-static", "sc-static2", "sc-dyn", "sc-dyn-topo")]

    def csinode(self, node: dict) -> dict:
        name = node["metadata"]["name"]
        drivers = []
        for driver in (DRIVER, OTHER_DRIVER):
            if driver == OTHER_DRIVER and not self.chance(0.4):
                continue
            entry: dict[str, Any] = {"name": driver, "nodeID": name}
            if self.chance(0.8):
                entry["allocatable"] = {"count": self.pick((0, 1, 1, 2, 2, 3, 5))}
            drivers.append(entry)
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name, "labels": {CASE_LABEL: self.case_id}},
            "spec": {"drivers": drivers},
        }

    # -- volumes --------------------------------------------------------------------------

    def pv_source(self, driver: str | None = None) -> dict:
        self.n_pv += 1
        if driver is None:
            driver = self.pick((DRIVER, DRIVER, DRIVER, OTHER_DRIVER, None))
        if driver is None:
            return {"hostPath": {"path": f"/data/{self.case_id}/{self.n_pv}"}}
        return {"csi": {"driver": driver, "volumeHandle": f"{self.case_id}-h{self.n_pv}"}}

    def pv_affinity(self) -> dict | None:
        roll = self.rng.random()
        if roll < 0.35:
            nodes = self.rng.sample(self.nodes, self.rng.randint(1, 2))
            values = [n["metadata"]["name"] for n in nodes]
            key = HOSTNAME
        elif roll < 0.65:
            key = ZONE
            values = sorted(self.rng.sample(list(ZONES), self.rng.randint(1, 2)))
        else:
            return None
        return {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
                ]
            }
        }

    def pv_labels(self) -> dict[str, str]:
        labels = {CASE_LABEL: self.case_id}
        if self.chance(0.5):
            labels[DISK] = self.pick(DISKS)
        if self.chance(0.4):
            zones = sorted(self.rng.sample(list(ZONES), self.rng.choice((1, 1, 2))))
            labels[ZONE] = MULTI_ZONE_DELIMITER.join(zones)
            if self.chance(0.5):
                labels[REGION] = ZONES[zones[0]]
        return labels

    def pv(
        self,
        name: str,
        storage_class: str,
        size: str,
        modes: list[str],
        phase: str,
        *,
        driver: str | None = None,
        claim: str | None = None,
    ) -> dict:
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": modes,
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class,
            **self.pv_source(driver),
        }
        if self.chance(0.1):
            spec["volumeMode"] = "Block"
        affinity = self.pv_affinity()
        if affinity:
            spec["nodeAffinity"] = affinity
        if claim:
            spec["claimRef"] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": self.ns,
                "name": claim,
                "uid": "",  # the harness fills in the created claim's uid
            }
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": self.pv_labels()},
            "spec": spec,
            "status": {"phase": phase},
        }
        self.pvs.append(pv)
        return pv

    def pvc(self, storage_class: str, size: str, modes: list[str]) -> dict:
        self.n_pvc += 1
        pvc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"claim{self.n_pvc}", "namespace": self.ns},
            "spec": {
                "accessModes": modes,
                "resources": {"requests": {"storage": size}},
                "storageClassName": storage_class,
            },
        }
        self.pvcs.append(pvc)
        return pvc

    def static_pv(self) -> None:
        cls = self.pick((self.name("sc-static"), self.name("sc-static"), self.name("sc-static2")))
        # Rarely left Pending: the binder only matches Available PVs.
        phase = "Available" if self.chance(0.92) else "Pending"
        self.pv(
            self.name(f"pv{self.n_pv + 1}"),
            cls,
            self.pick(PV_SIZES),
            list(self.pick(ACCESS_MODES)),
            phase,
        )

    def bound_pair(self) -> None:
        rwop = self.chance(0.25)
        modes = ["ReadWriteOncePod"] if rwop else list(self.pick(ACCESS_MODES))
        size = self.pick(PV_SIZES)
        cls = self.pick((self.name("sc-imm"), self.name("sc-dyn"), self.name("sc-static")))
        pvc = self.pvc(cls, size, modes)
        claim = pvc["metadata"]["name"]
        pv_name = self.name(f"pv{self.n_pv + 1}")
        self.pv(pv_name, cls, size, modes, "Bound", claim=claim)
        pvc["spec"]["volumeName"] = pv_name
        if self.chance(0.93):
            pvc["metadata"]["annotations"] = {BIND_COMPLETED: "yes"}
        pvc["status"] = {"phase": "Bound", "accessModes": modes, "capacity": {"storage": size}}
        if rwop:
            # Mostly used by a bound pod already (the harness binds it below).
            if self.chance(0.7):
                self.rwop_used.append(claim)
            else:
                self.bound_claims.append(claim)
        else:
            self.bound_claims.append(claim)

    def unbound_claim(self, cls: str) -> None:
        pvc = self.pvc(cls, self.pick(CLAIM_SIZES), list(self.pick(ACCESS_MODES)))
        if self.chance(0.25):
            pvc["spec"]["selector"] = {"matchLabels": {DISK: self.pick(DISKS)}}
        if self.chance(0.1):
            pvc["spec"]["volumeMode"] = "Block"
        if cls != self.name("sc-imm"):
            self.unbound_wffc.append(pvc["metadata"]["name"])

    def prebound_pair(self) -> None:
        """A static PV whose claimRef names an unbound WFFC claim (no uid): the binder must
        pick that PV (where its node affinity allows)."""
        cls = self.name("sc-static")
        size = self.pick(PV_SIZES)
        modes = ["ReadWriteOnce"]
        pvc = self.pvc(cls, size, modes)
        claim = pvc["metadata"]["name"]
        self.pv(self.name(f"pv{self.n_pv + 1}"), cls, size, modes, "Available", claim=claim)
        self.pvs[-1]["spec"]["claimRef"]["uid"] = None  # pre-bound by name only
        self.unbound_wffc.append(claim)

    def lost_claim(self) -> None:
        pvc = self.pvc(self.name("sc-static"), "1Gi", ["ReadWriteOnce"])
        pvc["spec"]["volumeName"] = self.name("gone")
        pvc["status"] = {"phase": "Lost"}
        self.unbound_immediate.append(pvc["metadata"]["name"])

    # -- pods -----------------------------------------------------------------------------

    def pod(self, name: str, volumes: list[dict], node: str | None = None) -> dict:
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        }
        if volumes:
            spec["volumes"] = volumes
        if node:
            spec["nodeName"] = node
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.ns, "labels": {"app": "vol"}},
            "spec": spec,
        }

    @staticmethod
    def claim_volume(index: int, claim: str, read_only: bool = False) -> dict:
        source: dict[str, Any] = {"claimName": claim}
        if read_only:
            source["readOnly"] = True
        return {"name": f"v{index}", "persistentVolumeClaim": source}

    def gce_volume(self, index: int) -> dict:
        return {
            "name": f"v{index}",
            "gcePersistentDisk": {
                "pdName": f"disk{self.rng.randint(1, 3)}",
                "readOnly": self.chance(0.5),
            },
        }

    def existing_pods(self) -> None:
        """Bound pods using RWOP claims (one each), other bound claims (CSI attach counts)
        and inline GCE PDs."""
        for i, claim in enumerate(self.rwop_used):
            node = self.pick(self.nodes)["metadata"]["name"]
            self.existing.append(self.pod(f"rwop{i}", [self.claim_volume(0, claim)], node))
        for i, node in enumerate(self.nodes):
            volumes: list[dict] = []
            claims: set[str] = set()
            for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
                if self.bound_claims and self.chance(0.8):
                    claim = self.pick(self.bound_claims)
                    if claim not in claims:
                        claims.add(claim)
                        volumes.append(self.claim_volume(len(volumes), claim))
                else:
                    volumes.append(self.gce_volume(len(volumes)))
            if volumes:
                self.existing.append(self.pod(f"user{i}", volumes, node["metadata"]["name"]))

    def pending_volume(self, index: int) -> dict:
        roll = self.rng.random()
        # Missing, RWOP-in-use and unbound Immediate claims reject every node: rarer.
        if roll < 0.35 and self.bound_claims:
            return self.claim_volume(index, self.pick(self.bound_claims), self.chance(0.2))
        if roll < 0.65 and self.unbound_wffc:
            return self.claim_volume(index, self.pick(self.unbound_wffc))
        if roll < 0.71 and self.rwop_used:
            return self.claim_volume(index, self.pick(self.rwop_used))
        if roll < 0.74:
            return self.claim_volume(index, "missing")
        if roll < 0.77 and self.unbound_immediate:
            return self.claim_volume(index, self.pick(self.unbound_immediate))
        if roll < 0.8:
            # generic ephemeral volume: no ephemeral volume controller creates its claim
            template = {
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": self.name("sc-dyn"),
                    "resources": {"requests": {"storage": "1Gi"}},
                }
            }
            return {"name": f"v{index}", "ephemeral": {"volumeClaimTemplate": template}}
        if roll < 0.88:
            return self.gce_volume(index)
        return {"name": f"v{index}", "emptyDir": {}}

    def pending_pod(self, index: int) -> dict:
        volumes: list[dict] = []
        claims: set[str] = set()
        for _ in range(self.rng.choice((1, 1, 2, 2, 3))):
            volume = self.pending_volume(len(volumes))
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim in claims:
                continue
            if claim:
                claims.add(claim)
            volumes.append(volume)
        pod = self.pod(f"p{index}", volumes)
        if self.chance(0.15):
            zones = self.node_zones()
            if zones:
                pod["spec"]["nodeSelector"] = {ZONE: self.pick(zones)}
        return pod


def generate_volume_case(seed: int, pods: int = 25, max_nodes: int = 6) -> Case:
    """The volume case for ``seed``: same seed, same case."""
    return VolumeGenerator(seed, pods=pods, max_nodes=max_nodes).case()
