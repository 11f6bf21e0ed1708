"""VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits (upstream
``pkg/scheduler/framework/plugins/{volumebinding,volumezone,volumerestrictions,
nodevolumelimits}``): decisions and upstream messages on plain API dicts."""

from __future__ import annotations

from typing import Any

from extender.framework.cycle_state import CycleState
from extender.framework.handle import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Kind,
)
from extender.framework.pod_info import PodInfo
from extender.framework.status import Code
from extender.plugins.node_volume_limits import NodeVolumeLimits
from extender.plugins.volume_restrictions import ERR_REASON_RWOP_CONFLICT, VolumeRestrictions
from extender.plugins.volume_zone import VolumeZone
from extender.plugins.volumebinding import VolumeBinding
from tests.unit.builders import ListLister, make_node, make_pod

from .helpers import cycle
from .helpers import filter_all as _filter_all

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
ZONE = "topology.kubernetes.io/zone"


class FakeHandle:
    def __init__(self, **kinds: list[dict]) -> None:
        self.kinds = {
            PERSISTENT_VOLUMES: kinds.get("pvs", []),
            PERSISTENT_VOLUME_CLAIMS: kinds.get("pvcs", []),
            STORAGE_CLASSES: kinds.get("classes", []),
            CSI_NODES: kinds.get("csinodes", []),
            CSI_DRIVERS: kinds.get("drivers", []),
            CSI_STORAGE_CAPACITIES: kinds.get("capacities", []),
        }
        self.client: Any = None

    def lister(self, kind: Kind) -> ListLister:
        return ListLister(self.kinds.get(kind, []))


def sc(
    name: str,
    mode: str = "WaitForFirstConsumer",
    provisioner: str = "example.com/csi",
    **extra: Any,
) -> dict:
    return {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def pvc(
    name: str,
    *,
    cls: str | None = "wffc",
    volume: str = "",
    size: str = "1Gi",
    modes=("ReadWriteOnce",),
    bound: bool = False,
    ns: str = "default",
    **meta: Any,
) -> dict:
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    annotations = {"pv.kubernetes.io/bind-completed": "yes"} if bound else {}
    annotations.update(meta.pop("annotations", {}))
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "annotations": annotations,
            **meta,
        },
        "spec": spec,
        "status": {"phase": "Bound" if bound else "Pending"},
    }


def pv(
    name: str,
    *,
    cls: str = "wffc",
    size: str = "1Gi",
    hosts: tuple[str, ...] = (),
    zone: str | None = None,
    claim: dict | None = None,
    modes=("ReadWriteOnce",),
    csi: dict | None = None,
) -> dict:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
    }
    if hosts:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": list(hosts),
                            }
                        ]
                    }
                ]
            }
        }
    if claim is not None:
        spec["claimRef"] = {
            "name": claim["metadata"]["name"],
            "namespace": claim["metadata"]["namespace"],
            "uid": claim["metadata"]["uid"],
        }
    if csi is not None:
        spec["csi"] = csi
    labels = {ZONE: zone} if zone else {}
    return {
        "metadata": {"name": name, "labels": labels, "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Bound" if claim else "Available"},
    }


def with_claims(*names: str, name: str = "p", **kw: Any) -> dict:
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)
    ]
    return make_pod(name, volumes=volumes, **kw)


def filter_all(plugin: Any, pod: dict, nodes: list[dict], pods: list[dict] = ()) -> dict:  # type: ignore[assignment]
    out = _filter_all(plugin, pod, nodes, pods)
    return {k: v if v is None else (v[0], list(v[1])) for k, v in out.items()}


NODES = [make_node("n1", labels={ZONE: "a"}), make_node("n2", labels={ZONE: "b"})]


# -- VolumeBinding ----------------------------------------------------------------------------


def binding(**kinds: list[dict]) -> VolumeBinding:
    return VolumeBinding({}, FakeHandle(**kinds))


def test_volume_binding_skips_pods_without_claims() -> None:
    assert filter_all(binding(), make_pod("p"), NODES) == {"n1": None, "n2": None}


def pre_filter(plugin: Any, pod: dict, nodes: list[dict] = NODES) -> Any:
    state, snapshot = cycle(nodes)
    return plugin.pre_filter(state, pod, snapshot.node_info_list)


