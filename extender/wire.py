"""The extender wire protocol, both halves: what kube-scheduler sends and reads
(``k8s.io/kube-scheduler/extender/v1``, ``pkg/scheduler/extender.go``).

The webhook (server) loads requests and builds replies here; the standalone scheduler's HTTP
extender client (``extender.scheduler.http_extender``) builds requests and loads replies here,
so each half is tested against the other.

The Go types (``k8s.io/kube-scheduler/extender/v1``) have no JSON tags, so keys are the Go
field names in PascalCase and every field is always present, ``null`` when nil. kube-scheduler
decodes case-insensitively, so we accept any casing of the envelope keys too (old clients send
``nodenames``), but always answer in exact PascalCase.

marshmallow validates the *envelopes* only. Embedded Pods and Nodes are Kubernetes JSON and
are checked just enough for the core to read them (a dict with ``metadata.name``): a full
Node is 14-17 KB and 5000 of them must parse in well under the scheduler's timeout.
"""

from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validates_schema

from extender.framework.node_info import NodeInfo
from extender.wire_fields import MAX_NODES, check_node, check_pod


class _Lenient(Schema):
    """Go's decoder ignores fields it does not know: so does every envelope (a field added by a
    newer kube-scheduler must not break every call)."""

    class Meta:
        unknown = EXCLUDE


def _canonical_keys(data: Any, names: tuple[str, ...]) -> Any:
    """Rename keys that match ``names`` case-insensitively to their PascalCase spelling."""
    if not isinstance(data, dict):
        return data
    lookup = {name.lower(): name for name in names}
    out: dict[str, Any] = {}
    for key, value in data.items():
        canonical = lookup.get(key.lower(), key) if isinstance(key, str) else key
        if canonical in out and canonical != key:
            continue  # the exact spelling wins, as in Go's encoding/json
        out[canonical] = value
    return out


