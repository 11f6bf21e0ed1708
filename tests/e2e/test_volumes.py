"""The volume plugins of ``kube-extender run`` against real volume machinery: the upstream
kube-controller-manager's PV binder and a dynamic provisioner on the external-provisioner
library (``hack/provisioner``, built by ``make test-binaries``).

There is no kubelet: pods never run, so the tests assert bindings (pods' nodes, claims'
volumes, PVs' node affinity), never Running.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.controlplane import ControlPlane, binary, spawn, stop_pid
from extender.kube.errors import ApiError
from extender.scenario.kube import Kube

from .harness import Standalone, standalone_config, wait_until

PROFILE = "kube-extender"
PROVISIONER = "kube-extender.io/hostpath"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture(scope="module")
def volume_machinery(control_plane: ControlPlane, tmp_path_factory) -> Iterator[None]:
    """The PV binder and the hostpath provisioner, for this module's tests."""
    control_plane.start_controller_manager()
    log = control_plane.logs / "hostpath-provisioner.log"
    provisioner = spawn(
        [
            str(binary("hostpath-provisioner")),
            f"--kubeconfig={control_plane.kubeconfig}",
            f"--dir={tmp_path_factory.mktemp('hostpath')}",
            f"--provisioner={PROVISIONER}",
            "--v=2",
        ],
        log,
    )
    try:
        yield
    finally:
        stop_pid(provisioner.pid, timeout=5)
        provisioner.wait(timeout=5)
        control_plane.stop_component("kube-controller-manager")


@pytest.fixture
def vkube(kube: Kube, control_plane: ControlPlane, processes, volume_machinery) -> Iterator[Kube]:
    """A client in a fresh namespace with ``kube-extender run`` (the default profile, the
    volume plugins included) scheduling it; its storage classes and PVs removed afterwards."""
    kube.scheduler_name = PROFILE
    sched = Standalone(control_plane, standalone_config(), name=f"standalone-{kube.namespace}")
    processes.append(sched)
    sched.wait_ready()
    yield kube
    for path in reversed(_cluster_objects.pop(kube.namespace, [])):
        try:
            kube.request("DELETE", path)
        except ApiError:
            pass


# Cluster-scoped objects (classes, PVs) a test made, by namespace: deleted after the test.
_cluster_objects: dict[str, list[str]] = {}


def track(kube: Kube, path: str) -> None:
    _cluster_objects.setdefault(kube.namespace, []).append(path)


def storage_class(kube: Kube, name: str, provisioner: str) -> str:
    kube.request(
        "POST",
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
        },
    )
    track(kube, f"/apis/storage.k8s.io/v1/storageclasses/{name}")
    return name


def claim(kube: Kube, name: str, class_name: str, size: str = "1Gi") -> None:
    kube.request(
        "POST",
        f"/api/v1/namespaces/{kube.namespace}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": class_name,
                "resources": {"requests": {"storage": size}},
            },
        },
    )


def get_claim(kube: Kube, name: str) -> dict:
    return kube.get(f"/api/v1/namespaces/{kube.namespace}/persistentvolumeclaims/{name}")


def pod_with_claim(kube: Kube, name: str, claim_name: str) -> None:
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}
    kube.create_pod(name, cpu="100m", volumes=[volume])


def pv_hostnames(pv: dict) -> list[str]:
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    return [
        value
        for term in terms
        for expr in term.get("matchExpressions") or ()
        if expr["key"] == "kubernetes.io/hostname"
        for value in expr["values"]
    ]


def test_delayed_binding_provisions_on_the_chosen_nodes(vkube: Kube) -> None:
    """A StatefulSet-like set: web-i with its own WaitForFirstConsumer claim data-web-i."""
    ns = vkube.namespace
    for i in range(3):
        vkube.create_node(f"{ns}-node{i}")
    sc = storage_class(vkube, f"hostpath-{ns}", PROVISIONER)
    for i in range(3):
        claim(vkube, f"data-web-{i}", sc)
        pod_with_claim(vkube, f"web-{i}", f"data-web-{i}")
    for i in range(3):
        node = vkube.wait_bound(f"web-{i}", timeout=60)
        pvc = get_claim(vkube, f"data-web-{i}")
        assert pvc["metadata"]["annotations"][SELECTED_NODE] == node
        assert pvc["status"]["phase"] == "Bound", pvc["status"]
        pv = vkube.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
        track(vkube, f"/api/v1/persistentvolumes/{pv['metadata']['name']}")
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == PROVISIONER
        assert pv_hostnames(pv) == [node], pv["spec"]["nodeAffinity"]
        assert pv["spec"]["claimRef"]["name"] == f"data-web-{i}"


