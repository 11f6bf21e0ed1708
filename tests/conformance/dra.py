"""Seeded Dynamic Resource Allocation cases for the differential conformance tests (issue 20,
item 7): ``python -m tests.conformance --dra``.

One seed gives one :class:`~tests.conformance.generator.Case` whose ``dra`` holds, in creation
order, the DeviceClasses, ResourceSlices, ResourceClaimTemplates and ResourceClaims of the case
(resource.k8s.io/v1), and whose pending pods use them through ``spec.resourceClaims``:

- DeviceClasses: a driver selector, CEL selectors on attributes, capacity (``quantity``) and
  versions (``semver``), an opaque config, ``extendedResourceName`` (DRAExtendedResource), and
  sometimes a selector that fails at runtime on every device (a missing attribute).
- ResourceSlices: node-local pools (``nodeName``) of one or two slices, sometimes incomplete
  (a slice missing) or with an outdated generation left behind; network-attached pools
  (``nodeSelector`` on the zone, ``allNodes``, ``perDeviceNodeSelection``); partitionable
  devices (a ``sharedCounters`` slice and devices that ``consumesCounters``); device taints
  (NoSchedule, NoExecute); ``allowMultipleAllocations`` NICs with a ``bandwidth`` capacity and
  a request policy; now and then devices with ``bindingConditions`` and
  ``bindingFailureConditions`` (DRADeviceBindingConditions: pools holding them are tried last)
  and ``bindsToNode`` (the allocation is limited to the chosen node), with or without
  conditions.
- Claims: ``exactly`` with ``count`` or ``All``, request selectors, ``firstAvailable``
  subrequests, ``matchAttribute`` / ``distinctAttribute`` constraints, ``adminAccess`` (only in
  the namespace labelled ``resource.kubernetes.io/admin-access``), tolerations, capacity
  requests, configs; templates (kube-controller-manager's resourceclaim-controller creates a
  claim per pod), shared claims and claims already allocated (their ``status.allocation``
  written through the status subresource, as a scheduler would have) that hold devices.
- Pods also ask for an extended resource no node advertises that a DeviceClass provides
  (``extendedResourceName``, or the implicit ``deviceclass.resource.kubernetes.io/<class>``).

Everything generated must be accepted by the apiserver (names are DNS labels, attribute names C
identifiers, one of the node selection fields per slice, devices and counters in separate
slices, ``count`` only with ``ExactCount``, ``adminAccess`` only in ``exactly``...).
Cluster-scoped objects carry the case label, so the harness deletes them at teardown.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

from .generator import CASE_LABEL, HOSTNAME, PAUSE_IMAGE, TEAM, ZONE, ZONES, Case

API_VERSION = "resource.k8s.io/v1"
GPU_DRIVER = "gpu.conformance.io"
NIC_DRIVER = "nic.conformance.io"
FPGA_DRIVER = "fpga.conformance.io"
SHARED_DOMAIN = "conformance.io"  # attributes both drivers publish (matchAttribute across them)
NUMA = f"{SHARED_DOMAIN}/numa"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
IMPLICIT_EXTENDED = "deviceclass.resource.kubernetes.io/"
MODELS = ("a100", "h100", "t4")
GPU_MEMORY = {"a100": ("40Gi", "80Gi"), "h100": ("80Gi",), "t4": ("16Gi",)}
VERSIONS = ("1.2.0", "1.5.3", "2.0.0")
# Condition types (label names) a driver would set in the claim's per-device status.
BINDING_CONDITIONS = (f"{SHARED_DOMAIN}/attached", f"{SHARED_DOMAIN}/fabric-ready")
BINDING_FAILURE_CONDITIONS = (f"{SHARED_DOMAIN}/attach-failed", f"{SHARED_DOMAIN}/timeout")


def _attr(value: Any) -> dict:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str) and value[:1].isdigit() and value.count(".") == 2:
        return {"version": value}
    return {"string": value}


def gpu(s: str) -> str:
    """A CEL reference to a GPU driver attribute."""
    return f'device.attributes["{GPU_DRIVER}"].{s}'


class DraGenerator:
    """Builds one DRA :class:`Case` from a seed. All choices go through ``self.rng``."""

    def __init__(
        self, seed: int, pods: int = 25, max_nodes: int = 6, extended: bool = True
    ) -> None:
        self.seed = seed
        # Whether pods also ask for extended resources that DeviceClasses provide.
        self.use_extended = extended
        self.rng = random.Random(seed)
        # Binding conditions draw from their own stream: the rest of a seed's case is the same
        # as before they were generated.
        self.binding_rng = random.Random(f"binding-{seed}")
        self.binding_case = self.binding_rng.random() < 0.3
        self.num_pods = pods
        self.max_nodes = max_nodes
        self.case_id = f"d{seed}"
        self.ns = f"{self.case_id}-a"
        self.admin_ns = f"{self.case_id}-admin"
        self.nodes: list[dict] = []
        self.classes: list[dict] = []
        self.slices: list[dict] = []
        self.templates: list[dict] = []
        self.claims: list[dict] = []
        # (pool, device, driver, node) of every published device, for pre-allocated claims
        self.devices: list[tuple[str, str, str, str]] = []
        self.shared_claims: list[tuple[str, str]] = []  # (namespace, name)
        self.held_claims: list[tuple[str, str]] = []
        self.extended: list[str] = []  # extended resource names a class provides
        self.n_slice = 0

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def name(self, suffix: str) -> str:
        return f"{self.case_id}-{suffix}"

    def cls(self, suffix: str) -> str:
        return self.name(suffix)

    # -- case -----------------------------------------------------------------------------

    def case(self) -> Case:
        for i in range(self.rng.randint(3, self.max_nodes)):
            self.nodes.append(self.node(i))
        self.device_classes()
        for node in self.nodes:
            if self.chance(0.85):
                self.gpu_pool(node)
            if self.chance(0.35):
                self.partitionable_pool(node)
            if self.chance(0.35):
                self.nic_pool(node)
        for _ in range(self.rng.randint(0, 2)):
            self.network_pool()
        for _ in range(self.rng.randint(1, 3)):
            self.templates.append(self.template(len(self.templates)))
        for i in range(self.rng.randint(1, 3)):
            ns = self.admin_ns if self.chance(0.2) else self.ns
            claim = self.claim(f"shared{i}", ns)
            self.claims.append(claim)
            self.shared_claims.append((ns, claim["metadata"]["name"]))
        for i in range(self.rng.randint(0, 3)):
            self.held_claim(i)
        pending = [self.pending_pod(i) for i in range(self.num_pods)]
        return Case(
            seed=self.seed,
            case_id=self.case_id,
            namespaces={
                self.ns: {TEAM: "red", CASE_LABEL: self.case_id},
                self.admin_ns: {TEAM: "blue", CASE_LABEL: self.case_id, ADMIN_LABEL: "true"},
            },
            nodes=self.nodes,
            existing_pods=[],
            pending_pods=pending,
            dra=[*self.classes, *self.slices, *self.templates, *self.claims],
        )

    # -- nodes ----------------------------------------------------------------------------

    def node(self, index: int) -> dict:
        name = self.name(f"n{index}")
        labels = {HOSTNAME: name, CASE_LABEL: self.case_id}
        if self.chance(0.85):
            labels[ZONE] = self.pick(ZONES)
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

    def zones(self) -> list[str]:
        return sorted(
            {n["metadata"]["labels"][ZONE] for n in self.nodes if ZONE in n["metadata"]["labels"]}
        )

    # -- device classes ---------------------------------------------------------------------

    def device_class(self, suffix: str, selectors: list[str], **spec: Any) -> None:
        body: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
        body.update(spec)
        self.classes.append(
            {
                "apiVersion": API_VERSION,
                "kind": "DeviceClass",
                "metadata": {"name": self.cls(suffix), "labels": {CASE_LABEL: self.case_id}},
                "spec": body,
            }
        )

    def device_classes(self) -> None:
        on_gpu = f'device.driver == "{GPU_DRIVER}"'
        self.device_class("gpu", [on_gpu])
        self.device_class(
            "gpu-big",
            [on_gpu, f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'],
        )
        self.device_class(
            "gpu-new",
            [on_gpu, f'{gpu("driverVersion")}.isGreaterThan(semver("1.5.0"))'],
            config=[{"opaque": {"driver": GPU_DRIVER, "parameters": {"mode": "exclusive"}}}],
        )
        self.device_class("nic", [f'device.driver == "{NIC_DRIVER}"'])
        self.device_class("fpga", [f'device.driver == "{FPGA_DRIVER}"'])
        self.device_class("part", [on_gpu, f'"partition" in device.attributes["{GPU_DRIVER}"]'])
        if self.chance(0.5):
            # Fails at runtime on every GPU: no such attribute.
            self.device_class("broken", [on_gpu, f'{gpu("nosuchattribute")} == "x"'])
        extended = f"{SHARED_DOMAIN}/gpu-{self.case_id}"
        self.device_class("ext", [on_gpu], extendedResourceName=extended)
        if self.use_extended:
            self.extended = [extended, IMPLICIT_EXTENDED + self.cls("gpu")]

    # -- slices -----------------------------------------------------------------------------

    def slice(
        self,
        driver: str,
        pool: str,
        where: dict,
        *,
        devices: list[dict] | None = None,
        counters: list[dict] | None = None,
        generation: int = 1,
        count: int = 1,
    ) -> dict:
        self.n_slice += 1
        spec: dict[str, Any] = {
            "driver": driver,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            **where,
        }
        if devices is not None:
            spec["devices"] = devices
        if counters is not None:
            spec["sharedCounters"] = counters
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {
                "name": self.name(f"s{self.n_slice}"),
                "labels": {CASE_LABEL: self.case_id},
            },
            "spec": spec,
        }
        self.slices.append(body)
        return body

    def binding(self, devices: list[dict], *, attached: bool = False) -> None:
        """Sometimes give some of ``devices`` (one slice's) binding conditions: kube-scheduler's
        PreBind then waits for the driver to set them. Both lists or neither (the API requires
        failure conditions with conditions), at most 4 each, no overlap. ``bindsToNode`` is
        allowed with or without them; ``attached``: devices reached over a fabric, where it
        is more likely."""
        rng = self.binding_rng
        if not self.binding_case or rng.random() >= 0.4:
            return
        for device in devices:
            if rng.random() < 0.5:
                device["bindingConditions"] = rng.sample(BINDING_CONDITIONS, rng.randint(1, 2))
                device["bindingFailureConditions"] = rng.sample(
                    BINDING_FAILURE_CONDITIONS, rng.randint(1, 2)
                )
            if rng.random() < (0.5 if attached else 0.15):
                device["bindsToNode"] = True

    def taints(self) -> list[dict] | None:
        if not self.chance(0.15):
            return None
        taint: dict[str, Any] = {"key": "conformance.io/health", "effect": "NoSchedule"}
        if self.chance(0.7):
            taint["value"] = self.pick(("degraded", "maintenance"))
        if self.chance(0.3):
            taint["effect"] = "NoExecute"
        return [taint]

    def gpu_device(self, name: str, numa: int) -> dict:
        model = self.pick(MODELS)
        device: dict[str, Any] = {
            "name": name,
            "attributes": {
                "model": _attr(model),
                "driverVersion": _attr(self.pick(VERSIONS)),
                "healthy": _attr(self.chance(0.9)),
                NUMA: _attr(numa),
            },
            "capacity": {"memory": {"value": self.pick(GPU_MEMORY[model])}},
        }
        taints = self.taints()
        if taints:
            device["taints"] = taints
        return device

    def gpu_pool(self, node: dict) -> None:
        """A node's GPUs: one slice, or two (sometimes one missing: an incomplete pool; or an
        older generation left behind)."""
        node_name = node["metadata"]["name"]
        pool = f"{node_name}-gpu"
        where = {"nodeName": node_name}
        devices = [self.gpu_device(f"gpu-{i}", i % 2) for i in range(self.rng.randint(2, 4))]
        roll = self.rng.random()
        if roll < 0.6 or len(devices) < 2:
            generation = self.pick((1, 1, 2))
            self.binding(devices)
            self.slice(GPU_DRIVER, pool, where, devices=devices, generation=generation)
            published = devices
        else:
            half = len(devices) // 2
            published = devices
            incomplete = roll < 0.7
            self.binding(devices[:half])
            self.slice(GPU_DRIVER, pool, where, devices=devices[:half], generation=2, count=2)
            if not incomplete:
                self.binding(devices[half:])
                self.slice(GPU_DRIVER, pool, where, devices=devices[half:], generation=2, count=2)
            else:
                published = devices[:half]  # an incomplete pool: the allocator skips it
            if roll > 0.9:
                # An outdated generation still published: only generation 2 counts.
                old = [self.gpu_device(f"old-{i}", 0) for i in range(2)]
                self.slice(GPU_DRIVER, pool, where, devices=old, generation=1, count=1)
        for device in published:
            self.devices.append((pool, device["name"], GPU_DRIVER, node_name))

    def partitionable_pool(self, node: dict) -> None:
        """A GPU whose memory is shared by its partitions: a counters slice and a devices
        slice (the API keeps them apart) in one pool."""
        node_name = node["metadata"]["name"]
        pool = f"{node_name}-part"
        where = {"nodeName": node_name}
        counters = [{"name": "gpu0", "counters": {"memory": {"value": "40Gi"}}}]

        def part(name: str, memory: str, label: str) -> dict:
            return {
                "name": name,
                "attributes": {
                    "model": _attr("a100"),
                    "partition": _attr(label),
                    "driverVersion": _attr("2.0.0"),
                    NUMA: _attr(0),
                },
                "capacity": {"memory": {"value": memory}},
                "consumesCounters": [
                    {"counterSet": "gpu0", "counters": {"memory": {"value": memory}}}
                ],
            }

        devices = [part("whole", "40Gi", "full")]
        devices += [part(f"half-{i}", "20Gi", "half") for i in range(2)]
        if self.chance(0.5):
            devices += [part(f"quarter-{i}", "10Gi", "quarter") for i in range(4)]
        self.slice(GPU_DRIVER, pool, where, counters=counters, count=2)
        self.slice(GPU_DRIVER, pool, where, devices=devices, count=2)
        for device in devices:
            self.devices.append((pool, device["name"], GPU_DRIVER, node_name))

    def nic_device(self, name: str, numa: int, shared: bool) -> dict:
        device: dict[str, Any] = {
            "name": name,
            "attributes": {"speed": _attr(self.pick((10, 25, 100))), NUMA: _attr(numa)},
        }
        if shared:
            device["allowMultipleAllocations"] = True
            policy: dict[str, Any] = {"default": "10"}
            if self.chance(0.5):
                policy["validRange"] = {"min": "10", "step": "10"}
            else:
                policy["validValues"] = ["10", "20", "50"]
            device["capacity"] = {"bandwidth": {"value": "100", "requestPolicy": policy}}
        return device

    def nic_pool(self, node: dict) -> None:
        node_name = node["metadata"]["name"]
        pool = f"{node_name}-nic"
        devices = [
            self.nic_device(f"nic-{i}", i % 2, self.chance(0.6))
            for i in range(self.rng.randint(1, 2))
        ]
        self.slice(NIC_DRIVER, pool, {"nodeName": node_name}, devices=devices)

    def network_pool(self) -> None:
        """FPGAs reachable over the network: from the nodes of a zone, or from every node."""
        index = sum(1 for s in self.slices if s["spec"]["driver"] == FPGA_DRIVER)
        pool = self.name(f"fabric{index}")
        zones = self.zones()
        if zones and self.chance(0.6):
            where: dict[str, Any] = {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": [self.pick(zones)]}
                            ]
                        }
                    ]
                }
            }
        else:
            where = {"allNodes": True}
        devices = [
            {"name": f"fpga-{i}", "attributes": {NUMA: _attr(i % 2)}}
            for i in range(self.rng.randint(1, 3))
        ]
        if self.chance(0.35):
            # Each device says which nodes reach it (perDeviceNodeSelection).
            where = {"perDeviceNodeSelection": True}
            for device in devices:
                roll = self.rng.random()
                if roll < 0.5:
                    device["nodeName"] = self.pick(self.nodes)["metadata"]["name"]
                elif roll < 0.75 and zones:
                    device["nodeSelector"] = {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": ZONE, "operator": "In", "values": [self.pick(zones)]}
                                ]
                            }
                        ]
                    }
                else:
                    device["allNodes"] = True
        self.binding(devices, attached=True)
        self.slice(FPGA_DRIVER, pool, where, devices=devices)

    # -- claims -----------------------------------------------------------------------------

    def selectors(self) -> list[dict] | None:
        roll = self.rng.random()
        if roll < 0.6:
            return None
        memory = self.pick(("20Gi", "40Gi", "80Gi"))
        expressions = (
            f'{gpu("model")} == "{self.pick(MODELS)}"',
            f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("{memory}")) >= 0',
            f'{gpu("driverVersion")}.isLessThan(semver("2.0.0"))',
            f'device.attributes["{SHARED_DOMAIN}"].numa == {self.rng.randint(0, 1)}',
            f'{gpu("model")}.upperAscii().startsWith("A")',
            f'"healthy" in device.attributes["{GPU_DRIVER}"] && {gpu("healthy")}',
        )
        return [{"cel": {"expression": self.pick(expressions)}}]

    def tolerations(self) -> list[dict] | None:
        if not self.chance(0.3):
            return None
        if self.chance(0.3):
            return [{"operator": "Exists"}]
        tol: dict[str, Any] = {"key": "conformance.io/health"}
        if self.chance(0.5):
            tol["operator"] = "Exists"
        else:
            tol["operator"] = "Equal"
            tol["value"] = self.pick(("degraded", "maintenance"))
        if self.chance(0.6):
            tol["effect"] = self.pick(("NoSchedule", "NoExecute"))
        return [tol]

    def exact(self, admin: bool) -> dict:
        """An ``exactly`` request body."""
        roll = self.rng.random()
        has_broken = any(c["metadata"]["name"] == self.cls("broken") for c in self.classes)
        if roll < 0.62:
            cls = self.pick(("gpu", "gpu", "gpu", "gpu-big", "gpu-new", "part"))
        elif roll < 0.8:
            cls = "nic"
        elif roll < 0.95 or not has_broken:
            cls = "fpga"
        else:
            cls = "broken"
        body: dict[str, Any] = {"deviceClassName": self.cls(cls)}
        if cls.startswith("gpu") or cls == "part":
            selectors = self.selectors()
            if selectors:
                body["selectors"] = selectors
        if self.chance(0.08):
            body["allocationMode"] = "All"
        elif self.chance(0.3):
            body["count"] = self.rng.randint(1, 2)
        if admin and self.chance(0.5):
            body["adminAccess"] = True
        tolerations = self.tolerations()
        if tolerations:
            body["tolerations"] = tolerations
        if cls == "nic" and self.chance(0.6):
            body["capacity"] = {"requests": {"bandwidth": self.pick(("10", "20", "30", "60"))}}
        return body

    def request(self, name: str, admin: bool) -> dict:
        if self.chance(0.2):
            subs = []
            for i in range(self.rng.randint(2, 3)):
                sub = self.exact(admin=False)
                sub.pop("adminAccess", None)
                subs.append({"name": f"s{i}", **sub})
            return {"name": name, "firstAvailable": subs}
        return {"name": name, "exactly": self.exact(admin)}

    def claim_spec(self, admin: bool) -> dict:
        requests = [self.request(f"r{i}", admin) for i in range(self.pick((1, 1, 1, 1, 2, 3)))]
        devices: dict[str, Any] = {"requests": requests}
        if len(requests) > 1 and self.chance(0.4):
            constraint: dict[str, Any] = {}
            if self.chance(0.4):
                constraint["requests"] = [r["name"] for r in requests[:2]]
            if self.chance(0.8):
                constraint["matchAttribute"] = NUMA
            else:
                constraint["distinctAttribute"] = NUMA
            devices["constraints"] = [constraint]
        elif len(requests) == 1 and "exactly" in requests[0] and self.chance(0.2):
            requests[0]["exactly"].setdefault("count", 2)
            requests[0]["exactly"].pop("allocationMode", None)
            devices["constraints"] = [{"matchAttribute": NUMA}]
        if self.chance(0.2):
            devices["config"] = [
                {
                    "requests": [requests[0]["name"]],
                    "opaque": {"driver": GPU_DRIVER, "parameters": {"sharing": "timeSlicing"}},
                }
            ]
        return {"devices": devices}

    def template(self, index: int) -> dict:
        ns = self.admin_ns if self.chance(0.2) else self.ns
        return {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": self.name(f"t{index}"), "namespace": ns},
            "spec": {"spec": self.claim_spec(admin=ns == self.admin_ns)},
        }

    def claim(self, suffix: str, ns: str, spec: dict | None = None) -> dict:
        return {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaim",
            "metadata": {"name": self.name(suffix), "namespace": ns},
            "spec": spec or self.claim_spec(admin=ns == self.admin_ns),
        }

    def held_claim(self, index: int) -> None:
        """A claim already allocated one device (no consumer): that device is taken, and a pod
        using this claim can only go to the device's node."""
        free = [d for d in self.devices if not any(d == h for h in self._held_devices())]
        if not free:
            return
        pool, device, driver, node = self.pick(free)
        cls = "nic" if driver == NIC_DRIVER else "gpu"
        claim = self.claim(
            f"held{index}",
            self.ns,
            {
                "devices": {
                    "requests": [{"name": "r0", "exactly": {"deviceClassName": self.cls(cls)}}]
                }
            },
        )
        claim["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "r0", "driver": driver, "pool": pool, "device": device}]
                },
                # As a scheduler writes it (kube-scheduler's PreBind re-sends it).
                "allocationTimestamp": "2026-01-01T00:00:00Z",
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            }
        }
        self.claims.append(claim)
        self.held_claims.append((self.ns, claim["metadata"]["name"]))

    def _held_devices(self) -> list[tuple[str, str, str, str]]:
        out = []
        for claim in self.claims:
            for r in (
                ((claim.get("status") or {}).get("allocation") or {})
                .get("devices", {})
                .get("results", ())
            ):
                node = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0][
                    "matchFields"
                ][0]["values"][0]
                out.append((r["pool"], r["device"], r["driver"], node))
        return out

    # -- pods -------------------------------------------------------------------------------

    def pending_pod(self, index: int) -> dict:
        ns = self.ns
        pod_claims: list[dict] = []
        roll = self.rng.random()
        used: set[str] = set()
        if roll >= 0.1 or not self.extended:
            for i in range(self.pick((1, 1, 1, 2))):
                kind = self.rng.random()
                if kind < 0.55 and self.templates:
                    template = self.pick(self.templates)
                    ref = {"resourceClaimTemplateName": template["metadata"]["name"]}
                    ns = template["metadata"]["namespace"]
                elif kind < 0.8 or not self.held_claims:
                    ns, name = self.pick(self.shared_claims)
                    ref = {"resourceClaimName": name}
                else:
                    ns, name = self.pick(self.held_claims)
                    ref = {"resourceClaimName": name}
                if ref.get("resourceClaimName") in used:
                    continue
                used.add(ref.get("resourceClaimName", ""))
                pod_claims.append({"name": f"c{i}", **ref})
            # One namespace per pod: keep only the claims of the namespace chosen last.
            pod_claims = [c for c in pod_claims if self._claim_namespace(c) == ns]
        container: dict[str, Any] = {
            "name": "main",
            "image": PAUSE_IMAGE,
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        }
        if pod_claims:
            container["resources"]["claims"] = [{"name": c["name"]} for c in pod_claims]
        if (roll < 0.1 or self.chance(0.05)) and self.extended:
            resource = self.pick(self.extended)
            amount = str(self.pick((1, 1, 2)))
            container["resources"]["requests"][resource] = amount
            container["resources"].setdefault("limits", {})[resource] = amount
        spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": [container]}
        if pod_claims:
            spec["resourceClaims"] = pod_claims
        if self.chance(0.15):
            zones = self.zones()
            if zones:
                spec["nodeSelector"] = {ZONE: self.pick(zones)}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{index}", "namespace": ns, "labels": {"app": "dra"}},
            "spec": spec,
        }

    def _claim_namespace(self, pod_claim: dict) -> str | None:
        name = pod_claim.get("resourceClaimTemplateName") or pod_claim.get("resourceClaimName")
        for obj in (*self.templates, *self.claims):
            if obj["metadata"]["name"] == name:
                return obj["metadata"]["namespace"]
        return None


