"""The cache's pod state machine (upstream ``pkg/scheduler/backend/cache/cache.go``) and its
incremental snapshots (upstream ``pkg/scheduler/backend/cache/snapshot.go``)."""

from __future__ import annotations

import threading

import pytest

from extender.cache import Cache, CacheError
from extender.framework.columns import NodeTable
from tests.unit.builders import make_node, make_pod


def on(pod: dict, node: str) -> dict:
    """The same pod with ``spec.nodeName`` set, as the scheduler assumes it."""
    return {**pod, "spec": {**pod["spec"], "nodeName": node}}


def pods_on(cache: Cache, node: str) -> list[str]:
    info = cache.snapshot().get(node)
    assert info is not None
    return sorted(p.name for p in info.pods)


def cpu_on(cache: Cache, node: str) -> int:
    return cache.snapshot().get(node).requested.milli_cpu


@pytest.fixture
def cache() -> Cache:
    c = Cache()
    c.add_node(make_node("a"))
    c.add_node(make_node("b"))
    return c


# -- assume / forget / confirm -----------------------------------------------------------------


def test_assume_accounts_the_pod_on_its_node(cache: Cache) -> None:
    pod = on(make_pod("p", cpu="500m"), "a")
    cache.assume_pod(pod)
    assert cache.is_assumed(pod["metadata"]["uid"])
    assert pods_on(cache, "a") == ["p"]
    assert cpu_on(cache, "a") == 500
    assert cache.pod_count() == 1


def test_assume_twice_is_an_error(cache: Cache) -> None:
    pod = on(make_pod("p"), "a")
    cache.assume_pod(pod)
    with pytest.raises(CacheError, match="is in the cache"):
        cache.assume_pod(pod)
    with pytest.raises(CacheError, match="has no spec.nodeName"):
        cache.assume_pod(make_pod("q"))


def test_assume_an_added_pod_is_an_error(cache: Cache) -> None:
    pod = make_pod("p", node_name="a")
    cache.add_pod(pod)
    with pytest.raises(CacheError):
        cache.assume_pod(pod)


def test_forget_undoes_assume(cache: Cache) -> None:
    pod = on(make_pod("p", cpu="1"), "a")
    cache.assume_pod(pod)
    cache.forget_pod(pod)
    assert not cache.is_assumed(pod["metadata"]["uid"])
    assert pods_on(cache, "a") == []
    assert cpu_on(cache, "a") == 0
    assert cache.pod_count() == 0
    cache.forget_pod(pod)  # unknown now: ignored


def test_forget_checks_node_and_state(cache: Cache) -> None:
    pod = on(make_pod("p"), "a")
    cache.assume_pod(pod)
    with pytest.raises(CacheError, match="assumed on a but assigned to b"):
        cache.forget_pod(on(pod, "b"))
    added = make_pod("q", node_name="b")
    cache.add_pod(added)
    with pytest.raises(CacheError, match="wasn't assumed"):
        cache.forget_pod(added)
    assert pods_on(cache, "b") == ["q"]


def test_add_pod_confirms_an_assumed_pod(cache: Cache) -> None:
    pod = on(make_pod("p", cpu="1"), "a")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    bound = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "7"}}
    cache.add_pod(bound)
    assert not cache.is_assumed(pod["metadata"]["uid"])
    assert cache.pod_count() == 1
    assert pods_on(cache, "a") == ["p"]
    assert cpu_on(cache, "a") == 1000  # counted once, not twice
    assert cache.snapshot().get("a").pods[0].pod is bound  # the real pod replaced the copy
    with pytest.raises(CacheError):
        cache.forget_pod(bound)  # added, no longer assumed


def test_add_pod_moves_an_assumed_pod_to_where_it_was_bound(cache: Cache) -> None:
    pod = on(make_pod("p", cpu="1"), "a")
    cache.assume_pod(pod)
    cache.add_pod(on(pod, "b"))
    assert pods_on(cache, "a") == []
    assert pods_on(cache, "b") == ["p"]
    assert (cpu_on(cache, "a"), cpu_on(cache, "b")) == (0, 1000)


