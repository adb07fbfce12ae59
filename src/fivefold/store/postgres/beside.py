"""Work computed on a thread of its own while the writer's thread sends statements: a bulk
write's client half (the older turns' changes, counted and formatted) and its server half (the
new postings' COPY, during which the writer waits on the socket without the GIL) then overlap
on two cores instead of taking turns.

The thread computes only: every statement stays on the writer's thread, so Ctrl-C, a failure or
a retry there leaves nothing running on the connection (a COPY sent from the thread could run
after an interrupt's rollback). A small write computes inline: starting a thread costs more
than it would overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["THREADED_FROM", "Beside"]

T = TypeVar("T")
THREADED_FROM = 256  # memories in a write from which its work is computed beside it


class Beside(Generic[T]):
    """``work()`` started on a daemon thread when ``threaded`` (else run by ``result``);
    ``result()`` waits for it and returns its value or raises its error. The work must not
    touch the connection. Abandoned (the write failed first), it ends on its own."""

    def __init__(self, work: Callable[[], T], *, threaded: bool) -> None:
        self._work = work
        self._done: list[T] = []
        self._failed: list[BaseException] = []
        self._thread: threading.Thread | None = None
        if threaded:
            thread = threading.Thread(target=self._run, name="fivefold-beside", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no new thread (the interpreter is shutting down): inline
                return
            self._thread = thread

    def _run(self) -> None:
        try:
            self._done.append(self._work())
        except BaseException as exc:  # handed to ``result``'s caller
            self._failed.append(exc)

    def result(self) -> T:
        if self._thread is None:
            return self._work()
        self._thread.join()
        if self._failed:
            raise self._failed[0]
        return self._done[0]
