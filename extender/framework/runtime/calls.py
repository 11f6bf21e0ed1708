"""The failure contract at the call site: how the runner tells a plugin's answer from a
plugin bug, and turns either into the Error status of :mod:`extender.framework.failures`.

:class:`PluginCalls` is the part of :class:`~extender.framework.runtime.framework.Framework`
that records a failure (an Error status naming the plugin and the point, a log line, one count
in ``metrics.plugin_error``); the helpers below check that an answer has the type its point
promises (upstream wraps plugin errors the same way in kubernetes
``pkg/scheduler/framework/runtime/framework.go``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..failures import error_status
from ..status import Status

if TYPE_CHECKING:
    from ..handle import Metrics

# The package's name, as when the runner was one module: log lines keep their logger.
log = logging.getLogger("extender.framework.runtime")

# What each point must return, in the words of the Error a wrong answer becomes.
STATUS_OR_NONE = "None or a Status"
PRE_FILTER_ANSWER = "a tuple (PreFilterResult | None, Status | None)"
POST_FILTER_ANSWER = "a tuple (PostFilterResult | None, Status | None)"
SCORE_ANSWER = "a tuple (int score, Status | None)"
PERMIT_ANSWER = "a tuple (Status | None, timeout seconds)"


class WrongAnswer(str):
    """The detail of an Error for an answer of the wrong type: a plugin bug, so it is logged
    as an exception is (a decision's Error status is not)."""


def wrong_return(value: Any, expected: str) -> WrongAnswer:
    """The detail of the Error for a plugin that returned ``value`` where ``expected`` was due
    (e.g. ``True`` from Filter): the value's type and a short repr."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return WrongAnswer(f"returned {type(value).__name__} {text}, expected {expected}")


def not_status(value: Any) -> bool:
    return value is not None and not isinstance(value, Status)


def pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2


def score_answer(answer: Any) -> bool:
    """``(score, None | Status)``: checked inline-cheap, it runs per node and plugin."""
    return (
        isinstance(answer, tuple)
        and len(answer) == 2
        and (answer[1] is None or isinstance(answer[1], Status))
    )


def exception_text(exc: BaseException) -> str:
    """An exception as the Error's detail: its message, with its type where the message alone
    says nothing (``str(KeyError('x'))`` is ``'x'``; an empty message)."""
    text = str(exc)
    if not text:
        return type(exc).__name__
    if isinstance(exc, KeyError):
        return f"{type(exc).__name__}: {text}"
    return text


class PluginCalls:
    """Records plugin failures for the runner (a mixin of ``Framework``)."""

    profile_name: str
    metrics: Metrics

    def _failed(self, plugin: str, point: str, detail: str | BaseException) -> Status:
        """The failure contract: an Error status naming the plugin and point, a log line and
        one count in the per-plugin error metric."""
        if isinstance(detail, BaseException):
            log.error(
                "profile %s: plugin %s failed at %s: %s: %s",
                self.profile_name,
                plugin,
                point,
                type(detail).__name__,
                detail,
                exc_info=detail,
            )
        elif isinstance(detail, WrongAnswer):
            log.error(
                "profile %s: plugin %s failed at %s: %s", self.profile_name, plugin, point, detail
            )
        self.metrics.plugin_error(plugin, point)
        if isinstance(detail, BaseException):
            status = error_status(plugin, point, exception_text(detail))
            status.err = detail
            return status
        return error_status(plugin, point, detail)