def test_volume_binding_missing_claim_is_unresolvable_with_the_apiserver_text() -> None:
    _, status = pre_filter(binding(), with_claims("data"))
    assert status.code == UNRESOLVABLE
    assert list(status.reasons) == ['persistentvolumeclaim "data" not found']


def test_volume_binding_unbound_immediate_claim() -> None:
    plugin = binding(pvcs=[pvc("data", cls="fast")], classes=[sc("fast", "Immediate")])
    _, status = pre_filter(plugin, with_claims("data"))
    assert status.code == UNRESOLVABLE
    assert list(status.reasons) == ["pod has unbound immediate PersistentVolumeClaims"]


def test_volume_binding_bound_pv_node_affinity() -> None:
    claim = pvc("data", volume="local-1", bound=True)
    plugin = binding(
        pvcs=[claim], pvs=[pv("local-1", hosts=("n1",), claim=claim)], classes=[sc("wffc")]
    )
    result, status = pre_filter(plugin, with_claims("data"))
    assert status is None and result.node_names == {"n1"}
    out = filter_all(plugin, with_claims("data"), NODES)
    assert out["n1"] is None
    assert out["n2"] == (UNRESOLVABLE, ["node(s) had volume node affinity conflict"])


def test_volume_binding_bound_to_missing_pv() -> None:
    claim = pvc("data", volume="gone", bound=True)
    out = filter_all(binding(pvcs=[claim], classes=[sc("wffc")]), with_claims("data"), NODES)
    assert out["n1"] == (
        UNRESOLVABLE,
        ["node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"],
    )


def test_volume_binding_static_pv_on_one_node_without_provisioner() -> None:
    plugin = binding(
        pvcs=[pvc("data", cls="local")],
        pvs=[pv("local-1", cls="local", hosts=("n2",))],
        classes=[sc("local", provisioner="kubernetes.io/no-provisioner")],
    )
    out = filter_all(plugin, with_claims("data"), NODES)
    assert out == {
        "n1": (UNRESOLVABLE, ["node(s) didn't find available persistent volumes to bind"]),
        "n2": None,
    }


def test_volume_binding_static_pv_must_be_large_enough_and_match_access_modes() -> None:
    classes = [sc("local", provisioner="kubernetes.io/no-provisioner")]
    small = binding(
        pvcs=[pvc("data", cls="local", size="2Gi")],
        pvs=[pv("a", cls="local", size="1Gi")],
        classes=classes,
    )
    assert filter_all(small, with_claims("data"), NODES)["n1"] is not None
    rwx = binding(
        pvcs=[pvc("data", cls="local", modes=("ReadWriteMany",))],
        pvs=[pv("a", cls="local")],
        classes=classes,
    )
    assert filter_all(rwx, with_claims("data"), NODES)["n1"] is not None


def test_volume_binding_dynamic_provisioning_and_allowed_topologies() -> None:
    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}]
    plugin = binding(pvcs=[pvc("data")], classes=[sc("wffc", allowedTopologies=topo)])
    out = filter_all(plugin, with_claims("data"), NODES)
    assert out["n1"] == (UNRESOLVABLE, ["node(s) didn't find available persistent volumes to bind"])
    assert out["n2"] is None


def test_volume_binding_storage_capacity_when_the_driver_asks() -> None:
    driver = {"metadata": {"name": "example.com/csi"}, "spec": {"storageCapacity": True}}
    capacity = {
        "metadata": {"name": "c1", "namespace": "kube-system"},
        "storageClassName": "wffc",
        "capacity": "10Gi",
        "nodeTopology": {"matchLabels": {ZONE: "a"}},
    }
    plugin = binding(
        pvcs=[pvc("data", size="5Gi")],
        classes=[sc("wffc")],
        drivers=[driver],
        capacities=[capacity],
    )
    out = filter_all(plugin, with_claims("data"), NODES)
    assert out["n1"] is None
    assert out["n2"] == (UNRESOLVABLE, ["node(s) did not have enough free storage"])


