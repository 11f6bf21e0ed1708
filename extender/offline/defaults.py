"""What the apiserver fills in on create, for the fields the scheduler reads: pods handed to
the plugins offline (the testing kit, ``explain`` on a dump, ``simulate``) look as the
apiserver would store them."""

from __future__ import annotations

import copy

from extender.framework.resources import pod_requests

# Resources a pod-level ``resources`` may name (upstream IsSupportedPodLevelResource), and
# those of them that may be overcommitted (requests below limits: not hugepages).
_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"


def _defaulted_requests(container: dict) -> dict | None:
    """The container with requests defaulted to its limits, or ``None`` if none is missing."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    missing = {k: v for k, v in limits.items() if k not in requests}
    if not missing:
        return None
    return {**container, "resources": {**resources, "requests": {**requests, **missing}}}


def apiserver_defaults(pod: dict) -> dict:
    """The pod as the apiserver stores it, for the resources the scheduler reads (upstream
    ``pkg/apis/core/v1/defaults.go``, ``SetDefaults_Pod``): a container's or init container's
    requests default to its limits where unset; with pod-level ``resources.limits``, pod-level
    requests default to the containers' aggregate requests (cpu, memory), then to the
    pod-level limits (feature PodLevelResources, on by default). Returns ``pod`` itself when
    nothing needs a default, else a copy; never mutates ``pod``."""
    spec = pod.get("spec") or {}
    changed = False
    new_spec = dict(spec)
    for key in ("containers", "initContainers"):
        containers = spec.get(key) or []
        defaulted = [_defaulted_requests(c) for c in containers]
        if any(d is not None for d in defaulted):
            new_spec[key] = [
                d if d is not None else c for c, d in zip(containers, defaulted, strict=True)
            ]
            changed = True
    pod_resources = spec.get("resources") or {}
    pod_limits = pod_resources.get("limits") or {}
    if pod_limits:
        requests = dict(pod_resources.get("requests") or {})
        named: set[str] = set()
        for key in ("containers", "initContainers"):
            for container in new_spec.get(key) or ():
                named.update((container.get("resources") or {}).get("requests") or {})
        aggregate = pod_requests(
            {"spec": {k: v for k, v in new_spec.items() if k not in ("resources", "overhead")}}
        )
        if "cpu" in named and "cpu" not in requests:
            requests["cpu"] = f"{aggregate.milli_cpu}m"
        if "memory" in named and "memory" not in requests:
            requests["memory"] = str(aggregate.memory)
        for key, value in pod_limits.items():
            if key not in requests and (key in _POD_LEVEL or key.startswith(_HUGEPAGES)):
                requests[key] = value
        if requests != (pod_resources.get("requests") or {}):
            new_spec["resources"] = {**pod_resources, "requests": requests}
            changed = True
    if not changed:
        return pod
    return {**copy.copy(pod), "spec": new_spec}
