"""The bind verb's protection (issue 12): off unless configured, then only for allow-listed
client certificates, only for the pod the caller named (PodUID required, checked against the
apiserver's pod) and only onto a node the profile's filters accept."""

from __future__ import annotations

import pytest

from extender.cli.serve import StartupError, allowed_clients, check_client_auth
from extender.config import ConfigError, load
from extender.webhook.service import ExtenderService
from tests.unit.builders import make_node, make_pod
from tests.webhook.test_contract import (
    SCHEDULER,
    FakeBinder,
    FakeCache,
    PeerSocket,
    binding_client,
    client_for,
    framework,
    post,
)

BODY = {"PodName": "p", "PodNamespace": "ns", "PodUID": "u1", "Node": "n1"}
TAINTED = make_node("n1", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])


def service(binder: FakeBinder, filters: list[str] = (), nodes: list[dict] = ()) -> ExtenderService:  # type: ignore[assignment]
    return ExtenderService(
        framework(list(filters)), client=binder, cache=FakeCache(list(nodes) or [make_node("n1")])
    )


def test_bind_is_off_by_default() -> None:
    binder = FakeBinder()
    status, reply = post(client_for(service(binder)), "bind", BODY, PeerSocket(SCHEDULER))
    assert status == 404
    assert "bind verb is disabled" in reply["error"]
    assert binder.calls == []


def test_bind_enabled_without_an_allow_list_is_refused() -> None:
    binder = FakeBinder()
    client = client_for(service(binder), bind_enabled=True)
    status, reply = post(client, "bind", BODY, PeerSocket(SCHEDULER))
    assert status == 403 and "allow-list" in reply["error"]
    assert binder.calls == []


@pytest.mark.parametrize(
    ("peer", "needle"),
    [
        (None, "client certificate is required"),
        (PeerSocket(None), "client certificate is required"),
        (PeerSocket("someone-else", ("DNS", "evil.example")), "not in the allow-list"),
    ],
    ids=["no-tls", "no-certificate", "other-identity"],
)
def test_bind_refuses_clients_outside_the_allow_list(peer, needle) -> None:
    binder = FakeBinder()
    status, reply = post(binding_client(service(binder)), "bind", BODY, peer)
    assert status == 403 and needle in reply["error"], reply
    assert binder.calls == []


@pytest.mark.parametrize(
    "peer",
    [PeerSocket(SCHEDULER), PeerSocket("other", ("DNS", SCHEDULER))],
    ids=["cn", "san"],
)
def test_bind_accepts_an_allowed_cn_or_san(peer) -> None:
    binder = FakeBinder()
    assert post(binding_client(service(binder)), "bind", BODY, peer) == (200, {"Error": ""})
    assert [node for _, node in binder.calls] == ["n1"]


def test_the_allow_list_guards_every_verb() -> None:
    client = client_for(
        ExtenderService(framework([]), cache=FakeCache([make_node("n1")])),
        allowed_clients=[SCHEDULER],
    )
    body = {"Pod": make_pod("p"), "NodeNames": ["n1"]}
    for verb in ("filter", "prioritize"):
        assert post(client, verb, body, PeerSocket("intruder"))[0] == 403
        assert post(client, verb, body, PeerSocket(SCHEDULER))[0] == 200


def test_an_empty_pod_uid_is_a_400_naming_the_field() -> None:
    binder = FakeBinder()
    status, reply = post(
        binding_client(service(binder)), "bind", {**BODY, "PodUID": ""}, PeerSocket(SCHEDULER)
    )
    assert status == 400
    assert reply["fields"] == {"PodUID": ["must not be empty"]}
    assert binder.calls == []


def test_a_bind_onto_a_node_the_filters_refuse_is_an_error() -> None:
    binder = FakeBinder()
    client = binding_client(service(binder, ["TaintToleration"], [TAINTED]))
    status, reply = post(client, "bind", BODY, PeerSocket(SCHEDULER))
    assert status == 200
    assert "does not pass the filters" in reply["Error"], reply
    assert "untolerated taint" in reply["Error"], reply
    assert binder.calls == []


def test_a_tolerating_pod_binds_onto_the_tainted_node() -> None:
    pod = make_pod(
        "p",
        namespace="ns",
        uid="u1",
        tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    )
    binder = FakeBinder(pods={("ns", "p"): pod})
    client = binding_client(service(binder, ["TaintToleration"], [TAINTED]))
    assert post(client, "bind", BODY, PeerSocket(SCHEDULER)) == (200, {"Error": ""})


@pytest.mark.parametrize(
    ("pods", "needle"),
    [
        ({}, "does not exist"),
        ({("ns", "p"): make_pod("p", namespace="ns", uid="u2")}, "not the PodUID"),
        (
            {("ns", "p"): make_pod("p", namespace="ns", uid="u1", node_name="n9")},
            "already assigned",
        ),
    ],
    ids=["gone", "other-uid", "assigned"],
)
def test_bind_checks_the_pod_it_binds(pods, needle) -> None:
    binder = FakeBinder(pods=pods)
    status, reply = post(binding_client(service(binder)), "bind", BODY, PeerSocket(SCHEDULER))
    assert status == 200 and needle in reply["Error"], reply
    assert binder.calls == []


def test_an_unknown_node_is_an_error() -> None:
    binder = FakeBinder()
    body = {**BODY, "Node": "nowhere"}
    status, reply = post(binding_client(service(binder)), "bind", body, PeerSocket(SCHEDULER))
    assert "not found" in reply["Error"]
    assert binder.calls == []


# -- configuration -----------------------------------------------------------------------------

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: p
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
"""


def test_config_defaults_bind_off(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG)
    settings = load(str(path)).extender
    assert settings.bind_enabled is False and settings.allowed_clients == []


def test_config_bind_and_allow_list(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG + "allowedClients: [a]\nbind: {enabled: true}\n")
    settings = load(str(path)).extender
    assert settings.bind_enabled is True
    assert allowed_clients(settings, ["b", "a"]) == ["a", "b"]
    check_client_auth(settings, ["a"], "ca.crt")
    with pytest.raises(StartupError, match="needs --ca-certs"):
        check_client_auth(settings, ["a"], None)
    with pytest.raises(StartupError, match="bind.enabled needs"):
        check_client_auth(settings, [], "ca.crt")


def test_an_allow_list_needs_ca_certs(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG)
    with pytest.raises(StartupError, match="needs --ca-certs"):
        check_client_auth(load(str(path)).extender, ["a"], None)


def test_config_rejects_unknown_bind_keys(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG + "bind: {enabled: true, token: x}\n")
    with pytest.raises(ConfigError, match="token"):
        load(str(path))