def test_volume_binding_reserve_assumes_so_a_second_pod_cannot_take_the_pv() -> None:
    classes = [sc("local", provisioner="kubernetes.io/no-provisioner")]
    claims = [pvc("a", cls="local"), pvc("b", cls="local")]
    plugin = binding(pvcs=claims, pvs=[pv("only", cls="local", hosts=("n1",))], classes=classes)
    state, snapshot = cycle(NODES)
    pod_a = with_claims("a", name="pa")
    plugin.pre_filter(state, pod_a, snapshot.node_info_list)
    assert plugin.filter(state, pod_a, snapshot.get("n1")) is None
    assert plugin.reserve(state, pod_a, "n1") is None
    assert filter_all(plugin, with_claims("b", name="pb"), NODES)["n1"] is not None
    plugin.unreserve(state, pod_a, "n1")
    assert filter_all(plugin, with_claims("b", name="pb"), NODES)["n1"] is None


class FakeClient:
    def __init__(self, handle: FakeHandle) -> None:
        self.handle = handle
        self.writes: list[tuple[str, str]] = []

    def request(self, method: str, path: str, body: Any = None) -> Any:
        self.writes.append((method, path))
        # The PV controller, at once: the claim bound to the written volume.
        if "/persistentvolumes/" in path:
            ref = body["spec"]["claimRef"]
            for claim in self.handle.kinds[PERSISTENT_VOLUME_CLAIMS]:
                if claim["metadata"]["name"] == ref["name"]:
                    claim["spec"]["volumeName"] = body["metadata"]["name"]
                    claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
            body["metadata"]["resourceVersion"] = "1"
            self.handle.kinds[PERSISTENT_VOLUMES][:] = [body]
        return body


def test_volume_binding_pre_bind_writes_the_claim_ref_and_waits_for_the_binding() -> None:
    handle = FakeHandle(
        pvcs=[pvc("a", cls="local")],
        pvs=[pv("only", cls="local", hosts=("n1",))],
        classes=[sc("local", provisioner="kubernetes.io/no-provisioner")],
    )
    handle.client = FakeClient(handle)
    plugin = VolumeBinding({"bindTimeoutSeconds": 5}, handle)
    plugin.poll_interval = 0.01
    state, snapshot = cycle(NODES)
    pod = with_claims("a")
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert plugin.filter(state, pod, snapshot.get("n1")) is None
    assert plugin.reserve(state, pod, "n1") is None
    assert plugin.pre_bind(state, pod, "n1") is None
    assert handle.client.writes == [("PUT", "/api/v1/persistentvolumes/only")]


def test_volume_binding_pre_bind_times_out() -> None:
    handle = FakeHandle(pvcs=[pvc("a")], classes=[sc("wffc")])
    handle.client = type("C", (), {"request": lambda self, m, p, b=None: b})()
    plugin = VolumeBinding({"bindTimeoutSeconds": 0}, handle)
    plugin.poll_interval = 0.01
    state, snapshot = cycle(NODES)
    pod = with_claims("a")
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    plugin.filter(state, pod, snapshot.get("n1"))
    plugin.reserve(state, pod, "n1")
    status = plugin.pre_bind(state, pod, "n1")
    # The claim keeps no selected-node annotation in the fake store: provisioning "failed".
    assert status.code == Code.ERROR
    assert status.message.startswith("binding volumes: ")


def _reserved(plugin: VolumeBinding, pod: dict, node: str = "n1") -> CycleState:
    state, snapshot = cycle(NODES)
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    for info in snapshot.node_info_list:
        plugin.filter(state, pod, info)
    assert plugin.reserve(state, pod, node) is None
    return state


def test_volume_binding_pre_bind_pre_flight_skips_when_nothing_is_left_to_bind() -> None:
    # Upstream PreBindPreFlight: Skip when allBound (no claims, or every claim bound).
    plain, pod = binding(), make_pod("p")
    status = plain.pre_bind_pre_flight(_reserved(plain, pod), pod, "n1")
    assert status is not None and status.code == Code.SKIP
    claim = pvc("data", volume="local-1", bound=True)
    plugin = binding(
        pvcs=[claim], pvs=[pv("local-1", hosts=("n1",), claim=claim)], classes=[sc("wffc")]
    )
    pod = with_claims("data")
    status = plugin.pre_bind_pre_flight(_reserved(plugin, pod), pod, "n1")
    assert status is not None and status.code == Code.SKIP


