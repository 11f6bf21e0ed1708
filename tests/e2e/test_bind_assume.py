"""Issue 27: the bind verb assumes the pod it bound in the extender's cache, against the real
kube-scheduler and apiserver.

The extender watches the cluster through a proxy that delays its pod watch by a few seconds
(``slow_watch.py``: a busy apiserver), so what its cache knows of a pod in that window comes
from the assumption alone. kube-scheduler places a pod through our filter, prioritize and
bind; right after, the extender's own verbs count it on its node (a soft spread now prefers
the other node). When the delayed watch reports the binding, the pod is still counted once
(a resource filter would refuse the node if it were counted twice). With a short
``bind.assumeTTL``, an assumption the watch has not confirmed expires first.
"""

from __future__ import annotations

import time

import pytest

from .harness import BIND_CLIENT, scheduler_config, start_binding_extender, wait_until
from .slow_watch import SlowWatchProxy

APP = {"app": "web"}
SPREAD = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": APP},
}

# Resource fit as a filter (a pod counted twice would not leave room for the probe) and the
# spread as the only score.
CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: e2e-assume
    plugins:
      multiPoint:
        disabled: [{{name: "*"}}]
      queueSort: {{enabled: [{{name: PrioritySort}}]}}
      preFilter: {{enabled: [{{name: NodeResourcesFit}}]}}
      filter: {{enabled: [{{name: NodeResourcesFit}}, {{name: TaintToleration}}]}}
      preScore: {{enabled: [{{name: PodTopologySpread}}]}}
      score: {{enabled: [{{name: PodTopologySpread, weight: 1}}]}}
      bind: {{enabled: [{{name: DefaultBinder}}]}}
---
apiVersion: kube-extender.io/v1alpha1
kind: ExtenderConfiguration
profile: e2e-assume
allowedClients: [{BIND_CLIENT}]
"""


@pytest.fixture
def slow_watch(control_plane):
    proxies: list[SlowWatchProxy] = []

    def start(delay: float) -> SlowWatchProxy:
        proxies.append(SlowWatchProxy(control_plane, delay))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.stop()


def start(control_plane, processes, slow_watch, kube, kube_scheduler, delay: float, bind: str):
    proxy = slow_watch(delay)
    ext, tls, _, _ = start_binding_extender(
        control_plane,
        processes,
        CONFIG + f"bind: {bind}\n",
        f"extender-assume-{kube.namespace}",
        kubeconfig=proxy.kubeconfig(control_plane.directory),
    )
    # 2.5 CPUs: room for two 1-CPU pods, not three.
    nodes = [f"{kube.namespace}-a", f"{kube.namespace}-b"]
    for node in nodes:
        kube.create_node(node, cpu="2500m")
    wait_until(lambda: probe(ext, kube, nodes)[0] == nodes, 10, "the nodes in the cache")
    kube_scheduler(
        scheduler_config(ext, bindVerb="bind", enableHTTPS=True, tlsConfig=tls, weight=10)
    )
    return ext, nodes


def probe(ext, kube, nodes: list[str]) -> tuple[list[str], dict[str, int]]:
    """The extender's filter and scores for one more 1-CPU pod of the app."""
    pod = {
        "metadata": {"name": "probe", "namespace": kube.namespace, "uid": "probe", "labels": APP},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "topologySpreadConstraints": [SPREAD],
        },
    }
    body = {"Pod": pod, "NodeNames": nodes}
    status, filtered = ext.post("filter", body)
    assert status == 200 and not filtered.get("Error"), filtered
    status, scores = ext.post("prioritize", body)
    assert status == 200, scores
    return filtered["NodeNames"], {entry["Host"]: entry["Score"] for entry in scores}


def counted_on(scores: dict[str, int], node: str) -> bool:
    """The spread scores ``node`` below the other one: it holds a pod of the app."""
    return all(scores[node] < score for other, score in scores.items() if other != node)


def test_a_bound_pod_counts_at_once_and_once_after_the_watch(
    control_plane, processes, slow_watch, kube, kube_scheduler
):
    delay = 5.0
    ext, nodes = start(
        control_plane, processes, slow_watch, kube, kube_scheduler, delay, "{enabled: true}"
    )
    kube.create_pod("web-1", cpu="1", labels=APP, topologySpreadConstraints=[SPREAD])
    node = kube.wait_bound("web-1")
    bound_at = time.monotonic()

    feasible, scores = probe(ext, kube, nodes)
    assert time.monotonic() - bound_at < delay, "too slow to see the state before the watch"
    assert counted_on(scores, node), f"web-1 on {node} not counted right after bind: {scores}"
    assert feasible == nodes  # counted once: room for the probe on both nodes
    assert ext.metric("extender_cache_size", type="assumed_pods") == 1

    # The delayed watch confirms the assumption: still counted, once.
    wait_until(
        lambda: ext.metric("extender_cache_size", type="assumed_pods") == 0,
        delay + 10,
        "the watch's confirmation",
    )
    feasible, scores = probe(ext, kube, nodes)
    assert counted_on(scores, node), scores
    assert feasible == nodes, f"web-1 counted twice on {node}"
    assert ext.metric("extender_requests_total", verb="bind", outcome="ok") == 1


def test_an_unconfirmed_assumption_expires_after_assume_ttl(
    control_plane, processes, slow_watch, kube, kube_scheduler
):
    delay, ttl = 8.0, 2.0
    ext, nodes = start(
        control_plane,
        processes,
        slow_watch,
        kube,
        kube_scheduler,
        delay,
        f"{{enabled: true, assumeTTL: {ttl:g}s}}",
    )
    kube.create_pod("web-1", cpu="1", labels=APP, topologySpreadConstraints=[SPREAD])
    node = kube.wait_bound("web-1")
    bound_at = time.monotonic()
    assert counted_on(probe(ext, kube, nodes)[1], node)

    # Not confirmed within the ttl (the watch is later): the assumption goes.
    wait_until(lambda: not counted_on(probe(ext, kube, nodes)[1], node), delay, "the expiry")
    assert ttl <= time.monotonic() - bound_at + 0.5 < delay
    assert ext.metric("extender_cache_size", type="assumed_pods") == 0
    # The watch reports it at last: added as any pod the watch reports.
    wait_until(lambda: counted_on(probe(ext, kube, nodes)[1], node), delay + 10, "the watch")
    assert probe(ext, kube, nodes)[0] == nodes
