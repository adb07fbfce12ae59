"""The calls in flight on a ``Memory``, so that closing it waits for them.

Without it, ``close()`` from one thread while another's ``remember_many`` runs could close the
store between the write's commit and its read-back: the write was stored, and its caller was
told it failed (a caller that retries then stores it twice). Closing waits instead; a call that
starts after ``close()`` began is refused with ``StoreError``, and a call made from inside
another on the same thread (``remember`` calls ``remember_many``) always goes on.
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
    """Counts the calls in flight; ``close`` refuses new ones and waits for the rest."""

    def __init__(self, location: str) -> None:
        self._location = location
        self._changed = threading.Condition()
        self._busy = 0
        self._closing = False
        self._depth = threading.local()  # this thread's calls in flight

    @contextmanager
    def call(self) -> Iterator[None]:
        depth = getattr(self._depth, "n", 0)
        with self._changed:
            if self._closing and depth == 0:
                raise StoreError(f"{self._location}: the store is closed")
            self._busy += 1
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            with self._changed:
                self._busy -= 1
                self._changed.notify_all()

    def close(self) -> bool:
        """Refuse new calls and wait until the others' are done (not this thread's own, if
        it closes from inside a call). False when it was closed before: nothing to do."""
        mine = getattr(self._depth, "n", 0)
        with self._changed:
            if self._closing:
                return False
            self._closing = True
            try:
                self._changed.wait_for(lambda: self._busy <= mine)
            except BaseException:  # Ctrl-C while waiting: not closed, so it can be again
                self._closing = False
                raise
        return True


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
