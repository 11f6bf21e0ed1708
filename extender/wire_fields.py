"""The Pod and Node fields the core reads, checked in one pass at the extender's boundary, and
the limits on the work one request may ask for (docs/extender.md, "Limits").

A webhook body is hostile: a field of the wrong type, a quantity the apiserver would reject or
an oversized array must be a 400 naming its path, never an exception deep in a plugin. Only the
fields the core reads are checked (a full Node is 14-17 KB and thousands arrive per call).
"""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError

from extender.framework.quantity import QuantityError, check_quantity

# -- limits: the work one request may ask for (docs/extender.md, "Limits") ----------------------

MAX_NODES = 15000  # Nodes.items / NodeNames / victims' nodes: 3x upstream's largest tested cluster
MAX_ITEMS = 1000  # any array the core reads in a Pod or Node (containers, tolerations, terms...)
MAX_MAP_ENTRIES = 10000  # labels, nodeSelector, allocatable, requests...


# -- the fields the core reads in a Pod and a Node: checked in one pass ----------------------------
#
# Go's decoder rejects a wrong JSON type in any typed field (kube-scheduler never sends one: its
# objects come from the apiserver). A webhook body is hostile, so each field the plugin core reads
# is checked here, once, with the path of the first bad one; every other field is left alone.
# Specs: "str", "int", "bool", "qty", "any"; a dict is an object with those fields; ("list", s)
# an array of s; ("map", s) an object of string keys to s. null is always allowed (Go: zero).

_LABELS = ("map", "str")
_QUANTITIES = ("map", "qty")
_REQUIREMENT = {"key": "str", "operator": "str", "values": ("list", "str")}
_LABEL_SELECTOR = {"matchLabels": _LABELS, "matchExpressions": ("list", _REQUIREMENT)}
_NODE_SELECTOR_TERM = {
    "matchExpressions": ("list", _REQUIREMENT),
    "matchFields": ("list", _REQUIREMENT),
}
_POD_AFFINITY_TERM = {
    "labelSelector": _LABEL_SELECTOR,
    "namespaceSelector": _LABEL_SELECTOR,
    "namespaces": ("list", "str"),
    "topologyKey": "str",
    "matchLabelKeys": ("list", "str"),
    "mismatchLabelKeys": ("list", "str"),
}
_POD_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": ("list", _POD_AFFINITY_TERM),
    "preferredDuringSchedulingIgnoredDuringExecution": (
        "list",
        {"weight": "int", "podAffinityTerm": _POD_AFFINITY_TERM},
    ),
}
_RESOURCES = {"requests": _QUANTITIES, "limits": _QUANTITIES}
_CONTAINER = {
    "name": "str",
    "image": "str",
    "restartPolicy": "str",
    "resources": _RESOURCES,
    "restartPolicyRules": ("list", {"action": "str"}),
    "ports": (
        "list",
        {"hostPort": "int", "hostIP": "str", "protocol": "str", "containerPort": "int"},
    ),
}
_TAINT = {"key": "str", "value": "str", "effect": "str"}
_OBJECT_META = {
    "name": "str",
    "namespace": "str",
    "uid": "str",
    "resourceVersion": "str",
    "labels": _LABELS,
    "creationTimestamp": "str",
    "ownerReferences": (
        "list",
        {"apiVersion": "str", "kind": "str", "name": "str", "uid": "str", "controller": "bool"},
    ),
}
POD_FIELDS: dict = {
    "metadata": _OBJECT_META,
    "spec": {
        "nodeName": "str",
        "priority": "int",
        "preemptionPolicy": "str",
        "schedulerName": "str",
        "nodeSelector": _LABELS,
        "containers": ("list", _CONTAINER),
        "initContainers": ("list", _CONTAINER),
        "resources": _RESOURCES,
        "overhead": _QUANTITIES,
        "tolerations": (
            "list",
            {**_TAINT, "operator": "str", "tolerationSeconds": "int"},
        ),
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": ("list", _NODE_SELECTOR_TERM)
                },
                "preferredDuringSchedulingIgnoredDuringExecution": (
                    "list",
                    {"weight": "int", "preference": _NODE_SELECTOR_TERM},
                ),
            },
            "podAffinity": _POD_AFFINITY,
            "podAntiAffinity": _POD_AFFINITY,
        },
        "topologySpreadConstraints": (
            "list",
            {
                "maxSkew": "int",
                "topologyKey": "str",
                "whenUnsatisfiable": "str",
                "labelSelector": _LABEL_SELECTOR,
                "minDomains": "int",
                "nodeAffinityPolicy": "str",
                "nodeTaintsPolicy": "str",
                "matchLabelKeys": ("list", "str"),
            },
        ),
        "schedulingGates": ("list", {"name": "str"}),
        "hostNetwork": "bool",
        "hostUsers": "bool",
        "volumes": ("list", {"name": "str", "image": {"reference": "str"}}),
    },
    "status": {
        "startTime": "str",
        "nominatedNodeName": "str",
        "conditions": ("list", {"type": "str", "status": "str", "reason": "str"}),
    },
}
NODE_FIELDS: dict = {
    "metadata": _OBJECT_META,
    "spec": {"unschedulable": "bool", "taints": ("list", _TAINT)},
    "status": {
        "allocatable": _QUANTITIES,
        "capacity": _QUANTITIES,
        "images": ("list", {"names": ("list", "str"), "sizeBytes": "int"}),
        "declaredFeatures": ("list", "str"),
    },
}

