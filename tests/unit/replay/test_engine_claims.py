"""The engine frees a departed pod's claims as the resource-claim controller does: a status
update first (reservedFor and allocation cleared), then the deletion. DynamicResources requeues
waiting pods on that update (it registers claim Add and Update, not Delete), so a pod waiting
for the GPU binds when the GPU is freed, not at the unschedulable pool's 5-minute flush. The
live fidelity run with kube-scheduler found the difference (tests/e2e/test_replay_fidelity.py)."""

from __future__ import annotations

from pathlib import Path

from extender.replay import gpus
from extender.replay.engine import replay
from extender.replay.trace import Trace, TracePod
from tests.replay_trace import node, pod

from .test_engine import PROFILE


def claimed(name: str) -> tuple[dict, dict]:
    body = pod("default", name, 1, 1, 0)
    claim = gpus.resource_claim(gpus.claim_name(name), "default", 1, 1000)
    body["spec"]["resourceClaims"] = [
        {"name": gpus.POD_CLAIM, "resourceClaimName": claim["metadata"]["name"]}
    ]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": gpus.POD_CLAIM}]
    return body, claim


def test_a_pod_waiting_for_a_device_binds_when_the_holder_leaves(tmp_path: Path) -> None:
    config = tmp_path / "default.yaml"
    config.write_text(PROFILE)
    first, first_claim = claimed("first")
    second, second_claim = claimed("second")
    trace = Trace(
        metadata={"name": "t", "gpuMapping": "dra"},
        duration=1000.0,
        nodes=[node("n1", 8, 32, 0, "")],
        objects=[gpus.device_class(), gpus.resource_slice("n1", 1, "A100")],
        pods=[
            TracePod(arrival=0.0, pod=first, claims=[first_claim], duration=100.0),
            TracePod(arrival=10.0, pod=second, claims=[second_claim], duration=100.0),
        ],
    )
    log = replay(trace, config, seed=0)
    binds = {e[2]: e[0] for e in log["events"] if e[1] == "bind"}
    assert binds["default/first"] == 0.0
    assert binds["default/second"] < 110.0, log["events"]  # not at the 5-minute flush (310 s)
