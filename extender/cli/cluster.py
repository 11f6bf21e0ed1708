"""``kube-extender cluster up|scheduler|down|status``: a local control plane for trying things
out."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from extender.controlplane import (
    DEFAULT_CACHE,
    ControlPlane,
    ControlPlaneError,
    apiserver_args_for_gates,
    binary,
)

# Components `up` starts under these names: `scheduler --name` may not take them.
RESERVED = frozenset({"etcd", "kube-apiserver", "kube-controller-manager"})


def scheduler_config(parser: argparse.ArgumentParser, path: Path) -> dict[str, Any]:
    """The KubeSchedulerConfiguration in ``path``, or exit 2 naming the problem. A relative
    ``clientConnection.kubeconfig`` is made absolute (kube-scheduler runs in the cluster
    directory)."""
    if not path.is_file():
        parser.error(f"--config: no such file: {path}")
    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        parser.error(f"--config {path}: {' '.join(str(exc).split())}")
    if not isinstance(config, dict) or config.get("kind") != "KubeSchedulerConfiguration":
        parser.error(f"--config {path}: not a KubeSchedulerConfiguration (kind)")
    connection = config.get("clientConnection") or {}
    if not isinstance(connection, dict):
        parser.error(f"--config {path}: clientConnection: not a mapping")
    if connection.get("kubeconfig"):
        config["clientConnection"] = {
            **connection,
            "kubeconfig": str(Path(connection["kubeconfig"]).expanduser().resolve()),
        }
    return config


def feature_gates_type(value: str) -> dict[str, bool]:
    """``--feature-gates`` as the Kubernetes components take it: ``Name=true,Other=false``."""
    gates: dict[str, bool] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        name, sep, raw = item.strip().partition("=")
        valid = sep and re.fullmatch(r"[A-Za-z0-9]+", name) and raw.lower() in ("true", "false")
        if not valid:
            raise argparse.ArgumentTypeError(f"{item.strip()!r}: not Name=true or Name=false")
        gates[name] = raw.lower() == "true"
    return gates


def add_feature_gates_flag(parser: argparse.ArgumentParser, who: str) -> None:
    parser.add_argument(
        "--feature-gates",
        type=feature_gates_type,
        default={},
        metavar="NAME=BOOL,...",
        help=f"feature gates of {who}, e.g. GenericWorkload=true,GangScheduling=true for gang "
        "scheduling (docs/gang.md)",
    )


def add_scheduler(
    cp: ControlPlane,
    config: dict[str, Any],
    name: str,
    feature_gates: dict[str, bool] | None = None,
) -> None:
    """Start kube-scheduler ``name`` with ``config`` on the running cluster (replacing one of
    that name) and print what ran, the command line included."""
    if not cp.running().get("kube-apiserver"):
        raise ControlPlaneError(
            f"no control plane running in {cp.directory}: start one with `kube-extender "
            "cluster up` (with --dir if it is elsewhere)"
        )
    cp.attach()
    replaced = name in cp.state.pids
    if replaced:
        cp.stop_component(name)
    own = (config.get("clientConnection") or {}).get("kubeconfig")
    path = cp.start_scheduler(config, name=name, feature_gates=feature_gates)
    print(f"{'replaced' if replaced else 'started'} {name}: pid {cp.state.pids[name]}")
    print(f"config:         {path}")
    print(f"kubeconfig:     {own or cp.kubeconfig}{'' if own else ' (the cluster admin)'}")
    print(f"log:            {cp.logs / f'{name}.log'}")
    print(f"command:        {shlex.join(cp.commands[name])}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kube-extender cluster",
        description="Run etcd, kube-apiserver (and optionally kube-scheduler and "
        "kube-controller-manager) on 127.0.0.1.",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_CACHE / "cluster",
        help="cluster directory: certificates, kubeconfig, data, logs (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start etcd and kube-apiserver, write a kubeconfig")
    up.add_argument(
        "--scheduler-config",
        type=Path,
        help="also start the real kube-scheduler with this KubeSchedulerConfiguration",
    )
    up.add_argument(
        "--controller-manager",
        action="store_true",
        help="also start the real kube-controller-manager with its PV binder and "
        "resource-claim controller (claims from ResourceClaimTemplates, for DRA)",
    )
    add_feature_gates_flag(
        up,
        "kube-apiserver (which then also serves the API versions they need, e.g. "
        "scheduling.k8s.io/v1alpha2 for GenericWorkload) and of --scheduler-config's "
        "kube-scheduler",
    )
    scheduler = sub.add_parser(
        "scheduler",
        help="start the real kube-scheduler on the running cluster with a "
        "KubeSchedulerConfiguration (replacing one of the same --name)",
        description="Start the real kube-scheduler on the running cluster. Its config's "
        "clientConnection.kubeconfig, if empty, is set to the cluster's kubeconfig in a copy "
        "written to the cluster directory; the command line run is printed.",
    )
    scheduler.add_argument(
        "--config", type=Path, required=True, help="KubeSchedulerConfiguration file"
    )
    scheduler.add_argument(
        "--name",
        default="kube-scheduler",
        help="its name in `status`, its log file and `down` (default %(default)s: the one "
        "`up --scheduler-config` starts, replaced); another name adds a scheduler",
    )
    add_feature_gates_flag(scheduler, "kube-scheduler")
    sub.add_parser("down", help="stop everything `up` and `scheduler` started")
    sub.add_parser("status", help="show what runs and where")
    args = parser.parse_args(argv)

    cp = ControlPlane(args.dir)
    try:
        if args.command == "scheduler":
            if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", args.name) or args.name in RESERVED:
                parser.error(
                    f"--name {args.name!r}: lower-case letters, digits, '.' and '-', and not "
                    f"one of {', '.join(sorted(RESERVED))}"
                )
            config = scheduler_config(parser, args.config)
            binary("kube-scheduler")
            add_scheduler(cp, config, args.name, args.feature_gates)
        elif args.command == "up":
            if args.scheduler_config is not None and not args.scheduler_config.is_file():
                parser.error(f"--scheduler-config: no such file: {args.scheduler_config}")
            if args.scheduler_config is not None and any(cp.running().values()):
                raise ControlPlaneError(
                    f"a control plane is already running in {cp.directory}; add the scheduler "
                    "to it with `kube-extender cluster scheduler --config "
                    f"{args.scheduler_config}`"
                )
            # A missing binary is reported before anything starts, not with half a cluster up.
            if args.scheduler_config is not None:
                binary("kube-scheduler")
            if args.controller_manager:
                binary("kube-controller-manager")
            cp.up(apiserver_args_for_gates(args.feature_gates))
            try:
                if args.scheduler_config is not None:
                    cp.start_scheduler(args.scheduler_config, feature_gates=args.feature_gates)
                if args.controller_manager:
                    cp.start_controller_manager()
            except BaseException:
                cp.down()
                raise
            if args.scheduler_config is not None:
                print(f"kube-scheduler: {shlex.join(cp.commands['kube-scheduler'])}")
            print(f"running:        {', '.join(cp.state.pids)}")
            if cp.apiserver_extra_args:
                print(f"apiserver args: {' '.join(cp.apiserver_extra_args)}")
            print(f"kube-apiserver: {cp.server}")
            print(f"kubeconfig:     {cp.kubeconfig}")
            print(f"logs:           {cp.logs}")
            print(f"export KUBECONFIG={cp.kubeconfig}")
        elif args.command == "down":
            cp.down()
            print(f"stopped the control plane in {cp.directory}")
        else:
            running = cp.running()
            if not running:
                print(f"no control plane in {cp.directory}")
                return 1
            for name, alive in running.items():
                pid = cp.state.pids[name]
                print(f"{name:24} pid {pid:<8} {'running' if alive else 'stopped'}")
            print(f"kube-apiserver: {cp.server}")
            print(f"kubeconfig:     {cp.kubeconfig}")
            return 0 if all(running.values()) else 1
    except ControlPlaneError as exc:
        print(f"kube-extender cluster {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0
