"""Snapshot.overlay keeps the lists of nodes with (anti-)affinity pods as a snapshot built
from scratch over the same NodeInfos has them, through a long run of overlays in which pods
with and without affinity land on nodes and leave them again."""

from __future__ import annotations

import random

from extender.framework import Snapshot
from extender.framework.node_info import NodeInfo


def _node(i: int) -> dict:
    return {
        "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def _pod(i: int, kind: str) -> dict:
    spec: dict = {"containers": [{"name": "c"}]}
    term = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "a"}},
    }
    if kind == "anti":
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    elif kind == "preferred":
        spec["affinity"] = {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": term}
                ]
            }
        }
    return {
        "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "labels": {"app": "a"}},
        "spec": spec,
    }


def _names(infos: list[NodeInfo]) -> list[str]:
    return [info.name for info in infos]


def test_overlays_keep_the_affinity_lists_of_a_fresh_snapshot() -> None:
    rng = random.Random(5)
    snapshot = Snapshot(NodeInfo(_node(i)) for i in range(30))
    placed: dict[str, list[str]] = {}
    for step in range(400):
        changed = []
        for name in rng.sample([info.name for info in snapshot.node_info_list], rng.randint(1, 3)):
            info = snapshot.node_info_map[name].clone()
            keys = placed.setdefault(name, [])
            if keys and rng.random() < 0.4:
                info.remove_pod(keys.pop(rng.randrange(len(keys))))
            else:
                pod = _pod(step * 10 + len(changed), rng.choice(["plain", "anti", "preferred"]))
                keys.append(info.add_pod(pod).key)
            changed.append(info)
        overlaid = snapshot.overlay(changed)
        fresh = Snapshot(overlaid.node_info_list)
        assert overlaid.node_info_list == fresh.node_info_list  # same objects, same order
        for attr in ("have_pods_with_affinity_list", "have_pods_with_required_anti_affinity_list"):
            got, want = getattr(overlaid, attr), getattr(fresh, attr)
            assert _names(got) == _names(want), (step, attr)
            assert all(a is b for a, b in zip(got, want, strict=True)), (step, attr)
        # The earlier snapshot is left as it was.
        before = Snapshot(snapshot.node_info_list)
        assert _names(snapshot.have_pods_with_affinity_list) == _names(
            before.have_pods_with_affinity_list
        )
        snapshot = overlaid
