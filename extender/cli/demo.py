"""``kube-extender demo``: the README's first command.

Starts a real control plane (or uses ``$KUBECONFIG``), then runs the seed's scenario twice:

1. **extender path**: the real kube-scheduler with our extender (under gunicorn) registered
   for filter and prioritize;
2. **standalone path**: our own scheduler (``kube-extender run``) in place of kube-scheduler.

Each prints where every pod went and why the others did not fit, then everything stops.
A scenario that declares ``FEATURE_GATES`` (e.g. ``scenarios/gang.py``) gets them on
kube-apiserver (with the API versions they need), kube-scheduler and ``kube-extender run``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from extender.controlplane import (
    DEFAULT_CACHE,
    ControlPlane,
    ControlPlaneError,
    apiserver_args_for_gates,
    feature_gates_value,
    free_port,
    kube_extender,
    spawn,
    stop_pid,
    wait_http_ok,
)

REPO = Path(__file__).resolve().parents[2]
EXTENDER_PROFILE = "extender-demo"
STANDALONE_PROFILE = "kube-extender"


def _say(message: str) -> None:
    print(f"\n### {message}", flush=True)


def _scenario(path: Path, kubeconfig: str, scheduler_name: str) -> bool:
    from extender.cli.scenario import failed_assert, run_scenario
    from extender.kube import api_client
    from extender.scenario.kube import Kube

    kube = Kube(api_client(kubeconfig), namespace="default", scheduler_name=scheduler_name)
    try:
        run_scenario(str(path), kube)
    except AssertionError as exc:  # a ScenarioError, or a scenario's own assert
        print(f"scenario failed: {str(exc) or failed_assert(exc)}", file=sys.stderr)
        return False
    return True


def run_extender_path(
    cp_dir: Path,
    kubeconfig: str,
    scenario: Path,
    cp: ControlPlane | None,
    feature_gates: dict[str, bool] | None = None,
) -> bool:
    _say("extender path: kube-scheduler (v1.36) -> kube-extender filter/prioritize")
    port = free_port()
    logs = cp_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    extender = spawn(
        kube_extender(
            "serve",
            "--config",
            str(REPO / "deploy/extender-config.yaml"),
            "--bind",
            f"127.0.0.1:{port}",
            "--health-bind",
            f"127.0.0.1:{free_port()}",
            "--kubeconfig",
            kubeconfig,
        ),
        logs / "demo-extender.log",
    )
    procs: list[subprocess.Popen] = [extender]
    helper = cp or ControlPlane(cp_dir)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/readyz", extender, logs / "demo-extender.log")
        print(f"extender serving on http://127.0.0.1:{port} (log: {logs / 'demo-extender.log'})")
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": EXTENDER_PROFILE}],
            "extenders": [
                {
                    "urlPrefix": f"http://127.0.0.1:{port}",
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 5,
                    "nodeCacheCapable": True,
                }
            ],
        }
        if cp is None:
            # An existing cluster: run kube-scheduler here against it, for our profile only.
            helper.directory.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(kubeconfig, helper.kubeconfig)
        helper.start_scheduler(config, name="demo-kube-scheduler", feature_gates=feature_gates)
        print(
            f"kube-scheduler running with profile {EXTENDER_PROFILE!r} and our extender"
            + _gates_note(feature_gates)
        )
        return _scenario(scenario, kubeconfig, EXTENDER_PROFILE)
    finally:
        helper.stop_component("demo-kube-scheduler")
        for proc in procs:
            stop_pid(proc.pid, timeout=5)


def run_standalone_path(
    cp_dir: Path, kubeconfig: str, scenario: Path, feature_gates: dict[str, bool] | None = None
) -> bool:
    _say("standalone path: kube-extender run (same plugins, its own queue and loop)")
    logs = cp_dir / "logs"
    config = cp_dir / "standalone-config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": STANDALONE_PROFILE}],
            }
        )
    )
    port = free_port()
    log = logs / "demo-standalone.log"
    args = ["--config", str(config), "--kubeconfig", kubeconfig]
    args += ["--metrics-bind", f"127.0.0.1:{port}"]
    if feature_gates:
        args += ["--feature-gates", feature_gates_value(feature_gates)]
    proc = spawn(kube_extender("run", *args), log)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/readyz", proc, log)
        print(
            f"kube-extender run scheduling {STANDALONE_PROFILE!r} pods (log: {log})"
            + _gates_note(feature_gates)
        )
        return _scenario(scenario, kubeconfig, STANDALONE_PROFILE)
    finally:
        stop_pid(proc.pid, timeout=5)


def _gates_note(feature_gates: dict[str, bool] | None) -> str:
    return f"; --feature-gates {feature_gates_value(feature_gates)}" if feature_gates else ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kube-extender demo", description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios/seed.py")
    parser.add_argument("--path", choices=("extender", "standalone", "both"), default="both")
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="use this cluster instead of starting one (default: $KUBECONFIG)",
    )
    args = parser.parse_args(argv)
    if not args.scenario.is_file():
        parser.error(f"--scenario: no such file: {args.scenario}")
    from extender.cli.scenario import feature_gates, load_scenario

    gates = feature_gates(load_scenario(str(args.scenario)))

    cp: ControlPlane | None = None
    workdir = Path(tempfile.mkdtemp(prefix="kube-extender-demo-"))
    ok = True
    try:
        if args.kubeconfig:
            kubeconfig = args.kubeconfig
            print(f"using the cluster of {kubeconfig}")
        else:
            cp = ControlPlane(DEFAULT_CACHE / "demo-cluster")
            cp.down()  # a previous run that was killed may have left processes behind
            _say("starting etcd and kube-apiserver on 127.0.0.1")
            started = time.monotonic()
            extra = apiserver_args_for_gates(gates)
            cp.up(extra)
            kubeconfig = str(cp.kubeconfig)
            print(f"control plane ready in {time.monotonic() - started:.1f} s at {cp.server}")
            if extra:
                print(f"kube-apiserver runs with {' '.join(extra)} (the scenario's FEATURE_GATES)")
            workdir = cp.directory
        if args.path in ("extender", "both"):
            ok &= run_extender_path(workdir, kubeconfig, args.scenario, cp, gates)
        if args.path in ("standalone", "both"):
            ok &= run_standalone_path(workdir, kubeconfig, args.scenario, gates)
    except ControlPlaneError as exc:
        print(f"kube-extender demo: {exc}", file=sys.stderr)
        return 1
    finally:
        if cp is not None:
            _say("tearing down")
            cp.down()
    _say("demo " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1
