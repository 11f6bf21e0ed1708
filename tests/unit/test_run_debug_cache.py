"""``kube-extender run`` serves its cache's dump at /debug/cache (the chaos soak reads it)."""

from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace

from extender.cache import Cache
from extender.cli.run import serve_http
from extender.controlplane import free_port


def test_debug_cache_lists_assumed_pods() -> None:
    cache = Cache()
    cache.add_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}})
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {"nodeName": "n1"}}
    cache.assume_pod(pod)
    runtime = SimpleNamespace(cache=cache, metrics=None, synced=lambda: True)
    server = serve_http(runtime, f"127.0.0.1:{free_port()}")  # type: ignore[arg-type]
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/cache", timeout=5) as r:
            dump = json.loads(r.read())
            assert r.headers["Content-Type"] == "application/json"
    finally:
        server.shutdown()
    assert dump["assumed"] == {"u1": {"node": "n1", "bindingFinished": False}}
    assert dump["nodes"]["n1"]["pods"] == ["u1"]
