"""kube-extender replay: the command over a small trace, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.cli.main import main

from .sweep_inputs import BROKEN, write_inputs


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    trace, (default, packed) = write_inputs(tmp_path)
    return {"trace": trace, "default": default, "most-allocated": packed}


def test_two_policies_give_a_report_and_a_summary(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    code = main(
        [
            "replay",
            "--trace",
            str(inputs["trace"]),
            "--config",
            str(inputs["default"]),
            "--config",
            f"packed={inputs['most-allocated']}",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    summary = capsys.readouterr().out
    assert "default" in summary and "packed" in summary and "pods scheduled" in summary
    report = json.loads((out / "report.json").read_text())
    assert [p["policy"] for p in report["policies"]] == ["default", "packed"]
    assert (out / "report.html").stat().st_size > 100_000  # plotly inlined
    assert sorted(p.name for p in (out / "logs").iterdir()) == [
        "default-seed0.json.gz",
        "packed-seed0.json.gz",
    ]


def test_one_policy_runs_here_and_seeds_repeat(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    args = ["replay", "--trace", str(inputs["trace"]), "--config", str(inputs["default"])]
    assert main([*args, "--seeds", "2", "--seed", "5", "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert [p["seed"] for p in report["policies"]] == [5, 6]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--config", "x=/no/such.yaml"], "/no/such.yaml: no such file"),
        (["--seeds", "0"], "--seeds: '0': must be at least 1"),
        (["--jobs", "two"], "--jobs: 'two' is not a whole number"),
    ],
)
def test_bad_flags_name_themselves(
    inputs: dict[str, Path], extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", "--trace", str(inputs["trace"]), "--config", str(inputs["default"])]
    with pytest.raises(SystemExit) as exit_:
        main([*args, *extra])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_negative_cycle_time_is_refused(
    inputs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", "--trace", str(inputs["trace"]), "--config", str(inputs["default"])]
    assert main([*args, "--cycle-seconds", "-1"]) == 2
    assert "--cycle-seconds: must be >= 0" in capsys.readouterr().err


def test_two_policies_of_one_name_are_refused(
    inputs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(inputs["default"])
    code = main(["replay", "--trace", str(inputs["trace"]), "--config", config, "--config", config])
    assert code == 2
    assert "two policies are named alike" in capsys.readouterr().err


def test_a_bad_trace_or_config_is_one_line(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "Trace"}')
    assert main(["replay", "--trace", str(bad), "--config", str(inputs["default"])]) == 2
    assert "--trace:" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN)
    code = main(["replay", "--trace", str(inputs["trace"]), "--config", str(broken), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert "NoSuchPlugin" in err and "Traceback" not in err


def test_compressed_arrivals_are_replayed_and_written(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "report"
    args = ["replay", "--trace", str(inputs["trace"]), "--config", str(inputs["default"])]
    assert main([*args, "--compress-arrivals", "2", "--out", str(out), "--quiet"]) == 0
    from extender.replay.trace import load

    replayed, original = load(out / "trace.json.gz"), load(inputs["trace"])
    assert replayed.pods[-1].arrival == original.pods[-1].arrival / 2
    assert main([*args, "--compress-arrivals", "-1", "--out", str(out)]) == 2


def test_without_departures_nothing_leaves(inputs: dict[str, Path], tmp_path: Path) -> None:
    import gzip

    import orjson

    out = tmp_path / "report"
    args = ["replay", "--trace", str(inputs["trace"]), "--config", str(inputs["default"])]
    assert main([*args, "--no-departures", "--out", str(out), "--quiet"]) == 0
    log = orjson.loads(gzip.decompress((out / "logs" / "default-seed0.json.gz").read_bytes()))
    assert not [e for e in log["events"] if e[1] in ("leave", "abandon") and e[-1] != "end"]


def test_a_window_start_past_the_end_is_refused_before_replaying(
    inputs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", "--trace", str(inputs["trace"]), "--config", str(inputs["default"])]
    assert main([*args, "--measure-from", "1e9"]) == 2
    err = capsys.readouterr().err
    assert "--measure-from: must be between 0 and the trace's end" in err
    assert "replay(s)" not in err  # nothing was replayed
