"""The errors of an API request: one hierarchy, as apimachinery's ``pkg/api/errors``.

Any non-2xx answer raises :class:`ApiError` carrying the HTTP code and the ``reason`` and
``message`` of the apiserver's ``Status`` body (``metav1.Status``). The codes callers act on
have their own subclass, chosen from the HTTP code in one place (:func:`error_class`):

* :class:`NotFound` (404), as ``IsNotFound``;
* :class:`Conflict` (409), as ``IsConflict`` and ``IsAlreadyExists`` (tell them apart by
  ``reason``: ``Conflict`` for a stale resourceVersion or failed precondition,
  ``AlreadyExists`` for a create of an existing name);
* :class:`Gone` (410), as ``IsGone``/``IsResourceExpired``: a resourceVersion or continue
  token too old, re-list;
* :class:`Invalid` (422), as ``IsInvalid``.

A connection failure (no HTTP answer at all) is a plain ``ApiError`` with status 0.
"""

from __future__ import annotations

import orjson


class ApiError(Exception):
    """The apiserver said no: ``status`` is the HTTP code, ``reason`` the Status reason
    (``NotFound``, ``Conflict``, ``AlreadyExists``, ``Expired``...), ``message`` its text."""

    default_status = 0
    default_reason = ""

    def __init__(
        self,
        status: int | None = None,
        reason: str = "",
        message: str = "",
        details: dict | None = None,
    ) -> None:
        status = self.default_status if status is None else status
        reason = reason or self.default_reason
        super().__init__(message or reason or f"HTTP {status}")
        self.status = status
        self.reason = reason
        self.message = message or reason or f"HTTP {status}"
        self.details = details or {}

    @property
    def code(self) -> int:
        """Alias of ``status``, as ``metav1.Status.code`` names it."""
        return self.status

    @classmethod
    def from_status(cls, status: dict, http_status: int = 0) -> ApiError:
        """From a ``Status`` object (an error body, or the object of a watch ERROR event)."""
        code = int(status.get("code") or http_status or 0)
        return error_class(code, cls)(
            code, status.get("reason") or "", status.get("message") or "", status.get("details")
        )

    @classmethod
    def from_response(cls, status: int, payload: bytes | None) -> ApiError:
        """From the apiserver's Status JSON (or whatever text came back)."""
        try:
            body = orjson.loads(payload or b"")
        except orjson.JSONDecodeError:
            body = None
        if isinstance(body, dict):
            return cls.from_status({**body, "code": status}, status)
        text = (payload or b"").decode(errors="replace")[:500]
        return error_class(status, cls)(status, "", text or f"HTTP {status}")

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.reason!r}, {self.message!r})"


class NotFound(ApiError):
    """HTTP 404: the object (or its namespace) does not exist."""

    default_status = 404
    default_reason = "NotFound"


class Conflict(ApiError):
    """HTTP 409: the object changed since it was read (a resourceVersion or UID precondition
    failed; reason ``Conflict``) or a create found it already there (``AlreadyExists``)."""

    default_status = 409
    default_reason = "Conflict"


class Gone(ApiError):
    """HTTP 410: the resourceVersion (or continue token) is too old; re-list."""

    default_status = 410
    default_reason = "Expired"


class Invalid(ApiError):
    """HTTP 422: the object failed validation."""

    default_status = 422
    default_reason = "Invalid"


_BY_STATUS: dict[int, type[ApiError]] = {
    cls.default_status: cls for cls in (NotFound, Conflict, Gone, Invalid)
}


def error_class(status: int, default: type[ApiError] = ApiError) -> type[ApiError]:
    """The :class:`ApiError` subclass for an HTTP status (``default`` for the others)."""
    return _BY_STATUS.get(status, default)


__all__ = ["ApiError", "Conflict", "Gone", "Invalid", "NotFound", "error_class"]