def test_add_pod_ignores_unassigned_pods(cache: Cache) -> None:
    cache.add_pod(make_pod("pending"))
    assert cache.pod_count() == 0


def test_add_twice_updates_instead_of_double_counting(cache: Cache) -> None:
    pod = make_pod("p", node_name="a", cpu="1")
    cache.add_pod(pod)
    cache.add_pod(pod)
    assert cpu_on(cache, "a") == 1000
    assert cache.pod_count() == 1


def test_finish_binding_of_a_confirmed_pod_is_a_noop(cache: Cache) -> None:
    pod = on(make_pod("p"), "a")
    cache.assume_pod(pod)
    cache.add_pod(pod)
    cache.finish_binding(pod)
    assert not cache.is_assumed(pod["metadata"]["uid"])


# -- expiry: never by default, after finish_binding + ttl with one ------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_assumed_pods_never_expire_by_default() -> None:
    clock = Clock()
    cache = Cache(clock=clock)
    cache.add_node(make_node("a"))
    pod = on(make_pod("p"), "a")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    clock.now += 10**9
    assert cache.is_assumed(pod["metadata"]["uid"])
    assert cache.cleanup_assumed_pods() == []
    uid = pod["metadata"]["uid"]
    assert cache.dump()["assumed"] == {uid: {"node": "a", "bindingFinished": True}}


@pytest.fixture
def ttl_cache() -> tuple[Cache, Clock]:
    clock = Clock()
    c = Cache(assumed_pod_ttl=30, clock=clock)
    c.add_node(make_node("a"))
    c.add_node(make_node("b"))
    return c, clock


def test_an_assumed_pod_expires_ttl_after_finish_binding(ttl_cache) -> None:
    cache, clock = ttl_cache
    pod = on(make_pod("p", cpu="1"), "a")
    uid = pod["metadata"]["uid"]
    cache.assume_pod(pod)
    clock.now += 100  # still binding: never expires (upstream's bindingFinished)
    assert cache.is_assumed(uid) and cpu_on(cache, "a") == 1000
    cache.finish_binding(pod)
    assert cache.dump()["assumed"][uid] == {"node": "a", "bindingFinished": True, "expiresIn": 30}
    clock.now += 30
    assert cache.is_assumed(uid)  # the deadline itself is not past it
    clock.now += 0.5
    # Each read expires what is due, the snapshot included.
    assert pods_on(cache, "a") == [] and cpu_on(cache, "a") == 0
    assert not cache.is_assumed(uid) and cache.pod_count() == 0 and cache.get_pod(uid) is None
    # The watch reporting it after all adds it back, as a confirmed pod.
    cache.add_pod(pod)
    clock.now += 100
    assert pods_on(cache, "a") == ["p"] and not cache.is_assumed(uid)


def test_cleanup_removes_only_the_pods_past_their_deadline(ttl_cache) -> None:
    cache, clock = ttl_cache
    early, late, confirmed = (on(make_pod(n), "a") for n in ("early", "late", "confirmed"))
    for pod in (early, confirmed):
        cache.assume_pod(pod)
        cache.finish_binding(pod)
    cache.add_pod(confirmed)
    clock.now += 20
    cache.assume_pod(late)
    cache.finish_binding(late)
    clock.now += 15
    assert cache.cleanup_assumed_pods() == [early["metadata"]["uid"]]
    assert pods_on(cache, "a") == ["confirmed", "late"]
    assert cache.cleanup_assumed_pods(clock.now + 16) == [late["metadata"]["uid"]]
    assert pods_on(cache, "a") == ["confirmed"]


