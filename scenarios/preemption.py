"""Preemption: a high-priority pod evicts a low-priority one from a full node."""


def scenario(kube):
    kube.create_priority_class("scenario-low", 100)
    kube.create_priority_class("scenario-high", 1000)
    kube.create_node("small-node", cpu="2")
    kube.create_pod("low1", cpu="1", priority_class="scenario-low")
    kube.create_pod("low2", cpu="1", priority_class="scenario-low")
    kube.wait_bound("low1")
    kube.wait_bound("low2")
    kube.create_pod("high", cpu="1", priority_class="scenario-high")
    assert kube.wait_bound("high", timeout=60) == "small-node"
    survivors = [name for name in ("low1", "low2") if kube.pod(name) is not None]
    assert len(survivors) == 1, survivors
    kube.report()
