"""Anonymising a trace: names and labels become salted hashes, consistent across objects.

One function maps every name and label value (:meth:`Anonymiser.name`: ``x`` and 12 hex
digits of an HMAC-SHA256 under the salt), so what matched before still matches: a node's
name, its ``kubernetes.io/hostname`` label, a ResourceSlice's ``nodeName`` and pool, a
``matchFields`` term; a pod's labels and the selectors of its owner's other pods (spread,
affinity); a PVC and the PV's ``claimRef``; a namespace and its ``kubernetes.io/metadata.name``.
The same salt gives the same hashes in every trace.

Kept as they are: label, taint and topology keys in the ``kubernetes.io`` and ``k8s.io``
domains (``kubernetes.io/hostname``, ``topology.kubernetes.io/zone``...; other keys are
hashed), the values of :data:`KEPT_VALUES` keys (OS, architecture, instance type, GPU model),
resource quantities and names, scheduler names, ``system-`` PriorityClasses, DeviceClasses,
storage provisioners and CSI drivers, DRA device names, attributes and CEL selectors, taint
effects, operators, weights. Dropped: annotations (except a static pod's mirror marker),
container commands, arguments and environment, mount paths, StorageClass parameters, a
node's addresses, IDs, CIDRs and provider ID. Container images are hashed, a pod's with the
``:latest`` ImageLocality adds, so that it still matches a node's images.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
from typing import Any

from extender.plugins.image_locality import normalized_image_name

__all__ = ["KEPT_VALUES", "Anonymiser", "anonymise", "kept_key"]

KEPT_DOMAINS = ("kubernetes.io", "k8s.io")
KEPT_VALUES = frozenset(
    {
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
        "kube-extender.dev/gpu-model",
        "nvidia.com/gpu.product",
    }
)
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# String fields of volume sources that name no one (kept); other strings are hashed.
_PLAIN_SOURCE_FIELDS = frozenset({"driver", "fsType", "medium", "type", "readOnly"})


def kept_key(key: str) -> bool:
    """A key in the ``kubernetes.io`` or ``k8s.io`` domain (or a subdomain of one)."""
    domain, slash, _ = key.partition("/")
    if not slash:
        return False
    return any(domain == d or domain.endswith("." + d) for d in KEPT_DOMAINS)


class Anonymiser:
    """Salted, memoised hashes of names, label keys and values, and walkers for the kinds a
    trace holds."""

    def __init__(self, salt: bytes) -> None:
        self.salt = salt
        self._memo: dict[str, str] = {}

    # -- strings ----------------------------------------------------------------------------

    def name(self, text: str) -> str:
        """``x`` + 12 hex digits: a valid name, label value and label key."""
        if not text:
            return text
        found = self._memo.get(text)
        if found is None:
            digest = hmac.new(self.salt, text.encode(), hashlib.sha256).hexdigest()
            found = self._memo[text] = "x" + digest[:12]
        return found

    def key(self, key: str) -> str:
        return key if kept_key(key) else self.name(key)

    def value(self, key: str, value: str) -> str:
        return value if key in KEPT_VALUES else self.name(value)

    def labels(self, labels: dict | None) -> dict:
        return {self.key(k): self.value(k, str(v)) for k, v in (labels or {}).items()}

    def _names(self, values: Any) -> list:
        return [self.name(str(v)) for v in values or ()]

    # -- selectors --------------------------------------------------------------------------

    def _expression(self, expr: dict, values_are_names: bool = False) -> dict:
        out = dict(expr)
        key = str(expr.get("key", ""))
        if values_are_names:
            out["values"] = self._names(expr.get("values"))
        else:
            out["key"] = self.key(key)
            if "values" in expr:
                out["values"] = [self.value(key, str(v)) for v in expr.get("values") or ()]
        return out

    def label_selector(self, selector: dict | None) -> dict | None:
        if selector is None:
            return None
        out = dict(selector)
        if "matchLabels" in selector:
            out["matchLabels"] = self.labels(selector["matchLabels"])
        if "matchExpressions" in selector:
            out["matchExpressions"] = [self._expression(e) for e in selector["matchExpressions"]]
        return out

    def node_selector_term(self, term: dict) -> dict:
        out = dict(term)
        if "matchExpressions" in term:
            out["matchExpressions"] = [self._expression(e) for e in term["matchExpressions"]]
        if "matchFields" in term:  # metadata.name: node names
            out["matchFields"] = [self._expression(e, True) for e in term["matchFields"]]
        if "matchLabelExpressions" in term:  # a StorageClass's allowedTopologies
            out["matchLabelExpressions"] = [
                self._expression(e) for e in term["matchLabelExpressions"]
            ]
        return out

    def node_selector(self, selector: dict | None) -> dict | None:
        if selector is None:
            return None
        out = dict(selector)
        out["nodeSelectorTerms"] = [
            self.node_selector_term(t) for t in selector.get("nodeSelectorTerms") or ()
        ]
        return out

    def _pod_affinity_term(self, term: dict) -> dict:
        out = dict(term)
        out["labelSelector"] = self.label_selector(term.get("labelSelector"))
        if "namespaceSelector" in term:
            out["namespaceSelector"] = self.label_selector(term["namespaceSelector"])
        if "namespaces" in term:
            out["namespaces"] = self._names(term["namespaces"])
        out["topologyKey"] = self.key(str(term.get("topologyKey", "")))
        for field in ("matchLabelKeys", "mismatchLabelKeys"):
            if field in term:
                out[field] = [self.key(k) for k in term[field]]
        if out["labelSelector"] is None:
            out.pop("labelSelector")
        return out

    def affinity(self, affinity: dict) -> dict:
        out = dict(affinity)
        node = affinity.get("nodeAffinity")
        if node:
            node = dict(node)
            required = "requiredDuringSchedulingIgnoredDuringExecution"
            preferred = "preferredDuringSchedulingIgnoredDuringExecution"
            if required in node:
                node[required] = self.node_selector(node[required])
            if preferred in node:
                node[preferred] = [
                    {**p, "preference": self.node_selector_term(p.get("preference") or {})}
                    for p in node[preferred]
                ]
            out["nodeAffinity"] = node
        for kind in ("podAffinity", "podAntiAffinity"):
            pod = affinity.get(kind)
            if not pod:
                continue
            pod = dict(pod)
            required = "requiredDuringSchedulingIgnoredDuringExecution"
            preferred = "preferredDuringSchedulingIgnoredDuringExecution"
            if required in pod:
                pod[required] = [self._pod_affinity_term(t) for t in pod[required]]
            if preferred in pod:
                pod[preferred] = [
                    {**p, "podAffinityTerm": self._pod_affinity_term(p["podAffinityTerm"])}
                    for p in pod[preferred]
                ]
            out[kind] = pod
        return out

    # -- objects ----------------------------------------------------------------------------

    def metadata(self, meta: dict, *, keep_name: bool = False) -> dict:
        out: dict[str, Any] = {}
        name = str(meta.get("name", ""))
        out["name"] = name if keep_name else self.name(name)
        if meta.get("namespace"):
            out["namespace"] = self.name(str(meta["namespace"]))
        if meta.get("labels"):
            out["labels"] = self.labels(meta["labels"])
        annotations = meta.get("annotations") or {}
        if MIRROR_ANNOTATION in annotations:
            out["annotations"] = {MIRROR_ANNOTATION: self.name(str(annotations[MIRROR_ANNOTATION]))}
        if meta.get("ownerReferences"):
            out["ownerReferences"] = [
                {
                    **ref,
                    "name": self.name(str(ref.get("name", ""))),
                    "uid": self.name(str(ref.get("uid", ""))),
                }
                for ref in meta["ownerReferences"]
            ]
        if meta.get("finalizers"):
            out["finalizers"] = list(meta["finalizers"])
        return out

    def _toleration_or_taint(self, item: dict) -> dict:
        out = dict(item)
        key = str(item.get("key", ""))
        if key:
            out["key"] = self.key(key)
        if item.get("value"):
            out["value"] = self.value(key, str(item["value"]))
        return out

    def _leaves(self, value: Any, field: str = "") -> Any:
        """Every string in ``value`` hashed, except fields that name no one."""
        if isinstance(value, dict):
            return {k: self._leaves(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._leaves(v, field) for v in value]
        if isinstance(value, str) and field not in _PLAIN_SOURCE_FIELDS:
            return self.name(value)
        return value

    def _volume(self, volume: dict) -> dict:
        out: dict[str, Any] = {"name": self.name(str(volume.get("name", "")))}
        for source, spec in volume.items():
            if source == "name":
                continue
            if source == "persistentVolumeClaim":
                out[source] = {**spec, "claimName": self.name(str(spec.get("claimName", "")))}
            elif source == "ephemeral":
                out[source] = spec  # a PVC template: sizes and storage classes
                template = (spec.get("volumeClaimTemplate") or {}).get("spec") or {}
                if template.get("storageClassName"):
                    template["storageClassName"] = self.name(template["storageClassName"])
            else:
                out[source] = self._leaves(spec)
        return out

    def _container(self, container: dict) -> dict:
        out = {
            k: v
            for k, v in container.items()
            if k not in ("env", "envFrom", "command", "args", "workingDir", "volumeMounts")
        }
        out["name"] = self.name(str(container.get("name", "")))
        if container.get("image"):
            # As ImageLocality compares it with a node's image names: with its ``:latest``.
            out["image"] = self.name(normalized_image_name(str(container["image"])))
        out["volumeMounts"] = [
            {"name": self.name(str(m.get("name", ""))), "mountPath": "/" + self.name(str(i))}
            for i, m in enumerate(container.get("volumeMounts") or ())
        ]
        resources = container.get("resources") or {}
        if resources.get("claims"):
            out["resources"] = {
                **resources,
                "claims": [
                    {**c, "name": self.name(str(c.get("name", "")))} for c in resources["claims"]
                ],
            }
        for port in out.get("ports") or ():
            port.pop("name", None)
        return out

    def pod_spec(self, spec: dict) -> dict:
        out = {k: v for k, v in spec.items() if k not in ("imagePullSecrets", "hostAliases")}
        if spec.get("nodeSelector"):
            out["nodeSelector"] = self.labels(spec["nodeSelector"])
        if spec.get("affinity"):
            out["affinity"] = self.affinity(spec["affinity"])
        if spec.get("tolerations"):
            out["tolerations"] = [self._toleration_or_taint(t) for t in spec["tolerations"]]
        if spec.get("topologySpreadConstraints"):
            out["topologySpreadConstraints"] = [
                {
                    **c,
                    "topologyKey": self.key(str(c.get("topologyKey", ""))),
                    **(
                        {"labelSelector": self.label_selector(c["labelSelector"])}
                        if "labelSelector" in c
                        else {}
                    ),
                    **(
                        {"matchLabelKeys": [self.key(k) for k in c["matchLabelKeys"]]}
                        if "matchLabelKeys" in c
                        else {}
                    ),
                }
                for c in spec["topologySpreadConstraints"]
            ]
        for group in ("initContainers", "containers", "ephemeralContainers"):
            if spec.get(group):
                out[group] = [self._container(c) for c in spec[group]]
        if spec.get("volumes"):
            out["volumes"] = [self._volume(v) for v in spec["volumes"]]
        if spec.get("resourceClaims"):
            out["resourceClaims"] = [
                {k: self.name(str(v)) for k, v in entry.items()} for entry in spec["resourceClaims"]
            ]
        for field in ("serviceAccountName", "hostname", "subdomain", "nodeName"):
            if spec.get(field):
                out[field] = self.name(str(spec[field]))
        priority_class = spec.get("priorityClassName")
        if priority_class and not str(priority_class).startswith("system-"):
            out["priorityClassName"] = self.name(str(priority_class))
        scheduling_group = spec.get("schedulingGroup") or {}
        if scheduling_group.get("podGroupName"):
            out["schedulingGroup"] = {
                **scheduling_group,
                "podGroupName": self.name(str(scheduling_group["podGroupName"])),
            }
        return out

    def pod(self, pod: dict) -> dict:
        out = {k: v for k, v in pod.items() if k not in ("metadata", "spec", "status")}
        out["metadata"] = self.metadata(pod.get("metadata") or {})
        out["spec"] = self.pod_spec(pod.get("spec") or {})
        return out

    def node(self, node: dict) -> dict:
        out = {k: v for k, v in node.items() if k not in ("metadata", "spec", "status")}
        out["metadata"] = self.metadata(node.get("metadata") or {})
        spec = {
            k: v
            for k, v in (node.get("spec") or {}).items()
            if k not in ("podCIDR", "podCIDRs", "providerID", "externalID", "configSource")
        }
        if spec.get("taints"):
            spec["taints"] = [self._toleration_or_taint(t) for t in spec["taints"]]
        out["spec"] = spec
        status = node.get("status") or {}
        kept: dict[str, Any] = {
            k: status[k] for k in ("capacity", "allocatable", "phase") if k in status
        }
        kept["conditions"] = [
            {k: c[k] for k in ("type", "status") if k in c} for c in status.get("conditions") or ()
        ]
        if status.get("images"):
            kept["images"] = [
                {**image, "names": self._names(image.get("names"))} for image in status["images"]
            ]
        info = status.get("nodeInfo") or {}
        if info:
            kept["nodeInfo"] = {
                k: info[k] for k in ("architecture", "operatingSystem") if k in info
            }
        out["status"] = kept
        return out

    def object(self, obj: dict) -> dict:
        """Any other recorded object, by its kind."""
        kind = obj.get("kind")
        out = copy.deepcopy(obj)
        meta = obj.get("metadata") or {}
        keep_name = kind == "DeviceClass" or (
            kind == "PriorityClass" and str(meta.get("name", "")).startswith("system-")
        )
        out["metadata"] = self.metadata(meta, keep_name=keep_name)
        spec = out.get("spec") or {}
        if kind == "PersistentVolume":
            if spec.get("claimRef"):
                ref = spec["claimRef"]
                spec["claimRef"] = {
                    k: self.name(str(v)) if k in ("name", "namespace") else v
                    for k, v in ref.items()
                    if k not in ("uid", "resourceVersion")
                }
            if spec.get("nodeAffinity"):
                required = spec["nodeAffinity"].get("required")
                spec["nodeAffinity"] = {"required": self.node_selector(required)}
            for source in [k for k, v in spec.items() if isinstance(v, dict)]:
                if source not in ("claimRef", "nodeAffinity", "capacity"):
                    spec[source] = self._leaves(spec[source])
            spec.pop("mountOptions", None)
        elif kind == "PersistentVolumeClaim":
            if spec.get("volumeName"):
                spec["volumeName"] = self.name(spec["volumeName"])
            if spec.get("selector"):
                spec["selector"] = self.label_selector(spec["selector"])
            for field in ("dataSource", "dataSourceRef"):
                if spec.get(field):
                    spec[field] = {**spec[field], "name": self.name(spec[field].get("name", ""))}
        elif kind == "StorageClass":
            out.pop("parameters", None)
            out.pop("mountOptions", None)
            if out.get("allowedTopologies"):
                out["allowedTopologies"] = [
                    self.node_selector_term(t) for t in out["allowedTopologies"]
                ]
        elif kind == "ResourceSlice":
            if spec.get("nodeName"):
                spec["nodeName"] = self.name(spec["nodeName"])
            if spec.get("pool"):
                spec["pool"] = {**spec["pool"], "name": self.name(spec["pool"].get("name", ""))}
            if spec.get("nodeSelector"):
                spec["nodeSelector"] = self.node_selector(spec["nodeSelector"])
        elif kind == "ResourceClaim":
            self._claim_status(out)
        if "storageClassName" in spec and spec["storageClassName"]:
            spec["storageClassName"] = self.name(spec["storageClassName"])
        if spec:
            out["spec"] = spec
        return out

    def _claim_status(self, claim: dict) -> None:
        status = claim.get("status") or {}
        allocation = status.get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            if result.get("pool"):
                result["pool"] = self.name(result["pool"])
        if allocation.get("nodeSelector"):
            allocation["nodeSelector"] = self.node_selector(allocation["nodeSelector"])
        if status.get("reservedFor"):
            status["reservedFor"] = [
                {
                    **ref,
                    "name": self.name(str(ref.get("name", ""))),
                    "uid": self.name(str(ref.get("uid", ""))),
                }
                for ref in status["reservedFor"]
            ]
        status.pop("devices", None)  # drivers' per-device status: addresses, conditions

    def optional_name(self, name: str | None) -> str | None:
        return None if name is None else self.name(name)


def anonymise(trace: dict, salt: bytes) -> dict:
    """A copy of ``trace`` (format v1's dict) with names and labels hashed under ``salt``
    (see the module's docstring for what is kept)."""
    anon = Anonymiser(salt)
    out = dict(trace)
    out["metadata"] = {**trace.get("metadata", {}), "anonymised": True}
    out["nodes"] = [anon.node(n) for n in trace.get("nodes") or ()]
    out["objects"] = [anon.object(o) for o in trace.get("objects") or ()]
    pods = []
    for record in trace.get("pods") or ():
        recorded = record.get("recorded") or {}
        pods.append(
            {
                **record,
                "pod": anon.pod(record["pod"]),
                "claims": [anon.object(c) for c in record.get("claims") or ()],
                "node": anon.optional_name(record.get("node")),
                "recorded": {
                    **recorded,
                    "node": anon.optional_name(recorded.get("node")),
                },
            }
        )
    out["pods"] = pods
    return out
