"""The failure contract seen through the extender: filter answers a raising plugin in its
``Error`` field; prioritize leaves a failing Score plugin out and still answers the others'
scores (a Filter Error before scoring fails the call); /metrics counts the error under the
plugin's name and point."""

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


def test_prioritize_with_a_failing_filter_fails_the_call_and_says_why() -> None:
    """A Filter Error ends the scheduling cycle before scoring: the call fails (500, the
    error named) rather than answering scores the standalone path would never compute."""
    client, _ = client_and_metrics()
    status, reply = post(client, "prioritize", {"Pod": make_pod("p"), "Nodes": NODES})
    assert status == 500
    assert "licence count is zero" in reply["error"]
    text = client.get("/metrics").get_data(as_text=True)
    assert 'extender_requests_total{outcome="error",verb="prioritize"} 1.0' in text


class ByName:
    """Scores a node 10 x the digit its name ends with."""

    name = "ByName"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def score(self, state, pod, node_info):
        return 10 * int(node_info.name[-1]), None

    def score_extensions(self) -> None:
        return None


class BrokenOnN2:
    """Its Score raises on one node."""

    name = "BrokenOnN2"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def score(self, state, pod, node_info):
        if node_info.name == "n2":
            raise KeyError("price")
        return 100, None

    def score_extensions(self) -> None:
        return None


class NeedsPreFilter:
    """Scores from what its PreFilter wrote in the cycle state (as DynamicResources does)."""

    name = "NeedsPreFilter"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def pre_filter(self, state, pod, nodes):
        state.write("NeedsPreFilter", {"n1": 100, "n2": 50})
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def score(self, state, pod, node_info):
        return state.read("NeedsPreFilter")[node_info.name], None

    def score_extensions(self) -> None:
        return None


def scoring_client(*names: str):
    metrics = Metrics()
    plugins = {"score": [PluginSpec(n, 1) for n in names]}
    if "NeedsPreFilter" in names:
        plugins["preFilter"] = [PluginSpec("NeedsPreFilter")]
    registry = Registry(
        {"ByName": ByName, "BrokenOnN2": BrokenOnN2, "NeedsPreFilter": NeedsPreFilter}
    )
    fwk = Framework(Profile("test", plugins), registry, Services(metrics=metrics))
    return create_app(ExtenderService(fwk), metrics=metrics).test_client()


def test_one_failing_score_plugin_leaves_the_others_scores_and_is_counted() -> None:
    """Upstream ignores a failed prioritize answer as a whole: one broken plugin must not
    erase the others' scores. Its error is counted per plugin and the request as partial."""
    client = scoring_client("ByName", "BrokenOnN2")
    status, reply = post(client, "prioritize", {"Pod": make_pod("p"), "Nodes": NODES})
    assert status == 200
    # ByName alone: 10 and 20 of 100, weighted mean over both plugins' weights (2) on 0..10.
    assert reply == [{"Host": "n1", "Score": 0}, {"Host": "n2", "Score": 1}]
    text = client.get("/metrics").get_data(as_text=True)
    assert (
        'kube_extender_plugin_errors_total{extension_point="score",plugin="BrokenOnN2"} 1.0' in text
    )
    assert 'extender_requests_total{outcome="partial",verb="prioritize"} 1.0' in text


def test_score_reads_what_its_pre_filter_wrote() -> None:
    """The cycle state is built as the scheduling cycle builds it (PreFilter, Filter, then
    PreScore and Score): a Score reading PreFilter state finds it."""
    client = scoring_client("NeedsPreFilter")
    status, reply = post(client, "prioritize", {"Pod": make_pod("p"), "Nodes": NODES})
    assert status == 200
    assert reply == [{"Host": "n1", "Score": 10}, {"Host": "n2", "Score": 5}]
    text = client.get("/metrics").get_data(as_text=True)
    assert 'extender_requests_total{outcome="ok",verb="prioritize"} 1.0' in text


class Spinning:
    """A Filter that never returns for the pod named hostile (pure Python)."""

    name = "Spinning"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, state, pod, node_info):
        while pod["metadata"]["name"] == "hostile":
            pass
        return None


def test_a_verb_call_ends_within_the_pod_budget_and_is_counted() -> None:
    """The call answers (in band, 200) instead of holding the worker; the next call is served."""
    metrics = Metrics()
    profile = Profile("test", {"filter": [PluginSpec("Spinning")]}, pod_budget=0.2)
    fwk = Framework(profile, Registry({"Spinning": Spinning}), Services(metrics=metrics))
    client = create_app(ExtenderService(fwk), metrics=metrics).test_client()
    status, reply = post(client, "filter", {"Pod": make_pod("hostile"), "Nodes": NODES})
    assert status == 200
    assert reply["Error"] == (
        'running "Spinning" filter plugin: the pod\'s scheduling budget of 0.2s ran out'
    )
    status, reply = post(client, "filter", {"Pod": make_pod("canary"), "Nodes": NODES})
    assert status == 200 and not reply.get("Error")
    assert [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == ["n1", "n2"]
    text = client.get("/metrics").get_data(as_text=True)
    assert 'kube_extender_pod_budget_exceeded_total{profile="test"} 1.0' in text
