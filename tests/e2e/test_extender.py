"""The real kube-scheduler calls our extender (under gunicorn) against a real apiserver."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from extender.controlplane import free_port
from extender.controlplane.certs import generate, issue_serving_cert
from extender.scenario.kube import Kube, ScenarioError

from .harness import Extender, scheduler_config, start_binding_extender, wait_until

ALLOWED = "e2e.kube-extender.io/allowed"
REPO = Path(__file__).resolve().parents[2]

# The extender's own profile: a filter kube-scheduler does not have (NodeAffinity with an
# addedAffinity on a label) and the seed's NodeNumber as the only score.
EXTENDER_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: e2e-extender
    plugins:
      multiPoint:
        disabled: [{{name: "*"}}]
      queueSort: {{enabled: [{{name: PrioritySort}}]}}
      preFilter: {{enabled: [{{name: NodeAffinity}}]}}
      filter: {{enabled: [{{name: NodeAffinity}}]}}
      preScore: {{enabled: [{{name: NodeNumber}}]}}
      score: {{enabled: [{{name: NodeNumber, weight: 1}}]}}
      bind: {{enabled: [{{name: DefaultBinder}}]}}
    pluginConfig:
      - name: NodeAffinity
        args:
          addedAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions:
                    - {{key: {ALLOWED}, operator: In, values: ["yes"]}}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: e2e-extender
"""


def make_nodes(kube: Kube, allowed: set[int], count: int = 4, cpu: str = "4") -> list[str]:
    names = []
    for i in range(1, count + 1):
        name = f"{kube.namespace}-node{i}"
        labels = {ALLOWED: "yes"} if i in allowed else {}
        kube.create_node(name, cpu=cpu, memory="8Gi", labels=labels)
        names.append(name)
    return names


@pytest.fixture
def extender(control_plane, processes):
    ext = Extender(control_plane, EXTENDER_CONFIG)
    processes.append(ext)
    ext.wait_ready()
    return ext


@pytest.mark.parametrize("node_cache_capable", [False, True], ids=["full-nodes", "node-cache"])
def test_filter_and_prioritize(kube, extender, kube_scheduler, node_cache_capable):
    nodes = make_nodes(kube, allowed={3, 4})
    kube_scheduler(scheduler_config(extender, nodeCacheCapable=node_cache_capable))
    for digit in (3, 4, 1, 2):
        kube.create_pod(f"web-{digit}", cpu="100m")
    # NodeNumber scores the node ending in the pod's digit 100, the others 0: the in-tree
    # scores of these identical nodes cannot outweigh 10 x weight 5 x 10.
    assert kube.wait_bound("web-3") == nodes[2]
    assert kube.wait_bound("web-4") == nodes[3]
    for name in ("web-1", "web-2"):
        assert kube.wait_bound(name) in (nodes[2], nodes[3]), "landed where our filter refused"
    assert extender.metric("extender_requests_total", verb="filter", outcome="ok") >= 4
    assert extender.metric("extender_requests_total", verb="prioritize", outcome="ok") >= 4


