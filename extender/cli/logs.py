"""Logging set-up shared by the commands: text for people, JSON lines for log pipelines.

gunicorn's own lines (``kube-extender serve``) go through the same formatter
(:class:`extender.cli.serve.JSONLogger`).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import orjson

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("critical", "error", "warning", "info", "debug")

_format = "text"


class JSONFormatter(logging.Formatter):
    """One JSON object a line: ts, level, logger, msg (and exc when there is one), plus the
    record's ``fields`` (``extra={"fields": {...}}``), such as those of an access-log line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update((k, v) for k, v in fields.items() if k not in entry)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def formatter(fmt: str) -> logging.Formatter:
    return JSONFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)


def current_format() -> str:
    """The format ``setup`` was given (``text`` before it is called)."""
    return _format


def setup(level: str = "info", fmt: str = "text") -> None:
    global _format
    _format = fmt
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
