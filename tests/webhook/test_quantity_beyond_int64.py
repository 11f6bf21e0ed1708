"""A pod requesting beyond int64 (issue 28): the extender's /filter, its /explain and the
``explain`` engine give the same constant reason, on every node, unresolvable."""

from __future__ import annotations

import orjson

from extender.config.loader import default_config
from extender.explain.cluster import dry_run_framework, pick_profile
from extender.explain.engine import Explainer
from extender.framework.runtime import Framework
from extender.testing import Cluster, node, pod
from extender.webhook.app import create_app
from extender.webhook.service import ExtenderService

from .test_explain_verb import Cache, NoWrites

REASON = (
    "pod requests ephemeral-storage 8Ei, beyond the largest quantity a scheduler can compare "
    "(int64)"
)


def cluster() -> tuple[list[dict], dict]:
    # One node exactly at int64, one beyond it (saturated): 8Ei = 2^63 fits neither by value
    # on the first, and a saturated request must not "fit" either.
    nodes = [
        node("a", allocatable={"ephemeral-storage": "9223372036854775807"}),
        node("b", allocatable={"ephemeral-storage": "1e30"}),
    ]
    p = pod("p", cpu="1")
    p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "8Ei"
    return nodes, p


def test_filter_explain_verb_and_explain_give_the_same_reason() -> None:
    nodes, p = cluster()
    config = default_config("default-scheduler")
    fwk = Framework(config.profiles[0], config.registry)
    app = create_app(ExtenderService(fwk, cache=Cache(nodes, []), client=NoWrites()))
    client = app.test_client()
    body = orjson.dumps({"Pod": p, "NodeNames": ["a", "b"]})

    response = client.post("/filter", data=body, content_type="application/json")
    assert response.status_code == 200
    result = orjson.loads(response.data)
    assert result["NodeNames"] == [] and result["FailedNodes"] == {}
    assert result["FailedAndUnresolvableNodes"] == {"a": REASON, "b": REASON}

    response = client.post("/explain", data=body, content_type="application/json")
    assert response.status_code == 200
    data = orjson.loads(response.data)
    assert data["verdict"] == "Unschedulable"
    assert data["fitError"].startswith(f"0/2 nodes are available: {REASON}.")

    kit = Cluster(nodes=nodes)
    explainer = Explainer(dry_run_framework(*pick_profile(None, "default-scheduler"), kit))
    ex = explainer.explain(p, kit.snapshot())
    assert ex.fit_error == data["fitError"]
    for name in ("a", "b"):
        status = ex.node(name).status
        assert status is not None and status.plugin == "NodeResourcesFit"
        assert status.reasons == (REASON,)
