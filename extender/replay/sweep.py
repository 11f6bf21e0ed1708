"""Sweeps: many replays (configurations x seeds x traces) run in parallel, on local processes
or on a Dask cluster, with the same results as one after the other.

A :class:`Job` names a trace file, a KubeSchedulerConfiguration file, a seed and the policy's
name in reports; :func:`run_jobs` runs a list of them and returns their replay logs (see
``extender.replay.log``) in the jobs' order. The engine is deterministic for a seed, so where a
job runs does not change its log: only ``wall_seconds`` differs.

Local (the default): a :class:`concurrent.futures.ProcessPoolExecutor` of ``workers``
processes (``spawn``: a fresh interpreter each, nothing inherited from the caller's threads).
A replay is pure Python and CPU-bound, so one process per core is what runs them in parallel;
threads would share one GIL. Each process loads a trace from its path the first time a job
names it and keeps it for the next jobs (a replay never changes the trace it reads: the
in-memory API copies what it stores). ``workers=1`` (or a single job) runs in the calling
process, with no pool.

Distributed: ``dask="tcp://host:port"``, the address of a running Dask ``distributed``
scheduler (``dask scheduler``, with workers started by ``dask worker tcp://host:port
--nthreads 1 --nworkers N``: one thread per worker process, for the GIL's reason above). One
task is submitted per job and the logs are gathered. The workers must have kube-extender
installed (the same version, with every plugin package the configurations name) and must be
able to read the trace and configuration files at the paths given (a shared file system, or
the same files at the same paths on every machine); a relative path is taken from the
caller's working directory, as locally. Dask needs the ``sweep`` extra
(``pip install 'kube-extender[sweep]'``).

Why Dask rather than Ray: Dask's ``distributed`` is pure Python and pip-installable with no
native runtime to match between machines; joining an existing cluster takes only the
scheduler's address; and a sweep is a list of independent map tasks whose inputs are small
(two paths and a seed) and whose outputs are plain dicts, so Ray's actors and shared object
store would bring nothing a sweep uses.

Errors are :class:`SweepError` naming the job (its policy, configuration, seed and trace) and
the replay's message, e.g. ``most-allocated (scheduler-config/replay/most-allocated.yaml,
seed 1, trace t.json.gz): ConfigError: ...``; an unreachable scheduler address is one too.
The first failure stops the sweep: the jobs not yet started are cancelled.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from extender.framework.features import DEFAULT_FEATURES, Features

from .engine import replay
from .trace import Trace, load

# How long a Dask client waits for the scheduler before the address counts as unreachable.
DASK_CONNECT_TIMEOUT = "10s"
DASK_PROBE_SECONDS = 10.0
# Traces a worker process keeps loaded (a sweep usually reads one).
TRACE_CACHE_SIZE = 2

Progress = Callable[[int, int], None]


class SweepError(RuntimeError):
    """A sweep that could not run, or a job of it that failed; the message names the job."""


@dataclass(frozen=True)
class Job:
    """One replay of a sweep: ``trace_path`` under the configuration at ``config_path`` with
    ``seed``; ``policy`` is its name in reports (default: the configuration file's stem);
    ``features`` the feature gates and ``cycle_seconds`` the virtual time a scheduling attempt
    takes (see :func:`extender.replay.engine.replay`)."""

    trace_path: str
    config_path: str
    seed: int = 0
    policy: str | None = None
    features: Features = DEFAULT_FEATURES
    cycle_seconds: float = 0.0

    def describe(self) -> str:
        policy = self.policy or Path(self.config_path).stem
        return (
            f"{policy} ({self.config_path}, seed {self.seed}, trace {Path(self.trace_path).name})"
        )


# --- one job, wherever it runs -----------------------------------------------------------------

# Per process: path -> ((mtime, size), trace), most recently used last.
_TRACES: dict[str, tuple[tuple[float, int], Trace]] = {}


def _trace(path: str, cache: dict[str, tuple[tuple[float, int], Trace]]) -> Trace:
    stat = os.stat(path)
    stamp = (stat.st_mtime, stat.st_size)
    cached = cache.pop(path, None)
    if cached is not None and cached[0] == stamp:
        trace = cached[1]
    else:
        trace = load(path)
    cache[path] = (stamp, trace)
    while len(cache) > TRACE_CACHE_SIZE:
        del cache[next(iter(cache))]
    return trace


def run_job(job: Job, base: str | None = None) -> dict:
    """Run one job where this is called; its replay log. Relative paths are read from
    ``base`` (default: the working directory). Any failure is a :class:`SweepError` naming
    the job (it crosses process boundaries as a plain message)."""
    return _run(job, base or os.getcwd(), _TRACES)


def _run(job: Job, base: str, cache: dict[str, tuple[tuple[float, int], Trace]]) -> dict:
    try:
        trace = _trace(os.path.join(base, job.trace_path), cache)
        log = replay(
            trace,
            os.path.join(base, job.config_path),
            seed=job.seed,
            policy=job.policy or Path(job.config_path).stem,
            features=job.features,
            cycle_seconds=job.cycle_seconds,
        )
    except Exception as exc:
        raise SweepError(f"{job.describe()}: {_message(exc)}") from None
    log["config"] = job.config_path  # as given, wherever the file was read
    return log


def _message(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --- the sweep ---------------------------------------------------------------------------------


def run_jobs(
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
) -> list[dict]:
    """The replay logs of ``jobs``, in the jobs' order. ``workers``: local processes (default:
    one per CPU; 1 runs the jobs in this process); ``dask``: a Dask scheduler's address
    (``tcp://host:port``) to run them on instead; ``progress(done, total)`` is called at the
    start and as each job finishes. Relative paths are read from this process's working
    directory, wherever the job runs."""
    jobs = list(jobs)
    for job in jobs:  # named before anything starts (every worker would find it)
        for what, path in (("trace", job.trace_path), ("config", job.config_path)):
            if not Path(path).is_file():
                raise SweepError(f"{job.describe()}: {what} {path}: no such file")
    if not jobs:
        return []
    base = os.getcwd()
    if dask is not None:
        return _run_dask(jobs, base, dask, progress)
    count = (os.cpu_count() or 1) if workers is None else workers
    if count < 1:
        raise SweepError(f"workers: must be at least 1, not {count}")
    if count == 1 or len(jobs) == 1:
        return _run_here(jobs, base, progress)
    return _run_pool(jobs, base, min(count, len(jobs)), progress)


def _run_here(jobs: list[Job], base: str, progress: Progress | None) -> list[dict]:
    cache: dict[str, tuple[tuple[float, int], Trace]] = {}  # freed with the sweep
    logs = []
    if progress is not None:
        progress(0, len(jobs))
    for job in jobs:
        logs.append(_run(job, base, cache))
        if progress is not None:
            progress(len(logs), len(jobs))
    return logs


def _run_pool(jobs: list[Job], base: str, workers: int, progress: Progress | None) -> list[dict]:
    if progress is not None:
        progress(0, len(jobs))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
    try:
        futures = [pool.submit(run_job, job, base) for job in jobs]
        index = {future: i for i, future in enumerate(futures)}
        pending = set(futures)
        finished = 0
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in sorted(done, key=index.__getitem__):
                exc = future.exception()
                if isinstance(exc, SweepError):
                    raise SweepError(str(exc)) from None
                if isinstance(exc, BrokenProcessPool):
                    raise SweepError(
                        f"{jobs[index[future]].describe()}: its worker process died "
                        "(killed, out of memory, or it could not start: a script that runs a "
                        "sweep must do so under `if __name__ == '__main__':`)"
                    ) from None
                if exc is not None:
                    raise SweepError(f"{jobs[index[future]].describe()}: {_message(exc)}") from None
                finished += 1
            if progress is not None:
                progress(finished, len(jobs))
        return [future.result() for future in futures]
    except BaseException:
        # A failed job (or ^C) ends the sweep now: the other jobs' replays are stopped, not
        # waited for.
        pool.shutdown(wait=False, cancel_futures=True)
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True)


def _run_dask(jobs: list[Job], base: str, address: str, progress: Progress | None) -> list[dict]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise SweepError(
            "--dask needs Dask's distributed package: pip install 'kube-extender[sweep]'"
        ) from None
    _reachable(address)
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT, set_as_default=False)
    except Exception as exc:
        raise SweepError(
            f"cannot reach the Dask scheduler at {address!r}: {_message(exc)}"
        ) from None
    try:
        if progress is not None:
            progress(0, len(jobs))
        stamp = time.time_ns()
        futures = [
            client.submit(run_job, job, base, key=f"replay-{stamp}-{i}", pure=False)
            for i, job in enumerate(jobs)
        ]
        index = {future.key: i for i, future in enumerate(futures)}
        logs: list[Any] = [None] * len(jobs)
        done_count = 0
        for future in as_completed(futures, loop=client.loop):
            i = index[future.key]
            try:
                logs[i] = future.result()
            except SweepError as exc:
                client.cancel(futures)
                raise SweepError(str(exc)) from None
            except Exception as exc:  # the worker died, the task was lost, ...
                client.cancel(futures)
                raise SweepError(f"{jobs[i].describe()}: {_message(exc)}") from None
            done_count += 1
            if progress is not None:
                progress(done_count, len(jobs))
        return logs
    finally:
        client.close()


def _reachable(address: str) -> None:
    """Refuse an address where no Dask scheduler answers before a client is made for it (a
    client that never connected spends its timeout again closing, at exit): a connection
    and Dask's handshake, as the client's first step."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.core import connect

    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise SweepError(
            f"--dask {address!r}: not a Dask scheduler address (tcp://host:port): {exc}"
        ) from None

    async def handshake() -> None:
        comm = await connect(address, timeout=DASK_PROBE_SECONDS)
        await comm.close()

    try:
        asyncio.run(handshake())
    except MemoryError:  # a peer that is not Dask: its bytes read as a huge frame length
        raise SweepError(
            f"cannot reach the Dask scheduler at {address!r}: what answers there does not "
            "speak Dask's protocol"
        ) from None
    except Exception as exc:  # refused, timed out, not Dask
        raise SweepError(
            f"cannot reach the Dask scheduler at {address!r}: {_message(exc)}"
        ) from None


__all__ = ["Job", "SweepError", "run_job", "run_jobs"]
