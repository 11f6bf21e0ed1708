"""The standalone scheduler's extender client honours every ``ExtenderTLSConfig`` field, as
upstream's ``makeTransport`` does, against a real HTTPS server: our own ``kube-extender
serve`` with ``--certfile`` and ``--ca-certs`` (client certificates required), certificates
from ``extender.controlplane.certs``. The server certificate names only
``extender.kube-extender.svc``, not the 127.0.0.1 the client connects to, so only
``serverName`` makes verification pass."""

from __future__ import annotations

import base64
import ssl
import tempfile
from pathlib import Path

import pytest

from extender.controlplane import free_port, kube_extender, spawn, stop_pid, wait_http_ok
from extender.controlplane.certs import generate, issue_serving_cert
from extender.framework.node_info import NodeInfo
from extender.scheduler.http_extender import ExtenderError, HTTPExtender, tls_context
from tests.unit.builders import make_node, make_pod

SERVICE = "extender.kube-extender.svc"
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: tls
    plugins:
      multiPoint:
        disabled: [{name: "*"}]
      queueSort: {enabled: [{name: PrioritySort}]}
      filter: {enabled: [{name: NodeUnschedulable}]}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("tls")
    pki = generate(tmp / "pki")
    cert, key = issue_serving_cert(pki, tmp / "pki", "extender", [SERVICE])
    client = issue_serving_cert(pki, tmp / "pki", "scheduler", ["scheduler"])
    other = generate(tmp / "other-pki")  # a CA the server does not use
    config = tmp / "config.yaml"
    config.write_text(CONFIG)
    port = free_port()
    log = tmp / "serve.log"
    proc = spawn(
        kube_extender(
            "serve",
            "--config",
            str(config),
            "--offline",
            "--bind",
            f"127.0.0.1:{port}",
            "--certfile",
            str(cert),
            "--keyfile",
            str(key),
            "--ca-certs",
            str(pki.ca_cert),
        ),
        log,
    )
    probe = ssl.create_default_context(cafile=str(pki.ca_cert))
    probe.check_hostname = False
    probe.load_cert_chain(*map(str, client))
    url = f"https://127.0.0.1:{port}"
    wait_http_ok(url + "/readyz", proc, log, timeout=30, context=probe)
    yield {"url": url, "ca": pki.ca_cert, "client": client, "other_ca": other.ca_cert}
    stop_pid(proc.pid)


def b64(path: Path) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


def call(url: str, enable_https: bool = False, **tls: object) -> list[str]:
    extender = HTTPExtender(
        {
            "urlPrefix": url,
            "filterVerb": "filter",
            "enableHTTPS": enable_https,
            "tlsConfig": tls or None,
            "httpTimeout": 5.0,
        }
    )
    nodes = [NodeInfo(make_node("n1")), NodeInfo(make_node("n2", unschedulable=True))]
    kept, _, _ = extender.filter(make_pod("p"), nodes)
    return [info.name for info in kept]


def files(server: dict) -> dict:
    cert, key = server["client"]
    return {"caFile": str(server["ca"]), "certFile": str(cert), "keyFile": str(key)}


def data(server: dict) -> dict:
    cert, key = server["client"]
    return {"caData": b64(server["ca"]), "certData": b64(cert), "keyData": b64(key)}


def test_files_and_the_right_server_name(server) -> None:
    assert call(server["url"], serverName=SERVICE, **files(server)) == ["n1"]


def test_data_fields_and_the_right_server_name(server) -> None:
    assert call(server["url"], serverName=SERVICE, **data(server)) == ["n1"]


@pytest.mark.parametrize("kind", [files, data], ids=["files", "data"])
def test_a_wrong_server_name_fails(server, kind) -> None:
    with pytest.raises(ExtenderError, match="(?i)certificate|hostname"):
        call(server["url"], serverName="other.kube-extender.svc", **kind(server))


def test_without_server_name_the_url_host_is_verified_and_fails(server) -> None:
    with pytest.raises(ExtenderError, match="(?i)certificate|hostname"):
        call(server["url"], **files(server))


def test_a_ca_that_did_not_sign_the_server_fails(server) -> None:
    tls = {**files(server), "caFile": str(server["other_ca"])}
    with pytest.raises(ExtenderError, match="(?i)certificate"):
        call(server["url"], serverName=SERVICE, **tls)


def test_no_client_certificate_is_refused_by_the_server(server) -> None:
    with pytest.raises(ExtenderError):
        call(server["url"], serverName=SERVICE, caFile=str(server["ca"]))


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_insecure_skips_verification(server) -> None:
    cert, key = server["client"]
    assert call(server["url"], insecure=True, certFile=str(cert), keyFile=str(key)) == ["n1"]


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_enable_https_without_a_ca_is_insecure_as_upstream(server) -> None:
    cert, key = server["client"]
    assert call(server["url"], True, certData=b64(cert), keyData=b64(key)) == ["n1"]


def test_no_tls_config_trusts_only_the_system_roots(server) -> None:
    with pytest.raises(ExtenderError, match="(?i)certificate"):
        call(server["url"])


def test_key_data_leaves_no_file_behind(server) -> None:
    before = set(Path(tempfile.gettempdir()).glob("kube-extender-tls-*"))
    tls_context(data(server))
    assert set(Path(tempfile.gettempdir()).glob("kube-extender-tls-*")) == before


@pytest.mark.parametrize(
    ("tls", "needle"),
    [
        ({"insecure": True, "caData": "eA=="}, "insecure"),
        ({"certData": "eA=="}, "both a certificate and a key"),
        ({"caData": "%%%"}, "caData: not valid base64"),
    ],
)
def test_bad_tls_configs(tls, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        tls_context(tls)
