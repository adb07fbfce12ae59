"""A bulk write's statements sent in order from a thread of their own, so that the server works
on one while the writer's thread prepares the next (counts tokens, formats postings): the
write's client half and server half then overlap on two cores instead of taking turns. The
sending thread waits on the socket without the GIL.

Only the statements are sent from the thread; everything they need is computed before they
are queued, and nothing the writer's thread does meanwhile touches the connection (it could:
psycopg serialises its use, the writer would just wait). A small write sends inline: starting
a thread costs more than it would overlap (a single ``remember``: median 3.3 -> 3.7 ms with
a thread, a reviewer's measure)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import TracebackType

import psycopg

__all__ = ["THREADED_FROM", "Sender"]

THREADED_FROM = 256  # memories in a write from which its statements go from a thread


class Sender:
    """Statements queued with ``send`` run one after the other, in order: on one thread of
    their own when ``threaded``, else at once. Leaving the ``with`` block waits for all of them
    and raises the first one's error (after a failed statement the transaction is aborted, and
    the ones after it fail for that). When the block itself raises, the statement running is
    waited for (the connection is not handed back mid-statement), the ones not started are
    dropped, and the block's error is the one raised."""

    def __init__(self, conn: psycopg.Connection, *, threaded: bool) -> None:
        self._conn = conn
        self._thread = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="fivefold-send")
            if threaded
            else None
        )
        self._sent: list[Future[None]] = []

    def send(self, statement: Callable[[psycopg.Connection], None]) -> None:
        if self._thread is not None:
            try:
                self._sent.append(self._thread.submit(statement, self._conn))
                return
            except RuntimeError:
                # No new threads once the interpreter is shutting down (a write from a
                # thread outliving the main one, or from an ``atexit`` handler): inline,
                # after what was sent before.
                self._drain(cancel=False)
                self._thread = None
                for sent in self._sent:
                    sent.result()  # a failure before this statement is the one to raise
        statement(self._conn)

    def __enter__(self) -> Sender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._drain(cancel=error is not None)
        if error is not None:
            return
        for sent in self._sent:
            sent.result()  # the first failure, as it was raised

    def _drain(self, *, cancel: bool) -> None:
        """Wait until every statement sent has run or, with ``cancel``, been dropped before it
        started. None is left behind: an interrupt while waiting (Ctrl-C) drops those not
        started, still waits for the one running, and is raised after it; else a statement
        would run after the write's transaction was rolled back, on a connection that then
        commits each statement, or that the pool has lent to another write (a hostile pass's
        repro). The futures are waited on, not the thread: a ``join`` interrupted in Python
        3.11 takes the thread for stopped while it runs."""
        if self._thread is None:
            return
        interrupted: BaseException | None = None
        while True:
            try:
                if cancel:
                    for sent in self._sent:
                        sent.cancel()  # a statement running or done is not
                wait(self._sent)
                break
            except BaseException as exc:  # a signal's exception, raised again below
                interrupted = interrupted or exc
                cancel = True
        self._thread.shutdown(wait=True)  # idle now: it only has to stop
        if interrupted is not None:
            raise interrupted
