"""The pod budget: the most time one scheduling attempt of one pod may take.

Upstream has no such bound (only DynamicResources' ``filterTimeout``, per Filter call); a
Python scheduler needs one, because one pod whose objects make a plugin slow (a pathological
selector, thousands of tolerations, a claim whose devices take minutes to search) would
otherwise hold the one scheduling thread, and every other pod with it.

Two parts, so that neither a slow loop nor one long call defeats it:

- **Cooperative.** :meth:`CycleState.deadline` (a ``time.monotonic()`` value, ``None``: no
  budget) is set when the attempt starts. The runtime checks it before every node's Filter
  and every Score plugin; long-running plugins check it where their work happens
  (DynamicResources hands ``min(filterTimeout, deadline)`` to the device search, which checks
  it between devices and selector evaluations). A plugin author's long loop can call
  :func:`check` (or compare ``state.deadline`` with ``time.monotonic()``).
- **Enforced.** While an attempt runs under :func:`enforced`, a watchdog thread raises
  :class:`BudgetExceeded` in the scheduling thread once the deadline has passed by
  :data:`GRACE` seconds, and again every :data:`REPEAT` seconds while the attempt still runs
  (a plugin that swallows it with ``except Exception`` gets :class:`BudgetInterrupt`, which
  only the shell catches). The exception is raised between two
  Python bytecodes (CPython's ``PyThreadState_SetAsyncExc``): a call blocked in C code (a
  socket read, ``time.sleep``, one CEL evaluation in the C++ runtime) ends first. Raised
  inside a plugin, the failure contract makes it an Error status naming the plugin
  (``running "X" filter plugin: BudgetExceeded: ...``); the attempt fails and the pod is
  retried with backoff, as after any Error.

Only the computing part of an attempt runs under the watchdog (PreFilter to PostFilter),
never the API writes and cache updates that follow (assume, reserve, bind); PostFilter's
evictions run :func:`suspended` (a request cut half-way is worse than a late one).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# How long past the deadline the watchdog waits before raising (the cooperative checks
# answer first, with their own message), and how often it raises again.
GRACE = 0.25
REPEAT = 0.5
_TICK = 0.05


class _OutOfBudget(BaseException):
    """The text and the budget's length, shared by the two exceptions below."""

    seconds: float = 0.0  # the watchdog's subclasses set it (see _class_for)

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = type(self).seconds if seconds is None else seconds
        super().__init__(f"the pod's scheduling budget of {self.seconds:g}s ran out")


class BudgetExceeded(_OutOfBudget, Exception):
    """A pod's scheduling attempt ran past its budget."""


class BudgetInterrupt(_OutOfBudget):
    """What the watchdog raises when a :class:`BudgetExceeded` it raised was swallowed (a
    plugin's ``except Exception``): not an ``Exception``, so only the shell catches it."""


# What a shell catches around an attempt run under enforced().
OVER = (BudgetExceeded, BudgetInterrupt)


def overran() -> BudgetExceeded | None:
    """The exception to raise if the watchdog has already raised into this thread's attempt.

    For code that runs under a layer that turns exceptions into values (the CEL runtime makes
    a Python exception in a library function an error value, which ``e && false`` absorbs): it
    asks here, at its next step, whether the attempt is over.
    """
    entry = WATCHDOG._armed.get(threading.get_ident())
    if entry is None or not entry[2]:
        return None
    return BudgetExceeded(entry[1])


def check(state: Any) -> None:
    """Raise :class:`BudgetExceeded` if ``state``'s deadline has passed."""
    deadline = state.deadline
    if deadline is not None and time.monotonic() > deadline:
        raise BudgetExceeded(state.budget)


def expired(state: Any) -> bool:
    deadline = state.deadline
    return deadline is not None and time.monotonic() > deadline


# PyThreadState_SetAsyncExc takes an exception class: one subclass per budget, so that the
# exception raised by the watchdog still says how long the budget was.
_classes: dict[tuple[type, float], type[BaseException]] = {}


def _class_for(base: type[BudgetExceeded] | type[BudgetInterrupt], seconds: float) -> type:
    cls = _classes.get((base, seconds))
    if cls is None:
        cls = _classes[(base, seconds)] = type(base.__name__, (base,), {"seconds": seconds})
    return cls


def _raise_in(ident: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in thread ``ident`` at its next bytecode; ``None`` withdraws one pending."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(exc) if exc is not None else None
    )


class _Watchdog:
    """One thread for the process: the armed attempts, by thread, and when each is due."""

    def __init__(self) -> None:
        self.reset()
        self.raised = 0  # how many times it raised (tests and metrics read it)

    def reset(self) -> None:
        """Nothing armed, no thread (also in a forked child: the parent's thread is not there)."""
        self._lock = threading.Lock()
        # thread ident -> [due (monotonic), budget seconds, raised at least once]
        self._armed: dict[int, list[Any]] = {}
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, seconds: float) -> None:
        with self._lock:
            self._armed[threading.get_ident()] = [deadline + GRACE, seconds, False]
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="pod-budget")
                self._thread.start()

    def disarm(self) -> list[Any] | None:
        """Stop watching this thread; its entry (for :meth:`resume`), if it was armed."""
        ident = threading.get_ident()
        while True:
            try:
                with self._lock:
                    entry = self._armed.pop(ident, None)
                    if entry is not None and entry[2]:
                        _raise_in(ident, None)  # one still pending is withdrawn
                return entry
            except OVER:
                # Delivered while disarming: at the end of an attempt, it is over; in
                # suspended(), resume() raises again if the budget has run out.
                continue

    def resume(self, entry: list[Any] | None) -> None:
        if entry is not None:
            with self._lock:
                self._armed[threading.get_ident()] = entry

    def _run(self) -> None:
        while True:
            time.sleep(_TICK)
            now = time.monotonic()
            with self._lock:
                for ident, entry in self._armed.items():
                    if now >= entry[0]:
                        # First an Exception (the runtime names the plugin it ended);
                        # if that was swallowed, one no `except Exception` catches.
                        base = BudgetInterrupt if entry[2] else BudgetExceeded
                        _raise_in(ident, _class_for(base, entry[1]))
                        entry[0] = now + REPEAT
                        entry[2] = True
                        self.raised += 1


WATCHDOG = _Watchdog()
# A forked child (a gunicorn worker) has no watchdog thread: it starts its own at its first arm.
os.register_at_fork(after_in_child=WATCHDOG.reset)


@contextmanager
def enforced(state: Any, seconds: float | None) -> Iterator[None]:
    """Run the block as one attempt with a budget of ``seconds`` (``None`` or 0: none).

    Sets ``state.deadline``; the block may end with :class:`BudgetExceeded` or
    :class:`BudgetInterrupt` (catch :data:`OVER`; the caller treats it as an Error of the
    attempt).
    """
    if not seconds:
        yield
        return
    deadline = time.monotonic() + seconds
    state.deadline = deadline
    state.budget = seconds
    WATCHDOG.arm(deadline, seconds)
    try:
        yield
    finally:
        WATCHDOG.disarm()


@contextmanager
def suspended() -> Iterator[None]:
    """A block the watchdog never interrupts (API writes: a request cut half-way is worse
    than a late one). The runtime's checks still see the deadline; the watchdog resumes
    after the block, raising at once if the budget ran out meanwhile."""
    entry = WATCHDOG.disarm()
    try:
        yield
    finally:
        WATCHDOG.resume(entry)
