"""Sweeps on a real Dask cluster: a ``dask scheduler`` and a ``dask worker`` (two worker
processes, one thread each) started on loopback from the venv, the sweep of the unit test
(two policies x two seeds) run through the scheduler's address gives the logs that replaying
the jobs one after the other in this process gives; a failing job comes back named."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.controlplane import free_port, stop_pid
from extender.replay.engine import replay
from extender.replay.sweep import Job, SweepError, run_jobs
from extender.replay.trace import load

from ..unit.replay.sweep_inputs import BROKEN, without_wall_time, write_inputs
from .harness import wait_until

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).parent / "dask"


def _start(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    # The workers import this checkout's extender, as an installed kube-extender would be.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # stop_pid stops the worker's nanny and its processes
            cwd=cwd,
            env=env,
        )


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[str]:
    """A scheduler and a worker with two processes; its address."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    work = tmp_path / "dask"
    work.mkdir()
    started = [
        _start(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            work / "scheduler.log",
            work,
        )
    ]
    try:
        started.append(
            _start(
                [
                    str(DASK),
                    "worker",
                    address,
                    "--host",
                    "127.0.0.1",
                    "--nworkers",
                    "2",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--local-directory",
                    str(work),
                ],
                work / "worker.log",
                work,
            )
        )

        def workers() -> int:
            for proc in started:
                if proc.poll() is not None:
                    logs = "\n".join(p.read_text() for p in work.glob("*.log"))
                    raise AssertionError(f"a dask process exited:\n{logs}")
            try:
                with distributed.Client(address, timeout="5s", set_as_default=False) as client:
                    return len(client.scheduler_info()["workers"])
            except OSError:
                return 0

        wait_until(lambda: workers() >= 2, 120, "two Dask workers", interval=1.0)
        yield address
    finally:
        for proc in reversed(started):
            stop_pid(proc.pid, timeout=10)
            proc.wait(timeout=10)


def test_a_sweep_on_dask_gives_the_local_logs(tmp_path: Path, dask_cluster: str) -> None:
    trace, configs = write_inputs(tmp_path)
    jobs = [Job(str(trace), str(c), seed) for c in configs for seed in (0, 1)]
    logs = run_jobs(jobs, dask=dask_cluster)
    expected = [
        without_wall_time(replay(load(job.trace_path), job.config_path, seed=job.seed))
        for job in jobs
    ]
    assert len({str(e["events"]) for e in expected}) == 4
    assert [without_wall_time(log) for log in logs] == expected


def test_a_failing_job_on_dask_is_named(tmp_path: Path, dask_cluster: str) -> None:
    trace, configs = write_inputs(tmp_path)
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN)
    jobs = [Job(str(trace), str(configs[0]), 0), Job(str(trace), str(broken), 5)]
    with pytest.raises(SweepError) as caught:
        run_jobs(jobs, dask=dask_cluster)
    assert str(caught.value).startswith(f"broken ({broken}, seed 5, trace trace.json.gz): ")
    assert "NoSuchPlugin" in str(caught.value)
