"""One error hierarchy: the HTTP status picks the subclass, from a Status body or raw text."""

from __future__ import annotations

import orjson
import pytest

from extender.kube import ApiError, Conflict, Gone, Invalid, NotFound


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (404, NotFound),
        (409, Conflict),
        (410, Gone),
        (422, Invalid),
        (500, ApiError),
        (403, ApiError),
    ],
)
def test_status_picks_the_subclass(status: int, cls: type[ApiError]) -> None:
    body = {"kind": "Status", "code": status, "reason": "R", "message": "m"}
    error = ApiError.from_response(status, orjson.dumps(body))
    assert type(error) is cls
    assert (error.status, error.code, error.reason, error.message) == (status, status, "R", "m")
    assert type(ApiError.from_response(status, b"plain text")) is cls
    assert type(ApiError.from_status(body)) is cls


def test_subclasses_default_their_status_and_reason() -> None:
    assert (Conflict().status, Conflict().reason) == (409, "Conflict")
    assert (Gone().status, Gone().reason) == (410, "Expired")
    assert NotFound(message='pods "p" not found').status == 404
    assert str(Conflict(reason="AlreadyExists", message="exists")) == "exists"
    assert ApiError(0, "ConnectionError", "refused").status == 0


def test_text_body_becomes_the_message() -> None:
    error = ApiError.from_response(502, b"bad gateway")
    assert (error.status, error.reason, error.message) == (502, "", "bad gateway")
    assert ApiError.from_response(503, b"").message == "HTTP 503"
