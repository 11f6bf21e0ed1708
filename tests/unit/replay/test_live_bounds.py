"""The live replay refuses what it should before touching a cluster (extender/replay/live.py;
the replay itself runs against the real control plane in tests/e2e/test_replay_fidelity.py)."""

from __future__ import annotations

import pytest

from extender.replay.live import LiveReplay, LiveReplayError, main
from extender.replay.trace import parse
from tests.replay_trace import small_trace


class Untouchable:
    """A client that must not be called."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the client was used ({name})")


def test_a_trace_beyond_the_bounds_is_refused_naming_the_field() -> None:
    trace = parse(small_trace())
    with pytest.raises(LiveReplayError, match=r"^pods: 81 pods, more than the 80 allowed"):
        LiveReplay(trace, Untouchable(), time_scale=100, max_pods=80)  # type: ignore[arg-type]
    with pytest.raises(LiveReplayError, match=r"^nodes: 10 nodes, more than the 9 allowed"):
        LiveReplay(trace, Untouchable(), time_scale=100, max_nodes=9)  # type: ignore[arg-type]


def test_objects_it_cannot_create_and_a_bad_scale_are_refused() -> None:
    doc = small_trace()
    doc["objects"] = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]
    with pytest.raises(LiveReplayError, match=r"^objects\[0\]\.kind: 'Secret'"):
        LiveReplay(parse(doc), Untouchable(), time_scale=100)  # type: ignore[arg-type]
    with pytest.raises(LiveReplayError, match="time scale: must be > 0"):
        LiveReplay(parse(small_trace()), Untouchable(), time_scale=0)  # type: ignore[arg-type]


def test_the_command_says_what_is_wrong_without_a_traceback(tmp_path, capsys) -> None:
    missing = tmp_path / "missing.json"
    code = main(["--trace", str(missing), "--kubeconfig", "k", "-o", str(tmp_path / "o")])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"error: {missing}: no such file")
