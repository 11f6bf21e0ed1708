"""deploy/ against the real apiserver (RBAC on): its objects are applied server-side (PATCH
application/apply-patch+yaml through our KubeClient, extender.controlplane.apply), then the
extender, the second kube-scheduler and the standalone scheduler run with tokens of the
manifests' own ServiceAccounts (TokenRequest API) and schedule pods with exactly the
permissions deploy/ grants; permissions outside the manifests are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from extender.controlplane import feature_gates_value
from extender.controlplane.apply import apply, documents, kustomize, service_account_kubeconfig
from extender.kube import ApiError, KubeClient, api_client

from .harness import GANG_GATES, Extender, Standalone, events_for, wait_until

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NS = "kube-extender"


def config_map(path: Path, name: str) -> str:
    return next(
        d
        for d in documents(path.read_text())
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name
    )["data"]["config.yaml"]


@pytest.fixture(scope="module")
def admin(control_plane):
    return KubeClient(api_client(str(control_plane.kubeconfig)))


@pytest.fixture(scope="module")
def deployed(control_plane, admin):
    """deploy/ (the kustomization) and deploy/standalone.yaml, applied server-side."""
    stored = apply(admin, kustomize(DEPLOY))
    stored += apply(admin, documents((DEPLOY / "standalone.yaml").read_text()))
    return stored


def sa_kubeconfig(control_plane, admin, name: str) -> Path:
    path = control_plane.directory / f"sa-{name}.kubeconfig"
    return service_account_kubeconfig(
        admin, NS, name, path, control_plane.server, control_plane.directory / "pki" / "ca.crt"
    )


def as_sa(control_plane, admin, name: str) -> KubeClient:
    return KubeClient(api_client(str(sa_kubeconfig(control_plane, admin, name))))


def refused(call) -> int:
    try:
        call()
    except ApiError as exc:
        return exc.status
    return 200


def test_the_api_accepts_every_object_of_deploy(deployed) -> None:
    kinds = sorted({obj["kind"] for obj in deployed})
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Namespace",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    for obj in deployed:
        managers = {m["manager"] for m in obj["metadata"]["managedFields"]}
        assert "kube-extender-e2e" in managers, obj["metadata"]["name"]


def test_extender_and_kube_scheduler_with_the_manifests_service_accounts(
    kube, control_plane, admin, deployed, processes, kube_scheduler
) -> None:
    ext = Extender(
        control_plane,
        config_map(DEPLOY / "extender.yaml", "kube-extender-config"),
        name="extender-sa",
        kubeconfig=sa_kubeconfig(control_plane, admin, "kube-extender"),
    )
    processes.append(ext)
    ext.wait_ready()
    config = yaml.safe_load(config_map(DEPLOY / "scheduler.yaml", "kube-extender-scheduler-config"))
    config["extenders"][0]["urlPrefix"] = ext.url
    kube_scheduler(
        config, kubeconfig=sa_kubeconfig(control_plane, admin, "kube-extender-scheduler")
    )
    nodes = [f"{kube.namespace}-node{i}" for i in (1, 2)]
    for node in nodes:
        kube.create_node(node)
    kube.create_pod("via-extender-2", schedulerName="kube-extender-scheduler")
    assert kube.wait_bound("via-extender-2", timeout=60) in nodes
    # Scheduled through the extender, which answered from its SA-fed caches.
    assert ext.metric("extender_requests_total", verb="filter", outcome="ok") >= 1
    assert ext.metric("extender_requests_total", verb="prioritize", outcome="ok") >= 1
    assert "forbidden" not in ext.log(400).lower(), ext.log()
    lease = admin.get(
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-extender-scheduler"
    )
    assert lease and lease["spec"]["holderIdentity"], "leader election under the SA failed"


def test_standalone_scheduler_with_its_manifests_service_account(
    kube, control_plane, admin, deployed, processes
) -> None:
    config = yaml.safe_load(
        config_map(DEPLOY / "standalone.yaml", "kube-extender-standalone-config")
    )
    config["leaderElection"].update(leaseDuration="4s", renewDeadline="3s", retryPeriod="1s")
    run = Standalone(
        control_plane,
        config,
        name="standalone-sa",
        kubeconfig=sa_kubeconfig(control_plane, admin, "kube-extender-standalone"),
    )
    processes.append(run)
    run.wait_ready(timeout=60)
    node = f"{kube.namespace}-node1"
    kube.create_node(node)
    kube.create_pod("standalone-1", schedulerName="kube-extender-standalone")
    assert kube.wait_bound("standalone-1", timeout=60) == node
    wait_until(lambda: events_for(kube, "standalone-1", "Scheduled"), 20, "Scheduled event")
    assert "forbidden" not in run.log(400).lower(), run.log()


def test_standalone_allocates_a_claim_with_its_manifests_service_account(
    kube, control_plane, admin, deployed, processes
) -> None:
    """DynamicResources under the standalone's ServiceAccount: it reads the DRA kinds and
    writes the claim (finalizer, allocation, reservedFor) with exactly deploy/standalone.yaml's
    grants; the extender's may read claims but not write them."""
    config = yaml.safe_load(
        config_map(DEPLOY / "standalone.yaml", "kube-extender-standalone-config")
    )
    config["leaderElection"].update(leaseDuration="4s", renewDeadline="3s", retryPeriod="1s")
    run = Standalone(
        control_plane,
        config,
        name="standalone-sa-dra",
        kubeconfig=sa_kubeconfig(control_plane, admin, "kube-extender-standalone"),
    )
    processes.append(run)
    run.wait_ready(timeout=60)
    ns = kube.namespace
    node = f"{ns}-node1"
    kube.create_node(node)
    driver = f"gpu.{ns}.example.com"
    resource = "/apis/resource.k8s.io/v1"
    cluster_paths = [f"{resource}/deviceclasses/{ns}-gpu", f"{resource}/resourceslices/{ns}-gpu"]
    try:
        admin.request(
            "POST",
            f"{resource}/deviceclasses",
            {
                "metadata": {"name": f"{ns}-gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
            },
        )
        admin.request(
            "POST",
            f"{resource}/resourceslices",
            {
                "metadata": {"name": f"{ns}-gpu"},
                "spec": {
                    "driver": driver,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
                },
            },
        )
        claim_path = f"{resource}/namespaces/{ns}/resourceclaims"
        admin.request(
            "POST",
            claim_path,
            {
                "metadata": {"name": "gpu"},
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": f"{ns}-gpu"}}]
                    }
                },
            },
        )
        kube.create_pod(
            "standalone-dra",
            schedulerName="kube-extender-standalone",
            resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}],
        )
        assert kube.wait_bound("standalone-dra", timeout=60) == node
        claim = admin.get(f"{claim_path}/gpu")
        results = claim["status"]["allocation"]["devices"]["results"]
        assert [(r["driver"], r["device"]) for r in results] == [(driver, "gpu-0")]
        assert [r["name"] for r in claim["status"]["reservedFor"]] == ["standalone-dra"]
        # An extended resource backed by DRA: the scheduler creates the claim itself.
        resource_name = f"{ns}.example.com/gpu"
        admin.request(
            "PATCH",
            f"{resource}/deviceclasses/{ns}-gpu",
            {"spec": {"extendedResourceName": resource_name}},
            content_type="application/merge-patch+json",
        )
        kube.request(
            "POST",
            f"/api/v1/namespaces/{ns}/pods",
            {
                "metadata": {"name": "standalone-extended"},
                "spec": {
                    "schedulerName": "kube-extender-standalone",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": {resource_name: "1"}},
                        }
                    ],
                },
            },
        )
        kube.created_pods.append("standalone-extended")
        assert kube.wait_bound("standalone-extended", timeout=60) == node
        status = kube.pod("standalone-extended")["status"]["extendedResourceClaimStatus"]
        created = admin.get(f"{claim_path}/{status['resourceClaimName']}")
        assert [r["device"] for r in created["status"]["allocation"]["devices"]["results"]] == [
            "gpu-1"
        ]
        assert "forbidden" not in run.log(400).lower(), run.log()
        extender = as_sa(control_plane, admin, "kube-extender")
        assert extender.get(f"{claim_path}/gpu")
        assert refused(lambda: extender.request("PUT", f"{claim_path}/gpu/status", claim)) == 403
    finally:
        for path in cluster_paths:
            try:
                admin.request("DELETE", path)
            except ApiError:
                pass


