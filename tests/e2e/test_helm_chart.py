"""deploy/helm/kube-extender: rendered with the helm CLI built by hack/build-helm.sh (from
helm.sh/helm/v4, pinned in hack/helm/go.mod, cached in ~/.cache/kube-extender/bin), checked,
and applied server-side to the real apiserver as deploy/ is (extender.controlplane.apply).
The CRD kinds (ServiceMonitor, cert-manager Certificate) are checked in the rendering and
applied only after a minimal CRD for each is installed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from extender.config import load
from extender.controlplane import binary
from extender.controlplane.apply import apply, documents
from extender.kube import ApiError, KubeClient, api_client

CHART = Path(__file__).resolve().parents[2] / "deploy/helm/kube-extender"
NS = "kx-helm"
TLS = ["tls.enabled=true", "tls.secretName=kx-tls", "tls.clientSecretName=kx-client"]


def render(*values: str, release: str = "kx") -> list[dict]:
    args = [str(binary("helm")), "template", release, str(CHART), "--namespace", NS]
    for value in values:
        args += ["--set", value]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode:
        raise AssertionError(out.stderr)
    return documents(out.stdout)


def by_kind(objects: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for obj in objects:
        found.setdefault(obj["kind"], []).append(obj)
    return found


def get(objects: list[dict], kind: str, name: str) -> dict:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def rules(role: dict) -> set[tuple[str, str, str]]:
    return {
        (g, r, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def extender_config(objects: list[dict], tmp_path: Path):
    text = get(objects, "ConfigMap", "kx-config")["data"]["config.yaml"]
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load(str(path))


def test_default_values(tmp_path) -> None:
    objects = render()
    kinds = {k: len(v) for k, v in by_kind(objects).items()}
    assert kinds == {
        "ServiceAccount": 2,
        "ClusterRole": 1,
        "ClusterRoleBinding": 3,
        "Role": 1,
        "RoleBinding": 2,
        "ConfigMap": 2,
        "Deployment": 2,
        "Service": 1,
        "PodDisruptionBudget": 1,
        "NetworkPolicy": 1,
    }
    granted = rules(get(objects, "ClusterRole", "kx"))
    assert not any(r == "pods/binding" for _, r, _ in granted), "bind is off by default"
    assert all(v in ("get", "list", "watch") for _, _, v in granted)
    config = extender_config(objects, tmp_path)
    assert config.extender.bind_enabled is False
    scheduler = get(objects, "ConfigMap", "kx-scheduler-config")["data"]["config.yaml"]
    assert "bindVerb" not in scheduler and "http://kx.kx-helm.svc:8888" in scheduler


def test_network_policy_admits_only_the_scheduler_pods() -> None:
    objects = render("standalone.enabled=true")
    (policy,) = by_kind(objects)["NetworkPolicy"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "kube-extender"
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8888, "protocol": "TCP"}]
    (peer,) = rule["from"]
    assert set(peer) == {"podSelector"}  # no namespaceSelector/ipBlock: this namespace only
    names = {e["key"]: e["values"] for e in peer["podSelector"]["matchExpressions"]}
    assert names == {
        "app.kubernetes.io/instance": ["kx"],
        "app.kubernetes.io/name": ["kube-extender-scheduler", "kube-extender-standalone"],
    }
    for name in ("kx-scheduler", "kx-standalone"):
        labels = get(objects, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "kx"
        assert labels["app.kubernetes.io/name"] in names["app.kubernetes.io/name"]


def test_bind_needs_tls() -> None:
    with pytest.raises(AssertionError, match="bind.enabled needs tls.enabled"):
        render("bind.enabled=true")


def test_bind_and_tls(tmp_path) -> None:
    objects = render("bind.enabled=true", *TLS)
    granted = rules(get(objects, "ClusterRole", "kx"))
    assert ("", "pods/binding", "create") in granted
    config = extender_config(objects, tmp_path)
    assert config.extender.bind_enabled is True
    assert config.extender.allowed_clients == ["kube-extender-scheduler"]
    command = get(objects, "Deployment", "kx")["spec"]["template"]["spec"]["containers"][0][
        "command"
    ]
    assert "--ca-certs" in command and "--certfile" in command
    scheduler = get(objects, "ConfigMap", "kx-scheduler-config")["data"]["config.yaml"]
    assert "bindVerb: bind" in scheduler and "https://kx.kx-helm.svc:8888" in scheduler
    assert "certFile: /etc/kube-extender-scheduler/tls/tls.crt" in scheduler


def test_standalone(tmp_path) -> None:
    objects = render("standalone.enabled=true", "scheduler.enabled=false")
    assert "kx-scheduler" not in {o["metadata"]["name"] for o in objects}
    granted = rules(get(objects, "ClusterRole", "kx-standalone"))
    assert ("", "pods/binding", "create") in granted
    assert ("events.k8s.io", "events", "create") in granted
    assert not any(r in ("secrets", "configmaps") for _, r, _ in granted)
    text = get(objects, "ConfigMap", "kx-standalone-config")["data"]["config.yaml"]
    path = tmp_path / "standalone.yaml"
    path.write_text(text)
    assert load(str(path)).profiles[0].scheduler_name == "kube-extender-standalone"


def test_coscheduling(tmp_path) -> None:
    objects = render("standalone.enabled=true", "coscheduling.enabled=true")
    (crd,) = by_kind(objects)["CustomResourceDefinition"]
    deployed = documents((CHART.parents[1] / "scheduling.x-k8s.io_podgroups.yaml").read_text())
    assert crd == deployed[0]
    assert rules(get(objects, "ClusterRole", "kx-coscheduling")) == {
        ("scheduling.x-k8s.io", "podgroups", verb) for verb in ("get", "list", "watch")
    }
    binding = get(objects, "ClusterRoleBinding", "kx-coscheduling")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kx-standalone", "namespace": NS}
    ]
    text = get(objects, "ConfigMap", "kx-standalone-config")["data"]["config.yaml"]
    path = tmp_path / "standalone.yaml"
    path.write_text(text)
    profile = load(str(path)).profiles[0]
    assert [p.name for p in profile.plugins["queueSort"]] == ["Coscheduling"]
    assert [p.name for p in profile.plugins["permit"]] == ["Coscheduling"]
    without_crd = render(
        "standalone.enabled=true", "coscheduling.enabled=true", "coscheduling.installCRD=false"
    )
    assert "CustomResourceDefinition" not in by_kind(without_crd)
    with pytest.raises(AssertionError, match="coscheduling.enabled needs standalone.enabled"):
        render("coscheduling.enabled=true")
    assert "kx-coscheduling" not in {
        o["metadata"]["name"] for o in render("standalone.enabled=true")
    }


def test_standalone_gang_scheduling() -> None:
    """standalone.gangScheduling.enabled: the gates on the container's command and a separate
    ClusterRole with exactly deploy/standalone-gangs.yaml's rules; nothing without it."""
    plain = render("standalone.enabled=true")
    assert not [o for o in plain if o["metadata"]["name"] == "kx-standalone-gangs"]
    objects = render("standalone.enabled=true", "standalone.gangScheduling.enabled=true")
    (container,) = get(objects, "Deployment", "kx-standalone")["spec"]["template"]["spec"][
        "containers"
    ]
    (plain_container,) = get(plain, "Deployment", "kx-standalone")["spec"]["template"]["spec"][
        "containers"
    ]
    gates = ["--feature-gates", "GenericWorkload=true,GangScheduling=true"]
    assert container["command"] == plain_container["command"] + gates
    deploy = CHART.parents[1] / "standalone-gangs.yaml"
    role = get(objects, "ClusterRole", "kx-standalone-gangs")
    assert rules(role) == rules(documents(deploy.read_text())[0])
    binding = get(objects, "ClusterRoleBinding", "kx-standalone-gangs")
    assert binding["roleRef"]["name"] == "kx-standalone-gangs"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kx-standalone", "namespace": NS}
    ]
    # The standalone's own role is unchanged.
    assert rules(get(objects, "ClusterRole", "kx-standalone")) == rules(
        get(plain, "ClusterRole", "kx-standalone")
    )
    more = "GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=true"
    objects = render(
        "standalone.enabled=true",
        "standalone.gangScheduling.enabled=true",
        # --set splits lists on commas: escape them.
        "standalone.gangScheduling.featureGates=" + more.replace(",", "\\,"),
    )
    deployment = get(objects, "Deployment", "kx-standalone")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"][-2:] == [
        "--feature-gates",
        more,
    ]
    # Without the standalone scheduler, the switch adds nothing.
    alone = render("standalone.gangScheduling.enabled=true")
    assert not [o for o in alone if "standalone" in o["metadata"]["name"]]


