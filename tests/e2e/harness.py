"""Processes for the end-to-end tests: our extender under real gunicorn, and helpers to run the
real kube-scheduler and our standalone scheduler against the real control plane."""

from __future__ import annotations

import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import orjson
import yaml

from extender.controlplane import (
    ControlPlane,
    feature_gates_value,
    free_port,
    kube_extender,
    spawn,
    stop_pid,
)
from extender.controlplane.certs import generate, issue_serving_cert

# Gang scheduling (docs/gang.md): kube-apiserver (with scheduling.k8s.io/v1alpha2 served) and
# our scheduler run with these.
GANG_GATES = {"GenericWorkload": True, "GangScheduling": True}


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")


class Process:
    """A ``kube-extender`` subcommand in its own process group, logging to a file."""

    def __init__(self, name: str, args: list[str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.proc = spawn(kube_extender(*args), self.log_path)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.alive():
            stop_pid(self.proc.pid, timeout=5)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        stop_pid(self.proc.pid, timeout=0)


class Served(Process):
    """A process serving HTTP on ``self.port``: health, readiness and Prometheus metrics."""

    port: int
    scheme = "http"
    # The TLS client context of get/post by default (HTTPS with client certificates).
    context = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def get(self, path: str, context=None) -> tuple[int, bytes]:
        try:
            context = context or self.context
            with urllib.request.urlopen(self.url + path, timeout=5, context=context) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except (urllib.error.URLError, OSError):
            return 0, b""

    def wait_ready(self, timeout: float = 30, context=None) -> None:
        def ready() -> bool:
            if not self.alive():
                raise AssertionError(f"{self.name} exited:\n{self.log()}")
            return self.get("/readyz", context)[0] == 200

        wait_until(ready, timeout, f"{self.name} /readyz")

    def metric(self, name: str, **labels: str) -> float:
        """Sum of a Prometheus sample over the series matching ``labels``."""
        status, body = self.get("/metrics")
        assert status == 200, body
        total = 0.0
        for line in body.decode().splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total


class Extender(Served):
    """``kube-extender serve`` under gunicorn on a free port."""

    def __init__(
        self,
        cp: ControlPlane,
        config_text: str,
        name: str = "extender",
        extra: list[str] | None = None,
        scheme: str = "http",
        kubeconfig: Path | None = None,
    ) -> None:
        self.port = free_port()
        self.scheme = scheme
        config = cp.directory / f"{name}-config.yaml"
        config.write_text(config_text)
        kubeconfig = kubeconfig or cp.kubeconfig
        args = ["serve", "--config", str(config), "--bind", f"127.0.0.1:{self.port}"]
        args += ["--health-bind", f"127.0.0.1:{free_port()}"]
        args += ["--kubeconfig", str(kubeconfig), "--log-level", "debug", *(extra or ())]
        super().__init__(name, args, cp.directory / "logs")

    def post(self, verb: str, body: object, context=None) -> tuple[int, object]:
        request = urllib.request.Request(
            f"{self.url}/{verb}",
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10, context=context or self.context) as r:
                return r.status, orjson.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, orjson.loads(exc.read() or b"null")


BIND_CLIENT = "kube-scheduler-e2e"


def start_binding_extender(
    cp: ControlPlane,
    processes: list,
    config_text: str,
    name: str,
    kubeconfig: Path | None = None,
):
    """An Extender serving ``config_text`` (bind enabled, ``allowedClients:
    [kube-scheduler-e2e]``) over mTLS, watching the cluster through ``kubeconfig`` (default:
    the admin's); only the certificate named kube-scheduler-e2e may call.
    Returns the extender, the ``tlsConfig`` kube-scheduler calls it with, and SSL contexts for
    that allowed client and for an intruder of the same CA."""
    pki_dir = cp.directory / "pki"
    pki = generate(pki_dir)
    cert, key = issue_serving_cert(pki, pki_dir, "extender", ["127.0.0.1"])
    client = issue_serving_cert(pki, pki_dir, BIND_CLIENT, [BIND_CLIENT])
    intruder = issue_serving_cert(pki, pki_dir, "intruder", ["intruder"])
    ext = Extender(
        cp,
        config_text,
        name=name,
        scheme="https",
        extra=["--certfile", str(cert), "--keyfile", str(key), "--ca-certs", str(pki.ca_cert)],
        kubeconfig=kubeconfig,
    )
    processes.append(ext)

    def context(pair):
        ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
        ctx.load_cert_chain(*map(str, pair))
        return ctx

    ext.context = context(client)
    ext.wait_ready()
    tls = {"caFile": str(pki.ca_cert), "certFile": str(client[0]), "keyFile": str(client[1])}
    return ext, tls, context(client), context(intruder)


def scheduler_config(extender: Extender | None, **extender_fields: object) -> dict:
    """A KubeSchedulerConfiguration for the real kube-scheduler registering ``extender``."""
    config: dict = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    if extender is not None or extender_fields:
        entry = {
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 5,
            "nodeCacheCapable": True,
            "httpTimeout": "5s",
        }
        if extender is not None:
            entry["urlPrefix"] = extender.url
        entry.update(extender_fields)
        config["extenders"] = [entry]
    return config


class Standalone(Served):
    """``kube-extender run``: our standalone scheduler against the control plane, with
    ``feature_gates`` as kube-scheduler's ``--feature-gates`` takes them (none: no flag)."""

    def __init__(
        self,
        cp: ControlPlane,
        config: dict,
        name: str = "standalone",
        identity: str | None = None,
        kubeconfig: Path | None = None,
        extra: list[str] | None = None,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self.port = free_port()
        path = cp.directory / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        kubeconfig = kubeconfig or cp.kubeconfig
        args = ["run", "--config", str(path), "--kubeconfig", str(kubeconfig)]
        args += ["--metrics-bind", f"127.0.0.1:{self.port}", "--log-level", "debug"]
        if identity:
            args += ["--identity", identity]
        if feature_gates:
            args += ["--feature-gates", feature_gates_value(feature_gates)]
        args += extra or []
        super().__init__(name, args, cp.directory / "logs")


def standalone_config(
    profile: str = "kube-extender",
    *,
    plugins: dict | None = None,
    plugin_config: list | None = None,
    leader_elect: bool = False,
    lease: str = "kube-extender-e2e",
) -> dict:
    entry: dict = {"schedulerName": profile}
    if plugins:
        entry["plugins"] = plugins
    if plugin_config:
        entry["pluginConfig"] = plugin_config
    election: dict = {"leaderElect": leader_elect}
    if leader_elect:
        election.update(
            leaseDuration="4s",
            renewDeadline="3s",
            retryPeriod="1s",
            resourceNamespace="kube-system",
            resourceName=lease,
        )
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": election,
        "profiles": [entry],
    }


def events_for(kube, pod: str, reason: str | None = None) -> list[dict]:
    """events.k8s.io/v1 Events about ``pod`` in the client's namespace."""
    items = kube.get(f"/apis/events.k8s.io/v1/namespaces/{kube.namespace}/events")["items"]
    found = []
    for event in items:
        regarding = event.get("regarding") or {}
        if regarding.get("name") == pod and (reason is None or event.get("reason") == reason):
            found.append(event)
    return found