def test_volume_binding_pre_bind_pre_flight_has_work_for_a_claim_to_bind() -> None:
    plugin = binding(
        pvcs=[pvc("a", cls="local")],
        pvs=[pv("only", cls="local", hosts=("n1",))],
        classes=[sc("local", provisioner="kubernetes.io/no-provisioner")],
    )
    pod = with_claims("a")
    assert plugin.pre_bind_pre_flight(_reserved(plugin, pod), pod, "n1") is None
    provisioned = binding(pvcs=[pvc("b")], classes=[sc("wffc")])
    pod = with_claims("b")
    assert provisioned.pre_bind_pre_flight(_reserved(provisioned, pod), pod, "n2") is None


def test_volume_binding_pre_bind_pre_flight_errors_in_upstream_words() -> None:
    plugin = binding(pvcs=[pvc("b")], classes=[sc("wffc")])
    pod = with_claims("b")
    status = plugin.pre_bind_pre_flight(CycleState(), pod, "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'reading "VolumeBinding" from cycleState: not found'
    state, snapshot = cycle(NODES)
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    plugin.filter(state, pod, snapshot.get("n1"))  # n2 never filtered: no volumes for it
    status = plugin.pre_bind_pre_flight(state, pod, "n2")
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'no pod volume found for node "n2"'


def test_volume_binding_pre_score_skips_without_storage_capacity_scoring() -> None:
    state, snapshot = cycle(NODES)
    assert binding().pre_score(state, make_pod("p"), snapshot.node_info_list).code == Code.SKIP


# -- VolumeZone -------------------------------------------------------------------------------


def test_volume_zone_bound_pv_zone_must_match_the_node() -> None:
    claim = pvc("data", volume="z", bound=True)
    plugin = VolumeZone({}, FakeHandle(pvcs=[claim], pvs=[pv("z", zone="a", claim=claim)]))
    nodes = [*NODES, make_node("bare")]
    out = filter_all(plugin, with_claims("data"), nodes)
    assert out == {
        "n1": None,
        "n2": (UNRESOLVABLE, ["node(s) had no available volume zone"]),
        "bare": None,
    }


def test_volume_zone_multi_zone_values_and_wffc_claims() -> None:
    claim = pvc("data", volume="z", bound=True)
    multi = pv("z", claim=claim)
    multi["metadata"]["labels"][ZONE] = "a__b"
    plugin = VolumeZone(
        {}, FakeHandle(pvcs=[claim, pvc("later")], pvs=[multi], classes=[sc("wffc")])
    )
    assert filter_all(plugin, with_claims("data", "later"), NODES) == {"n1": None, "n2": None}


def test_volume_zone_unbound_immediate_claim_has_no_pv_name() -> None:
    plugin = VolumeZone(
        {}, FakeHandle(pvcs=[pvc("data", cls="fast")], classes=[sc("fast", "Immediate")])
    )
    _, status = pre_filter(plugin, with_claims("data"))
    assert list(status.reasons) == ["PersistentVolume had no name"]


def test_volume_zone_ignores_generic_ephemeral_volumes() -> None:
    """Upstream reads only ``persistentVolumeClaim`` volumes: an ephemeral volume whose claim
    does not exist yet is VolumeBinding's to reject, not VolumeZone's (conformance v1/p9)."""
    claim = pvc("data", volume="z", bound=True)
    plugin = VolumeZone({}, FakeHandle(pvcs=[claim], pvs=[pv("z", zone="a", claim=claim)]))
    pod = with_claims("data")
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast"}}
    pod["spec"]["volumes"].append(
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}
    )
    assert filter_all(plugin, pod, NODES) == {
        "n1": None,
        "n2": (UNRESOLVABLE, ["node(s) had no available volume zone"]),
    }
    only_ephemeral = make_pod("e", volumes=[pod["spec"]["volumes"][-1]])
    _, status = pre_filter(plugin, only_ephemeral)
    assert status.code == Code.SKIP


# -- VolumeRestrictions -----------------------------------------------------------------------


