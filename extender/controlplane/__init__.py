"""A real control plane on loopback: etcd, kube-apiserver, optionally kube-scheduler and
kube-controller-manager (the PV binder and the resource-claim controller only, for the volume and
DRA tests).

The binaries are built by ``hack/build-controlplane.sh`` into ``$KUBE_EXTENDER_CACHE/bin``.
Without kubelet (and with at most those two controllers of controller-manager) two admission plugins
must be off: ``ServiceAccount`` (no default service account is ever created) and
``TaintNodesByCondition`` (it taints every new node not-ready and nothing would remove it).

A cluster lives in one directory: certificates, kubeconfig, data, logs and ``state.json`` with
the PIDs and ports, so ``kube-extender cluster down`` can stop what ``up`` started.

Test and demo tooling, not the scheduler: kept in one module (~480 lines) so the process
lifecycle (spawn, wait, stop, state file) reads top to bottom.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    # certs needs ``cryptography``, the ``controlplane`` extra: imported where certificates are
    # made, so that ``cluster --help`` (and ``status``, ``down``) work without it.
    from . import certs


def generate_certs(directory: Path) -> certs.CertFiles:
    """The cluster's certificates (``certs.generate``), importing the extra only now."""
    from . import certs

    return certs.generate(directory)


DEFAULT_CACHE = Path(os.environ.get("KUBE_EXTENDER_CACHE", Path.home() / ".cache/kube-extender"))
DISABLED_ADMISSION = "ServiceAccount,TaintNodesByCondition"

# kube-scheduler v1.36's workload-aware scheduling (``pkg/features/kube_features.go``; all alpha,
# off by default): the Workload and PodGroup API and the pod's ``spec.schedulingGroup``
# (GenericWorkload), gang scheduling (GangScheduling, needs GenericWorkload), topology-aware
# placement (TopologyAwareWorkloadScheduling, needs GenericWorkload) and workload-aware
# preemption (WorkloadAwarePreemption, needs GangScheduling). kube-apiserver needs the gates too
# (without GenericWorkload it drops ``spec.schedulingGroup``) and the API group version served.
WORKLOAD_FEATURE_GATES: dict[str, bool] = {
    "GenericWorkload": True,
    "GangScheduling": True,
    "TopologyAwareWorkloadScheduling": True,
    "WorkloadAwarePreemption": True,
}
WORKLOAD_RUNTIME_CONFIG: dict[str, bool] = {"scheduling.k8s.io/v1alpha2": True}


# The API group versions a gate's objects are served in: kube-apiserver serves an alpha version
# only with ``--runtime-config``, and with the gate on.
GATE_RUNTIME_CONFIG: dict[str, dict[str, bool]] = {
    "GenericWorkload": WORKLOAD_RUNTIME_CONFIG,
}


def feature_gates_value(gates: Mapping[str, bool]) -> str:
    """``--feature-gates``' value as the Kubernetes components (and ``kube-extender run``) read
    it: ``Name=true,Other=false``, in the mapping's order."""
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in gates.items())


def apiserver_args(
    feature_gates: Mapping[str, bool] | None = None,
    runtime_config: Mapping[str, bool] | None = None,
) -> list[str]:
    """kube-apiserver flags for ``feature_gates`` and ``runtime_config`` (API group versions
    served or not, e.g. ``{"scheduling.k8s.io/v1alpha2": True}``); nothing for neither."""
    args = []
    if feature_gates:
        args.append(f"--feature-gates={feature_gates_value(feature_gates)}")
    if runtime_config:
        args.append(f"--runtime-config={feature_gates_value(runtime_config)}")
    return args


def apiserver_args_for_gates(feature_gates: Mapping[str, bool] | None) -> list[str]:
    """kube-apiserver flags for ``feature_gates`` and the API versions the enabled ones need
    served (:data:`GATE_RUNTIME_CONFIG`): e.g. GenericWorkload also serves
    ``scheduling.k8s.io/v1alpha2``, without which there are no PodGroups to create."""
    runtime_config: dict[str, bool] = {}
    for name, on in (feature_gates or {}).items():
        if on:
            runtime_config.update(GATE_RUNTIME_CONFIG.get(name, {}))
    return apiserver_args(feature_gates, runtime_config)


