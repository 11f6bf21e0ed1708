"""The fidelity check of issue 32 (``docs/replay.md``, "Fidelity"): one small trace replayed
by the real kube-scheduler v1.36.3 live (pods created and deleted on the trace's schedule, time
scaled down 100x) and by the virtual-time engine under the same KubeSchedulerConfiguration
(MostAllocated bin packing) agree on pods scheduled and never scheduled, queueing time p50 and
p90, bindings per node shape, nodes in use and CPU/memory/GPU allocation over time within
:class:`extender.replay.fidelity.Tolerance`; and the same comparison tells a different policy
(the default profile, LeastAllocated) apart.

Ties between equally scored nodes are drawn at random by both schedulers and, once the cluster
is loaded, one different draw changes which pods fit later; and live, a binding takes some
milliseconds, which the time scale turns into trace seconds. So the engine runs under a few
seeds, with scheduling taking no time and taking what it takes live, and the live figures are
compared with the range those runs span."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from extender.kube import KubeClient
from extender.replay.engine import replay
from extender.replay.fidelity import compare
from extender.replay.live import replay_live
from extender.replay.trace import parse
from tests.replay_trace import dra_trace, small_trace

REPO = Path(__file__).resolve().parents[2]
TIME_SCALE = 100.0  # a trace second lasts 10 ms: the trace's 46 minutes take about 30 s
SEEDS = range(5)
# The engine's scheduling attempts take no time, or as long as a binding takes live (about
# 10 ms of wall time: 1 s of trace time at this scale).
CYCLES = (0.0, 0.010 * TIME_SCALE)

MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
        - {name: nvidia.com/gpu, weight: 1}
"""

DEFAULT = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
"""

# The DRA case's policy: the default profile, backoff capped at its minimum (1 s). Live, the
# queue's backoff runs in wall time, 100 times longer in trace time at this scale: a pod that
# failed a few times would wait up to 1000 trace seconds in backoffQ while a newer pod takes
# the freed GPU; capped, both sides keep the waiting pods in the order they came.
DRA_POLICY = DEFAULT + "podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 1\n"


def policy_file(tmp_path: Path, name: str, text: str) -> Path:
    """The checked-in policy of that name if there is one, else ``text``."""
    shipped = REPO / "scheduler-config" / "replay" / f"{name}.yaml"
    if shipped.exists():
        return shipped
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def live_log(api, kube_scheduler, tmp_path: Path) -> tuple[dict, Path]:
    config = policy_file(tmp_path, "most-allocated", MOST_ALLOCATED)
    kube_scheduler(config)
    trace = parse(small_trace(namespace="fidelity"))
    log = replay_live(
        trace,
        KubeClient(api),
        time_scale=TIME_SCALE,
        policy="most-allocated (kube-scheduler)",
        config=str(config),
    )
    return log, config


def test_engine_and_kube_scheduler_agree_and_another_policy_is_told_apart(
    live_log: tuple[dict, Path], tmp_path: Path
) -> None:
    live, config = live_log
    trace = parse(small_trace(namespace="fidelity"))
    (tmp_path / "live-log.json").write_bytes(orjson.dumps(live))  # for a post-mortem
    print(f"\nlive: {live['wall_seconds']:.1f}s wall, lateness {live['live']['maxLateness']}s")

    engine = [
        replay(trace, config, seed=seed, cycle_seconds=cycle) for cycle in CYCLES for seed in SEEDS
    ]
    agreement = compare(engine, live)
    print(
        f"engine (a: seeds {SEEDS.start}-{SEEDS.stop - 1}, cycles {CYCLES}) vs kube-scheduler (b):"
    )
    print(agreement.summary())
    assert agreement.b["scheduled"] > 60, agreement.summary()  # the trace exercised something
    assert agreement.b["queueing_p90"] > 60, agreement.summary()  # and pods queued
    assert agreement.agrees, agreement.summary()

    default = policy_file(tmp_path, "default", DEFAULT)
    spread = [
        replay(trace, default, seed=seed, cycle_seconds=cycle) for cycle in CYCLES for seed in SEEDS
    ]
    other = compare(spread, live)
    print("engine with the default profile (a) vs kube-scheduler MostAllocated (b):")
    print(other.summary())
    assert not other.agrees, other.summary()


@pytest.fixture
def claim_controller(control_plane) -> Iterator[None]:
    """kube-controller-manager's resource-claim controller: on a real cluster it frees a
    deleted pod's claims (reservedFor, the allocation, the finalizer); the engine does it
    itself."""
    control_plane.start_controller_manager(controllers="resourceclaim-controller")
    try:
        yield
    finally:
        control_plane.stop_component("kube-controller-manager")


def test_shared_gpus_through_dra_agree(api, kube_scheduler, claim_controller, tmp_path) -> None:
    """The DRA mapping: pods share GPUs through claims with a consumable ``share``; the live
    log's bindings list the devices and shares kube-scheduler allocated (read back from the
    claims), and the figures agree with the engine's under the default profile (backoff
    capped, see DRA_POLICY)."""
    config = tmp_path / "dra.yaml"
    config.write_text(DRA_POLICY)
    kube_scheduler(config)
    trace = parse(dra_trace(namespace="fidelity-dra"))
    live = replay_live(trace, KubeClient(api), time_scale=TIME_SCALE, config=str(config))
    (tmp_path / "live-log.json").write_bytes(orjson.dumps(live))
    print(f"\nlive: {live['wall_seconds']:.1f}s wall, lateness {live['live']['maxLateness']}s")

    shares = {e[2]: e[4] for e in live["events"] if e[1] == "bind"}
    assert len(shares) == len(trace.pods), shares
    for entry in trace.pods:
        asked = int(
            entry.claims[0]["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"][
                "share"
            ]
        )
        [(device, share)] = shares[entry.key]
        assert device.split("/")[0].startswith("d-") and share == asked, (entry.key, device)

    engine = [
        replay(trace, config, seed=seed, cycle_seconds=cycle) for cycle in CYCLES for seed in SEEDS
    ]
    agreement = compare(engine, live)
    print("engine (a) vs kube-scheduler (b), DRA:\n" + agreement.summary())
    assert agreement.agrees, agreement.summary()
