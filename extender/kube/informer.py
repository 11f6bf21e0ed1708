"""List+watch of one resource, raw JSON, feeding handlers (a small client-go informer:
``tools/cache/reflector.go`` for list+watch, ``shared_informer.go`` for the handlers).

Contract:

* ``start()`` runs a daemon thread: list (paginated, consistent), then watch from the list's
  resourceVersion with bookmarks; the last resourceVersion seen (bookmarks included) is
  where the next watch resumes after the server ends one (its ``timeoutSeconds``).
* Errors (connection lost, apiserver restarting, 5xx) back off exponentially, 0.5 s doubling
  to 30 s with jitter, and resume the watch from the last resourceVersion; a failed list is
  retried the same way.
* ``410 Gone`` (on the watch request or as an ERROR event) re-lists and reconciles the store:
  an object whose resourceVersion changed is an update, a new one an add, one that vanished
  a delete (with its last known state), so handlers never miss a transition's end state.
* Handlers run in the informer's thread, in event order: ``on_add(obj)``,
  ``on_update(old, new)``, ``on_delete(obj)``. An exception in a handler is logged and never
  stops the informer. Objects are the API's dicts; handlers must not mutate them (the store
  holds the same dicts).
* ``on_forget(obj)`` (optional) gets each stored object once it has left the store (replaced by
  an update or a relist, even an unchanged one, or deleted), after the other handlers: the very
  dict readers had, so that what they derived from it by identity can go too.
* ``start(after=other)`` lists at once but delivers its first list to the handlers only once
  ``other`` has synced: informers started together fetch their lists concurrently (their
  round trips and the API server's encoding overlap, as client-go's informer factory starts
  them all at once) while their handlers still see the lists in a chosen order.
* ``store`` maps ``namespace/name`` (or ``name`` for cluster-scoped objects) to the object. It
  is written only by the informer's thread; other threads read it through ``list()``/``get()``.

(``kubernetes.watch``/``informer`` in the client build model objects for every event, which
costs milliseconds per node; the hot path here stays on dicts.)
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .errors import ApiError, Gone

log = logging.getLogger(__name__)

Handler = Callable[..., None]
# client-go picks each watch's timeout at random in [5, 10) minutes, spreading reconnects.
WATCH_TIMEOUT_SECONDS = 300
MIN_BACKOFF, MAX_BACKOFF = 0.5, 30.0
JITTER = 0.2
# A watch that ends cleanly this fast without events is treated as a failure (backed off),
# so a misbehaving server or proxy cannot make the informer spin.
MIN_HEALTHY_WATCH_SECONDS = 1.0
# Changed keys remembered for changed_since; a reader further behind compares the store.
JOURNAL_SIZE = 1024


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else meta.get("name", "")


def _version(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion", "")


def _changed(old: dict, new: dict) -> bool:
    old_version, new_version = _version(old), _version(new)
    if old_version or new_version:
        return old_version != new_version
    return old != new


def _noop(*args: Any) -> None:
    pass


def trim_managed_fields(obj: dict) -> dict:
    """The informers' default transform: drop ``metadata.managedFields``, which nothing here
    reads and which is often as large as the rest of the object (client-go's informer
    ``WithTransform``, as kube-controller-manager uses it in ``cmd/kube-controller-manager/app
    /controllermanager.go``). An update sent from such an object leaves them as they are."""
    meta = obj.get("metadata")
    if meta:
        meta.pop("managedFields", None)
    return obj


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
        on_forget: Handler | None = None,
        watch_timeout: int | None = None,
        min_backoff: float = MIN_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        page_size: int = 500,
        transform: Callable[[dict], dict] | None = trim_managed_fields,
    ) -> None:
        self.client = client
        # Applied to every object before it is stored or handed to a handler.
        self.transform = transform
        self.path = path
        self.query: dict[str, str] = {}
        if field_selector:
            self.query["fieldSelector"] = field_selector
        if label_selector:
            self.query["labelSelector"] = label_selector
        self.on_add = on_add or _noop
        self.on_update = on_update or _noop
        self.on_delete = on_delete or _noop
        self.on_forget = on_forget or _noop
        self.watch_timeout = watch_timeout
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.page_size = page_size
        self.store: dict[str, dict] = {}
        self.resource_version = ""
        self.relists = 0  # lists done (the first one included)
        self.watches = 0  # watch requests opened
        # The journal of changed keys (see changed_since): change number, key.
        self._changes = 0
        self._journal: deque[tuple[int, str]] = deque(maxlen=JOURNAL_SIZE)
        # Changes up to this number are not all in the journal (dropped, or a relist).
        self._journal_from = 0
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: Any = None
        # The informer whose first list is delivered before this one's (start(after=...)).
        self._after: Informer | None = None

    def __repr__(self) -> str:
        selector = self.query.get("fieldSelector") or self.query.get("labelSelector") or ""
        return f"Informer({self.path}{' ' + selector if selector else ''})"

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, after: Informer | None = None) -> Informer:
        """Run the list+watch thread; with ``after``, the first list is delivered to the
        handlers only once ``after`` has synced (see the module docstring)."""
        self._after = after
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.run, daemon=True, name=f"informer {self.path}"
            )
            self._thread.start()
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the thread, interrupting a watch blocked on the network."""
        self._stop.set()
        stream = self._stream
        if stream is not None and hasattr(stream, "close"):
            stream.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and timeout:
            thread.join(timeout)

    def has_synced(self) -> bool:
        """True once the first list was delivered to the handlers."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # -- reading the store from other threads ---------------------------------------------------

    def list(self) -> list[dict]:
        with self._lock:
            return list(self.store.values())

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self.store.get(key)

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return builtins.list(self.store)

    def changed_since(self, mark: int) -> tuple[int, builtins.list[str] | None]:
        """The current change number and the keys whose object changed (added, replaced,
        deleted) after change ``mark``, or ``None`` when the journal no longer tells (a
        relist, or too many changes since): then the reader compares the whole store. A
        reader that keeps something derived from the store follows it in O(changes)."""
        with self._lock:
            now = self._changes
            if mark == now:
                return now, []
            if mark < self._journal_from or mark > now:
                return now, None
            keys = []
            for number, key in reversed(self._journal):
                if number <= mark:
                    break
                keys.append(key)
            return now, keys

    def _record(self, key: str) -> None:
        """Journal a change of ``key`` (the lock held)."""
        self._changes += 1
        if len(self._journal) == self._journal.maxlen:
            # About to be dropped (a relist may have put the floor higher already).
            self._journal_from = max(self._journal_from, self._journal[0][0])
        self._journal.append((self._changes, key))

    # -- a feed that is not a watch ------------------------------------------------------------

    def feed(self, kind: str, obj: dict) -> None:
        """Apply one event (``ADDED``, ``MODIFIED``, ``DELETED``) as if the watch had delivered
        it: for an in-process API that feeds unstarted informers in order on the caller's
        thread (the replay's virtual cluster, ``extender.replay``)."""
        self._apply(kind, obj)

    def mark_synced(self) -> None:
        """Declare the first list delivered (a fed informer has no list)."""
        self._synced.set()

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        backoff = self.min_backoff
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relist()
                    need_list = False
                    backoff = self.min_backoff
                if self._stop.is_set():
                    return
                started = time.monotonic()
                delivered = self._watch()
                if delivered or time.monotonic() - started >= MIN_HEALTHY_WATCH_SECONDS:
                    backoff = self.min_backoff  # a watch that ended normally: just resume
                    continue
                raise ApiError(0, "WatchClosed", "watch ended at once without events")
            except Gone as exc:
                if self._stop.is_set():
                    return
                log.info(
                    "%r: resourceVersion %s is too old (%s); re-listing",
                    self,
                    self.resource_version,
                    exc,
                )
                need_list = True
            except Exception as exc:  # network, apiserver restart, decode: back off, resume
                if self._stop.is_set():
                    return
                delay = backoff * (1 + random.random() * JITTER)
                log.warning(
                    "%r: %s failed: %s; retrying in %.1fs",
                    self,
                    "list" if need_list else "watch",
                    exc,
                    delay,
                )
                self._stop.wait(delay)
                backoff = min(backoff * 2, self.max_backoff)

    def _relist(self) -> None:
        items, version = self.client.list(self.path, self.query, page_size=self.page_size)
        if self._stop.is_set():
            return
        if self.transform is not None:
            items = [self.transform(obj) for obj in items]
        fresh = {object_key(obj): obj for obj in items}
        after = self._after
        if after is not None and not self._synced.is_set():
            while not after._synced.wait(0.05):
                if self._stop.is_set():
                    return
        with self._lock:
            old_store = self.store
            self.store = fresh
            self.resource_version = version
            self.relists += 1
            self._changes += 1
            self._journal_from = self._changes  # every key may have changed
        for key, obj in fresh.items():
            previous = old_store.get(key)
            if previous is None:
                self._call(self.on_add, obj)
            elif _changed(previous, obj):
                self._call(self.on_update, previous, obj)
        for key, obj in old_store.items():
            if key not in fresh:
                self._call(self.on_delete, obj)
        for key, obj in old_store.items():
            if fresh.get(key) is not obj:
                self._call(self.on_forget, obj)
        self._synced.set()

    def _watch(self) -> int:
        """One watch request, until the server ends it; returns how many events it brought."""
        timeout = self.watch_timeout or int(WATCH_TIMEOUT_SECONDS * (1 + random.random()))
        stream = self.client.watch(self.path, self.resource_version, timeout, query=self.query)
        self._stream = stream
        self.watches += 1
        delivered = 0
        try:
            if self._stop.is_set():
                return delivered
            for kind, obj in stream:
                if self._stop.is_set():
                    return delivered
                delivered += 1
                self._apply(kind, obj)
        finally:
            self._stream = None
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return delivered

    def _apply(self, kind: str, obj: dict) -> None:
        if kind == "ERROR":  # a client that passes ERROR events through instead of raising
            raise ApiError.from_status(obj)
        version = _version(obj)
        if kind == "BOOKMARK":
            if version:
                self.resource_version = version
            return
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            with self._lock:
                previous = self.store.get(key)
                self.store[key] = obj
                self._record(key)
                if version:
                    self.resource_version = version
            if previous is None:
                self._call(self.on_add, obj)
            else:
                self._call(self.on_update, previous, obj)
                self._call(self.on_forget, previous)
        elif kind == "DELETED":
            with self._lock:
                previous = self.store.pop(key, None)
                self._record(key)
                if version:
                    self.resource_version = version
            self._call(self.on_delete, obj)  # the watch carries the final state
            if previous is not None:
                self._call(self.on_forget, previous)  # what readers held: not obj
        else:
            log.debug("%r: ignoring event type %r", self, kind)

    def _call(self, handler: Handler, *args: dict) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("%r: handler %s failed", self, getattr(handler, "__name__", handler))


__all__ = ["Gone", "Informer", "object_key"]
