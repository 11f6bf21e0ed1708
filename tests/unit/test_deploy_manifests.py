"""deploy/: the kind manifests, checked by parsing them (the CI has no Docker engine for kind).

Every YAML document under deploy/ is loaded with PyYAML; the objects that `kubectl apply -k
deploy/` creates are checked for kind/apiVersion, for agreeing with each other (names, ports,
mounts, ServiceAccounts) and with the code (the ConfigMaps parse with ``extender.config``, the
extender's probes hit routes the Flask app has), and the RBAC for least privilege.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NAMESPACE = "kube-extender"
EXTENDER = "kube-extender"
SCHEDULER = "kube-extender-scheduler"
SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler:v1.36.3"
RBAC = "rbac.authorization.k8s.io/v1"

# (kind, namespace or None, name) -> apiVersion: every object `kubectl apply -k deploy/` creates.
EXPECTED = {
    ("Namespace", None, NAMESPACE): "v1",
    ("ServiceAccount", NAMESPACE, EXTENDER): "v1",
    ("ClusterRole", None, EXTENDER): RBAC,
    ("ClusterRoleBinding", None, EXTENDER): RBAC,
    ("ClusterRole", None, f"{EXTENDER}-volumes"): RBAC,
    ("ClusterRoleBinding", None, f"{EXTENDER}-volumes"): RBAC,
    ("ClusterRole", None, f"{EXTENDER}-dra"): RBAC,
    ("ClusterRoleBinding", None, f"{EXTENDER}-dra"): RBAC,
    ("ServiceAccount", NAMESPACE, SCHEDULER): "v1",
    ("ClusterRoleBinding", None, f"{SCHEDULER}-as-kube-scheduler"): RBAC,
    ("ClusterRoleBinding", None, f"{SCHEDULER}-as-volume-scheduler"): RBAC,
    (
        "RoleBinding",
        "kube-system",
        f"{SCHEDULER}-extension-apiserver-authentication-reader",
    ): RBAC,
    ("Role", "kube-system", f"{SCHEDULER}-leader-election"): RBAC,
    ("RoleBinding", "kube-system", f"{SCHEDULER}-leader-election"): RBAC,
    ("ConfigMap", NAMESPACE, "kube-extender-config"): "v1",
    ("Deployment", NAMESPACE, EXTENDER): "apps/v1",
    ("Service", NAMESPACE, EXTENDER): "v1",
    ("ConfigMap", NAMESPACE, "kube-extender-scheduler-config"): "v1",
    ("Deployment", NAMESPACE, SCHEDULER): "apps/v1",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def kustomization() -> dict:
    (doc,) = documents(DEPLOY / "kustomization.yaml")
    return doc


def applied() -> list[dict]:
    """The objects of the kustomization's resources, in order."""
    return [obj for name in kustomization()["resources"] for obj in documents(DEPLOY / name)]


def objects() -> dict[tuple[str, str | None, str], dict]:
    found: dict[tuple[str, str | None, str], dict] = {}
    for obj in applied():
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace"), meta["name"])
        assert key not in found, f"{key} defined twice"
        found[key] = obj
    return found


def get(kind: str, name: str, namespace: str | None = NAMESPACE) -> dict:
    if kind in CLUSTER_SCOPED:
        namespace = None
    return objects()[(kind, namespace, name)]


def container(deployment: dict) -> dict:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return only


def config_text(configmap: dict, deployment: dict, path: str) -> str:
    """The ConfigMap key that ``path`` reads inside the deployment's container."""
    spec = deployment["spec"]["template"]["spec"]
    for mount in container(deployment)["volumeMounts"]:
        prefix = mount["mountPath"].rstrip("/") + "/"
        if not path.startswith(prefix):
            continue
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["configMap"]["name"] == configmap["metadata"]["name"]
        key = path.removeprefix(prefix)
        assert key in configmap["data"], f"{path}: no key {key!r} in the ConfigMap"
        return configmap["data"][key]
    raise AssertionError(f"{path} is not under any volume mount")