def test_a_forgotten_or_removed_assumption_leaves_nothing_to_expire(ttl_cache) -> None:
    cache, clock = ttl_cache
    forgotten, deleted = on(make_pod("f"), "a"), on(make_pod("d"), "b")
    for pod in (forgotten, deleted):
        cache.assume_pod(pod)
        cache.finish_binding(pod)
    cache.forget_pod(forgotten)
    cache.remove_pod(deleted)
    clock.now += 31
    assert cache.cleanup_assumed_pods() == []
    assert cache.pod_count() == 0


def test_a_negative_ttl_is_refused() -> None:
    with pytest.raises(ValueError, match="assumed_pod_ttl"):
        Cache(assumed_pod_ttl=-1)


# -- update / remove -----------------------------------------------------------------------------


def test_update_pod_replaces_requests(cache: Cache) -> None:
    old = make_pod("p", node_name="a", cpu="1")
    cache.add_pod(old)
    new = make_pod("p", node_name="a", cpu="250m", uid=old["metadata"]["uid"], labels={"x": "y"})
    cache.update_pod(old, new)
    assert cpu_on(cache, "a") == 250
    assert cache.snapshot().get("a").pods[0].labels == {"x": "y"}
    assert cache.pod_count() == 1


def test_update_pod_moving_nodes(cache: Cache) -> None:
    old = make_pod("p", node_name="a", cpu="1")
    cache.add_pod(old)
    cache.update_pod(old, on(old, "b"))
    assert pods_on(cache, "a") == []
    assert pods_on(cache, "b") == ["p"]
    assert (cpu_on(cache, "a"), cpu_on(cache, "b")) == (0, 1000)


def test_update_of_an_unknown_pod_adds_it(cache: Cache) -> None:
    pod = make_pod("p", node_name="b", cpu="1")
    cache.update_pod(None, pod)
    assert pods_on(cache, "b") == ["p"]


def test_remove_pod(cache: Cache) -> None:
    pod = make_pod("p", node_name="a", cpu="1")
    cache.add_pod(pod)
    # The deleted pod's final state may say anything; the cached node is the one that counts.
    cache.remove_pod(make_pod("p", uid=pod["metadata"]["uid"]))
    assert pods_on(cache, "a") == []
    assert cpu_on(cache, "a") == 0
    assert cache.pod_count() == 0
    cache.remove_pod(pod)  # unknown: ignored


def test_remove_of_an_assumed_pod(cache: Cache) -> None:
    pod = on(make_pod("p"), "a")
    cache.assume_pod(pod)
    cache.remove_pod(pod)
    assert not cache.is_assumed(pod["metadata"]["uid"])
    assert pods_on(cache, "a") == []


# -- nodes and placeholders ---------------------------------------------------------------------


def test_pods_of_an_unknown_node_wait_on_a_placeholder() -> None:
    cache = Cache()
    cache.add_pod(make_pod("early", node_name="late", cpu="1"))
    assert cache.node_names() == []
    assert len(cache.snapshot()) == 0  # placeholders are not in snapshots
    assert cache.dump()["nodes"]["late"]["placeholder"] is True

    cache.add_node(make_node("late"))
    assert cache.node_names() == ["late"]
    assert pods_on(cache, "late") == ["early"]
    assert cpu_on(cache, "late") == 1000


def test_removed_node_with_pods_becomes_a_placeholder(cache: Cache) -> None:
    pod = make_pod("p", node_name="a", cpu="1")
    cache.add_pod(pod)
    cache.remove_node(make_node("a"))
    assert cache.node_names() == ["b"]
    assert cache.get_node("a") is None
    assert cache.snapshot().get("a") is None
    assert "a" in cache.dump()["nodes"]

    cache.remove_pod(pod)  # the last pod goes: so does the placeholder
    assert "a" not in cache.dump()["nodes"]
    cache.add_node(make_node("a"))
    assert pods_on(cache, "a") == []


