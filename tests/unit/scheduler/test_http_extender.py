"""The HTTP extender client reads ``httpTimeout`` with the shared Go duration parser."""

from __future__ import annotations

import pytest

from extender.scheduler.http_extender import DEFAULT_HTTP_TIMEOUT, HTTPExtender


@pytest.mark.parametrize(
    ("timeout", "seconds"),
    [
        (None, DEFAULT_HTTP_TIMEOUT),
        (0.0, DEFAULT_HTTP_TIMEOUT),  # the loader's "unset"
        ("0s", DEFAULT_HTTP_TIMEOUT),
        (2.5, 2.5),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1.5s", 1.5),
    ],
)
def test_http_timeout(timeout: object, seconds: float) -> None:
    config = {"urlPrefix": "http://extender:8888"}
    if timeout is not None:
        config["httpTimeout"] = timeout
    assert HTTPExtender(config).timeout == seconds
