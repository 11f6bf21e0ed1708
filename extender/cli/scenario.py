"""``kube-extender scenario FILE``: run a scenario file against a cluster.

A scenario file defines ``scenario(kube)``; ``kube`` is an :class:`extender.scenario.Kube`.
The pods it creates carry ``--scheduler-name``, so the same scenario exercises the extender
path (a real kube-scheduler calling our extender) or our standalone scheduler.

A scenario that needs alpha features declares them as kube-scheduler's ``--feature-gates``
would take them, in a module constant::

    FEATURE_GATES = {"GenericWorkload": True, "GangScheduling": True}

``kube-extender demo`` then starts kube-apiserver with those gates and the API versions they
need (``--runtime-config``), and both schedulers with the gates; ``kube-extender scenario``
checks that the cluster serves those API versions first (the scheduler's gates are the
caller's business: ``kube-extender run --feature-gates ...``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from extender.cli.common import check_kubeconfig
from extender.config import DEFAULT_SCHEDULER_NAME
from extender.controlplane import GATE_RUNTIME_CONFIG, apiserver_args_for_gates
from extender.framework.features import FeatureGateError, Features
from extender.scenario.kube import Kube, ScenarioError


def load_scenario(path: str) -> ModuleType:
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"kube-extender scenario: no such file: {path}")
    spec = importlib.util.spec_from_file_location(f"scenario_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise SystemExit(f"kube-extender scenario: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "scenario", None)):
        raise SystemExit(f"kube-extender scenario: {path} defines no scenario(kube) function")
    feature_gates(module)  # a bad FEATURE_GATES is reported before anything runs
    return module


def feature_gates(module: ModuleType) -> dict[str, bool]:
    """The scenario's ``FEATURE_GATES`` (``{}`` without), or exit naming the problem: a gate
    kube-extender does not know, a value that is not a bool, a missing dependency."""
    gates = getattr(module, "FEATURE_GATES", None)
    if gates is None:
        return {}
    where = f"kube-extender scenario: {module.__file__}: FEATURE_GATES"
    if not isinstance(gates, dict) or not all(
        isinstance(name, str) and isinstance(on, bool) for name, on in gates.items()
    ):
        raise SystemExit(f"{where}: a dict of gate names to True or False, e.g. {{'Name': True}}")
    try:
        Features.parse(",".join(f"{name}={str(on).lower()}" for name, on in gates.items()))
    except FeatureGateError as exc:
        raise SystemExit(f"{where}: {exc}") from None
    return dict(gates)


def check_cluster_serves(kube: Kube, gates: dict[str, bool]) -> None:
    """The API versions the gates need (``GATE_RUNTIME_CONFIG``) are served, or a
    ScenarioError saying how to start kube-apiserver."""
    for name, on in gates.items():
        for group_version, served in GATE_RUNTIME_CONFIG.get(name, {}).items():
            if not on or not served or kube.serves(f"/apis/{group_version}"):
                continue
            flags = " ".join(apiserver_args_for_gates(gates))
            raise ScenarioError(
                f"the cluster does not serve {group_version}, which feature gate {name} of "
                f"this scenario needs: run kube-apiserver with {flags} (`kube-extender "
                "cluster up --feature-gates ...` does), and the scheduler with the same "
                "--feature-gates"
            )


def run_scenario(path: str, kube: Kube, keep: bool = False) -> None:
    module = load_scenario(path)
    title = (module.__doc__ or Path(path).stem).strip().splitlines()[0]
    check_cluster_serves(kube, feature_gates(module))
    kube.out(f"== scenario {Path(path).stem}: {title}")
    try:
        module.scenario(kube)
    finally:
        if not keep:
            kube.cleanup()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kube-extender scenario", description=__doc__)
    parser.add_argument("file", help="scenario file (defines scenario(kube))")
    parser.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG or in-cluster)")
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="schedulerName of the pods the scenario creates",
    )
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--keep", action="store_true", help="do not delete what it created")
    args = parser.parse_args(argv)
    check_kubeconfig(parser, args.kubeconfig)

    from extender.kube import KubeconfigError, api_client

    try:
        api = api_client(args.kubeconfig)
    except KubeconfigError as exc:
        print(f"kube-extender scenario: {exc}", file=sys.stderr)
        return 2
    kube = Kube(api, namespace=args.namespace, scheduler_name=args.scheduler_name)
    try:
        run_scenario(args.file, kube, keep=args.keep)
    except AssertionError as exc:  # a ScenarioError, or a scenario's own assert
        print(f"scenario failed: {str(exc) or failed_assert(exc)}", file=sys.stderr)
        return 1
    return 0


def failed_assert(exc: AssertionError) -> str:
    """Where a bare ``assert`` of a scenario failed: its file, line and text."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{frame.filename}:{frame.lineno}: {frame.line}"
