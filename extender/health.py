"""``/healthz`` and ``/readyz``: one answer for ``run``, ``serve`` and serve's health listener.

The Kubernetes components' convention (k8s.io/apiserver ``pkg/server/healthz``, which
kube-scheduler serves): ``200``, ``ok`` as ``text/plain; charset=utf-8`` with
``X-Content-Type-Options: nosniff``. Not ready is ``503`` with the reason as text (upstream
answers a failed check 500; a probe fails on either, and 503 says "not yet").
"""

from __future__ import annotations

CONTENT_TYPE = "text/plain; charset=utf-8"
HEADERS = (("Content-Type", CONTENT_TYPE), ("X-Content-Type-Options", "nosniff"))
OK = b"ok"
NOT_READY = b"not ready: informers not synced"


def healthz() -> tuple[int, bytes]:
    return 200, OK


def readyz(ready: bool) -> tuple[int, bytes]:
    return (200, OK) if ready else (503, NOT_READY)