def test_placeholder_comes_back_with_its_pods(cache: Cache) -> None:
    cache.add_pod(make_pod("p", node_name="a", cpu="1"))
    cache.remove_node(make_node("a"))
    cache.add_node(make_node("a", cpu="8"))
    assert pods_on(cache, "a") == ["p"]
    assert cache.snapshot().get("a").allocatable.milli_cpu == 8000


def test_node_queries(cache: Cache) -> None:
    assert cache.node_names() == ["a", "b"]
    assert cache.node_count() == 2
    assert cache.get_node("a")["metadata"]["name"] == "a"
    assert cache.get_node("zz") is None
    cache.update_node(make_node("a"), make_node("a", labels={"zone": "1"}))
    assert cache.get_node("a")["metadata"]["labels"]["zone"] == "1"
    cache.remove_node(make_node("b"))
    assert cache.node_names() == ["a"]
    cache.remove_node(make_node("b"))  # unknown: ignored


# -- snapshots -----------------------------------------------------------------------------------


def test_snapshot_reuses_unchanged_node_infos(cache: Cache) -> None:
    cache.add_node(make_node("c"))
    first = cache.snapshot()
    assert cache.snapshot() is first  # nothing changed at all

    cache.add_pod(make_pod("p", node_name="b", cpu="1"))
    second = cache.snapshot()
    assert second is not first
    assert second.get("a") is first.get("a")
    assert second.get("c") is first.get("c")
    assert second.get("b") is not first.get("b")
    # The older snapshot is untouched by the change.
    assert first.get("b").pods == []
    assert second.get("b").requested.milli_cpu == 1000

    cache.update_node(make_node("c"), make_node("c", labels={"x": "1"}))
    third = cache.snapshot()
    assert third.get("a") is second.get("a")
    assert third.get("b") is second.get("b")
    assert third.get("c") is not second.get("c")
    assert third.get("c").labels["x"] == "1"


def test_snapshot_is_isolated_from_the_cache(cache: Cache) -> None:
    before = cache.snapshot()
    pod = on(make_pod("p", cpu="1"), "a")
    cache.assume_pod(pod)
    after = cache.snapshot()
    assert before.get("a").requested.milli_cpu == 0
    assert after.get("a").requested.milli_cpu == 1000
    cache.forget_pod(pod)
    assert after.get("a").requested.milli_cpu == 1000  # a snapshot never changes
    assert cache.snapshot().get("a").requested.milli_cpu == 0


def test_snapshot_drops_removed_nodes_and_counts_images() -> None:
    cache = Cache()
    cache.add_node(make_node("a", images=[(["img:1"], 100)]))
    cache.add_node(make_node("b", images=[(["img:1"], 100)]))
    cache.add_node(make_node("c"))
    snapshot = cache.snapshot()
    assert snapshot.get("a").image_states["img:1"].num_nodes == 2
    cache.remove_node(make_node("b"))
    snapshot = cache.snapshot()
    assert [i.name for i in snapshot.node_info_list] == ["a", "c"]
    assert snapshot.get("a").image_states["img:1"].num_nodes == 1


def test_snapshot_lists_nodes_with_affinity_pods(cache: Cache) -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        }
    }
    cache.add_pod(make_pod("p", node_name="b", affinity=anti))
    snapshot = cache.snapshot()
    assert [i.name for i in snapshot.have_pods_with_affinity_list] == ["b"]
    assert [i.name for i in snapshot.have_pods_with_required_anti_affinity_list] == ["b"]


# -- namespaces ----------------------------------------------------------------------------------


def test_namespace_labels() -> None:
    cache = Cache()
    assert cache.namespace_labels("team") is None
    ns = {"metadata": {"name": "team", "labels": {"env": "prod"}}}
    cache.add_namespace(ns)
    assert cache.namespace_labels("team") == {"env": "prod"}
    cache.update_namespace(ns, {"metadata": {"name": "team"}})
    assert cache.namespace_labels("team") == {}
    cache.remove_namespace(ns)
    assert cache.namespace_labels("team") is None