class KubeObject(fields.Dict):
    """A Kubernetes object: a JSON object whose ``metadata.name`` is a non-empty string."""

    def __init__(self, what: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.what = what

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> dict:
        if not isinstance(value, dict):
            raise ValidationError(f"must be a {self.what} object")
        check_object(value, self.what)
        return value


def check_object(value: Any, what: str) -> None:
    if not isinstance(value, dict):
        raise ValidationError(f"must be a {what} object")
    meta = value.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ValidationError(f"{what} must have a non-empty metadata.name")
    for part in ("spec", "status"):
        if value.get(part) is not None and not isinstance(value[part], dict):
            raise ValidationError(f"{what} {part} must be an object")


class NodeList(fields.Field):
    """A v1.NodeList: ``{"metadata": {}, "items": [Node, ...]}``."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> list[dict]:
        if not isinstance(value, dict):
            raise ValidationError("must be a NodeList object with items")
        items = value.get("items")
        if items is None:
            return []
        if not isinstance(items, list):
            raise ValidationError("items must be an array of Node objects")
        if len(items) > MAX_NODES:
            raise ValidationError(f"items: {len(items)} nodes, more than the limit of {MAX_NODES}")
        errors: dict[int, list[str]] = {}
        for i, node in enumerate(items):
            try:
                check_object(node, "Node")
            except ValidationError as exc:
                errors[i] = exc.messages  # type: ignore[assignment]
        if errors:
            raise ValidationError({"items": errors})
        return items


class NameList(fields.Field):
    """An array of node names, checked in one pass (a per-item Field costs ~1 us x 5000)."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> list[str]:
        if not isinstance(value, list):
            raise ValidationError("must be an array of node names")
        if len(value) > MAX_NODES:
            raise ValidationError(f"{len(value)} nodes, more than the limit of {MAX_NODES}")
        if not set(map(type, value)) <= {str}:  # one C-level pass; the loop only to name it
            for i, name in enumerate(value):
                if not isinstance(name, str):
                    raise ValidationError({i: ["Not a valid string."]})
        return value


class ExtenderArgsSchema(_Lenient):
    """Request body of filter and prioritize (ExtenderArgs)."""

    pod = KubeObject("Pod", data_key="Pod", required=True)
    nodes = NodeList(data_key="Nodes", allow_none=True, load_default=None)
    node_names = NameList(data_key="NodeNames", allow_none=True, load_default=None)

    @validates_schema
    def _one_of(self, data: dict, **kwargs: Any) -> None:
        if data.get("nodes") is None and data.get("node_names") is None:
            raise ValidationError("one of Nodes or NodeNames must be set", "NodeNames")


class MetaPodSchema(_Lenient):
    uid = fields.String(data_key="UID", required=True)


class MetaVictimsSchema(_Lenient):
    pods = fields.List(fields.Nested(MetaPodSchema), data_key="Pods", allow_none=True)
    num_pdb_violations = fields.Integer(data_key="NumPDBViolations", load_default=0, strict=True)


class VictimsSchema(_Lenient):
    pods = fields.List(KubeObject("Pod"), data_key="Pods", allow_none=True)
    num_pdb_violations = fields.Integer(data_key="NumPDBViolations", load_default=0, strict=True)


class ExtenderPreemptionArgsSchema(_Lenient):
    pod = KubeObject("Pod", data_key="Pod", required=True)
    node_name_to_victims = fields.Dict(
        keys=fields.String(),
        values=fields.Nested(VictimsSchema),
        data_key="NodeNameToVictims",
        allow_none=True,
        load_default=None,
    )
    node_name_to_meta_victims = fields.Dict(
        keys=fields.String(),
        values=fields.Nested(MetaVictimsSchema),
        data_key="NodeNameToMetaVictims",
        allow_none=True,
        load_default=None,
    )

    @validates_schema
    def _one_of(self, data: dict, **kwargs: Any) -> None:
        if (
            data.get("node_name_to_victims") is None
            and data.get("node_name_to_meta_victims") is None
        ):
            raise ValidationError(
                "one of NodeNameToVictims or NodeNameToMetaVictims must be set",
                "NodeNameToMetaVictims",
            )


class ExtenderBindingArgsSchema(_Lenient):
    pod_name = fields.String(data_key="PodName", required=True)
    pod_namespace = fields.String(data_key="PodNamespace", required=True)
    pod_uid = fields.String(data_key="PodUID", required=True)
    node = fields.String(data_key="Node", required=True)

    @validates_schema
    def _non_empty(self, data: dict, **kwargs: Any) -> None:
        for attr, key in (
            ("pod_name", "PodName"),
            ("pod_namespace", "PodNamespace"),
            ("node", "Node"),
        ):
            if not data.get(attr):
                raise ValidationError("must not be empty", key)


ARGS_KEYS = ("Pod", "Nodes", "NodeNames")
PREEMPT_KEYS = ("Pod", "NodeNameToVictims", "NodeNameToMetaVictims")
BIND_KEYS = ("PodName", "PodNamespace", "PodUID", "Node")
VICTIM_KEYS = ("Pods", "NumPDBViolations")

_args_schema = ExtenderArgsSchema()
_preempt_schema = ExtenderPreemptionArgsSchema()
_bind_schema = ExtenderBindingArgsSchema()


def load_args(data: Any) -> dict:
    """Validate an ExtenderArgs body; raises :class:`ValidationError`."""
    _require_object(data)
    args = _names_args(data)
    if args is not None:
        check_pod(args["pod"], "Pod")
        return args
    args = _args_schema.load(_canonical_keys(data, ARGS_KEYS))
    check_pod(args["pod"], "Pod")
    for i, node in enumerate(args["nodes"] or ()):
        check_node(node, f"Nodes.items[{i}]")
    return args


_ARGS_KEY_SET = frozenset(ARGS_KEYS)


def _names_args(data: dict) -> dict | None:
    """What the schema loads from the body a node-cache-capable kube-scheduler sends (exact
    keys, a Pod, ``Nodes`` null, ``NodeNames`` an array of strings within the limit), checked
    directly; ``None`` for any other body, which the schema then loads (and names what is
    wrong in it). The two agree on every body this accepts: tests/webhook/test_contract.py."""
    if not data.keys() <= _ARGS_KEY_SET:
        return None
    pod, names = data.get("Pod"), data.get("NodeNames")
    if data.get("Nodes") is not None or type(names) is not list or len(names) > MAX_NODES:
        return None
    if not set(map(type, names)) <= {str} or type(pod) is not dict:
        return None
    try:
        check_object(pod, "Pod")
    except ValidationError:
        return None
    return {"pod": pod, "nodes": None, "node_names": names}


def load_preemption_args(data: Any) -> dict:
    _require_object(data)
    data = _canonical_keys(data, PREEMPT_KEYS)
    for key in ("NodeNameToVictims", "NodeNameToMetaVictims"):
        victims = data.get(key)
        if isinstance(victims, dict):
            data[key] = {node: _canonical_keys(v, VICTIM_KEYS) for node, v in victims.items()}
            for v in data[key].values():
                if isinstance(v, dict) and isinstance(v.get("Pods"), list):
                    v["Pods"] = [_canonical_keys(p, ("UID",)) for p in v["Pods"]]
            if len(victims) > MAX_NODES:
                raise ValidationError(
                    f"{len(victims)} nodes, more than the limit of {MAX_NODES}", key
                )
    args = _preempt_schema.load(data)
    check_pod(args["pod"], "Pod")
    for node, victims in (args["node_name_to_victims"] or {}).items():
        for i, pod in enumerate(victims.get("pods") or ()):
            check_pod(pod, f"NodeNameToVictims.{node}.Pods[{i}]")
    return args


def load_binding_args(data: Any) -> dict:
    _require_object(data)
    return _bind_schema.load(_canonical_keys(data, BIND_KEYS))


def _require_object(data: Any) -> None:
    if not isinstance(data, dict):
        raise ValidationError("the request body must be a JSON object", "_schema")


# -- replies -----------------------------------------------------------------------------------


def filter_result(
    *,
    node_names: list[str] | None,
    nodes: list[dict] | None,
    failed: dict[str, str],
    failed_unresolvable: dict[str, str],
    error: str = "",
) -> dict:
    """ExtenderFilterResult. Exactly one of ``node_names`` / ``nodes`` is a list: a null in
    the field the scheduler reads means "no node fits", so it is never sent by accident."""
    return {
        "Nodes": None if nodes is None else {"metadata": {}, "items": nodes},
        "NodeNames": node_names,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": failed_unresolvable,
        "Error": error,
    }


def host_priority_list(scores: list[tuple[str, int]]) -> list[dict]:
    return [{"Host": host, "Score": int(score)} for host, score in scores]


def preemption_result(meta_victims: dict[str, tuple[list[str], int]]) -> dict:
    """ExtenderPreemptionResult: always MetaVictims (UIDs), whatever nodeCacheCapable is."""
    return {
        "NodeNameToMetaVictims": {
            node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": int(violations)}
            for node, (uids, violations) in meta_victims.items()
        }
    }


def binding_result(error: str = "") -> dict:
    return {"Error": error}


# -- the client's half: requests it sends, replies it reads --------------------------------------


class ReplyError(ValueError):
    """An extender reply that does not have the protocol's shape."""


def extender_args(pod: dict, nodes: list[NodeInfo], node_cache_capable: bool) -> dict:
    """ExtenderArgs: names only to a node-cache-capable extender, else the Node objects."""
    if node_cache_capable:
        return {"Pod": pod, "Nodes": None, "NodeNames": [n.name for n in nodes]}
    items = [n.node for n in nodes]
    return {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}


def preemption_args(
    pod: dict, node_to_victims: dict[str, tuple[list[dict], int]], node_cache_capable: bool
) -> dict:
    """ExtenderPreemptionArgs: victims' UIDs to a node-cache-capable extender, else the pods."""
    if node_cache_capable:
        meta = {
            node: {
                "Pods": [{"UID": (p.get("metadata") or {}).get("uid", "")} for p in pods],
                "NumPDBViolations": violations,
            }
            for node, (pods, violations) in node_to_victims.items()
        }
        return {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    victims = {
        node: {"Pods": pods, "NumPDBViolations": violations}
        for node, (pods, violations) in node_to_victims.items()
    }
    return {"Pod": pod, "NodeNameToVictims": victims, "NodeNameToMetaVictims": None}


def binding_args(pod: dict, node_name: str) -> dict:
    meta = pod.get("metadata") or {}
    return {
        "PodName": meta.get("name", ""),
        "PodNamespace": meta.get("namespace", ""),
        "PodUID": meta.get("uid", ""),
        "Node": node_name,
    }


FILTER_RESULT_KEYS = ("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error")


def _string_map(value: Any, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ReplyError(f"{key} must be an object of node name to reason")
    return dict(value)


def load_filter_result(data: Any) -> dict:
    """ExtenderFilterResult as ``{"node_names", "nodes", "failed", "failed_unresolvable",
    "error"}``; ``node_names``/``nodes`` stay ``None`` when the reply left them null."""
    if not isinstance(data, dict):
        raise ReplyError("filter reply is not an object")
    data = _canonical_keys(data, FILTER_RESULT_KEYS)
    names = data.get("NodeNames")
    if names is not None and not (
        isinstance(names, list) and all(isinstance(n, str) for n in names)
    ):
        raise ReplyError("NodeNames must be an array of node names")
    nodes = data.get("Nodes")
    items = None
    if nodes is not None:
        items = nodes.get("items") if isinstance(nodes, dict) else None
        if not isinstance(items, list | None):
            raise ReplyError("Nodes must be a NodeList object with items")
        items = [i for i in items or () if isinstance(i, dict)]
    return {
        "node_names": names,
        "nodes": items,
        "failed": _string_map(data.get("FailedNodes"), "FailedNodes"),
        "failed_unresolvable": _string_map(
            data.get("FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"
        ),
        "error": str(data.get("Error") or ""),
    }


def load_host_priority_list(data: Any) -> list[tuple[str, int]]:
    """HostPriorityList as ``[(host, score)]``."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise ReplyError("prioritize reply is not an array")
    out = []
    for entry in data:
        entry = _canonical_keys(entry, ("Host", "Score"))
        if not isinstance(entry, dict) or not isinstance(entry.get("Host"), str):
            raise ReplyError("prioritize reply entries must be {Host, Score} objects")
        score = entry.get("Score") or 0
        if not isinstance(score, int) or isinstance(score, bool):
            raise ReplyError(f"Score of {entry['Host']} must be an integer")
        out.append((entry["Host"], score))
    return out


def load_preemption_result(data: Any) -> dict[str, tuple[list[str], int]]:
    """ExtenderPreemptionResult as node -> (victim UIDs, PDB violations)."""
    if not isinstance(data, dict):
        raise ReplyError("preempt reply is not an object")
    data = _canonical_keys(data, ("NodeNameToMetaVictims",))
    kept: dict[str, tuple[list[str], int]] = {}
    for node, victims in (data.get("NodeNameToMetaVictims") or {}).items():
        victims = _canonical_keys(victims or {}, VICTIM_KEYS)
        uids = [
            str(_canonical_keys(p, ("UID",)).get("UID", ""))
            for p in victims.get("Pods") or ()
            if isinstance(p, dict)
        ]
        kept[node] = (uids, int(victims.get("NumPDBViolations") or 0))
    return kept


def load_binding_result(data: Any) -> str:
    """ExtenderBindingResult's ``Error`` ("" on success)."""
    if not isinstance(data, dict):
        raise ReplyError("bind reply is not an object")
    return str(_canonical_keys(data, ("Error",)).get("Error") or "")