class ControlPlaneError(RuntimeError):
    """A step of starting or stopping the control plane failed; the message says which."""


# What `make controlplane` (and so `make start`) builds.
DEMO_BINARIES = frozenset({"etcd", "kube-apiserver", "kube-scheduler"})


def bin_dir() -> Path:
    return Path(os.environ.get("KUBE_EXTENDER_BIN", DEFAULT_CACHE / "bin"))


def binary(name: str) -> Path:
    path = bin_dir() / name
    if not os.access(path, os.X_OK):
        # `make start` builds only what the demo runs; the tests' extra binaries come with
        # `make test-binaries`.
        target = "controlplane" if name in DEMO_BINARIES else "test-binaries"
        raise ControlPlaneError(f"{name} not found at {path}; build it with `make {target}`")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A free port P of ``host`` with P + 1 free too: ``serve --bind HOST:P`` without
    ``--health-bind`` opens its health port on P + 1."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(100):
        with socket.socket(family) as first:
            first.bind((host, 0))
            port = int(first.getsockname()[1])
            if port == 65535:
                continue
            with socket.socket(family) as second:
                try:
                    second.bind((host, port + 1))
                except OSError:
                    continue
            return port
    raise ControlPlaneError(f"no two consecutive free ports on {host}")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def stop_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL what is left after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return
            time.sleep(0.05)


@dataclass
class State:
    directory: str
    etcd_port: int = 0
    etcd_peer_port: int = 0
    apiserver_port: int = 0
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"