# -- concurrency and wiring ----------------------------------------------------------------------


def test_concurrent_assume_and_snapshot_stay_consistent(cache: Cache) -> None:
    pods = [on(make_pod(f"p{i}", cpu="10m"), "a") for i in range(200)]
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            for pod in pods:
                cache.assume_pod(pod)
                cache.add_pod(pod)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=churn)
    thread.start()
    while thread.is_alive():
        info = cache.snapshot().get("a")
        assert info.requested.milli_cpu == 10 * len(info.pods)
    thread.join()
    assert not errors
    assert cpu_on(cache, "a") == 2000


def test_pod_changes_swap_node_infos_without_rebuilding_image_summaries() -> None:
    cache = Cache()
    for name in ("a", "b"):
        cache.add_node(make_node(name, images=[(["app:v1"], 100)]))
    first = cache.snapshot()
    cache.add_pod(make_pod("p", node_name="a", uid="u-p", cpu="1"))
    second = cache.snapshot()
    assert [i.name for i in second.node_info_list] == [i.name for i in first.node_info_list]
    assert second.get("b") is first.get("b")
    assert second.get("a") is not first.get("a")
    assert [p.name for p in second.get("a").pods] == ["p"]
    assert first.get("a").pods == []
    assert second.get("a").image_states["app:v1"].num_nodes == 2
    cache.add_node(make_node("c"))
    assert [i.name for i in cache.snapshot().node_info_list] == ["a", "b", "c"]


# -- incremental snapshots against a rebuild from scratch ----------------------------------------


def _describe(snapshot, images: bool = True) -> list[tuple]:
    """What a plugin can read of a snapshot, as plain values."""
    return [
        (
            info.name,
            info.generation,
            sorted(p.key for p in info.pods),
            info.requested.milli_cpu,
            info.requested.memory,
            sorted(p.key for p in info.pods_with_affinity),
            sorted((name, s.num_nodes) for name, s in info.image_states.items()) if images else [],
            info.name in snapshot.node_info_map,
            snapshot.node_info_map[info.name] is info,
        )
        for info in snapshot.node_info_list
    ] + [
        [i.name for i in snapshot.have_pods_with_affinity_list],
        [i.name for i in snapshot.have_pods_with_required_anti_affinity_list],
    ]


def _from_scratch(cache: Cache) -> list[tuple]:
    from extender.framework.snapshot import Snapshot

    return _describe(Snapshot([info.clone() for info in cache._nodes.values()]))


