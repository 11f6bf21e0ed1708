"""Resource quantities, resource names and the pod-request helper (upstream
``staging/src/k8s.io/component-helpers/resource/helpers.go``; the name predicates follow
``pkg/apis/core/v1/helper/helpers.go``).

Quantities are parsed by :mod:`extender.framework.quantity` (apimachinery's ``ParseQuantity``):
CPU is kept in milli-cores and everything else in whole units, rounded up away from zero as
``MilliValue()``/``Value()`` do. A value beyond int64 saturates at ``MAX_INT64``; a saturated
allocatable or capacity is still correct to compare against (its real value is at least that
much), a saturated *request* is not (it would fit where the real amount does not), so the
request side refuses such amounts (:func:`first_request_beyond_int64` for pods).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .quantity import MAX_INT64, MIN_INT64, exceeds_int64, int_value, milli_value, text_of

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# Defaults for containers that do not mention CPU / memory, used for scoring only.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def quantity_scale(name: str) -> int:
    """The decimal scale the scheduler compares ``name`` in: milli-CPU, whole units else."""
    return 3 if name == CPU else 0


def request_quantities(pod: dict, pod_level: bool = True) -> Iterator[tuple[str, object]]:
    """Every (resource name, quantity) that :func:`pod_requests` reads: containers, init
    containers, pod-level CPU/memory (unless not ``pod_level``) and overhead."""
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            yield from ((container.get("resources") or {}).get("requests") or {}).items()
    if pod_level:
        level = (spec.get("resources") or {}).get("requests") or {}
        yield from ((n, q) for n, q in level.items() if n in (CPU, MEMORY))
    yield from (spec.get("overhead") or {}).items()


def first_request_beyond_int64(
    pod: dict,
    compared: Callable[[str], bool],
    pod_level: bool = True,
    total: Resource | None = None,
) -> tuple[str, str] | None:
    """The first resource the scheduler compares (``compared(name)``) whose requested amount,
    one quantity or the pod's total (``total``, else :func:`pod_requests`), is beyond int64 in
    the unit it is compared in: ``(name, the quantity as written or the total)``; ``None``
    when all fit.

    Saturating such a request to ``MAX_INT64`` would make it fit a node whose allocatable
    saturates too, whatever the real amounts: the caller refuses the pod instead."""
    for name, quantity in request_quantities(pod, pod_level):
        if compared(name) and exceeds_int64(quantity, quantity_scale(name)):
            return name, _brief(text_of(quantity))
    if total is None:
        total = pod_requests(pod, pod_level=pod_level)
    amounts = [(n, total.get(n)) for n in (CPU, MEMORY, EPHEMERAL_STORAGE)]
    for name, amount in [*amounts, *total.scalar.items()]:
        if compared(name) and not MIN_INT64 <= amount <= MAX_INT64:
            return name, f"{amount}m" if name == CPU else str(amount)
    return None


def _brief(text: str) -> str:
    # A reason names the quantity; a hostile 10 kB one is cut, not repeated.
    return text if len(text) <= 40 else text[:37] + "..."


def is_scalar_resource(name: str) -> bool:
    """Whether :class:`Resource` keeps ``name`` in ``scalar``: everything but the four natives.

    Upstream's narrower predicate (extended, hugepages, prefixed-native and attachable-volume
    names) is :func:`is_scalar_resource_name`.
    """
    return name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


# -- resource names (upstream ``pkg/apis/core/v1/helper/helpers.go``) ---------------------------

HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_qualified_name(value: str) -> bool:
    """``[dns-subdomain/]name`` as Kubernetes validates label keys and resource names
    (upstream ``IsQualifiedName`` in ``staging/src/k8s.io/apimachinery/pkg/util/validation``).
    """
    prefix, sep, name = value.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME_PART.match(name))


def is_prefixed_native_resource(name: str) -> bool:
    return DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """A vendor resource such as ``example.com/gpu`` (upstream ``IsExtendedResourceName``)."""
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return is_qualified_name(REQUESTS_PREFIX + name)


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, prefixed-native and attachable-volume resources (upstream
    ``IsScalarResourceName``)."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or is_prefixed_native_resource(name)
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )


class Resource:
    """Amounts of schedulable resources (a pod's requests or a node's allocatable)."""

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, resources: dict | None) -> Resource:
        """Build from a ResourceList (``{"cpu": "2", "memory": "4Gi", ...}``)."""
        res = cls()
        if resources:
            for name, quantity in resources.items():
                res.set(name, quantity)
        return res

    def set(self, name: str, quantity: str | int | float) -> None:
        if name == CPU:
            self.milli_cpu = milli_value(quantity)
        elif name == MEMORY:
            self.memory = int_value(quantity)
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = int_value(quantity)
        elif name == PODS:
            self.allowed_pod_number = int_value(quantity)
        else:
            self.scalar[name] = int_value(quantity)

    def get(self, name: str) -> int:
        """The amount of ``name`` in the units the scheduler compares (milli-CPU, bytes, ...)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + value

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - value

    def is_zero(self) -> bool:
        return (
            self.milli_cpu == 0
            and self.memory == 0
            and self.ephemeral_storage == 0
            and not any(self.scalar.values())
        )

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v}
            == {k: v for k, v in other.scalar.items() if v}
        )

    def __repr__(self) -> str:
        return (
            f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
            f"ephemeral_storage={self.ephemeral_storage}, pods={self.allowed_pod_number}, "
            f"scalar={self.scalar})"
        )


def _container_requests(container: dict, non_zero: bool) -> Resource:
    requests = (container.get("resources") or {}).get("requests") or {}
    res = Resource.from_list(requests)
    if non_zero:
        if CPU not in requests:
            res.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in requests:
            res.memory = DEFAULT_MEMORY_REQUEST
    return res


def _max_into(acc: Resource, other: Resource) -> None:
    acc.milli_cpu = max(acc.milli_cpu, other.milli_cpu)
    acc.memory = max(acc.memory, other.memory)
    acc.ephemeral_storage = max(acc.ephemeral_storage, other.ephemeral_storage)
    for name, value in other.scalar.items():
        acc.scalar[name] = max(acc.scalar.get(name, 0), value)


def pod_requests(pod: dict, non_zero: bool = False, pod_level: bool = True) -> Resource:
    """Effective requests of a pod (upstream
    ``staging/src/k8s.io/component-helpers/resource/helpers.go``).

    ``max(sum of containers + sidecars, peak of init containers + sidecars started before)``,
    pod-level requests replacing CPU/memory (unless not ``pod_level``: upstream's
    ``SkipPodLevelResources``), plus overhead. With ``non_zero`` a container that does not
    mention CPU/memory counts as 100m / 200Mi (used for scoring).
    """
    spec = pod.get("spec") or {}
    regular = Resource()
    for container in spec.get("containers") or ():
        regular.add(_container_requests(container, non_zero))

    init_peak = Resource()
    sidecars = Resource()
    for container in spec.get("initContainers") or ():
        req = _container_requests(container, non_zero)
        if container.get("restartPolicy") == "Always":
            sidecars.add(req)
            regular.add(req)
        else:
            req.add(sidecars)
            _max_into(init_peak, req)
    _max_into(regular, init_peak)

    level = (spec.get("resources") or {}).get("requests") or {} if pod_level else {}
    if CPU in level:
        regular.milli_cpu = milli_value(level[CPU])
    if MEMORY in level:
        regular.memory = int_value(level[MEMORY])

    overhead = spec.get("overhead")
    if overhead:
        regular.add(Resource.from_list(overhead))
    return regular
