"""Extended resources backed by DRA (DRAExtendedResource, beta and on in v1.36): a pod asking
for ``example.com/gpu`` (or ``deviceclass.resource.kubernetes.io/<class>``) on a node that does
not advertise it gets the devices through a DeviceClass whose ``extendedResourceName`` names it
(upstream ``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go`` and
``staging/src/k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache``).

The scheduler makes the claim itself: an in-memory placeholder in PreFilter, one request per
container and resource on each node in Filter, created in the API in PreBind, with the pod's
``status.extendedResourceClaimStatus`` naming the requests of each container.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable

from extender.framework.quantity import milli_value
from extender.framework.resources import is_extended_resource_name

from .claims import meta

# ``resourceapi.ResourceDeviceClassPrefix``: every class is also the extended resource
# ``deviceclass.resource.kubernetes.io/<class name>``.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# ``resourceapi.ExtendedResourceClaimAnnotation``
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
SPECIAL_CLAIM_NAME = "<extended-resources>"

ERR_CANNOT_SCHEDULE_CLAIM = "cannot schedule extended resource claim"
ERR_CANNOT_FIT = "cannot fit resource"

Resolver = Callable[[str], dict | None]


def is_dra_extended_resource_name(name: str) -> bool:
    """``IsDRAExtendedResourceName``."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def class_resolver(classes: Iterable[dict]) -> dict[str, dict]:
    """Extended resource name -> DeviceClass (``ExtendedResourceCache``): each class under its
    implicit name; an ``extendedResourceName`` shared by several classes goes to the newest
    (creationTimestamp), the smaller name on a tie."""
    out: dict[str, dict] = {}
    explicit: dict[str, dict] = {}
    for device_class in classes:
        m = meta(device_class)
        out[DEVICE_CLASS_PREFIX + m.get("name", "")] = device_class
        name = (device_class.get("spec") or {}).get("extendedResourceName")
        if not name:
            continue
        current = explicit.get(name)
        if current is None or _newer(device_class, current):
            explicit[name] = device_class
    out.update(explicit)
    return out


def _newer(a: dict, b: dict) -> bool:
    ta, tb = meta(a).get("creationTimestamp") or "", meta(b).get("creationTimestamp") or ""
    if ta != tb:
        return ta > tb  # RFC 3339 in UTC: the text orders as the time
    return meta(a).get("name", "") < meta(b).get("name", "")


def find_extended_resource_claim(pod: dict, claims: Iterable[dict]) -> dict | None:
    """The claim a previous cycle created for the pod's extended resources, if any."""
    pm = meta(pod)
    for claim in claims:
        if (meta(claim).get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in meta(claim).get("ownerReferences") or ():
            if (
                ref.get("name") == pm.get("name")
                and ref.get("controller")
                and ref.get("uid") == pm.get("uid")
            ):
                return claim
    return None


def placeholder_claim(pod: dict) -> dict:
    """The in-memory claim of a pod whose extended-resource claim does not exist yet."""
    pm = meta(pod)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pm.get("namespace", ""),
            "name": SPECIAL_CLAIM_NAME,
            "uid": str(uuid.uuid4()),
            "generateName": f"{pm.get('name', '')}-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pm.get("name", ""),
                    "uid": pm.get("uid", ""),
                    "controller": True,
                }
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def is_special_claim_name(name: str) -> bool:
    return name == SPECIAL_CLAIM_NAME


def _int_request(container: dict, resource: str) -> int:
    """The container's integral request of ``resource`` (``AsInt64``; 0 when absent or not
    an integer)."""
    requests = (container.get("resources") or {}).get("requests") or {}
    if resource not in requests:
        return 0
    try:
        milli = milli_value(requests[resource])
    except (ValueError, TypeError):
        return 0
    return milli // 1000 if milli % 1000 == 0 else 0


def _request_and_mappings(
    index: int,
    container: dict,
    resource: str,
    class_name: str,
    reusable: list[dict | None],
) -> tuple[dict | None, list[dict]]:
    """``createResourceRequestAndMappings``: the container's device request for ``resource``
    (``None`` when long-lived containers' requests already cover it) and its mappings."""
    requests = (container.get("resources") or {}).get("requests")
    if not requests or resource not in requests:
        return None, []
    wanted = _int_request(container, resource)
    if wanted == 0:
        return None, []
    mappings = []
    covered = 0
    for request in reusable:
        if request is not None:
            covered += request["exactly"]["count"]
            mappings.append(_mapping(container, resource, request["name"]))
            if covered >= wanted:
                return None, mappings
    position = sorted(requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": wanted - covered,
        },
    }
    mappings.append(_mapping(container, resource, name))
    return request, mappings


def _mapping(container: dict, resource: str, request: str) -> dict:
    return {
        "containerName": container.get("name", ""),
        "resourceName": resource,
        "requestName": request,
    }


def requests_and_mappings(
    pod: dict, resources: dict[str, int], resolver: dict[str, dict]
) -> tuple[list[dict], list[dict]]:
    """``createRequestsAndMappings``: the device requests of the node's extended-resource claim
    (sorted by name) and the pod's container -> request mappings. Init containers that are not
    sidecars run one at a time: the largest of their requests is the one kept, and they reuse
    the devices of the long-lived containers after them."""
    spec = pod.get("spec") or {}
    init = list(spec.get("initContainers") or ())
    containers = init + list(spec.get("containers") or ())
    long_lived = [
        i for i, c in enumerate(containers) if i >= len(init) or c.get("restartPolicy") == "Always"
    ]
    short_lived = [i for i in range(len(init)) if i not in set(long_lived)]
    device_requests: list[dict] = []
    mappings: list[dict] = []
    for resource in sorted(resources):
        device_class = resolver.get(resource)
        if device_class is None:
            continue
        class_name = meta(device_class).get("name", "")
        long_requests: list[dict | None] = [None] * len(containers)
        long_mappings: list[dict] = []
        for i in long_lived:
            request, found = _request_and_mappings(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings += found
        largest: dict | None = None
        short_names: list[str] = []
        short_mappings: list[dict] = []
        for i in short_lived:
            request, found = _request_and_mappings(
                i, containers[i], resource, class_name, long_requests[i:]
            )
            if request is not None:
                if request["name"] not in short_names:
                    short_names.append(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings += found
        if largest is not None and len(short_names) > 1:
            # One request serves every short-lived init container: the largest.
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            device_requests.append(largest)
        device_requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    device_requests.sort(key=lambda r: r["name"])
    return device_requests, mappings


def node_claim(claim: dict, requests: list[dict]) -> dict:
    """The extended-resource claim for one node: the placeholder with the node's requests."""
    out = copy.deepcopy(claim)
    out.setdefault("spec", {})["devices"] = {"requests": requests} if requests else {}
    return out
