"""Structured logs: one JSON object a line."""

from __future__ import annotations

import json
import logging

from extender.cli.logs import JSONFormatter


def test_json_lines() -> None:
    record = logging.LogRecord(
        "extender.scheduler", logging.INFO, __file__, 1, "pod %s", ("a/b",), None
    )
    entry = json.loads(JSONFormatter().format(record))
    assert entry["level"] == "info" and entry["logger"] == "extender.scheduler"
    assert entry["msg"] == "pod a/b" and entry["ts"].endswith("+00:00")
