"""The Handle's shared-state slot (``Handle.shared``) and the testing kit's real handle."""

from __future__ import annotations

import threading

from extender import testing
from extender.framework import PODS, Handle, SharedKey
from extender.framework.handle import Services
from extender.framework.profile import Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework

BUILT: list[str] = []


def _build(handle: Handle) -> list[str]:
    BUILT.append(handle.profile_name)
    return []


KEY = SharedKey("test/list", _build)
OTHER = SharedKey("test/list", _build)  # same name, another key: keys compare by identity


def _framework(name: str, services: Services) -> Framework:
    return Framework(Profile(scheduler_name=name), Registry(), services)


def test_one_object_per_key_for_every_profile_of_one_services() -> None:
    BUILT.clear()
    services = Services()
    a, b = _framework("a", services), _framework("b", services)
    shared = a.shared(KEY)
    assert b.shared(KEY) is shared
    assert BUILT == ["a"]  # built once, with the handle that asked first
    assert a.shared(OTHER) is not shared
    assert _framework("a", Services()).shared(KEY) is not shared
    assert BUILT == ["a", "a", "a"]


def test_concurrent_first_calls_build_once() -> None:
    BUILT.clear()
    handle = _framework("a", Services())
    got: list[list[str]] = []
    threads = [threading.Thread(target=lambda: got.append(handle.shared(KEY))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert BUILT == ["a"]
    assert all(g is got[0] for g in got)


def test_testing_handle_is_a_real_handle_over_the_cluster() -> None:
    cluster = testing.Cluster(pods=[testing.pod("p", node_name="n")])
    handle: Handle = testing.handle(cluster, seed=3)
    assert isinstance(handle, Framework)
    assert [p["metadata"]["name"] for p in handle.lister(PODS).list()] == ["p"]
    assert handle.client is None
    assert handle.plugin("NodeName") is None
    assert handle.rng.random() == testing.handle(seed=3).rng.random()
    assert testing.handle().lister(PODS).list() == []
