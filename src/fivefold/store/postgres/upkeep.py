"""The vacuums, planner statistics and list compactions a write's growth asks for
(``context_rows.Growth``), run on a thread of their own after the write has returned.

A VACUUM of the postings reads the whole table: a write that crossed a growth step and waited
for it would take seconds longer on a large store (the vacuum grows with the table). The write
is committed by then, and what the upkeep does
(the visibility map, for index-only scans of the postings; the statistics, for plans) only
makes later reads faster, so nobody needs to wait for it. One upkeep runs at a time; growth
asked for meanwhile is gathered into the next. A failure is logged, not raised: autovacuum does
the same work later. ``close`` waits for the upkeep asked for before it up to ``CLOSE_WAIT_S``,
then cancels it on the server.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

import psycopg

from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import Growth

__all__ = ["CLOSE_WAIT_S", "Upkeep"]

log = logging.getLogger("fivefold.store")
CLOSE_WAIT_S = 10.0


class Upkeep:
    """A store's upkeep thread, started when asked and ended when nothing is left to do."""

    def __init__(
        self,
        connection: Callable[[], AbstractContextManager[psycopg.Connection]],
        location: str,
        compact: Callable[[str, Callable[[], bool]], object],
    ) -> None:
        self._connection = connection
        self._location = location
        self._compact = compact  # a namespace's lists, until the callable says stop
        self._lock = threading.Lock()
        self._wanted = Growth()
        self._thread: threading.Thread | None = None
        self._running: psycopg.Connection | None = None  # the upkeep's, to cancel on close
        self._closed = False  # no more asked for
        self._cancelled = False  # nor done: ``close`` waited long enough

    def ask(self, growth: Growth) -> None:
        """Run what ``growth`` asks for soon, on the upkeep thread (inline when no thread can
        start: the interpreter is shutting down; then, as before this thread, the write waits
        for it, and ``close`` does not know of it)."""
        if not growth:
            return
        with self._lock:
            if self._closed:
                return
            self._wanted |= growth
            if self._thread is not None:
                return  # the running thread takes it next
            thread = threading.Thread(target=self._work, name="fivefold-upkeep", daemon=True)
            self._thread = thread
            try:
                thread.start()
            except RuntimeError:
                self._thread = None
            else:
                return
        self._work()

    def _work(self) -> None:
        while True:
            with self._lock:
                growth, self._wanted = self._wanted, Growth()
                if self._cancelled or not growth:
                    if self._thread is threading.current_thread():
                        self._thread = None
                    return
            self.run(growth)

    def run(self, growth: Growth) -> None:
        """What ``growth`` asks for, now, on this thread (outside any transaction: VACUUM
        cannot run inside one). The statistics first: they are what plans need, and a vacuum
        cancelled by ``close`` or failing must not take them along; the compactions before the
        vacuum, which then clears the rows they replaced (each is a write of its own, stopped
        between two of its transactions by ``close``). Nothing raises from here: a dead
        upkeep thread would hold its slot, and no upkeep would run again."""
        try:
            if growth.analyze:
                self._statement(schema.ANALYZE)
            for namespace in sorted(growth.compact):
                if self._cancelled:
                    return
                try:
                    self._compact(namespace, lambda: self._cancelled)
                except psycopg.Error as exc:
                    self._failed(exc)
            if growth.vacuum:
                self._statement(schema.VACUUM)
        except psycopg.Error as exc:  # no connection
            self._failed(exc)
        except Exception:
            log.exception("%s: the upkeep after a write failed", self._location)

    def _statement(self, statement: str) -> None:
        with self._connection() as conn:
            with self._lock:
                if self._cancelled:  # checked before each: a cancel between two statements
                    return  # reaches neither
                self._running = conn
            try:
                conn.execute(statement)
            except psycopg.Error as exc:
                self._failed(exc)
            finally:
                with self._lock:
                    self._running = None

    def _failed(self, exc: psycopg.Error) -> None:
        if isinstance(exc, psycopg.errors.QueryCanceled) and self._cancelled:
            log.info("%s: the store closed during its upkeep (cancelled)", self._location)
        else:
            log.warning("%s: the upkeep after a write failed: %s", self._location, exc)

    def close(self) -> None:
        """No upkeep asked for after this; what was asked before is waited for up to
        ``CLOSE_WAIT_S``, then cancelled (the server stops the statement; autovacuum does the
        work later), again every half second until the thread has ended (a cancel that
        arrives between two statements stops nothing). Interrupted, the upkeep is as it was:
        the store stays open (``gate.py``), and so does its upkeep."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        try:
            thread.join(CLOSE_WAIT_S)
            while thread.is_alive():
                with self._lock:
                    self._cancelled = True
                    running = self._running
                if running is not None:
                    try:
                        running.cancel_safe(timeout=5.0)
                    except psycopg.Error as exc:  # the statement may have ended meanwhile
                        log.info("%s: cancelling the upkeep: %s", self._location, exc)
                thread.join(0.5)
        except BaseException:
            with self._lock:
                self._closed = self._cancelled = False
            raise
