"""``record --anonymise``: names and labels hashed consistently, so what matched still
matches; well-known keys and a few values kept; nothing of the original names left."""

from __future__ import annotations

import json

from extender.replay.anonymise import Anonymiser, anonymise, kept_key
from extender.replay.record import from_dump

from .test_record import at, from_rfc3339, node, pod

START = from_rfc3339(at(2))


def cluster() -> list[dict]:
    n1 = node("gpu-box-1", **{"topology.kubernetes.io/zone": "eu-1a", "team": "ml",
                               "kubernetes.io/arch": "amd64"})  # fmt: skip
    n1["spec"] = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}
    n1["status"]["addresses"] = [{"type": "InternalIP", "address": "10.0.0.7"}]
    n1["status"]["images"] = [{"names": ["registry.example.com/secret/app:latest"], "sizeBytes": 9}]
    web = pod("web-abc", 0, node_name="gpu-box-1", scheduled=1, namespace="payments")
    web["spec"]["containers"][0]["image"] = "registry.example.com/secret/app"  # :latest
    web["spec"]["containers"][0]["env"] = [{"name": "PASSWORD", "value": "hunter2"}]
    web["spec"]["nodeSelector"] = {"team": "ml", "kubernetes.io/arch": "amd64"}
    web["spec"]["tolerations"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    web["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
         "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}
    ]  # fmt: skip
    web["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["gpu-box-1"]}
                        ]
                    }  # fmt: skip
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "rack",
                    "labelSelector": {
                        "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]
                    },
                }  # fmt: skip
            ]
        },
    }
    web["metadata"]["annotations"] = {"secret.example.com/token": "abc"}
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "payments", "labels": {"kubernetes.io/metadata.name": "payments"}},
    }
    return [n1, web, pod("web-def", 5, namespace="payments"), namespace]


def test_hashes_are_consistent_across_objects() -> None:
    trace = anonymise(from_dump(cluster(), start=START), b"salt")
    assert trace["metadata"]["anonymised"] is True
    n1 = trace["nodes"][0]
    name = n1["metadata"]["name"]
    labels = n1["metadata"]["labels"]
    assert name != "gpu-box-1" and labels["kubernetes.io/hostname"] == name
    web, other = (r["pod"] for r in trace["pods"])
    record = trace["pods"][0]
    assert record["node"] == record["recorded"]["node"] == name
    # The node's labels still satisfy the pod's nodeSelector, its taint the toleration.
    assert web["spec"]["nodeSelector"].items() <= labels.items()
    assert web["spec"]["nodeSelector"]["kubernetes.io/arch"] == "amd64"  # a kept value
    taint, toleration = n1["spec"]["taints"][0], web["spec"]["tolerations"][0]
    assert (taint["key"], taint["value"]) == (toleration["key"], toleration["value"])
    assert taint["key"] != "dedicated"
    # Selectors of the owner's pods still select them; owners still match.
    spread = web["spec"]["topologySpreadConstraints"][0]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"  # a kept key
    assert spread["labelSelector"]["matchLabels"].items() <= other["metadata"]["labels"].items()
    anti = web["spec"]["affinity"]["podAntiAffinity"]
    term = anti["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == Anonymiser(b"salt").name("rack")
    expression = term["labelSelector"]["matchExpressions"][0]
    assert {expression["key"]: expression["values"][0]}.items() <= web["metadata"]["labels"].items()
    required = web["spec"]["affinity"]["nodeAffinity"]
    field = required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert field[0]["matchFields"][0]["values"] == [name]
    assert (
        web["metadata"]["ownerReferences"][0]["name"]
        == other["metadata"]["ownerReferences"][0]["name"]
    )
    # The namespace and its name label; the image on the node and in the pod.
    namespace = trace["objects"][0]
    assert web["metadata"]["namespace"] == namespace["metadata"]["name"]
    assert namespace["metadata"]["labels"] == {
        "kubernetes.io/metadata.name": namespace["metadata"]["name"]
    }
    assert web["spec"]["containers"][0]["image"] in n1["status"]["images"][0]["names"]
    assert web["spec"]["schedulerName"] == "default-scheduler"
    assert web["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}


def test_nothing_of_the_names_is_left() -> None:
    text = json.dumps(anonymise(from_dump(cluster(), start=START), b"salt"))
    for secret in ("gpu-box-1", "payments", "web-abc", "hunter2", "PASSWORD", "10.0.0.7",
                   "registry.example.com", "secret.example.com", "dedicated", "rack", "eu-1a",
                   '"team"', '"ml"', '"web"', "web-1", "rs-uid"):  # fmt: skip
        assert secret not in text, secret


def test_the_salt_decides_the_hashes() -> None:
    a, b = Anonymiser(b"one"), Anonymiser(b"two")
    assert a.name("gpu-box-1") == Anonymiser(b"one").name("gpu-box-1")
    assert a.name("gpu-box-1") != b.name("gpu-box-1")
    assert a.name("gpu-box-1").startswith("x") and len(a.name("gpu-box-1")) == 13


def test_kept_keys() -> None:
    assert kept_key("kubernetes.io/hostname")
    assert kept_key("topology.kubernetes.io/zone")
    assert kept_key("node-role.kubernetes.io/control-plane")
    assert kept_key("resource.k8s.io/admin-access")
    assert not kept_key("example.com/kubernetes.io")
    assert not kept_key("notkubernetes.io/x")
    assert not kept_key("app")
