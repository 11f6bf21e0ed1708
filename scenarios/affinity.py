"""Pod affinity and anti-affinity: a cache joins its database; two web replicas spread out."""


def on_same_host_as(labels):
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def away_from(labels):
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def scenario(kube):
    for name in ("node-a", "node-b", "node-c"):
        kube.create_node(name)
    kube.create_pod("db", labels={"app": "db"})
    db_node = kube.wait_bound("db")
    kube.create_pod("cache", labels={"app": "cache"}, affinity=on_same_host_as({"app": "db"}))
    assert kube.wait_bound("cache") == db_node
    for i in (1, 2, 3):
        kube.create_pod(f"web{i}", labels={"app": "web"}, affinity=away_from({"app": "web"}))
    hosts = {kube.wait_bound(f"web{i}") for i in (1, 2, 3)}
    assert len(hosts) == 3, hosts
    kube.create_pod("web4", labels={"app": "web"}, affinity=away_from({"app": "web"}))
    why = kube.expect_pending("web4", seconds=3)
    assert "anti-affinity" in why, why
    kube.report()