_INT64 = (-(1 << 63), (1 << 63) - 1)
_JSON_TYPE = {
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
}


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = '"' + value[:40] + ('..."' if len(value) > 40 else '"')
        return text
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _bad(path: str, message: str) -> ValidationError:
    return ValidationError({path: [message]})


def check_fields(value: Any, spec: Any, path: str) -> None:
    """Raise :class:`ValidationError` ``{path: [message]}`` for the first field the core reads
    that does not have the type Go would decode (or is not a quantity).

    The path is built only for the field that fails: a valid object (every object of a
    kube-scheduler) costs the type checks alone, no string per field."""
    try:
        _check(value, spec)
    except _Bad as bad:
        raise _bad(path + "".join(reversed(bad.parts)), bad.message) from None


class _Bad(Exception):
    """A field that fails, with the path from it up to where it is caught (reversed)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.parts: list[str] = []


def _check(value: Any, spec: Any) -> None:
    if value is None or spec == "any":
        return
    if spec == "str":
        if not isinstance(value, str):
            raise _Bad(f"{_show(value)} is not a string")
    elif spec == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Bad(f"{_show(value)} is not an integer")
        if not _INT64[0] <= value <= _INT64[1]:
            raise _Bad("is out of the int64 range")
    elif spec == "bool":
        if not isinstance(value, bool):
            raise _Bad(f"{_show(value)} is not a boolean")
    elif spec == "qty":
        _check_quantity(value)
    elif isinstance(spec, dict):
        if not isinstance(value, dict):
            raise _Bad(f"{_show(value)} is not an object")
        for key, sub in spec.items():
            child = value.get(key)
            if child is None or (sub == "str" and type(child) is str):
                continue
            try:
                _check(child, sub)
            except _Bad as bad:
                bad.parts.append(f".{key}")
                raise
    elif spec[0] == "list":
        if not isinstance(value, list):
            raise _Bad(f"{_show(value)} is not an array")
        if len(value) > MAX_ITEMS:
            raise _Bad(f"has {len(value)} items, more than the limit of {MAX_ITEMS}")
        item = spec[1]
        if item == "str" and set(map(type, value)) <= {str}:
            return
        for i, child in enumerate(value):
            try:
                _check(child, item)
            except _Bad as bad:
                bad.parts.append(f"[{i}]")
                raise
    else:  # ("map", spec)
        if not isinstance(value, dict):
            raise _Bad(f"{_show(value)} is not an object")
        if len(value) > MAX_MAP_ENTRIES:
            raise _Bad(f"has {len(value)} entries, more than the limit of {MAX_MAP_ENTRIES}")
        item = spec[1]
        if item == "str":
            if set(map(type, value.values())) <= {str}:
                return
            for key, child in value.items():
                if not isinstance(child, str):
                    bad = _Bad(f"{_show(child)} is not a string")
                    bad.parts.append(f".{key}")
                    raise bad
        else:
            for key, child in value.items():
                try:
                    _check(child, item)
                except _Bad as bad:
                    bad.parts.append(f".{key}")
                    raise


def _check_quantity(value: Any) -> None:
    try:
        check_quantity(value)  # its parse is cached by the quantity's text
    except QuantityError:
        raise _Bad(f"{_show(value)} is not a quantity") from None


def check_pod(pod: dict, path: str) -> None:
    check_fields(pod, POD_FIELDS, path)


def check_node(node: dict, path: str) -> None:
    check_fields(node, NODE_FIELDS, path)
