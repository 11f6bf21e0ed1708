"""Sweeps (extender/replay/sweep.py): two policies x two seeds on two local processes give the
logs that replaying them one after the other gives, in the jobs' order; a failing job or a
missing file is an error naming the job; an unreachable Dask address is a clear error."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from extender.replay import sweep
from extender.replay.engine import replay
from extender.replay.sweep import Job, SweepError, run_jobs
from extender.replay.trace import load

from .sweep_inputs import BROKEN, without_wall_time, write_inputs


def _jobs(tmp_path: Path) -> list[Job]:
    trace, configs = write_inputs(tmp_path)
    return [Job(str(trace), str(c), seed) for c in configs for seed in (0, 1)]


def _sequential(jobs: list[Job]) -> list[dict]:
    return [
        without_wall_time(replay(load(job.trace_path), job.config_path, seed=job.seed))
        for job in jobs
    ]


def test_two_processes_give_the_sequential_logs_in_job_order(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    calls: list[tuple[int, int]] = []
    logs = run_jobs(jobs, workers=2, progress=lambda done, total: calls.append((done, total)))
    expected = _sequential(jobs)
    # The four replays differ (policy or seed), so a log in the wrong place would show.
    assert len({str(e["events"]) for e in expected}) == 4
    assert [without_wall_time(log) for log in logs] == expected
    assert [(log["policy"], log["seed"]) for log in logs] == [
        ("default", 0),
        ("default", 1),
        ("most-allocated", 0),
        ("most-allocated", 1),
    ]
    assert all(log["config"] == job.config_path for log, job in zip(logs, jobs, strict=True))
    assert calls[0] == (0, 4) and calls[-1] == (4, 4)


def test_one_worker_runs_in_this_process_with_the_same_logs(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)[::-1]
    logs = run_jobs(jobs, workers=1)
    assert [without_wall_time(log) for log in logs] == _sequential(jobs)


def test_relative_paths_are_read_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    jobs = [Job("trace.json.gz", "default.yaml", 0), Job("trace.json.gz", "default.yaml", 1)]
    logs = run_jobs(jobs, workers=2)
    assert [log["config"] for log in logs] == ["default.yaml", "default.yaml"]
    assert [without_wall_time(log) for log in logs] == _sequential(jobs)


def test_a_failing_job_is_named_with_its_message(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN)
    jobs.insert(1, Job(jobs[0].trace_path, str(broken), 7))
    with pytest.raises(SweepError) as caught:
        run_jobs(jobs, workers=2)
    message = str(caught.value)
    assert message.startswith(f"broken ({broken}, seed 7, trace trace.json.gz): ")
    assert "NoSuchPlugin" in message


def test_a_missing_file_is_named_before_anything_runs(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    jobs.append(Job(jobs[0].trace_path, str(tmp_path / "nope.yaml"), 3, policy="nope"))
    with pytest.raises(SweepError, match=r"^nope \(.*nope.yaml, seed 3, .*\): config .*no such"):
        run_jobs(jobs, workers=2)


def test_workers_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="workers: must be at least 1, not 0"):
        run_jobs(_jobs(tmp_path), workers=0)


def test_an_unreachable_dask_scheduler_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep, "DASK_PROBE_SECONDS", 1.0)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    with pytest.raises(SweepError, match=f"cannot reach the Dask scheduler at '{address}'"):
        run_jobs(_jobs(tmp_path), dask=address)