def flag(command: list[str], name: str) -> str:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in a container command."""
    for i, arg in enumerate(command):
        if arg == name:
            return command[i + 1]
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"{name} not in {command}")


# -- every document --------------------------------------------------------------------------


def test_every_yaml_document_in_deploy_parses() -> None:
    files = sorted(DEPLOY.glob("*.yaml"))
    assert {f.name for f in files} >= {
        "kustomization.yaml",
        "namespace.yaml",
        "rbac.yaml",
        "extender.yaml",
        "scheduler.yaml",
        "example-pod.yaml",
        "extender-config.yaml",
        "kind-config.yaml",
    }
    for path in files:
        docs = documents(path)
        assert docs, f"{path.name}: no document"
        for doc in docs:
            assert isinstance(doc, dict), f"{path.name}: a document is not a mapping"
            assert doc.get("apiVersion") and doc.get("kind"), f"{path.name}: apiVersion/kind"


def test_kustomization_lists_the_manifests_only() -> None:
    kust = kustomization()
    assert kust["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kust["kind"] == "Kustomization"
    assert kust["resources"] == [
        "namespace.yaml",
        "rbac.yaml",
        "rbac-volumes.yaml",
        "rbac-dra.yaml",
        "extender.yaml",
        "scheduler.yaml",
    ]
    # A kustomization namespace would move the kube-system RoleBindings into kube-extender.
    assert "namespace" not in kust


def test_applied_objects_kinds_and_api_versions() -> None:
    found = objects()
    assert set(found) == set(EXPECTED)
    for key, obj in found.items():
        assert obj["apiVersion"] == EXPECTED[key], key
        if key[0] not in CLUSTER_SCOPED:
            assert key[1], f"{key}: namespaced object without a namespace"
    # The namespace comes first, so a fresh apply creates it before its contents.
    assert applied()[0]["kind"] == "Namespace"


def test_example_pod_uses_the_second_scheduler() -> None:
    (pod,) = documents(DEPLOY / "example-pod.yaml")
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    assert pod["spec"]["schedulerName"] == SCHEDULER
    assert pod["spec"]["containers"]


def test_kind_config() -> None:
    (cluster,) = documents(DEPLOY / "kind-config.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("kind.x-k8s.io/v1alpha4", "Cluster")
    assert [n["role"] for n in cluster["nodes"]].count("worker") >= 2  # anti-affinity can spread


# -- RBAC ------------------------------------------------------------------------------------


def test_no_wildcards_anywhere_in_rbac() -> None:
    for obj in applied():
        for rule in obj.get("rules") or ():
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in (rule.get(field) or ()), (obj["metadata"]["name"], rule)


def test_extender_role_is_least_privilege() -> None:
    role = get("ClusterRole", EXTENDER)
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    read = {("", r, v) for r in ("nodes", "pods", "namespaces") for v in ("get", "list", "watch")}
    listers = {
        (group, resource, verb)
        for group, resource in (
            ("", "services"),
            ("", "replicationcontrollers"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("policy", "poddisruptionbudgets"),
        )
        for verb in ("list", "watch")
    }
    # No pods/binding: the bind verb is off by default (deploy/bind-rbac.yaml grants it).
    assert granted == read | listers
    assert not any(rule.get("resourceNames") for rule in role["rules"])
    assert "aggregationRule" not in role


def test_volumes_role_reads_exactly_what_the_volume_plugins_declare() -> None:
    from extender.framework.handle import reads_of
    from extender.plugins import plugin_class

    role = get("ClusterRole", f"{EXTENDER}-volumes")
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    kinds = {
        kind
        for name in ("VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits")
        for kind in reads_of(plugin_class(name))
        if kind.resource != "pods"
    }
    assert granted == {
        (kind.group, kind.resource, verb) for kind in kinds for verb in ("get", "list", "watch")
    }
    subjects_are(get("ClusterRoleBinding", f"{EXTENDER}-volumes"), EXTENDER)


def test_dra_role_reads_exactly_what_dynamic_resources_declares() -> None:
    from extender.framework.handle import reads_of
    from extender.plugins import plugin_class

    granted = {
        (group, resource, verb)
        for rule in get("ClusterRole", f"{EXTENDER}-dra")["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    kinds = reads_of(plugin_class("DynamicResources"))
    assert granted == {
        (kind.group, kind.resource, verb) for kind in kinds for verb in ("get", "list", "watch")
    }
    subjects_are(get("ClusterRoleBinding", f"{EXTENDER}-dra"), EXTENDER)


def subjects_are(binding: dict, service_account: str) -> None:
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": service_account, "namespace": NAMESPACE}
    ]


def test_bindings() -> None:
    extender = get("ClusterRoleBinding", EXTENDER)
    assert extender["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": EXTENDER,
    }
    subjects_are(extender, EXTENDER)

    cluster_roles = set()
    for (kind, _, _), obj in objects().items():
        if kind == "ClusterRoleBinding" and obj["subjects"][0]["name"] == SCHEDULER:
            subjects_are(obj, SCHEDULER)
            assert obj["roleRef"]["kind"] == "ClusterRole"
            cluster_roles.add(obj["roleRef"]["name"])
    assert cluster_roles == {"system:kube-scheduler", "system:volume-scheduler"}

    reader = get(
        "RoleBinding", f"{SCHEDULER}-extension-apiserver-authentication-reader", "kube-system"
    )
    subjects_are(reader, SCHEDULER)
    assert reader["roleRef"]["kind"] == "Role"
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"

    election = get("RoleBinding", f"{SCHEDULER}-leader-election", "kube-system")
    subjects_are(election, SCHEDULER)
    assert election["roleRef"]["kind"] == "Role"
    assert election["roleRef"]["name"] == f"{SCHEDULER}-leader-election"


def test_leader_election_role_covers_only_the_scheduler_lease() -> None:
    role = get("Role", f"{SCHEDULER}-leader-election", "kube-system")
    (rule,) = role["rules"]
    assert rule["apiGroups"] == ["coordination.k8s.io"]
    assert rule["resources"] == ["leases"]
    assert rule["resourceNames"] == [scheduler_config()["leaderElection"]["resourceName"]]
    assert set(rule["verbs"]) <= {"get", "update"}


def test_deployments_use_their_service_accounts() -> None:
    for name in (EXTENDER, SCHEDULER):
        spec = get("Deployment", name)["spec"]["template"]["spec"]
        assert spec["serviceAccountName"] == name
        assert ("ServiceAccount", NAMESPACE, name) in objects()


# -- the extender ----------------------------------------------------------------------------


def test_extender_configmap_is_deploy_extender_config_yaml() -> None:
    configmap = get("ConfigMap", "kube-extender-config")
    source = (DEPLOY / "extender-config.yaml").read_text(encoding="utf-8")
    assert configmap["data"]["config.yaml"] == source


def test_extender_deployment() -> None:
    deployment = get("Deployment", EXTENDER)
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    main = container(deployment)
    assert main["image"] == "kube-extender:dev"
    assert main["command"] == [
        "kube-extender",
        "serve",
        "--config",
        "/etc/kube-extender/config.yaml",
        "--bind",
        "0.0.0.0:8888",
        "--workers",
        "1",
        "--threads",
        "8",
    ]
    assert config_text(
        get("ConfigMap", "kube-extender-config"), deployment, "/etc/kube-extender/config.yaml"
    )
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(main["resources"][kind])

    pod_security = spec["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    # gunicorn needs a writable temp dir for its worker heartbeat files.
    assert any(m["mountPath"] == "/tmp" for m in main["volumeMounts"])

    (term,) = spec["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()


def test_dockerfile_user_matches_run_as_user() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    lines = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert ["FROM", "python:3.11-slim"] in lines
    (user,) = [line[1] for line in lines if line[0] == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and uid != "0"  # runAsNonRoot can only verify a numeric user
    pod_security = get("Deployment", EXTENDER)["spec"]["template"]["spec"]["securityContext"]
    assert pod_security.get("runAsUser", int(uid)) == int(uid)
    assert ["ENTRYPOINT", '["kube-extender"]'] in lines


def container_port(main: dict, port: int | str) -> int:
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in main["ports"] if p.get("name") == port]
    return number


def test_extender_service_reaches_the_bind_port() -> None:
    service = get("Service", EXTENDER)
    deployment = get("Deployment", EXTENDER)
    main = container(deployment)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == 8888
    bind_port = int(flag(main["command"], "--bind").rpartition(":")[2])
    assert container_port(main, port["targetPort"]) == bind_port


class _StubService:
    """What ``create_app`` needs of an ExtenderService to register its routes."""

    def ready(self) -> bool:
        return True

    def filter(self, args: dict) -> dict:
        raise NotImplementedError

    prioritize = preempt = bind = filter


def test_extender_probes_point_at_existing_routes() -> None:
    app_module = pytest.importorskip("extender.webhook.app")
    main = container(get("Deployment", EXTENDER))
    bind_port = int(flag(main["command"], "--bind").rpartition(":")[2])
    app = app_module.create_app(_StubService(), url_prefix="/")
    client = app.test_client()
    for probe in ("readinessProbe", "livenessProbe"):
        http = main[probe]["httpGet"]
        assert http.get("scheme", "HTTP") == "HTTP"
        assert container_port(main, http["port"]) == bind_port
        response = client.get(http["path"])
        assert response.status_code == 200, (probe, http["path"], response.get_data())
    assert main["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert main["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_extender_config_parses_and_serves_what_the_scheduler_calls() -> None:
    config_module = pytest.importorskip("extender.config")
    text = get("ConfigMap", "kube-extender-config")["data"]["config.yaml"]
    config = config_module.loads(text, "deploy/extender.yaml kube-extender-config")
    names = [p.scheduler_name for p in config.profiles]
    assert config.extender.profile in names
    # The scheduler posts to <urlPrefix>/<verb>; the extender serves <its urlPrefix>/<verb>.
    (entry,) = scheduler_config()["extenders"]
    sent = urlsplit(entry["urlPrefix"]).path.strip("/")
    assert sent == config.extender.url_prefix.strip("/")


# -- the second scheduler --------------------------------------------------------------------


def scheduler_config() -> dict:
    deployment = get("Deployment", SCHEDULER)
    path = flag(container(deployment)["command"], "--config")
    text = config_text(get("ConfigMap", "kube-extender-scheduler-config"), deployment, path)
    return yaml.safe_load(text)


def test_scheduler_configuration_document() -> None:
    config = scheduler_config()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == [SCHEDULER]
    assert config["leaderElection"]["leaderElect"] is True
    assert config["leaderElection"]["resourceName"] == SCHEDULER
    assert config["leaderElection"].get("resourceNamespace", "kube-system") == "kube-system"
    (entry,) = config["extenders"]
    assert entry == {
        "urlPrefix": "http://kube-extender.kube-extender.svc:8888",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt",
        "weight": 5,
        "nodeCacheCapable": True,
        "ignorable": False,
        "httpTimeout": "5s",
    }


def test_scheduler_config_loads_with_extender_config() -> None:
    config_module = pytest.importorskip("extender.config")
    text = get("ConfigMap", "kube-extender-scheduler-config")["data"]["config.yaml"]
    config = config_module.loads(text, "deploy/scheduler.yaml kube-extender-scheduler-config")
    assert [p.scheduler_name for p in config.profiles] == [SCHEDULER]
    assert config.leader_election["resourceName"] == SCHEDULER
    assert config.leader_election["resourceNamespace"] == "kube-system"
    (entry,) = config.extenders
    assert entry["nodeCacheCapable"] is True and entry["ignorable"] is False
    assert entry["httpTimeout"] == 5.0
    assert not entry["bindVerb"]  # the scheduler's DefaultBinder binds


def test_scheduler_url_names_the_extender_service() -> None:
    (entry,) = scheduler_config()["extenders"]
    url = urlsplit(entry["urlPrefix"])
    assert url.scheme == "http"
    service = get("Service", EXTENDER)
    assert url.hostname == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert url.port in [p["port"] for p in service["spec"]["ports"]]


def test_scheduler_deployment() -> None:
    deployment = get("Deployment", SCHEDULER)
    main = container(deployment)
    assert main["image"] == SCHEDULER_IMAGE
    assert main["command"][0].endswith("kube-scheduler")
    flag(main["command"], "--config")
    for probe in ("readinessProbe", "livenessProbe"):
        http = main[probe]["httpGet"]
        assert (http["port"], http["scheme"]) == (10259, "HTTPS")
        # kube-scheduler serves these unauthenticated (--authorization-always-allow-paths).
        assert http["path"] in ("/healthz", "/readyz", "/livez")
    pod_security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(main["resources"][kind])


def test_example_pod_scheduler_is_a_profile() -> None:
    (pod,) = documents(DEPLOY / "example-pod.yaml")
    names = [p["schedulerName"] for p in scheduler_config()["profiles"]]
    assert pod["spec"]["schedulerName"] in names


def test_stub_matches_service_verbs() -> None:
    """The stub above must offer every verb ``create_app`` routes to."""
    service = pytest.importorskip("extender.webhook.service")
    for verb in ("filter", "prioritize", "preempt", "bind", "ready"):
        assert hasattr(service.ExtenderService, verb)
        assert callable(getattr(_StubService(), verb))


# -- Coscheduling (scheduler-plugins' PodGroup) ---------------------------------------------


def test_podgroup_crd_serves_the_kind_coscheduling_reads() -> None:
    from extender.plugins.coscheduling.podgroup import PODGROUPS

    (crd,) = documents(DEPLOY / "scheduling.x-k8s.io_podgroups.yaml")
    assert (crd["apiVersion"], crd["kind"]) == (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
    )
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{PODGROUPS.resource}.{PODGROUPS.group}"
    assert spec["group"] == PODGROUPS.group
    assert spec["names"]["plural"] == PODGROUPS.resource
    assert spec["names"]["kind"] == "PodGroup"
    assert spec["scope"] == ("Namespaced" if PODGROUPS.namespaced else "Cluster")
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (
        PODGROUPS.version,
        True,
        True,
    )
    assert version["subresources"] == {"status": {}}
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    fields = schema["spec"]["properties"]
    assert set(fields) == {"minMember", "minResources", "scheduleTimeoutSeconds"}
    assert fields["minMember"]["minimum"] == 1
    assert set(schema["status"]["properties"]) == {
        "phase",
        "occupiedBy",
        "running",
        "succeeded",
        "failed",
        "scheduleStartTime",
    }


def test_coscheduling_role_reads_exactly_the_podgroups() -> None:
    from extender.framework.handle import reads_of
    from extender.plugins import plugin_class

    (role, binding) = documents(DEPLOY / "rbac-coscheduling.yaml")
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    # Pods are read too, with deploy/standalone.yaml's grant; nothing is written.
    kinds = [k for k in reads_of(plugin_class("Coscheduling")) if k.resource != "pods"]
    assert granted == {
        (kind.group, kind.resource, verb) for kind in kinds for verb in ("get", "list", "watch")
    }
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    subjects_are(binding, "kube-extender-standalone")


def test_helm_chart_ships_the_same_podgroup_crd() -> None:
    chart_copy = REPO / "deploy/helm/kube-extender/files/scheduling.x-k8s.io_podgroups.yaml"
    assert chart_copy.read_text() == (DEPLOY / "scheduling.x-k8s.io_podgroups.yaml").read_text()


def test_standalone_gangs_grants_exactly_podgroups_read_and_status_patch() -> None:
    """deploy/standalone-gangs.yaml: what `kube-extender run --feature-gates
    GenericWorkload=true,GangScheduling=true` adds to deploy/standalone.yaml's RBAC: it watches
    PodGroups and patches their status, for the standalone ServiceAccount, nothing else."""
    role, binding = documents(DEPLOY / "standalone-gangs.yaml")
    assert (role["kind"], binding["kind"]) == ("ClusterRole", "ClusterRoleBinding")
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {
        ("scheduling.k8s.io", "podgroups", "get"),
        ("scheduling.k8s.io", "podgroups", "list"),
        ("scheduling.k8s.io", "podgroups", "watch"),
        ("scheduling.k8s.io", "podgroups/status", "patch"),
    }
    assert not any(rule.get("resourceNames") for rule in role["rules"])
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (standalone_sa,) = [
        d for d in documents(DEPLOY / "standalone.yaml") if d["kind"] == "ServiceAccount"
    ]
    subjects_are(binding, standalone_sa["metadata"]["name"])
    assert binding["subjects"][0]["namespace"] == standalone_sa["metadata"]["namespace"]
    # Not in the kustomization: gang scheduling is alpha and off by default.
    assert "standalone-gangs.yaml" not in kustomization()["resources"]