def test_cert_manager_and_service_monitor() -> None:
    objects = render(
        "tls.enabled=true", "tls.certManager.enabled=true", "serviceMonitor.enabled=true"
    )
    found = by_kind(objects)
    assert {c["metadata"]["name"] for c in found["Certificate"]} == {
        "kx-tls",
        "kx-scheduler-client",
    }
    client = get(objects, "Certificate", "kx-scheduler-client")
    assert client["spec"]["commonName"] == "kube-extender-scheduler"
    assert len(found["ServiceMonitor"]) == 1


# -- applied to the real apiserver ----------------------------------------------------------

CRDS = {
    "ServiceMonitor": ("monitoring.coreos.com", "servicemonitors", "servicemonitor"),
    "Certificate": ("cert-manager.io", "certificates", "certificate"),
}


def minimal_crd(kind: str) -> dict:
    group, plural, singular = CRDS[kind]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": singular},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def admin(control_plane):
    client = KubeClient(api_client(str(control_plane.kubeconfig)))
    apply(client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}])
    return client


@pytest.mark.parametrize(
    "values",
    [
        [],
        ["bind.enabled=true", *TLS],
        ["standalone.enabled=true"],
        ["tls.enabled=true", "tls.certManager.enabled=true", "serviceMonitor.enabled=true"],
        ["standalone.enabled=true", "coscheduling.enabled=true"],
        ["standalone.enabled=true", "standalone.gangScheduling.enabled=true"],
    ],
    ids=[
        "defaults",
        "bind-tls",
        "standalone",
        "cert-manager-servicemonitor",
        "coscheduling",
        "standalone-gangs",
    ],
)
def test_rendered_chart_applies_server_side(admin, values) -> None:
    objects = render(*values)
    crd_kinds = sorted({o["kind"] for o in objects} & set(CRDS))
    if crd_kinds:
        apply(admin, [minimal_crd(kind) for kind in crd_kinds])
        for kind in crd_kinds:  # wait until the new kinds are served
            group, plural, _ = CRDS[kind]
            for _ in range(50):
                try:
                    admin.request("GET", f"/apis/{group}/v1/namespaces/{NS}/{plural}")
                    break
                except ApiError:
                    time.sleep(0.2)
    stored = apply(admin, objects)
    assert [(o["kind"], o["metadata"]["name"]) for o in stored] == [
        (o["kind"], o["metadata"]["name"]) for o in objects
    ]
