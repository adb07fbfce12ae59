"""WAL checkpoints on a thread of their own.

SQLite's automatic checkpoint runs inside the COMMIT that crosses its threshold (1,000 pages):
a bulk write of 2,000 memories (~15 MB of pages) then waits at every commit while the pages are
copied into the database file and the file is synced, a good share of bulk ingest.
Here the write connection's automatic checkpoint is off, and after each commit this thread runs
a PASSIVE checkpoint on a connection of its own: it waits for no reader or writer, and SQLite
leaves the GIL while it copies, so it runs on another core while the writer prepares its next
batch.

What a crash can lose does not change: a commit is in the WAL before it is acknowledged
(``synchronous = FULL``, ``WriteConfig.durable``: synced there, so a power cut loses nothing
acknowledged either; with ``NORMAL`` a killed process loses nothing, a power cut the last
commits before a checkpoint's sync); a checkpoint only moves committed pages from the WAL into
the file, and a crash in the middle of one is SQLite's ordinary recovery. Should this thread
fall behind, the WAL grows until it catches up; other processes' connections keep SQLite's
automatic checkpoint.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import weakref

__all__ = ["Checkpointer"]

# After a checkpoint, the next one waits at least this long: a stream of one-memory writes
# then costs a checkpoint (and its fsync) a few times a second, not one per write.
MIN_GAP_S = 0.2


class Checkpointer:
    """Checkpoints the WAL of the database at ``path`` after writes (``wrote``), on a daemon
    thread, until ``close`` (or until it is garbage-collected: a store that was never closed
    leaves no thread behind). Its connection is opened here, so a store that cannot open one
    keeps SQLite's automatic checkpoint (``sqlite3.Error`` is raised)."""

    def __init__(self, path: str) -> None:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._wake = threading.Event()
        self._stop = threading.Event()
        # The thread holds the events and the connection, never this object, so dropping the
        # object (its store unclosed) stops the thread through the finalizer.
        self._thread = threading.Thread(
            target=_run,
            args=(conn, self._wake, self._stop),
            name="fivefold-checkpoint",
            daemon=True,
        )
        self._thread.start()
        self._finalizer = weakref.finalize(self, _stop_thread, self._wake, self._stop)

    def wrote(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._finalizer()
        self._thread.join()


def _stop_thread(wake: threading.Event, stop: threading.Event) -> None:
    stop.set()
    wake.set()


def _run(conn: sqlite3.Connection, wake: threading.Event, stop: threading.Event) -> None:
    try:
        while True:
            wake.wait()
            if stop.is_set():
                return
            wake.clear()
            # A failed checkpoint (a full disk, say) loses nothing: the pages stay in the WAL,
            # readers find them there, and the next commit tries again. Nothing may end this
            # loop but ``stop``: the writer's own automatic checkpoint is off.
            with contextlib.suppress(Exception):
                _checkpoint(conn)
            stop.wait(MIN_GAP_S)
    finally:
        conn.close()


def _checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