def test_volume_restrictions_read_write_once_pod_conflict_and_preemption_extensions() -> None:
    claim = pvc("solo", modes=("ReadWriteOncePod",), volume="x", bound=True)
    plugin = VolumeRestrictions({}, FakeHandle(pvcs=[claim]))
    holder = with_claims("solo", name="holder", node_name="n1")
    state, snapshot = cycle(NODES, [holder])
    pod = with_claims("solo", name="p")
    _, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert status is None
    rejected = plugin.filter(state, pod, snapshot.get("n2"))
    assert rejected.code == Code.UNSCHEDULABLE
    assert list(rejected.reasons) == [ERR_REASON_RWOP_CONFLICT]
    assert ERR_REASON_RWOP_CONFLICT == (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
        "access mode"
    )
    plugin.pre_filter_extensions().remove_pod(state, pod, PodInfo(holder), snapshot.get("n1"))
    assert plugin.filter(state, pod, snapshot.get("n1")) is None


def test_volume_restrictions_exclusive_in_tree_disks() -> None:
    disk = {"name": "d", "gcePersistentDisk": {"pdName": "pd-1"}}
    existing = make_pod("e", node_name="n1", volumes=[disk])
    out = filter_all(
        VolumeRestrictions({}, FakeHandle()), make_pod("p", volumes=[disk]), NODES, [existing]
    )
    assert out == {"n1": (Code.UNSCHEDULABLE, ["node(s) had no available disk"]), "n2": None}
    read_only = {"name": "d", "gcePersistentDisk": {"pdName": "pd-1", "readOnly": True}}
    existing_ro = make_pod("e", node_name="n1", volumes=[read_only])
    out = filter_all(
        VolumeRestrictions({}, FakeHandle()),
        make_pod("p", volumes=[read_only]),
        NODES,
        [existing_ro],
    )
    assert out["n1"] is None


def test_volume_restrictions_missing_claim() -> None:
    _, status = pre_filter(VolumeRestrictions({}, FakeHandle()), with_claims("nope"))
    assert status.code == UNRESOLVABLE and list(status.reasons) == [
        'persistentvolumeclaim "nope" not found'
    ]


# -- NodeVolumeLimits -------------------------------------------------------------------------


def csinode(name: str, count: int, driver: str = "example.com/csi") -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"drivers": [{"name": driver, "nodeID": name, "allocatable": {"count": count}}]},
    }


def test_node_volume_limits_counts_unique_handles_per_driver() -> None:
    claims = [pvc(n, volume=f"pv-{n}", bound=True) for n in ("a", "b", "c")]
    pvs = [
        pv(f"pv-{n}", csi={"driver": "example.com/csi", "volumeHandle": f"h-{n}"})
        for n in ("a", "b", "c")
    ]
    plugin = NodeVolumeLimits(
        {}, FakeHandle(pvcs=claims, pvs=pvs, csinodes=[csinode("n1", 2), csinode("n2", 3)])
    )
    existing = [
        with_claims("a", name="e1", node_name="n1"),
        with_claims("a", "b", name="e2", node_name="n2"),
    ]
    out = filter_all(plugin, with_claims("c"), NODES, existing)
    assert out == {"n1": None, "n2": None}  # n1: 1+1 <= 2; n2: 2+1 <= 3
    out = filter_all(plugin, with_claims("b", "c"), NODES, existing)
    # n1: a attached, b and c new -> 3 > 2; n2: a, b attached, only c new -> 3 <= 3.
    assert out == {"n1": (Code.UNSCHEDULABLE, ["node(s) exceed max volume count"]), "n2": None}


def test_node_volume_limits_unbound_claim_counts_by_class_provisioner() -> None:
    plugin = NodeVolumeLimits(
        {}, FakeHandle(pvcs=[pvc("new")], classes=[sc("wffc")], csinodes=[csinode("n1", 0)])
    )
    out = filter_all(plugin, with_claims("new"), NODES)
    assert out == {"n1": (Code.UNSCHEDULABLE, ["node(s) exceed max volume count"]), "n2": None}


def test_node_volume_limits_missing_claim_and_skip() -> None:
    plugin = NodeVolumeLimits({}, FakeHandle(csinodes=[csinode("n1", 1)]))
    out = filter_all(plugin, with_claims("nope"), NODES)
    assert out["n1"] == (
        UNRESOLVABLE,
        ['looking up PVC default/nope: persistentvolumeclaim "nope" not found'],
    )
    state = CycleState()
    assert plugin.pre_filter(state, make_pod("p"), [])[1].code == Code.SKIP
