"""Taints and tolerations: a dedicated GPU node takes only pods that tolerate its taint."""

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATE_GPU = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


def scenario(kube):
    kube.create_node("gpu-node", labels={"gpu": "true"}, taints=[GPU_TAINT])
    kube.create_node("plain-node")
    kube.create_pod("web")
    kube.create_pod("trainer", tolerations=TOLERATE_GPU, nodeSelector={"gpu": "true"})
    kube.create_pod("intruder", nodeSelector={"gpu": "true"})
    assert kube.wait_bound("web") == "plain-node"
    assert kube.wait_bound("trainer") == "gpu-node"
    why = kube.expect_pending("intruder", seconds=3)
    assert "taint" in why, why
    kube.report()