def test_filter_reason_reaches_the_pod(kube, extender, kube_scheduler):
    make_nodes(kube, allowed=set(), count=2)
    kube_scheduler(scheduler_config(extender))
    kube.create_pod("nowhere-1")
    wait_until(lambda: "affinity" in kube.why_pending("nowhere-1"), 20, "FailedScheduling")
    message = kube.why_pending("nowhere-1")
    # Our reasons reach the pod's condition; UnschedulableAndUnresolvable stops preemption.
    assert message == (
        "0/2 nodes are available: 2 node(s) didn't match scheduler-enforced node affinity. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    ), message


BIND_CONFIG = (
    EXTENDER_CONFIG.replace(
        "filter: {enabled: [{name: NodeAffinity}]}",
        "filter: {enabled: [{name: NodeAffinity}, {name: TaintToleration}]}",
    )
    + "allowedClients: [kube-scheduler-e2e]\nbind: {enabled: true}\n"
)


@pytest.fixture
def binding_extender(control_plane, processes):
    """bind enabled, mTLS; only the certificate named kube-scheduler-e2e may call."""
    return start_binding_extender(control_plane, processes, BIND_CONFIG, "extender-bind")


def test_bind_verb(kube, binding_extender, kube_scheduler):
    ext, tls, _, _ = binding_extender
    nodes = make_nodes(kube, allowed={1, 2}, count=2)
    kube_scheduler(scheduler_config(ext, bindVerb="bind", enableHTTPS=True, tlsConfig=tls))
    before = ext.metric("extender_requests_total", verb="bind", outcome="ok")
    kube.create_pod("bound-2")
    assert kube.wait_bound("bound-2") == nodes[1]
    assert ext.metric("extender_requests_total", verb="bind", outcome="ok") == before + 1


def test_bind_verb_reports_a_missing_pod(kube, binding_extender):
    ext, _, allowed, _ = binding_extender
    status, reply = ext.post(
        "bind",
        {"PodName": "ghost", "PodNamespace": kube.namespace, "PodUID": "x", "Node": "n"},
        context=allowed,
    )
    assert status == 200
    assert "ghost" in reply["Error"] and "does not exist" in reply["Error"]


def test_bind_is_refused_to_other_certificates_and_onto_tainted_nodes(kube, binding_extender):
    """A certificate of the same CA but not on the allow-list gets 403; an allowed caller
    still cannot bind a pod onto a node whose NoSchedule taint it does not tolerate."""
    ext, _, allowed, intruder = binding_extender
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    name = f"{kube.namespace}-tainted"
    kube.create_node(name, labels={ALLOWED: "yes"}, taints=[taint])
    pod = kube.create_pod("parked", schedulerName="nobody")
    body = {
        "PodName": "parked",
        "PodNamespace": kube.namespace,
        "PodUID": pod["metadata"]["uid"],
        "Node": name,
    }
    wait_until(lambda: ext.get("/readyz", allowed)[0] == 200, 10, "ready")
    status, reply = ext.post("bind", body, context=intruder)
    assert status == 403 and "allow-list" in reply["error"], reply
    status, reply = ext.post("bind", {**body, "PodUID": ""}, context=allowed)
    assert status == 400 and "PodUID" in reply["fields"], reply
    status, reply = wait_until(
        lambda: (
            (r := ext.post("bind", body, context=allowed))[1]["Error"]
            and "not found" not in r[1]["Error"]
            and r
        ),
        10,
        "the node in the extender's cache",
    )
    assert "untolerated taint" in reply["Error"], reply
    assert kube.node_of("parked") is None


def test_bind_is_off_by_default(kube, extender):
    status, reply = extender.post(
        "bind", {"PodName": "p", "PodNamespace": kube.namespace, "PodUID": "x", "Node": "n"}
    )
    assert status == 404 and "disabled" in reply["error"]


def test_preempt_verb_keeps_only_nodes_our_filter_allows(kube, extender, kube_scheduler):
    # Two full nodes; our filter allows only node2, so of the two possible victims only
    # the one on node2 may go, although kube-scheduler would pick either.
    kube.create_priority_class("e2e-low", 10)
    kube.create_priority_class("e2e-high", 1000)
    nodes = make_nodes(kube, allowed={2}, count=2, cpu="1")
    kube_scheduler(scheduler_config(extender, preemptVerb="preempt", filterVerb=""))
    kube.create_pod("low-1", cpu="800m", priority_class="e2e-low", nodeName=nodes[0])
    kube.create_pod("low-2", cpu="800m", priority_class="e2e-low", nodeName=nodes[1])
    kube.create_pod("high-1", cpu="800m", priority_class="e2e-high")
    kube.wait_gone("low-2", timeout=30)
    assert kube.wait_bound("high-1") == nodes[1]
    assert kube.node_of("low-1") == nodes[0], "a victim our preempt verb refused was evicted"
    assert extender.metric("extender_requests_total", verb="preempt", outcome="ok") >= 1


@pytest.mark.parametrize("ignorable", [True, False], ids=["ignorable", "non-ignorable"])
def test_extender_down(kube, kube_scheduler, ignorable):
    make_nodes(kube, allowed=set(), count=2)
    down = f"http://127.0.0.1:{free_port()}"
    kube_scheduler(scheduler_config(None, urlPrefix=down, ignorable=ignorable))
    kube.create_pod("lonely-1")
    if ignorable:
        assert kube.wait_bound("lonely-1", timeout=30)
        return
    with pytest.raises(ScenarioError):
        kube.wait_bound("lonely-1", timeout=5)
    message = kube.why_pending("lonely-1")
    assert "connection refused" in message or "failed" in message.lower(), message


def test_https_with_client_certificates(kube, control_plane, processes, kube_scheduler):
    pki = generate(control_plane.directory / "pki")
    cert, key = issue_serving_cert(pki, control_plane.directory / "pki", "extender", ["127.0.0.1"])
    ext = Extender(
        control_plane,
        EXTENDER_CONFIG,
        name="extender-https",
        scheme="https",
        extra=["--certfile", str(cert), "--keyfile", str(key), "--ca-certs", str(pki.ca_cert)],
    )
    processes.append(ext)
    import ssl

    ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
    ctx.load_cert_chain(str(cert), str(key))
    ext.wait_ready(context=ctx)
    nodes = make_nodes(kube, allowed={2}, count=2)
    kube_scheduler(
        scheduler_config(
            ext,
            enableHTTPS=True,
            tlsConfig={"caFile": str(pki.ca_cert), "certFile": str(cert), "keyFile": str(key)},
        )
    )
    kube.create_pod("secure-1")
    assert kube.wait_bound("secure-1") == nodes[1]


def test_https_with_the_documented_certificates(
    kube, control_plane, processes, kube_scheduler, tmp_path
):
    """docs/extender.md's openssl recipe, then its serve flags and tlsConfig with the real
    kube-scheduler (Go's TLS client: SANs, CA, client certificate) and the allow-list."""
    import ssl
    import subprocess

    from tests.webhook.test_tls_recipe import recipe_blocks

    recipe, _ = recipe_blocks()
    subprocess.run(["bash", "-euo", "pipefail", "-c", recipe], cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    tls = tmp_path / "tls"
    ext = Extender(
        control_plane,
        EXTENDER_CONFIG,
        name="extender-recipe",
        scheme="https",
        extra=[
            *("--certfile", str(tls / "server.crt"), "--keyfile", str(tls / "server.key")),
            *("--ca-certs", str(tls / "ca.crt"), "--allowed-client", "kube-extender-scheduler"),
        ],
    )
    processes.append(ext)
    ext.context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
    ext.context.load_cert_chain(str(tls / "client.crt"), str(tls / "client.key"))
    ext.wait_ready()
    nodes = make_nodes(kube, allowed={2}, count=2)
    kube_scheduler(
        scheduler_config(
            ext,
            enableHTTPS=True,
            tlsConfig={
                "serverName": "kube-extender.kube-extender.svc",
                "caFile": str(tls / "ca.crt"),
                "certFile": str(tls / "client.crt"),
                "keyFile": str(tls / "client.key"),
            },
        )
    )
    kube.create_pod("recipe-1")
    assert kube.wait_bound("recipe-1") == nodes[1]
    assert ext.metric("extender_requests_total", verb="filter", outcome="ok") >= 1
    assert ext.metric("extender_requests_total", outcome="forbidden") == 0


# The replay policies kube-scheduler can run too (the gpu-* ones name example plugins).
REPLAY_IN_TREE = ("default.yaml", "most-allocated.yaml", "requested-to-capacity.yaml")


@pytest.mark.parametrize(
    "path",
    [
        *sorted((REPO / "scheduler-config").glob("*.yaml")),
        *(REPO / "scheduler-config" / "replay" / name for name in REPLAY_IN_TREE),
    ],
    ids=lambda p: p.relative_to(REPO / "scheduler-config").as_posix(),
)
def test_scheduler_config_files_load_in_kube_scheduler(path, control_plane, kube_scheduler):
    """Every shipped file starts the real kube-scheduler (TLS paths pointed at real files)."""
    config = yaml.safe_load(path.read_text())
    pki = generate(control_plane.directory / "pki")
    cert, key = issue_serving_cert(pki, control_plane.directory / "pki", "client", ["127.0.0.1"])
    for entry in config.get("extenders") or ():
        tls = entry.get("tlsConfig")
        if tls:
            tls.update(caFile=str(pki.ca_cert), certFile=str(cert), keyFile=str(key))
    kube_scheduler(config)


def test_deploy_scheduler_config_loads_in_kube_scheduler(control_plane, kube_scheduler):
    """The second scheduler's ConfigMap in deploy/ is what kind would run: it must load too."""
    docs = yaml.safe_load_all((REPO / "deploy/scheduler.yaml").read_text())
    config_map = next(d for d in docs if d and d.get("kind") == "ConfigMap")
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    # Leader election would wait for the in-cluster lease RBAC; the decoding is what we check.
    config["leaderElection"] = {"leaderElect": False}
    kube_scheduler(config)
