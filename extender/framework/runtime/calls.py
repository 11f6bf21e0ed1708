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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..failures import error_status
from ..results import PreFilterResult
from ..status import REJECTED_CODES, Code, Status, is_non_success

if TYPE_CHECKING:
    from ..handle import Metrics

# The package's name, as when the runner was one module: log lines keep their logger.
log = logging.getLogger("extender.framework.runtime")

# What each point must return, in the words of the Error a wrong answer becomes.
STATUS_OR_NONE = "None or a Status"
SCORE_ANSWER = "a tuple (int score, Status | None)"


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


class Expected(NamedTuple):
    """What a point that answers a tuple must return: in words, for the Error of a wrong
    answer, and as a check."""

    words: str
    check: Callable[[Any], bool]


def _pre_filter_answer(answer: Any) -> bool:
    """``(None | PreFilterResult, None | Status)``."""
    return (
        pair(answer)
        and not not_status(answer[1])
        and (answer[0] is None or isinstance(answer[0], PreFilterResult))
    )


def _post_filter_answer(answer: Any) -> bool:
    """``(result, None | Status)``; the result's type is not checked."""
    return pair(answer) and not not_status(answer[1])


def _permit_answer(answer: Any) -> bool:
    """``(None | Status, timeout)``; the timeout is read only with a Wait status."""
    return pair(answer) and not not_status(answer[0])


PRE_FILTER_ANSWER = Expected("a tuple (PreFilterResult | None, Status | None)", _pre_filter_answer)
POST_FILTER_ANSWER = Expected(
    "a tuple (PostFilterResult | None, Status | None)", _post_filter_answer
)
PERMIT_ANSWER = Expected("a tuple (Status | None, timeout seconds)", _permit_answer)
PLACEMENTS_ANSWER = Expected(
    "a tuple (list of Placement | None, Status | None)", _post_filter_answer
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
    """Calls plugins under the failure contract and records their failures (a mixin of
    ``Framework``). The per-node Filter and Score loops apply the same contract inline: they
    run once per node and plugin, where a call through a helper costs."""

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

    def _call(
        self,
        plugin: str,
        point: str,
        fn: Callable[..., Any],
        *args: Any,
        accept: frozenset[Code] = REJECTED_CODES,
    ) -> Status | None:
        """``fn(*args)``, ``plugin``'s method at a ``point`` that answers None or a Status,
        under the failure contract.

        Returns the plugin's own answer when it is Success (``None`` or a Success status) or
        its code is in ``accept`` (the caller handles those; ``accept`` never holds Error).
        Otherwise the call raised, returned another type or another code: returns the Error
        status naming the plugin and the point (:meth:`_failed`)."""
        try:
            status = fn(*args)
        except Exception as exc:
            return self._failed(plugin, point, exc)
        if not_status(status):
            return self._failed(plugin, point, wrong_return(status, STATUS_OR_NONE))
        if is_non_success(status) and status.code not in accept:
            return self._failed(plugin, point, status.message)
        return status

    def _answer(
        self,
        plugin: str,
        point: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        expected: Expected,
    ) -> tuple[Any, Status | None]:
        """``fn(*args)`` at a ``point`` that answers a tuple, under the failure contract:
        ``(answer, None)``, or ``(None, the Error)`` when the call raised or its answer is not
        the ``expected`` one. The statuses inside the answer are the caller's to handle."""
        try:
            answer = fn(*args)
        except Exception as exc:
            return None, self._failed(plugin, point, exc)
        if not expected.check(answer):
            return None, self._failed(plugin, point, wrong_return(answer, expected.words))
        return answer, None
