"""The last decision about each pending pod, and (opt-in ``--record-decisions``) that
decision written where ``kubectl describe pod`` shows it.

* :attr:`Decisions.last`: pod key -> the last summary (bounded: the most recent
  :data:`MAX_PODS` pods), always kept.
* With a writer: the summary as the pod annotation ``kube-extender.io/last-decision`` (JSON,
  at most :data:`MAX_ANNOTATION_BYTES`) and the FailedScheduling event note extended with the
  per-node reasons (cut to the API's 1 KiB note limit by the event recorder).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from extender.framework.schedule import FitError

log = logging.getLogger(__name__)

ANNOTATION = "kube-extender.io/last-decision"
MAX_ANNOTATION_BYTES = 4096
MAX_NOTE_BYTES = 1024
MAX_PODS = 10_000
SUMMARY_VERSION = 1


def summarize(
    fit: FitError, limit: int = MAX_ANNOTATION_BYTES, message: str | None = None
) -> dict[str, Any]:
    """Rejections grouped by (plugin, reasons), largest first, with the nodes' names; node
    lists are shortened until the JSON fits ``limit`` bytes. ``message``: ``str(fit)``, when
    the caller has it."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    diagnosis = fit.diagnosis
    for name, status in diagnosis.node_to_status.items():
        groups.setdefault((status.plugin, tuple(status.reasons)), []).append(name)
    absent = fit.num_all_nodes - len(diagnosis.node_to_status)
    rejected = [
        {"plugin": plugin, "reasons": list(reasons), "count": len(names), "nodes": sorted(names)}
        for (plugin, reasons), names in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    ]
    if diagnosis.absent_status is not None and absent > 0:
        rejected.append(
            {
                "plugin": diagnosis.absent_status.plugin,
                "reasons": list(diagnosis.absent_status.reasons),
                "count": absent,
                "nodes": [],
            }
        )
    summary: dict[str, Any] = {
        "version": SUMMARY_VERSION,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "numNodes": fit.num_all_nodes,
        "fitError": str(fit) if message is None else message,
        "rejected": rejected,
    }
    keep = max((len(g["nodes"]) for g in rejected), default=0)
    while len(json.dumps(summary, separators=(",", ":")).encode()) > limit:
        if keep == 0:
            summary["rejected"] = summary["rejected"][:-1]
            if not summary["rejected"]:
                summary["fitError"] = summary["fitError"][: limit // 2]
                break
            continue
        keep //= 2
        for group in rejected:
            group["nodes"] = group["nodes"][:keep]
    return summary


def note(fit: FitError, summary: dict[str, Any]) -> str:
    """The FitError message, then per-node reasons (``node: Plugin: reason``) as far as the
    1 KiB note allows."""
    text = str(fit)
    parts: list[str] = []
    for group in summary["rejected"]:
        for name in group["nodes"]:
            parts.append(f"{name}: {group['plugin']}: {'; '.join(group['reasons'])}")
    if parts:
        text += " Per node: " + ", ".join(parts)
    data = text.encode()
    return (
        text
        if len(data) <= MAX_NOTE_BYTES
        else data[: MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."
    )


class Decisions:
    """Kept by the scheduler loop; ``writer`` (a client with ``request``) turns on recording."""

    def __init__(self, writer: Any = None) -> None:
        self.writer = writer
        self.last: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def failed(self, pod: dict, fit: FitError, message: str) -> str:
        """Remember the decision; returns the event note to record."""
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta.get("name", "")
        summary = summarize(fit, message=message)
        with self._lock:
            self.last[f"{namespace}/{name}"] = summary
            self.last.move_to_end(f"{namespace}/{name}")
            while len(self.last) > MAX_PODS:
                self.last.popitem(last=False)
        if self.writer is None:
            return message
        value = json.dumps(summary, separators=(",", ":"))
        try:
            self.writer.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                {"metadata": {"annotations": {ANNOTATION: value}}},
                content_type="application/merge-patch+json",
            )
        except Exception:
            log.warning("annotating %s/%s failed", namespace, name, exc_info=True)
        return note(fit, summary)

    def forget(self, pod: dict) -> None:
        meta = pod.get("metadata") or {}
        with self._lock:
            self.last.pop(f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}", None)