@pytest.mark.parametrize("seed", range(8))
def test_incremental_snapshots_equal_a_rebuild_from_scratch(seed: int) -> None:
    """Random node and pod churn (assume, confirm elsewhere, forget, pods on nodes that do not
    exist yet or any more): after every step the incremental snapshot reads as one built from
    all NodeInfos, and every older snapshot still reads as it did when it was taken (but for
    image summaries, which a new node set recounts on shared clones: see the module)."""
    import random

    rng = random.Random(seed)
    cache = Cache()
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        }
    }
    names = [f"n{i}" for i in range(6)]
    taken: list[tuple[object, list[tuple]]] = []
    assumed: dict[str, dict] = {}
    added: dict[str, dict] = {}
    for step in range(300):
        op = rng.random()
        node = rng.choice(names)
        if op < 0.12:
            # Half the updates keep the node's images: they swap its NodeInfo in place.
            images = [([f"img:{rng.randint(0, 2) if rng.random() < 0.5 else 0}"], 100)]
            cache.add_node(make_node(node, labels={"v": str(step)}, images=images))
        elif op < 0.18:
            cache.remove_node(make_node(node))
        elif op < 0.45:
            uid = f"u{step}"
            pod = make_pod(f"p{step}", uid=uid, cpu="10m", node_name=node)
            if rng.random() < 0.3:
                pod["spec"]["affinity"] = anti
            cache.assume_pod(pod)
            assumed[uid] = pod
        elif op < 0.6 and assumed:
            uid = rng.choice(sorted(assumed))
            pod = assumed.pop(uid)
            if rng.random() < 0.2:  # bound elsewhere than assumed
                pod = on(pod, rng.choice(names))
            cache.add_pod(pod)
            added[uid] = pod
        elif op < 0.7 and assumed:
            cache.forget_pod(assumed.pop(rng.choice(sorted(assumed))))
        elif op < 0.85 and added:
            cache.remove_pod(added.pop(rng.choice(sorted(added))))
        else:
            uid = f"u{step}"
            pod = make_pod(f"p{step}", uid=uid, cpu="20m", node_name=node)
            cache.add_pod(pod)
            added[uid] = pod
        if rng.random() < 0.6:
            snapshot = cache.snapshot()
            assert _describe(snapshot) == _from_scratch(cache), f"step {step}"
            taken.append((snapshot, _describe(snapshot, images=False)))
            # The node table carried across overlays reads as one built anew.
            table, fresh = snapshot.table, NodeTable(snapshot.node_info_list)
            for column in ("alloc_milli_cpu", "req_milli_cpu", "pod_count", "unschedulable"):
                assert getattr(table, column).tolist() == getattr(fresh, column).tolist()
            ours, theirs = table.labels("v"), fresh.labels("v")
            assert [ours.values[c] for c in ours.codes] == [theirs.values[c] for c in theirs.codes]
    for snapshot, description in taken:
        assert _describe(snapshot, images=False) == description


class _CountingDict(dict):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.walks = 0

    def items(self):  # type: ignore[override]
        self.walks += 1
        return super().items()

    def values(self):  # type: ignore[override]
        self.walks += 1
        return super().values()


def test_snapshot_after_pod_changes_does_not_walk_every_node() -> None:
    """The scheduling loop takes a snapshot per pod; between two, pods moved on a node or two,
    so the snapshot must visit those, not every NodeInfo (upstream UpdateSnapshot)."""
    cache = Cache()
    for i in range(50):
        cache.add_node(make_node(f"n{i}"))
    first = cache.snapshot()
    cache._nodes = _CountingDict(cache._nodes)
    pod = on(make_pod("p", uid="u-p", cpu="1"), "n7")
    cache.assume_pod(pod)
    second = cache.snapshot()
    cache.add_pod(pod)  # the watch confirms it
    third = cache.snapshot()
    assert cache._nodes.walks == 0
    assert [p.name for p in third.get("n7").pods] == ["p"]
    assert second.get("n7") is not first.get("n7")
    assert third.get("n3") is first.get("n3")


def test_a_node_update_keeping_zone_and_images_swaps_one_node_info() -> None:
    """Status and label updates (kubelets report every few minutes per node) swap that node's
    NodeInfo like a pod change; a new zone (node order) or new images (image counts) rebuild."""
    cache = Cache()
    for i in range(50):
        cache.add_node(make_node(f"n{i}", labels={"topology.kubernetes.io/zone": f"z{i % 3}"}))
    first = cache.snapshot()
    cache._nodes = _CountingDict(cache._nodes)
    cache.add_node(make_node("n7", labels={"topology.kubernetes.io/zone": "z1", "new": "x"}))
    second = cache.snapshot()
    assert cache._nodes.walks == 0
    assert second.get("n7").labels["new"] == "x"
    assert second.get("n3") is first.get("n3")
    assert [i.name for i in second.node_info_list] == [i.name for i in first.node_info_list]
    cache.add_node(make_node("n7", labels={"topology.kubernetes.io/zone": "z2"}))
    third = cache.snapshot()
    assert cache._nodes.walks > 0  # a new zone: the node order is rebuilt
    assert third.get("n7").labels["topology.kubernetes.io/zone"] == "z2"