def test_permissions_outside_the_manifests_are_refused(
    kube, control_plane, admin, deployed
) -> None:
    extender = as_sa(control_plane, admin, "kube-extender")
    node = f"{kube.namespace}-node1"
    kube.create_node(node)
    pod = kube.create_pod("parked", schedulerName="nobody")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "parked", "namespace": kube.namespace, "uid": pod["metadata"]["uid"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    path = f"/api/v1/namespaces/{kube.namespace}/pods/parked/binding"
    # The bind verb is off by default: the extender may read pods but not bind them ...
    assert extender.get(f"/api/v1/namespaces/{kube.namespace}/pods/parked")
    assert refused(lambda: extender.request("POST", path, binding)) == 403
    # ... nor read secrets, write pods or events, or take leases.
    assert refused(lambda: extender.request("GET", "/api/v1/secrets")) == 403
    assert (
        refused(
            lambda: extender.request("DELETE", f"/api/v1/namespaces/{kube.namespace}/pods/parked")
        )
        == 403
    )
    assert (
        refused(
            lambda: extender.request(
                "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
            )
        )
        == 403
    )
    standalone = as_sa(control_plane, admin, "kube-extender-standalone")
    assert refused(lambda: standalone.request("GET", "/api/v1/secrets")) == 403
    assert refused(lambda: standalone.request("GET", "/api/v1/configmaps")) == 403
    assert (
        refused(
            lambda: standalone.request("POST", f"/api/v1/namespaces/{kube.namespace}/pods", pod)
        )
        == 403
    )
    assert kube.node_of("parked") is None


def test_bind_rbac_grants_exactly_pods_binding(kube, control_plane, admin, deployed) -> None:
    objects = documents((DEPLOY / "bind-rbac.yaml").read_text())
    apply(admin, objects)
    try:
        extender = as_sa(control_plane, admin, "kube-extender")
        node = f"{kube.namespace}-node1"
        kube.create_node(node)
        pod = kube.create_pod("to-bind", schedulerName="nobody")
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": "to-bind",
                "namespace": kube.namespace,
                "uid": pod["metadata"]["uid"],
            },
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        extender.request(
            "POST", f"/api/v1/namespaces/{kube.namespace}/pods/to-bind/binding", binding
        )
        assert kube.node_of("to-bind") == node
        assert refused(lambda: extender.request("GET", "/api/v1/secrets")) == 403
    finally:
        for obj in reversed(objects):
            resource = (
                "clusterrolebindings" if obj["kind"] == "ClusterRoleBinding" else "clusterroles"
            )
            admin.request(
                "DELETE", f"/apis/rbac.authorization.k8s.io/v1/{resource}/{obj['metadata']['name']}"
            )