def test_two_pods_race_for_one_static_local_pv(vkube: Kube) -> None:
    ns = vkube.namespace
    vkube.create_node(f"{ns}-node0")
    vkube.create_node(f"{ns}-node1")
    sc = storage_class(vkube, f"local-{ns}", "kubernetes.io/no-provisioner")
    pv_name = f"local-{ns}"
    vkube.request(
        "POST",
        "/api/v1/persistentvolumes",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": sc,
                "local": {"path": "/mnt/disks/vol1"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [f"{ns}-node1"],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        },
    )
    track(vkube, f"/api/v1/persistentvolumes/{pv_name}")
    for name in ("a", "b"):
        claim(vkube, f"claim-{name}", sc)
        pod_with_claim(vkube, name, f"claim-{name}")

    def one_bound() -> str | None:
        bound = [p for p in ("a", "b") if vkube.node_of(p)]
        return bound[0] if len(bound) == 1 else None

    winner = wait_until(one_bound, 60, "one of the two pods to be bound")
    loser = "b" if winner == "a" else "a"
    assert vkube.node_of(winner) == f"{ns}-node1"
    pvc = get_claim(vkube, f"claim-{winner}")
    assert pvc["spec"]["volumeName"] == pv_name and pvc["status"]["phase"] == "Bound"
    message = vkube.expect_pending(loser, seconds=3)
    assert "node(s) didn't find available persistent volumes to bind" in message, message
    assert get_claim(vkube, f"claim-{loser}")["status"]["phase"] == "Pending"


def test_missing_claim_then_created(vkube: Kube) -> None:
    ns = vkube.namespace
    vkube.create_node(f"{ns}-node0")
    sc = storage_class(vkube, f"hostpath-{ns}", PROVISIONER)
    pod_with_claim(vkube, "waits", "x")
    wait_until(
        lambda: 'persistentvolumeclaim "x" not found' in vkube.why_pending("waits"),
        20,
        "the missing-claim message",
    )
    claim(vkube, "x", sc)
    # Requeued by the PVC/Add event, not by the 5-minute unschedulable flush.
    assert vkube.wait_bound("waits", timeout=45) == f"{ns}-node0"
    pvc = get_claim(vkube, "x")
    assert pvc["status"]["phase"] == "Bound"
    track(vkube, f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")


def _unbound_then_bound_states(kube: Kube, name: str, since: str) -> list[tuple]:
    """Every state the pod went through since resourceVersion ``since``, as
    ``(spec.nodeName, status.nominatedNodeName)``, up to its binding (the watch replays them)."""
    states: list[tuple] = []
    path = f"/api/v1/namespaces/{kube.namespace}/pods"
    with kube.client.watch(path, since, 10, field_selector=f"metadata.name={name}") as stream:
        for kind, obj in stream:
            if kind == "BOOKMARK":
                continue
            states.append((obj["spec"].get("nodeName"), obj["status"].get("nominatedNodeName")))
            if obj["spec"].get("nodeName"):
                break
    return states


def _nominated_then_bound(kube: Kube) -> None:
    ns = kube.namespace
    kube.create_node(f"{ns}-node0")
    sc = storage_class(kube, f"hostpath-{ns}", PROVISIONER)
    claim(kube, "data", sc)
    since = kube.get(f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]
    pod_with_claim(kube, "web", "data")
    kube.create_pod("plain", cpu="100m")
    node = kube.wait_bound("web", timeout=60)
    assert kube.wait_bound("plain", timeout=60) == node

    states = _unbound_then_bound_states(kube, "web", since)
    assert (None, node) in states, states
    assert states[-1] == (node, None), states  # cleared by the apiserver's binding
    plain = _unbound_then_bound_states(kube, "plain", since)
    assert all(nominated is None for _, nominated in plain), plain
    pv = get_claim(kube, "data")["spec"]["volumeName"]
    track(kube, f"/api/v1/persistentvolumes/{pv}")


def test_a_pod_whose_volumes_need_binding_is_nominated_before_prebind(vkube: Kube) -> None:
    """kube-scheduler v1.36's NominatedNodeNameForExpectation: VolumeBinding's PreBindPreFlight
    says PreBind has work (a WaitForFirstConsumer claim to provision), so the pod's
    ``status.nominatedNodeName`` names the node before the binding; the apiserver clears it
    when the binding lands (ClearingNominatedNodeNameAfterBinding). A pod without claims is
    bound without that write."""
    _nominated_then_bound(vkube)


def test_kube_scheduler_nominates_the_same_way(vkube: Kube, kube_scheduler) -> None:
    """The same pods under the real kube-scheduler v1.36.3 go through the same states."""
    kube_scheduler(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": "default-scheduler"}],
        }
    )
    vkube.scheduler_name = "default-scheduler"
    _nominated_then_bound(vkube)
