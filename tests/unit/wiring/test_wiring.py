"""The composition root (``extender/wiring.py``) and the informers it builds
(``extender/cache/informers.py``): what a process watches follows from the kinds its plugins
declare (``reads``), and ``handle.lister(kind)`` reads those informers."""

from __future__ import annotations

from extender.cache.informers import Listers, StoreLister
from extender.config import default_profile
from extender.framework.handle import (
    NAMESPACES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    EmptyLister,
)
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import kinds_read
from extender.kube import Informer
from extender.plugins import in_tree_registry
from extender.wiring import ExtenderParts, build_extender

NODES = "/api/v1/nodes"
PODS_PATH = "/api/v1/pods"
DEFAULT_SELECTOR_PATHS = {
    "/api/v1/services",
    "/api/v1/replicationcontrollers",
    "/apis/apps/v1/replicasets",
    "/apis/apps/v1/statefulsets",
}
# The volume plugins (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits).
STORAGE_PATHS = {
    "/api/v1/persistentvolumes",
    "/api/v1/persistentvolumeclaims",
    "/apis/storage.k8s.io/v1/storageclasses",
    "/apis/storage.k8s.io/v1/csinodes",
    "/apis/storage.k8s.io/v1/csidrivers",
    "/apis/storage.k8s.io/v1/csistoragecapacities",
}


class DummyClient:
    """Never called: informers are built but not started."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the client was used ({name}) before any informer started")


# DynamicResources' kinds (resource.k8s.io/v1).
DRA_PATHS = (
    "/apis/resource.k8s.io/v1/deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/resource.k8s.io/v1/resourceclaims",
)


def profile(*plugins: str) -> Profile:
    return Profile("test", plugins={"filter": [PluginSpec(name) for name in plugins]})


def paths(parts: ExtenderParts) -> list[str]:
    return sorted(informer.path for informer in parts.informers)


def test_default_profile_reads_what_default_spreading_and_preemption_need():
    kinds = kinds_read([default_profile()], in_tree_registry())
    assert {
        SERVICES,
        REPLICATION_CONTROLLERS,
        REPLICA_SETS,
        STATEFUL_SETS,
        POD_DISRUPTION_BUDGETS,
        PODS,
        NAMESPACES,
    } <= kinds


def test_default_profile_watches_every_declared_kind_once():
    parts = build_extender(default_profile(), DummyClient())
    assert paths(parts) == sorted(
        {
            NODES,
            PODS_PATH,
            "/api/v1/namespaces",
            "/apis/policy/v1/poddisruptionbudgets",
            *DEFAULT_SELECTOR_PATHS,
            *STORAGE_PATHS,
            *DRA_PATHS,
        }
    )


def test_volume_zone_alone_watches_volumes_claims_and_classes_only():
    parts = build_extender(profile("VolumeZone"), DummyClient())
    assert paths(parts) == sorted(
        {
            NODES,
            "/api/v1/persistentvolumes",
            "/api/v1/persistentvolumeclaims",
            "/apis/storage.k8s.io/v1/storageclasses",
        }
    )


def test_node_only_plugins_watch_nodes_only():
    parts = build_extender(profile("NodeAffinity", "TaintToleration"), DummyClient())
    assert parts.kinds == set()
    assert paths(parts) == [NODES]
    assert isinstance(parts.framework.lister(SERVICES), EmptyLister)


def test_pod_topology_spread_alone_watches_pods_and_the_default_selector_kinds():
    parts = build_extender(profile("PodTopologySpread"), DummyClient())
    assert paths(parts) == sorted({NODES, PODS_PATH, *DEFAULT_SELECTOR_PATHS})
    # The plugin's handle answers from those informers.
    rs = {"metadata": {"name": "web", "namespace": "a"}, "spec": {"selector": {}}}
    informer = next(i for i in parts.informers if i.path == "/apis/apps/v1/replicasets")
    informer._apply("ADDED", rs)  # what a watch event does
    assert parts.framework.lister(REPLICA_SETS).get("a", "web") is rs
    assert parts.framework.lister(STATEFUL_SETS).list("a") == []


def test_the_extender_cache_gets_the_assumed_pod_ttl_and_knows_if_pods_are_watched():
    parts = build_extender(profile("PodTopologySpread"), DummyClient(), assumed_pod_ttl=5)
    assert parts.pods_watched and parts.cache is not None and parts.cache._ttl == 5
    assert not build_extender(profile("NodeAffinity"), DummyClient()).pods_watched
    assert build_extender(profile("NodeAffinity"), DummyClient(), watch_pods=True).pods_watched
    assert not build_extender(profile("PodTopologySpread"), None).pods_watched


def test_without_a_client_nothing_is_watched():
    parts = build_extender(default_profile(), None)
    assert parts.informers == [] and parts.cache is None
    assert parts.framework.lister(REPLICA_SETS).list() == []


def test_store_lister_lists_and_gets_by_namespace():
    informer = Informer(DummyClient(), "/api/v1/services")
    objects = [
        {"metadata": {"name": "web", "namespace": "a"}},
        {"metadata": {"name": "web", "namespace": "b"}},
        {"metadata": {"name": "db", "namespace": "a"}},
    ]
    for obj in objects:
        informer._apply("ADDED", obj)
    lister = StoreLister(informer)
    assert len(lister.list()) == 3
    assert sorted(o["metadata"]["name"] for o in lister.list("a")) == ["db", "web"]
    assert lister.list("c") == []
    assert lister.get("b", "web") is objects[1]
    assert lister.get("b", "db") is None


def test_listers_watching_builds_one_informer_per_kind():
    listers = Listers.watching(DummyClient(), [SERVICES, REPLICA_SETS])
    assert {k: i.path for k, i in listers.informers.items()} == {
        SERVICES: "/api/v1/services",
        REPLICA_SETS: "/apis/apps/v1/replicasets",
    }
    assert isinstance(listers(SERVICES), StoreLister)
    assert isinstance(listers(STATEFUL_SETS), EmptyLister)


class _SyncedInformer:
    path = "/fake"

    def start(self, after: object = None) -> None:
        pass

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return True


def test_the_standalone_scheduler_freezes_its_synced_cache_out_of_the_gc() -> None:
    """What exists once the caches synced is frozen (``gc.freeze``), so old-generation
    collections during scheduling do not walk every cached node and pod."""
    import gc

    from extender.config import default_config
    from extender.wiring import build_standalone

    runtime = build_standalone(default_config(), DummyClient())
    cached = runtime.cache
    runtime.informers = [_SyncedInformer()]  # type: ignore[list-item]
    gc.unfreeze()
    try:
        runtime.start_informers()
        assert gc.get_freeze_count() > 0
        assert not gc.is_tracked(cached) or cached not in gc.get_objects(generation=2)
    finally:
        gc.unfreeze()


def test_the_standalone_queue_takes_the_pop_from_backoff_gate() -> None:
    """``run --feature-gates SchedulerPopFromBackoffQ=false`` reaches the queue; on by default."""
    from extender.config import default_config
    from extender.framework.features import Features
    from extender.wiring import build_standalone

    assert build_standalone(default_config(), DummyClient()).queue.pop_from_backoff
    off = Features.parse("SchedulerPopFromBackoffQ=false")
    runtime = build_standalone(default_config(features=off), DummyClient())
    assert runtime.config.features == off
    assert not runtime.queue.pop_from_backoff
