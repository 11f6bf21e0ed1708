"""The cluster an explanation or a simulation reads: live (listed once, read-only) or a dump.

Both give an :class:`extender.offline.Cluster` (nodes, pods, the other kinds the plugins
read), the same object the plugin testing kit runs on, and a framework whose handle reads it
and cannot write (:class:`~extender.explain.engine.DryRunClient`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from extender.config import DEFAULT_SCHEDULER_NAME, SchedulerConfig
from extender.config.loader import default_config
from extender.framework.features import DEFAULT_FEATURES, Features
from extender.framework.handle import (
    CACHE_KINDS,
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Kind,
    Services,
)
from extender.framework.podgroups import PODGROUPS
from extender.framework.profile import Profile
from extender.framework.registry import kinds_read
from extender.framework.runtime import Framework
from extender.offline import Cluster

from .engine import DryRunClient

__all__ = ["kinds_read", "list_cluster", "load_dump", "InputError"]

TERMINATED = ("Succeeded", "Failed")


class InputError(ValueError):
    """Bad input (a file that is not YAML, a pod that does not exist, an unknown profile):
    the commands print it on one line and exit 2."""


# -- live --------------------------------------------------------------------------------------

# The ``kind`` of listed objects whose List answer drops it (the DRA kinds, so a listed
# cluster reads like a ``kubectl get deviceclasses,resourceslices,resourceclaims -o yaml`` dump).
OBJECT_KINDS: dict[Kind, str] = {
    DEVICE_CLASSES: "DeviceClass",
    RESOURCE_SLICES: "ResourceSlice",
    RESOURCE_CLAIMS: "ResourceClaim",
    PODGROUPS: "PodGroup",
}


def list_cluster(client: Any, kinds: Iterable[Kind]) -> tuple[Cluster, dict[str, float]]:
    """Nodes, pods, namespaces and ``kinds``, one LIST each (paginated); returns the cluster
    and the seconds each list took. Terminated pods are left out (they hold no resources)."""
    timings: dict[str, float] = {}

    def timed_list(path: str, name: str, api_version: str, kind: str) -> list[dict]:
        start = time.perf_counter()
        items, _ = client.list(path)
        timings[name] = time.perf_counter() - start
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    nodes = timed_list("/api/v1/nodes", "nodes", "v1", "Node")
    pods = [
        p
        for p in timed_list("/api/v1/pods", "pods", "v1", "Pod")
        if (p.get("status") or {}).get("phase") not in TERMINATED
    ]
    objects: dict[str, list[dict]] = {
        "namespaces": timed_list("/api/v1/namespaces", "namespaces", "v1", "Namespace")
    }
    for kind in sorted(set(kinds) - CACHE_KINDS, key=str):
        api_version = f"{kind.group}/{kind.version}" if kind.group else kind.version
        objects[kind.name] = timed_list(
            kind.path, kind.name, api_version, OBJECT_KINDS.get(kind, "")
        )
    return Cluster(nodes, pods, objects), timings


# -- dumps -------------------------------------------------------------------------------------

DUMP_SUFFIXES = (".yaml", ".yml", ".json")


def load_objects(source: str | Path) -> list[dict]:
    """Manifests from a file (a v1 List, multi-document YAML, JSON) or a directory of such
    files (sorted by name). Raises :class:`InputError` with a one-line message."""
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in DUMP_SUFFIXES and p.is_file())
        if not files:
            raise InputError(f"{source}: no .yaml, .yml or .json file in this directory")
        return [obj for file in files for obj in load_objects(file)]
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: cannot read: {exc}") from None
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise InputError(f"{source}: not YAML{where}: {problem}") from None
    objects: list[dict] = []
    for document in documents:
        if not isinstance(document, dict) or "kind" not in document:
            raise InputError(f"{source}: a document is not a Kubernetes object (no kind)")
        if document["kind"] == "List" or document["kind"].endswith("List"):
            for item in document.get("items") or ():
                if not isinstance(item, dict) or "kind" not in item:
                    raise InputError(f"{source}: a List item is not a Kubernetes object")
                objects.append(item)
        else:
            objects.append(document)
    return objects


def load_dump(source: str | Path) -> Cluster:
    """A cluster from a dump; terminated pods left out."""
    cluster = Cluster()
    for obj in load_objects(source):
        if obj.get("kind") == "Pod" and (obj.get("status") or {}).get("phase") in TERMINATED:
            continue
        cluster.add(obj)
    if not cluster.nodes:
        raise InputError(f"{source}: no Node in the dump")
    return cluster


# -- frameworks --------------------------------------------------------------------------------


def scheduler_name(pod: dict) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME


def known_profiles(config: SchedulerConfig | None) -> list[str]:
    """The profile names a scheduler with ``config`` runs; without a config, kube-scheduler's
    default configuration: one profile, ``default-scheduler``."""
    if config is None:
        return [DEFAULT_SCHEDULER_NAME]
    return [p.scheduler_name for p in config.profiles]


def _profiles_of(config: SchedulerConfig | None) -> str:
    names = ", ".join(known_profiles(config))
    if config is None:
        return (
            f"without --config the only profile is {DEFAULT_SCHEDULER_NAME!r}, "
            "kube-scheduler's default"
        )
    return f"the config's profiles: {names}"


def pick_profile(
    config: SchedulerConfig | None, name: str, features: Features = DEFAULT_FEATURES
) -> tuple[SchedulerConfig, Profile]:
    """The profile named ``name``; without a config, the default profile, which is named
    ``default-scheduler`` (any other name is unknown, as to kube-scheduler's defaults), under
    ``features`` (the feature gates: GangScheduling adds its plugin to the defaults)."""
    if name not in known_profiles(config):
        raise InputError(f"unknown profile {name!r} ({_profiles_of(config)})")
    if config is None:
        config = default_config(name, features)
    for profile in config.profiles:
        if profile.scheduler_name == name:
            return config, profile
    raise AssertionError(name)  # known_profiles lists exactly these


def profile_for_pods(
    config: SchedulerConfig | None,
    pods: list[dict],
    given: str | None,
    features: Features = DEFAULT_FEATURES,
) -> tuple[SchedulerConfig, Profile, list[str]]:
    """The profile to run ``pods`` with and the notes to show: ``given`` (``--profile``), else
    the pods' ``schedulerName``. A pod whose schedulerName no profile has is never scheduled
    by this scheduler: without ``--profile`` that is an :class:`InputError` naming the known
    profiles (not an answer for a profile the pod does not ask for); with it, a note."""
    names = sorted({scheduler_name(p) for p in pods}) or [DEFAULT_SCHEDULER_NAME]
    known = known_profiles(config)
    profiles = _profiles_of(config)
    unknown = [n for n in names if n not in known]
    if given is None:
        if unknown:
            whose = _pods_naming(pods, unknown[0])
            raise InputError(
                f"unknown profile {unknown[0]!r}: {whose} spec.schedulerName names no profile "
                f"({profiles}), so no scheduler with this configuration schedules "
                f"it; check spec.schedulerName, or give the --config of the scheduler named "
                f"{unknown[0]!r}"
            )
        if len(names) > 1:
            raise InputError(
                f"the pods name several profiles ({', '.join(names)}): give --profile, or "
                "one profile's pods at a time"
            )
        given = names[0]
    config, profile = pick_profile(config, given, features)
    notes = [
        f"{_pods_naming(pods, n)} spec.schedulerName {n!r} names no profile "
        f"({profiles}), so no scheduler with this configuration schedules it; "
        f"shown as profile {given!r} (--profile)"
        for n in unknown
    ]
    return config, profile, notes


def _pods_naming(pods: list[dict], name: str) -> str:
    """``pod default/web's`` or ``3 pods'`` (those whose schedulerName is ``name``)."""
    matching = [p for p in pods if scheduler_name(p) == name]
    if len(matching) == 1:
        meta = matching[0].get("metadata") or {}
        return f"pod {meta.get('namespace') or 'default'}/{meta.get('name', '')}'s"
    return f"{len(matching)} pods'"


def dry_run_framework(
    config: SchedulerConfig, profile: Profile, cluster: Cluster, seed: int = 0
) -> Framework:
    """The profile's framework over ``cluster``; its handle cannot write."""
    services = Services(
        client=DryRunClient(),
        listers=cluster.lister,
        namespace_labels=cluster.namespace_labels,
        rng=random.Random(seed),
        features=config.features,
    )
    return Framework(profile, config.registry, services)


def find_pod(cluster: Cluster, namespace: str, name: str) -> dict:
    for pod in cluster.pods:
        meta = pod.get("metadata") or {}
        if meta.get("name") == name and (meta.get("namespace") or "default") == namespace:
            return pod
    raise InputError(f'pod "{name}" not found in namespace "{namespace}"')


def without(cluster: Cluster, pod: dict) -> Cluster:
    """The cluster without ``pod`` (matched by namespace and name)."""
    meta = pod.get("metadata") or {}
    key = (meta.get("namespace") or "default", meta.get("name"))
    rest = [
        p
        for p in cluster.pods
        if ((p["metadata"].get("namespace") or "default"), p["metadata"].get("name")) != key
    ]
    return Cluster(cluster.nodes, rest, cluster.objects)


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False)
