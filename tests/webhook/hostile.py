"""Apps for hostile-input tests: the default profile over a fake cache, and the offline one."""

from __future__ import annotations

from pathlib import Path

from extender.config.loader import load, loads
from extender.framework.snapshot import Snapshot
from extender.webhook.app import create_app
from extender.webhook.service import ExtenderService
from extender.wiring import build_extender
from tests.unit.builders import make_node, make_pod

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class FakeCache:
    def __init__(self, nodes: list[dict], pods: list[dict] = ()) -> None:  # type: ignore[assignment]
        self.nodes = nodes
        self.pods = list(pods)

    def snapshot(self) -> Snapshot:
        return Snapshot.from_objects(self.nodes, self.pods)


CACHE_NODES = [make_node(f"node{i}", labels={"zone": f"z{i % 2}"}) for i in range(1, 4)]
CACHE_PODS = [make_pod("running", node_name="node1", cpu="1", labels={"app": "a"})]


def default_service(ready: bool = True) -> ExtenderService:
    """The full default profile (every in-tree plugin) over a fake cache of three nodes."""
    profile = loads(DEFAULT_CONFIG).profiles[0]
    parts = build_extender(profile, None)
    return ExtenderService(
        parts.framework, cache=FakeCache(CACHE_NODES, CACHE_PODS), ready=lambda: ready
    )


def offline_service() -> ExtenderService:
    """examples/extender-offline.yaml: the plugins that need no cluster, no cache."""
    config = load(ROOT / "examples" / "extender-offline.yaml")
    profile = config.profiles[0]
    return ExtenderService(build_extender(profile, None).framework)


def app_for(service: ExtenderService, **kwargs):  # a Flask app
    return create_app(service, **kwargs)
