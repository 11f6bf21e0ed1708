"""The LRU of compiled selectors (upstream ``k8s.io/dynamic-resource-allocation/cel/cache.go``)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from .compile import CompilationResult, compile_expression

# The scheduler keeps the 10 most recently used expressions (dynamicresources.go,
# cel.NewCache(10, ...)).
DEFAULT_CACHE_SIZE = 10


class CELCache:
    """An LRU of compiled expressions (``Cache`` of cache.go); thread-safe.

    As upstream, only successful compilations are kept: a broken expression is compiled again
    each time (the error is cheap to get and must not push good entries out).
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_SIZE) -> None:
        self._max_entries = max(1, max_entries)
        self._entries: OrderedDict[str, CompilationResult] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompilationResult:
        with self._lock:
            cached = self._entries.get(expression)
            if cached is not None:
                self._entries.move_to_end(expression)
                return cached
            # Compiling under the lock: compiling twice in parallel costs more than waiting.
            result = compile_expression(expression)
            if result.error is None:
                self._entries[expression] = result
                if len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
            return result

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