class ControlPlane:
    """Start, inspect and stop one local control plane rooted at ``directory``."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory).resolve()
        self.state_file = self.directory / "state.json"
        self.logs = self.directory / "logs"
        self.state = self._load_state() or State(str(self.directory))
        self.certs: certs.CertFiles | None = None
        self._children: dict[str, subprocess.Popen] = {}
        # The command line each component was started with in this process, by name.
        self.commands: dict[str, list[str]] = {}
        # kube-apiserver's extra flags of the last start: a restart keeps them.
        self.apiserver_extra_args: list[str] = []

    # -- state --------------------------------------------------------------------------------

    def _load_state(self) -> State | None:
        try:
            return State(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _save_state(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps(asdict(self.state), indent=2))

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def server(self) -> str:
        return self.state.server

    def running(self) -> dict[str, bool]:
        return {name: pid_alive(pid) for name, pid in self.state.pids.items()}

    # -- processes ----------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / f"{name}.log", "ab")
        try:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group: `down` stops it and its children
                cwd=self.directory,
            )
        except OSError as exc:
            raise ControlPlaneError(f"starting {name}: {exc}") from exc
        finally:
            log.close()
        self._children[name] = proc
        self.commands[name] = argv
        self.state.pids[name] = proc.pid
        self._save_state()
        return proc

    def _check_alive(self, name: str) -> None:
        pid = self.state.pids.get(name)
        if pid is None or not pid_alive(pid):
            tail = self.log_tail(name)
            raise ControlPlaneError(f"{name} exited during start-up; last log lines:\n{tail}")

    def log_tail(self, name: str, lines: int = 25) -> str:
        try:
            text = (self.logs / f"{name}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop_component(self, name: str) -> None:
        pid = self.state.pids.pop(name, None)
        if pid is not None:
            stop_pid(pid)
        proc = self._children.pop(name, None)
        if proc is not None:
            proc.wait(timeout=5)
        self._save_state()

    # -- etcd ---------------------------------------------------------------------------------

    def start_etcd(self) -> None:
        self.state.etcd_port = self.state.etcd_port or free_port()
        self.state.etcd_peer_port = self.state.etcd_peer_port or free_port()
        client = f"http://127.0.0.1:{self.state.etcd_port}"
        peer = f"http://127.0.0.1:{self.state.etcd_peer_port}"
        self._spawn(
            "etcd",
            [
                str(binary("etcd")),
                "--name=default",
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--log-level=warn",
                # Test data: a crash loses nothing we need, and fsync dominates on shared disks.
                "--quota-backend-bytes=4294967296",
            ],
        )
        self._wait(lambda: _http_ok(f"{client}/health"), "etcd", 30)

    # -- kube-apiserver -----------------------------------------------------------------------

    def start_apiserver(self, extra_args: list[str] | None = None) -> None:
        """kube-apiserver with this cluster's defaults, then ``extra_args`` (later flags win:
        e.g. :func:`apiserver_args` for feature gates and runtime-config)."""
        assert self.certs is not None
        self.apiserver_extra_args = list(extra_args or ())
        self.state.apiserver_port = self.state.apiserver_port or free_port()
        c = self.certs
        self._spawn(
            "kube-apiserver",
            [
                str(binary("kube-apiserver")),
                f"--etcd-servers=http://127.0.0.1:{self.state.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.state.apiserver_port}",
                f"--tls-cert-file={c.serving_cert}",
                f"--tls-private-key-file={c.serving_key}",
                f"--client-ca-file={c.ca_cert}",
                f"--service-account-key-file={c.sa_pub}",
                f"--service-account-signing-key-file={c.sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--api-audiences=https://kubernetes.default.svc.cluster.local",
                "--authorization-mode=RBAC",
                f"--disable-admission-plugins={DISABLED_ADMISSION}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                "--profiling=false",
                f"--cert-dir={self.directory / 'apiserver-certs'}",
                *self.apiserver_extra_args,
            ],
        )
        self._wait(self._apiserver_ready, "kube-apiserver", 90)

    def _ssl_context(self) -> ssl.SSLContext:
        assert self.certs is not None
        ctx = ssl.create_default_context(cafile=str(self.certs.ca_cert))
        ctx.load_cert_chain(str(self.certs.admin_cert), str(self.certs.admin_key))
        return ctx

    def _apiserver_ready(self) -> bool:
        return _http_ok(f"{self.server}/readyz", self._ssl_context())

    def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver on the same port and flags (for recovery tests)."""
        self.stop_component("kube-apiserver")
        self.start_apiserver(self.apiserver_extra_args)

    # -- kube-scheduler -----------------------------------------------------------------------

    def start_scheduler(
        self,
        config: dict | Path | str,
        name: str = "kube-scheduler",
        wait: bool = True,
        kubeconfig: Path | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        extra_args: list[str] | None = None,
    ) -> Path:
        """Start the real kube-scheduler with a KubeSchedulerConfiguration, ``feature_gates``
        (``--feature-gates``; none: the release's defaults) and ``extra_args`` (e.g. ``--v=4``).

        kube-scheduler ignores its ``--kubeconfig`` flag when ``--config`` is given: the API
        server comes from ``clientConnection.kubeconfig``. It is set to ``kubeconfig`` if given,
        else kept if the config sets one, else this cluster's admin kubeconfig, in a copy of
        the config (the returned path, in the cluster directory); the caller's file is never
        written. The delegated authentication/authorization of its secure port use
        ``kubeconfig``, else the admin's.
        """
        if not isinstance(config, dict):
            config = yaml.safe_load(Path(config).read_text())
        config = dict(config)
        connection = dict(config.get("clientConnection") or {})
        if kubeconfig is not None or not connection.get("kubeconfig"):
            connection["kubeconfig"] = str(kubeconfig or self.kubeconfig)
        config["clientConnection"] = connection
        kubeconfig = kubeconfig or self.kubeconfig
        path = self.directory / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        args = [f"--config={path}"]
        if feature_gates:
            args.append(f"--feature-gates={feature_gates_value(feature_gates)}")
        args += extra_args or ()
        self._start_component(name, "kube-scheduler", args, kubeconfig, wait)
        return path

    def _start_component(
        self, name: str, program: str, args: list[str], kubeconfig: Path | str, wait: bool
    ) -> None:
        """A control-plane component with delegated authn/authz on its own secure port on
        loopback; with ``wait``, until its /healthz answers."""
        port = free_port()
        self._spawn(
            name,
            [
                str(binary(program)),
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--v=2",
                *args,  # last: a caller's --v wins
            ],
        )
        if wait:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            self._wait(lambda: _http_ok(f"https://127.0.0.1:{port}/healthz", ctx), name, 60)

    # -- kube-controller-manager --------------------------------------------------------------

    def start_controller_manager(
        self,
        controllers: str = "persistentvolume-binder,resourceclaim-controller",
        name: str = "kube-controller-manager",
        wait: bool = True,
        extra_args: list[str] | None = None,
    ) -> None:
        """Start the real kube-controller-manager with only ``controllers``: by default the PV
        binder, for the volume tests (it binds claims to pre-bound PVs, marks delayed claims
        for an external provisioner and binds what that provisions), and the resource-claim
        controller, for the DRA tests (it creates a pod's ResourceClaims from its
        ResourceClaimTemplates, names them in ``pod.status.resourceClaimStatuses`` and drops
        ``reservedFor`` entries of pods that are gone). The admin's credentials
        for the API and the delegated authentication/authorization of its secure port, no
        leader election, no per-controller service accounts (the ``ServiceAccount`` admission
        plugin and the token controller are off) and no cloud provider.
        """
        self._start_component(
            name,
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={controllers}",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                *(extra_args or ()),
            ],
            self.kubeconfig,
            wait,
        )

    # -- whole cluster ------------------------------------------------------------------------

    def up(self, apiserver_extra_args: list[str] | None = None) -> None:
        """etcd and kube-apiserver (with ``apiserver_extra_args``), and the admin kubeconfig."""
        if any(self.running().values()):
            raise ControlPlaneError(
                f"a control plane is already running in {self.directory} "
                f"({self.state.pids}); run `kube-extender cluster down` first"
            )
        self.state = State(str(self.directory))
        self.directory.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.directory / "etcd", ignore_errors=True)
        self.certs = generate_certs(self.directory / "pki")
        try:
            self.start_etcd()
            self.start_apiserver(apiserver_extra_args)
        except BaseException:
            self.down()
            raise
        self.write_kubeconfig()

    def attach(self) -> None:
        """Use an already running control plane started from this directory."""
        self.certs = generate_certs(self.directory / "pki")

    def down(self) -> None:
        for name in reversed(list(self.state.pids)):
            self.stop_component(name)
        self._save_state()

    def write_kubeconfig(self) -> Path:
        assert self.certs is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "kube-extender",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.certs.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.certs.admin_cert),
                        "client-key": str(self.certs.admin_key),
                    },
                }
            ],
            "contexts": [
                {"name": "kube-extender", "context": {"cluster": "kube-extender", "user": "admin"}}
            ],
            "current-context": "kube-extender",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        return self.kubeconfig

    def _wait(self, ready, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive(name)
            if ready():
                return
            time.sleep(0.2)
        raise ControlPlaneError(
            f"{name} not ready after {timeout:.0f} s; last log lines:\n{self.log_tail(name)}"
        )


def kube_extender(*args: str) -> list[str]:
    """argv for a ``kube-extender`` subcommand with this interpreter (venv or not)."""
    return [sys.executable, "-m", "extender", *args]


def spawn(argv: list[str], log: Path, cwd: Path | None = None) -> subprocess.Popen:
    """A child in its own process group (``stop_pid`` stops it all), logging to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
        )


def wait_http_ok(
    url: str,
    proc: subprocess.Popen,
    log: Path,
    timeout: float = 60,
    context: ssl.SSLContext | None = None,
) -> None:
    """Wait until ``url`` answers 200; a clear error with the log's tail if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            raise ControlPlaneError(f"{' '.join(proc.args[1:4])} exited; see {log}:\n{tail}")
        if _http_ok(url, context):
            return
        time.sleep(0.2)
    raise ControlPlaneError(f"{url} not ready after {timeout:.0f} s; see {log}")


@contextlib.contextmanager
def running(
    directory: Path | str, apiserver_extra_args: list[str] | None = None
) -> Iterator[ControlPlane]:
    """A control plane up for the ``with`` block, torn down after it (tests, benchmarks);
    ``apiserver_extra_args`` as :meth:`ControlPlane.up` takes them."""
    cp = ControlPlane(directory)
    cp.up(apiserver_extra_args)
    try:
        yield cp
    finally:
        cp.down()


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


__all__ = [
    "WORKLOAD_FEATURE_GATES",
    "WORKLOAD_RUNTIME_CONFIG",
    "GATE_RUNTIME_CONFIG",
    "apiserver_args",
    "apiserver_args_for_gates",
    "feature_gates_value",
    "kube_extender",
    "running",
    "spawn",
    "wait_http_ok",
    "ControlPlane",
    "ControlPlaneError",
    "binary",
    "bin_dir",
    "free_port",
]
