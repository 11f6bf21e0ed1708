"""The ``scheduling.x-k8s.io/v1alpha1`` PodGroup as Coscheduling reads it (scheduler-plugins
``apis/scheduling/v1alpha1/types.go`` and ``pkg/util/podgroup.go``, release v0.34.7).

A pod names its group with the label ``scheduling.x-k8s.io/pod-group``; the group is the
PodGroup of that name in the pod's namespace. Of the spec the scheduler reads:

* ``minMember`` (int32, at least 1 by the CRD's validation): how many pods must be placed
  together; a missing value is 0.
* ``minResources`` (a ResourceList): what the cluster must have free for the whole group.
* ``scheduleTimeoutSeconds`` (int32): how long placed members wait at Permit for the rest.

PodGroups are the API's dicts from the lister, read and never mutated.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from extender.framework.events import custom_resource
from extender.framework.handle import Kind

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PODGROUPS = Kind(GROUP, VERSION, "podgroups")
"""scheduler-plugins' PodGroup kind, read through ``handle.lister``; not the workload API's
``scheduling.k8s.io`` PodGroup of :mod:`extender.framework.podgroups` (GangScheduling's)."""

POD_GROUP_LABEL = GROUP + "/pod-group"
"""The pod label naming the pod's PodGroup (upstream ``v1alpha1.PodGroupLabel``)."""

PODGROUP_EVENT_RESOURCE = custom_resource(PODGROUPS.resource, VERSION, GROUP)
"""The PodGroup's name in a cluster event, upstream's ``<resource>.<version>.<group>`` form."""

DEFAULT_WAIT_SECONDS = 60.0
"""Permit's wait when neither the PodGroup nor the args set one (upstream ``DefaultWaitTime``)."""


class PodGroupError(ValueError):
    """A PodGroup field the scheduler cannot read; the message names the field."""


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def pod_group_label(pod: dict) -> str:
    """The pod's group name ("" without the label; upstream ``GetPodGroupLabel``)."""
    return str((_meta(pod).get("labels") or {}).get(POD_GROUP_LABEL) or "")


def pod_group_full_name(pod: dict) -> str:
    """``namespace/group`` of the pod ("" without the label; upstream
    ``GetPodGroupFullName``)."""
    name = pod_group_label(pod)
    return f"{_meta(pod).get('namespace', '')}/{name}" if name else ""


def namespaced_name(obj: dict) -> str:
    """``namespace/name`` (upstream ``GetNamespacedName``)."""
    meta = _meta(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _spec(pod_group: dict) -> dict:
    spec = pod_group.get("spec")
    return spec if isinstance(spec, dict) else {}


def _where(pod_group: dict, field: str) -> str:
    return f"PodGroup {namespaced_name(pod_group)}: spec.{field}"


def _int_field(pod_group: dict, field: str) -> int | None:
    value: Any = _spec(pod_group).get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PodGroupError(f"{_where(pod_group, field)}: must be an integer, got {value!r}")
    return value


def min_member(pod_group: dict) -> int:
    """``spec.minMember`` (0 when unset)."""
    return _int_field(pod_group, "minMember") or 0


def min_resources(pod_group: dict) -> dict[str, Any] | None:
    """``spec.minResources`` (``None`` when unset, as upstream's nil map)."""
    value = _spec(pod_group).get("minResources")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise PodGroupError(f"{_where(pod_group, 'minResources')}: must be a map of quantities")
    return value


def wait_seconds(pod_group: dict | None, permit_waiting_seconds: float) -> float:
    """Permit's wait (upstream ``GetWaitTimeDuration``): the group's
    ``scheduleTimeoutSeconds`` if set, else ``permitWaitingTimeSeconds`` if not 0, else 60 s."""
    if pod_group is not None:
        timeout = _int_field(pod_group, "scheduleTimeoutSeconds")
        if timeout is not None:
            return float(timeout)
    if permit_waiting_seconds:
        return permit_waiting_seconds
    return DEFAULT_WAIT_SECONDS


def creation_timestamp(obj: dict) -> float | None:
    """``metadata.creationTimestamp`` as POSIX seconds (``None``: absent or malformed)."""
    raw = _meta(obj).get("creationTimestamp")
    if not raw:
        return None
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