def gang_patch() -> list[dict]:
    """The JSON patch deploy/standalone-gangs.yaml tells to apply to the Deployment."""
    text = (DEPLOY / "standalone-gangs.yaml").read_text()
    comment = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    return json.loads(comment.split("--type=json -p \\ '", 1)[1].split("'", 1)[0])


def test_standalone_schedules_a_gang_with_the_manifests_and_standalone_gangs(
    gang_control_plane, gang_kube, processes
) -> None:
    """Gang scheduling under the standalone's ServiceAccount: deploy/standalone.yaml alone
    cannot read PodGroups; with deploy/standalone-gangs.yaml `kube-extender run --feature-gates
    ...` binds a gang and writes its PodGroup's condition, and may do nothing else to them."""
    admin = KubeClient(api_client(str(gang_control_plane.kubeconfig)))
    apply(admin, kustomize(DEPLOY))
    apply(admin, documents((DEPLOY / "standalone.yaml").read_text()))
    sa = as_sa(gang_control_plane, admin, "kube-extender-standalone")
    podgroups = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{gang_kube.namespace}/podgroups"
    assert refused(lambda: sa.request("GET", podgroups)) == 403
    apply(admin, documents((DEPLOY / "standalone-gangs.yaml").read_text()))
    # The Deployment takes the documented patch: the flag goes to the end of its command.
    deployment = "/apis/apps/v1/namespaces/kube-extender/deployments/kube-extender-standalone"
    patched = admin.request("PATCH", deployment, gang_patch(), None, "application/json-patch+json")
    command = patched["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[-1] == f"--feature-gates={feature_gates_value(GANG_GATES)}", command

    config = yaml.safe_load(
        config_map(DEPLOY / "standalone.yaml", "kube-extender-standalone-config")
    )
    config["leaderElection"].update(leaseDuration="4s", renewDeadline="3s", retryPeriod="1s")
    run = Standalone(
        gang_control_plane,
        config,
        name="standalone-sa-gangs",
        kubeconfig=sa_kubeconfig(gang_control_plane, admin, "kube-extender-standalone"),
        feature_gates=GANG_GATES,
    )
    processes.append(run)
    run.wait_ready(timeout=60)
    node = f"{gang_kube.namespace}-node1"
    gang_kube.create_node(node)
    gang_kube.scheduler_name = "kube-extender-standalone"
    gang_kube.create_pod_group("pair", min_count=2)
    for name in ("pair-0", "pair-1"):
        gang_kube.create_pod(name, cpu="1", pod_group="pair")
    for name in ("pair-0", "pair-1"):
        assert gang_kube.wait_bound(name, timeout=60) == node
    assert gang_kube.wait_pod_group("pair", "True")["reason"] == "Scheduled"
    assert "forbidden" not in run.log(400).lower(), run.log()

    group = gang_kube.pod_group("pair")
    assert refused(lambda: sa.request("PUT", f"{podgroups}/pair/status", group)) == 403
    assert refused(lambda: sa.request("PUT", f"{podgroups}/pair", group)) == 403
    assert refused(lambda: sa.request("DELETE", f"{podgroups}/pair")) == 403
    workloads = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{gang_kube.namespace}/workloads"
    assert refused(lambda: sa.request("GET", workloads)) == 403
