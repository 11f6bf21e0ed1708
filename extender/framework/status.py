"""Status: the answer of a plugin at an extension point.

Plugins return ``None`` for Success (upstream's ``nil`` status) and a :class:`Status` for
anything else. Decisions are statuses, never exceptions; an unexpected failure is a status
with code ERROR.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypeGuard


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


# Codes that mean "the pod was rejected" (they record the rejecting plugin).
REJECTED_CODES = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})

_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """A non-success outcome: a code, user-facing reasons and the plugin that produced it."""

    __slots__ = ("code", "reasons", "plugin", "err")

    def __init__(
        self,
        code: Code,
        *reasons: str,
        plugin: str = "",
        err: BaseException | None = None,
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.err = err

    @classmethod
    def error(cls, message: str | BaseException, plugin: str = "") -> Status:
        if isinstance(message, BaseException):
            return cls(Code.ERROR, str(message), plugin=plugin, err=message)
        return cls(Code.ERROR, message, plugin=plugin)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        return self.code in REJECTED_CODES

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))

    def __repr__(self) -> str:
        plugin = f" plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({_CODE_NAMES[self.code]}, {list(self.reasons)!r}{plugin})"


def code_of(status: Status | None) -> Code:
    """The code of a status, where ``None`` is Success."""
    return Code.SUCCESS if status is None else status.code


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


def is_non_success(status: Status | None) -> TypeGuard[Status]:
    """Anything but Success (``None`` is Success): a rejection, a skip, a wait or an error."""
    return status is not None and status.code != Code.SUCCESS


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


SKIP = Status(Code.SKIP)
