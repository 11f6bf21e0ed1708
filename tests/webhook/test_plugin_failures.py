"""The failure contract seen through the extender: a raising plugin never gets a 500; filter
answers in its ``Error`` field, prioritize adds no score, and /metrics counts the error under
the plugin's name and point."""

from __future__ import annotations

from extender.framework.handle import Services
from extender.framework.profile import PluginSpec, Profile
from extender.framework.registry import Registry
from extender.framework.runtime import Framework
from extender.webhook.app import Metrics, create_app
from extender.webhook.service import ExtenderService
from tests.unit.builders import make_node, make_pod
from tests.webhook.test_contract import post


class Exploding:
    name = "Exploding"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, state, pod, node_info):
        raise ZeroDivisionError("licence count is zero")

    def score(self, state, pod, node_info):
        raise KeyError("price")

    def score_extensions(self) -> None:
        return None


def client_and_metrics():
    metrics = Metrics()
    profile = Profile(
        "test", {"filter": [PluginSpec("Exploding")], "score": [PluginSpec("Exploding", 1)]}
    )
    fwk = Framework(profile, Registry({"Exploding": Exploding}), Services(metrics=metrics))
    return create_app(ExtenderService(fwk), metrics=metrics).test_client(), metrics


NODES = {"metadata": {}, "items": [make_node("n1"), make_node("n2")]}


def test_filter_answers_the_plugin_error_in_band() -> None:
    client, _ = client_and_metrics()
    status, reply = post(client, "filter", {"Pod": make_pod("p"), "Nodes": NODES})
    assert status == 200
    assert reply["Error"] == ('running "Exploding" filter plugin: licence count is zero')


def test_prioritize_adds_no_score_and_the_metric_names_plugin_and_point() -> None:
    client, _ = client_and_metrics()
    status, reply = post(client, "prioritize", {"Pod": make_pod("p"), "Nodes": NODES})
    assert (status, reply) == (200, [])
    post(client, "filter", {"Pod": make_pod("p"), "Nodes": NODES})
    text = client.get("/metrics").get_data(as_text=True)
    assert (
        'kube_extender_plugin_errors_total{extension_point="score",plugin="Exploding"} 1.0' in text
    )
    assert (
        'kube_extender_plugin_errors_total{extension_point="filter",plugin="Exploding"} 1.0' in text
    )
