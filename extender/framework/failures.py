"""The one failure contract of every extension point.

A plugin that raises, or runs past its configured timeout, or returns an Error status, gives
the same answer: an Error :class:`Status` whose message names the point and the plugin the way
upstream wraps plugin errors (``running "X" filter plugin: ...``, ``running Score plugin
"X": ...``; kubernetes ``pkg/scheduler/framework/runtime/framework.go``), a log line, and one
count in the handle's per-plugin, per-point error metric. The runtime never lets the exception
through: the pod is requeued with backoff by the scheduler (or the extender answers in its
``Error`` field).

Timeouts: Python cannot interrupt a thread, so a timed call runs in a daemon thread that is
abandoned if it overruns; the cycle goes on with the Error status. Only calls with a timeout
configured pay for the thread hand-off (tens of microseconds).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .status import Code, Status

log = logging.getLogger("extender.framework")


# How upstream words an error of each point (``%s`` is the plugin name).
_MESSAGES: dict[str, str] = {
    "preEnqueue": 'running PreEnqueue plugin "%s"',
    "queueSort": 'running QueueSort plugin "%s"',
    "preFilter": 'running PreFilter plugin "%s"',
    "preFilterAddPod": 'running AddPod on PreFilter plugin "%s"',
    "preFilterRemovePod": 'running RemovePod on PreFilter plugin "%s"',
    "filter": 'running "%s" filter plugin',
    "postFilter": 'running PostFilter plugin "%s"',
    "preScore": 'running PreScore plugin "%s"',
    "score": 'running Score plugin "%s"',
    "normalizeScore": 'running Normalize on Score plugin "%s"',
    "reserve": 'running Reserve plugin "%s"',
    "unreserve": 'running Unreserve plugin "%s"',
    "permit": 'running Permit plugin "%s"',
    "preBind": 'running PreBind plugin "%s"',
    "preBindPreFlight": 'running PreBindPreFlight "%s"',
    "bind": 'running Bind plugin "%s"',
    "postBind": 'running PostBind plugin "%s"',
}


class PluginTimeout(Exception):
    """A plugin call ran past its configured timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g}s")


def error_message(plugin: str, point: str, detail: str) -> str:
    return f"{_MESSAGES[point] % plugin}: {detail}"


def error_status(plugin: str, point: str, detail: str | BaseException) -> Status:
    """The Error status for ``plugin`` failing at ``point`` (the plugin recorded on it)."""
    err = detail if isinstance(detail, BaseException) else None
    return Status(Code.ERROR, error_message(plugin, point, str(detail)), plugin=plugin, err=err)


def timed(fn: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """``fn`` run in a daemon thread, raising :class:`PluginTimeout` after ``seconds``."""

    def call(*args: Any) -> Any:
        box: list[Any] = []
        failed: list[BaseException] = []
        done = threading.Event()

        def run() -> None:
            try:
                box.append(fn(*args))
            except BaseException as exc:  # handed to the caller's thread
                failed.append(exc)
            finally:
                done.set()

        threading.Thread(target=run, daemon=True, name="plugin-call").start()
        if not done.wait(seconds):
            raise PluginTimeout(seconds)
        if failed:
            raise failed[0]
        return box[0]

    return call
