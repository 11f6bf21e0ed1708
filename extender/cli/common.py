"""Checks the commands share, so that a mistyped flag or variable gives one line and exit 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from extender.cli.logs import LEVELS
from extender.framework.features import FeatureGateError, Features


def parse_bind(value: str, flag: str) -> tuple[str, int]:
    """HOST:PORT (``[::1]:8888`` for IPv6). A bare port is refused rather than read as a host
    name, and the message says how to write every address."""
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ValueError(
            f"{flag}: {value!r} is not HOST:PORT (every address: 0.0.0.0:{port or value})"
        )
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{flag}: port {port!r} of {value!r} is not in 1-65535")
    return host.strip("[]"), int(port)


def bind_type(flag: str):  # type: ignore[no-untyped-def]
    """An argparse ``type`` that validates HOST:PORT and keeps the string."""

    def check(value: str) -> str:
        try:
            parse_bind(value, flag)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from exc
        return value

    check.__name__ = "HOST:PORT"
    return check


def add_log_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="info", choices=LEVELS, type=str.lower)
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="json: one object a line"
    )


def check_kubeconfig(parser: argparse.ArgumentParser, flag_value: str | None) -> None:
    """``--kubeconfig`` or ``$KUBECONFIG`` must name an existing file (as kubectl: of the
    files ``$KUBECONFIG`` lists, at least one)."""
    if flag_value:
        if not Path(flag_value).expanduser().is_file():
            parser.error(f"--kubeconfig: no such file: {flag_value}")
        return
    env = os.environ.get("KUBECONFIG")
    if env:
        paths = [p for p in env.split(os.pathsep) if p]
        if not any(Path(p).expanduser().is_file() for p in paths):
            parser.error(f"KUBECONFIG={env}: no such file")


def connect(prog: str, kubeconfig: str | None) -> Any:
    """A ``KubeClient`` for ``kubeconfig`` (default: KUBECONFIG or in-cluster), or ``None``
    after one line on stderr naming why there is no cluster connection."""
    from extender.kube import KubeClient, api_client

    try:
        return KubeClient(api_client(kubeconfig))
    except Exception as exc:  # any kubeconfig or connection problem: one line, no traceback
        print(f"{prog}: no cluster connection: {exc}", file=sys.stderr)
        return None


def feature_gates_type(value: str) -> Features:
    """An argparse ``type`` for ``--feature-gates`` (kube-scheduler's syntax)."""
    try:
        return Features.parse(value)
    except FeatureGateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_feature_gates_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        type=feature_gates_type,
        default=Features(),
        metavar="NAME=BOOL,...",
        help="features, as kube-scheduler's flag: GenericWorkload, GangScheduling "
        "(needs GenericWorkload) turn on workload-aware (gang) scheduling (alpha, off by "
        "default); SchedulerPopFromBackoffQ=false stops the queue popping from backoffQ when "
        "activeQ is empty, SchedulerAsyncPreemption=false makes preemption's API calls before "
        "PostFilter returns (both beta, on by default)",
    )
