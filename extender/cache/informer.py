"""List+watch of one resource, raw JSON, feeding handlers (a small client-go informer).

It lists, then watches from the list's resourceVersion (bookmarks keep it fresh), reconnects
with exponential backoff after errors, and on ``410 Gone`` re-lists and reconciles its store:
objects that changed are updates, new ones adds, vanished ones deletes. Handlers run in the
informer's thread; an exception in a handler is logged and never stops the informer.

(``kubernetes.informer`` in the client 37.x builds model objects for every event, which costs
milliseconds per node; the hot path here stays on dicts.)
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Handler = Callable[..., None]
WATCH_TIMEOUT_SECONDS = 300
MIN_BACKOFF, MAX_BACKOFF = 0.5, 30.0


class Gone(Exception):
    """The watch's resourceVersion is too old (HTTP 410): re-list."""


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else meta.get("name", "")


def _noop(*args: Any) -> None:
    pass


class Informer:
    def __init__(
        self,
        client: Any,
        path: str,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        on_add: Handler | None = None,
        on_update: Handler | None = None,
        on_delete: Handler | None = None,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self.client = client
        self.path = path
        self.query: dict[str, str] = {}
        if field_selector:
            self.query["fieldSelector"] = field_selector
        if label_selector:
            self.query["labelSelector"] = label_selector
        self.on_add = on_add or _noop
        self.on_update = on_update or _noop
        self.on_delete = on_delete or _noop
        self.watch_timeout = watch_timeout
        self.store: dict[str, dict] = {}
        self.resource_version = ""
        self.relists = 0
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Informer:
        self._thread = threading.Thread(target=self.run, daemon=True, name=f"informer {self.path}")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        backoff = MIN_BACKOFF
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relist()
                    need_list = False
                self._watch()
                backoff = MIN_BACKOFF  # a watch that ended normally (timeout): just resume
            except Gone:
                log.info(
                    "%s: resourceVersion %s is gone; re-listing", self.path, self.resource_version
                )
                need_list = True
            except Exception as exc:  # network, apiserver restart, decode: back off, resume
                if self._stop.is_set():
                    return
                log.warning("%s: %s; retrying in %.1fs", self.path, exc, backoff)
                self._stop.wait(backoff * (1 + random.random() * 0.2))
                backoff = min(backoff * 2, MAX_BACKOFF)
                status = getattr(exc, "status", None)
                if status == 410:
                    need_list = True

    def _relist(self) -> None:
        items, version = self.client.list(self.path, self.query)
        fresh = {object_key(obj): obj for obj in items}
        old_store = self.store
        self.store = fresh
        self.relists += 1
        for key, obj in fresh.items():
            previous = old_store.get(key)
            if previous is None:
                self._call(self.on_add, obj)
            elif _version(previous) != _version(obj):
                self._call(self.on_update, previous, obj)
        for key, obj in old_store.items():
            if key not in fresh:
                self._call(self.on_delete, obj)
        self.resource_version = version
        self._synced.set()

    def _watch(self) -> None:
        events = self.client.watch(
            self.path, self.resource_version, self.watch_timeout, query=self.query
        )
        for kind, obj in events:
            if self._stop.is_set():
                return
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone(obj.get("message", "gone"))
                raise RuntimeError(f"watch error: {obj.get('message', obj)}")
            version = _version(obj)
            if kind == "BOOKMARK":
                self.resource_version = version or self.resource_version
                continue
            key = object_key(obj)
            if kind == "ADDED":
                previous = self.store.get(key)
                self.store[key] = obj
                if previous is None:
                    self._call(self.on_add, obj)
                else:
                    self._call(self.on_update, previous, obj)
            elif kind == "MODIFIED":
                previous = self.store.get(key)
                self.store[key] = obj
                if previous is None:
                    self._call(self.on_add, obj)
                else:
                    self._call(self.on_update, previous, obj)
            elif kind == "DELETED":
                previous = self.store.pop(key, None)
                self._call(self.on_delete, previous or obj)
            if version:
                self.resource_version = version

    def _call(self, handler: Handler, *args: dict) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("%s: handler %s failed", self.path, getattr(handler, "__name__", handler))


def _version(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion", "")
