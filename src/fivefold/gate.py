"""The calls in flight on a ``Memory``, so that closing it waits for them.

Without it, ``close()`` from one thread while another's call ran closed the store under that
call: a write could commit and its caller then be told it failed (a caller that retries stores
it twice). Closing waits instead; a call that starts after ``close()`` began is refused with
``StoreError``, and a call made from inside another on the same thread (``remember`` calls
``remember_many``) always goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, Protocol, TypeVar, cast

from fivefold.errors import StoreError

P = ParamSpec("P")
R = TypeVar("R")


class Gate:
    """Counts each thread's calls in flight; ``close`` refuses new ones and waits for the
    other threads' to end, then closes once (a second closer waits for the first)."""

    def __init__(self, location: str) -> None:
        self._location = location
        self._changed = threading.Condition()
        self._calls: dict[int, int] = {}  # thread -> its calls in flight
        self._state = _OPEN

    @contextmanager
    def call(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._changed:
            if self._state != _OPEN and me not in self._calls:
                raise StoreError(f"{self._location}: the store is closed")
            self._calls[me] = self._calls.get(me, 0) + 1
        try:
            yield
        finally:
            with self._changed:
                left = self._calls.pop(me) - 1
                if left:
                    self._calls[me] = left
                self._changed.notify_all()

    def close(self, closing: Callable[[], None]) -> None:
        """Refuse new calls, wait until no other thread has one in flight, then run
        ``closing`` once. The closing thread's own calls are not waited for: a call that
        closes its own ``Memory``, or a count a Ctrl-C cut out of the bookkeeping (it reaches
        the main thread only; so a close from another thread could wait on it). Another
        closer meanwhile waits for the first; an interrupted close can be made again."""
        me = threading.get_ident()
        with self._changed:
            self._changed.wait_for(lambda: self._state != _CLOSING)
            if self._state == _CLOSED:
                return
            self._state = _CLOSING
        done = False
        try:
            with self._changed:
                self._changed.wait_for(lambda: all(t == me for t in self._calls))
            closing()
            done = True
        finally:
            with self._changed:
                self._state = _CLOSED if done else _OPEN
                self._changed.notify_all()


_OPEN, _CLOSING, _CLOSED = 0, 1, 2


class Gated(Protocol):
    _gate: Gate


def gated(method: Callable[P, R]) -> Callable[P, R]:
    """A method that counts as a call in flight on its object's (``Gated``) gate."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        owner = cast(Gated, args[0])
        with owner._gate.call():
            return method(*args, **kwargs)

    return call


__all__ = ["Gate", "gated"]