def generate_dra_case(seed: int, pods: int = 25, max_nodes: int = 6, extended: bool = True) -> Case:
    """The DRA case for ``seed``: same seed, same case. ``extended=False``: no pod asks for an
    extended resource a DeviceClass provides (DRAExtendedResource)."""
    return DraGenerator(seed, pods=pods, max_nodes=max_nodes, extended=extended).case()


def may_wait_for_binding(case: Case, pod: dict) -> bool:
    """Whether a device allocated to ``pod`` could carry ``bindingConditions``: some class its
    claims (or its extended resources) use may select a device with them. Over-approximated
    by driver (a class without a driver selector: any driver)."""
    waiting = {
        obj["spec"]["driver"]
        for obj in case.dra
        if obj["kind"] == "ResourceSlice"
        and any(d.get("bindingConditions") for d in obj["spec"].get("devices") or ())
    }
    if not waiting:
        return False
    drivers: dict[str, str | None] = {}  # class -> the driver it selects
    extended: dict[str, str] = {}  # extended resource name -> class
    for obj in case.dra:
        if obj["kind"] != "DeviceClass":
            continue
        name = obj["metadata"]["name"]
        found = None
        for selector in obj["spec"].get("selectors") or ():
            match = re.fullmatch(r'device\.driver == "([^"]+)"', selector["cel"]["expression"])
            found = found or (match and match.group(1))
        drivers[name] = found
        extended[IMPLICIT_EXTENDED + name] = name
        if obj["spec"].get("extendedResourceName"):
            extended[obj["spec"]["extendedResourceName"]] = name
    classes: set[str] = set()
    refs = {
        ref.get("resourceClaimTemplateName") or ref.get("resourceClaimName")
        for ref in pod["spec"].get("resourceClaims") or ()
    }
    for obj in case.dra:
        if obj["kind"] not in ("ResourceClaim", "ResourceClaimTemplate"):
            continue
        if obj["metadata"]["name"] not in refs:
            continue
        spec = obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
        for request in spec["devices"]["requests"]:
            for sub in [request.get("exactly") or {}, *(request.get("firstAvailable") or ())]:
                if sub.get("deviceClassName"):
                    classes.add(sub["deviceClassName"])
    for container in pod["spec"].get("containers") or ():
        for resource in (container.get("resources") or {}).get("requests") or {}:
            if resource in extended:
                classes.add(extended[resource])
    return any(drivers.get(c) is None or drivers[c] in waiting for c in classes)


def clone(obj: dict) -> dict:
    return copy.deepcopy(obj)
