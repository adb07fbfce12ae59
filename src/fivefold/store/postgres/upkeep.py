"""The vacuums and planner statistics a write's growth asks for (``context_rows.Growth``), run
on a thread of their own after the write has returned.

A VACUUM of the postings reads the whole table: the write that crossed a growth step used to
wait for it (at 100k memories a ``remember`` took seconds longer once every ~12,000 memories;
the vacuum grows with the table). The write is committed by then, and what the upkeep does
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
    ) -> None:
        self._connection = connection
        self._location = location
        self._lock = threading.Lock()
        self._wanted = Growth()
        self._thread: threading.Thread | None = None
        self._running: psycopg.Connection | None = None  # the upkeep's, to cancel on close
        self._closed = False  # no more asked for
        self._cancelled = False  # nor done: ``close`` waited long enough

    def ask(self, growth: Growth) -> None:
        """Run what ``growth`` asks for soon, on the upkeep thread (inline when no thread can
        start: the interpreter is shutting down)."""
        if not (growth.analyze or growth.vacuum):
            return
        with self._lock:
            if self._closed:
                return
            self._wanted = Growth(
                analyze=self._wanted.analyze or growth.analyze,
                vacuum=self._wanted.vacuum or growth.vacuum,
            )
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
                if self._cancelled or not (growth.analyze or growth.vacuum):
                    if self._thread is threading.current_thread():
                        self._thread = None
                    return
            self.run(growth)

    def run(self, growth: Growth) -> None:
        """What ``growth`` asks for, now, on this thread (outside any transaction: VACUUM
        cannot run inside one)."""
        try:
            with self._connection() as conn:
                with self._lock:
                    if self._cancelled:
                        return
                    self._running = conn
                try:
                    if growth.vacuum:
                        conn.execute(schema.VACUUM)
                    if growth.analyze:
                        conn.execute(schema.ANALYZE)
                finally:
                    with self._lock:
                        self._running = None
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled) and self._cancelled:
                log.info("%s: the store closed during its upkeep (cancelled)", self._location)
                return
            log.warning("%s: refreshing statistics after a write failed: %s", self._location, exc)

    def close(self) -> None:
        """No upkeep asked for after this; what was asked before is waited for up to
        ``CLOSE_WAIT_S``, then cancelled (the server stops the statement; autovacuum does the
        work later)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join(CLOSE_WAIT_S)
        if thread.is_alive():
            with self._lock:
                self._cancelled = True
                running = self._running
            if running is not None:
                try:
                    running.cancel_safe()
                except psycopg.Error as exc:  # the statement may have ended meanwhile
                    log.info("%s: cancelling the upkeep: %s", self._location, exc)
            thread.join()
