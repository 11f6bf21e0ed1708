"""``kube-extender cluster up|down|status``: a local control plane for trying things out."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import DEFAULT_CACHE, ControlPlane, ControlPlaneError, binary


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
    sub.add_parser("down", help="stop everything `up` started")
    sub.add_parser("status", help="show what runs and where")
    args = parser.parse_args(argv)

    cp = ControlPlane(args.dir)
    try:
        if args.command == "up":
            if args.scheduler_config is not None and not args.scheduler_config.is_file():
                parser.error(f"--scheduler-config: no such file: {args.scheduler_config}")
            # A missing binary is reported before anything starts, not with half a cluster up.
            if args.scheduler_config is not None:
                binary("kube-scheduler")
            if args.controller_manager:
                binary("kube-controller-manager")
            cp.up()
            try:
                if args.scheduler_config is not None:
                    cp.start_scheduler(args.scheduler_config)
                if args.controller_manager:
                    cp.start_controller_manager()
            except BaseException:
                cp.down()
                raise
            print(f"running:        {', '.join(cp.state.pids)}")
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
