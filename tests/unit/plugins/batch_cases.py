"""Random nodes and pods for the batch-form equality tests of TaintToleration and NodeAffinity:
labels that are missing, empty, numeric, almost numeric; taints and tolerations with every
operator, empty keys, empty and unknown effects; selectors with every operator, several terms,
matchFields on names that exist and names that do not."""

from __future__ import annotations

import random

from extender.framework.node_info import NodeInfo
from extender.framework.snapshot import Snapshot
from tests.unit.builders import make_node

LABEL_KEYS = ("zone", "pool", "gen", "cores", "example.com/tier", "")
LABEL_VALUES = (
    *("a", "b", "c", "", "pool-1"),
    *("0", "1", "2", "10", "-3", "+4", " 5", "007", "0x10", "1_000", "1e3", "3.5", "abc"),
    *("9223372036854775807", "9223372036854775808", "-9223372036854775809"),
)
TAINT_KEYS = ("dedicated", "spot", "gpu", "")
TAINT_VALUES = ("", "x", "y", None)
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
TOLERATION_EFFECTS = (*EFFECTS, "", None, "Bogus")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _taint(rng: random.Random) -> dict:
    taint: dict = {"key": rng.choice(TAINT_KEYS), "effect": rng.choice(EFFECTS)}
    value = rng.choice(TAINT_VALUES)
    if value is not None:
        taint["value"] = value
    return taint


def nodes(rng: random.Random, n: int) -> list[dict]:
    # A few taint lists shared by many nodes (pools), and some nodes with their own.
    pools = [[_taint(rng) for _ in range(rng.randrange(4))] for _ in range(6)]
    out = []
    for i in range(n):
        labels = {key: rng.choice(LABEL_VALUES) for key in LABEL_KEYS if rng.random() < 0.6 and key}
        if rng.random() < 0.1:
            labels[""] = rng.choice(LABEL_VALUES)
        if rng.random() < 0.7:
            taints = [dict(t) for t in rng.choice(pools)]
        else:
            taints = [_taint(rng) for _ in range(rng.randrange(5))]
        out.append(make_node(f"node-{i}", labels=labels, taints=taints))
    return out


def tolerations(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(rng.randrange(5)):
        toleration: dict = {}
        if rng.random() < 0.8:
            toleration["key"] = rng.choice(TAINT_KEYS)
        op = rng.choice(("Exists", "Equal", None, "Bogus"))
        if op is not None:
            toleration["operator"] = op
        if rng.random() < 0.6:
            toleration["value"] = rng.choice(("", "x", "y"))
        effect = rng.choice(TOLERATION_EFFECTS)
        if effect is not None:
            toleration["effect"] = effect
        out.append(toleration)
    return out


# Values and bounds that pass the strict parse (the pod's preferred terms, the plugin's args).
CLEAN_VALUES = ("a", "b", "c", "pool-1", "0", "1", "2", "10", "007", "abc")
CLEAN_BOUNDS = ("0", "1", "5", "10", "-3", "007")


def expression(rng: random.Random, clean: bool = False) -> dict:
    """A random requirement; ``clean``: one that parses strictly."""
    if clean:
        op = rng.choice(OPERATORS)
        req: dict = {"key": rng.choice(LABEL_KEYS[:-1]), "operator": op}
        if op in ("Gt", "Lt"):
            req["values"] = [rng.choice(CLEAN_BOUNDS)]
        elif op in ("In", "NotIn"):
            req["values"] = rng.sample(CLEAN_VALUES, rng.randrange(1, 4))
        return req
    op = rng.choice(OPERATORS) if rng.random() < 0.95 else "Bogus"
    req = {"key": rng.choice(LABEL_KEYS), "operator": op}
    if op in ("Gt", "Lt"):
        count = 1 if rng.random() < 0.85 else rng.choice((0, 2))
        req["values"] = [rng.choice(LABEL_VALUES) for _ in range(count)]
    elif op in ("In", "NotIn", "Bogus"):
        req["values"] = rng.sample(LABEL_VALUES, rng.randrange(4))
    elif rng.random() < 0.1:
        req["values"] = ["a"]  # invalid, compiled leniently all the same
    return req


def field(rng: random.Random, n: int) -> dict:
    names = [f"node-{rng.randrange(n + 3)}" for _ in range(2 if rng.random() < 0.1 else 1)]
    key = "metadata.name" if rng.random() < 0.9 else "metadata.namespace"
    op = rng.choice(("In", "NotIn")) if rng.random() < 0.9 else "Exists"
    return {"key": key, "operator": op, "values": names}


def term(rng: random.Random, n: int, fields: bool = True, clean: bool = False) -> dict:
    out: dict = {}
    if rng.random() < 0.85:
        out["matchExpressions"] = [expression(rng, clean) for _ in range(rng.randrange(4))]
    if fields and rng.random() < 0.3:
        out["matchFields"] = [field(rng, n) for _ in range(rng.randrange(1, 3))]
    return out


def node_selector(rng: random.Random, n: int, fields: bool = True, clean: bool = False) -> dict:
    terms = [term(rng, n, fields, clean) for _ in range(rng.randrange(4))]
    return {"nodeSelectorTerms": terms}


def preferred(rng: random.Random, n: int) -> list[dict]:
    clean = rng.random() < 0.7  # else most lists have a term that does not parse
    return [
        {"weight": rng.choice((0, 1, 7, 50, 100)), "preference": term(rng, n, clean=clean)}
        for _ in range(rng.randrange(5))
    ]


def affinity_pod(rng: random.Random, n: int, name: str) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "pause"}]}
    if rng.random() < 0.5:
        spec["nodeSelector"] = {
            rng.choice(LABEL_KEYS): rng.choice(LABEL_VALUES) for _ in range(rng.randrange(3))
        }
    node_affinity: dict = {}
    if rng.random() < 0.7:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = node_selector(
            rng, n, clean=rng.random() < 0.5
        )
    if rng.random() < 0.7:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred(rng, n)
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    spec["tolerations"] = tolerations(rng)
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def changed_infos(rng: random.Random, snapshot: Snapshot, count: int) -> list[NodeInfo]:
    """Clones of a few nodes with new labels and taints (for an overlay's derived table)."""
    out = []
    for info in rng.sample(snapshot.node_info_list, count):
        clone = info.clone()
        clone.labels = {**clone.labels, "pool": rng.choice(("brand-new", "10", "a"))}
        if rng.random() < 0.5:
            clone.labels.pop("zone", None)
        clone.taints = [_taint(rng) for _ in range(rng.randrange(4))]
        out.append(clone)
    return out
