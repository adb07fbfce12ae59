"""What the Postgres store's roles share: the connection pool, a read's connection, a write's
transaction (retried, then maintained by the upkeep thread), the tokenizer and the BM25 lists,
and the translation of the driver's errors.

Several processes and threads share one database: each call takes a pooled connection, writes
run in one transaction each (retried when Postgres breaks a deadlock between two writers), and
every statement names its namespace.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg.abc import Params
from psycopg_pool import ConnectionPool, PoolTimeout

from fivefold.errors import FivefoldError, StoreError
from fivefold.store.postgres import placement
from fivefold.store.postgres.context_rows import Deltas, MemoryGone
from fivefold.store.postgres.lexical import Lexical
from fivefold.store.postgres.upkeep import Upkeep
from fivefold.store.postgres.writer import Writer
from fivefold.store.protocol import StoreSettings
from fivefold.store.shared.tokens import Tokenizer

T = TypeVar("T")
log = logging.getLogger("fivefold.store")
POOL_SIZE = 8
# Writers that deadlock, time out waiting for a lock (``lock_timeout``: rolled back as a
# deadlock is) or find a session turn rewritten under them start again, after a jittered wait
# (without it, two writers of one session retried in step and met again).
WRITE_ATTEMPTS = 8
# A server gone: the pool's attempts to connect back off (1, 2, 4 ... s) this long, then the
# next call starts them over (psycopg_pool's default of 300 s lets the waits grow to minutes).
RECONNECT_SECONDS = 10.0
# A connection the server ended (shut down, restarted, terminated it, its idle session timed
# out) or that was lost.
_LOST = frozenset({"57P01", "57P02", "57P03", "57P05"})


def lost_connection(exc: BaseException) -> bool:
    """Not a pool that gave no connection in its time (``PoolTimeout`` is an operational error
    too): asking again would wait as long again."""
    if isinstance(exc, PoolTimeout) or not isinstance(exc, psycopg.OperationalError):
        return False
    return exc.sqlstate is None or exc.sqlstate in _LOST


class Core:
    """Opened by ``PostgresStore`` once the schema is up to date; it then sets ``upkeep``."""

    def __init__(self, url: str, *, embedding_model: str, dim: int, settings: StoreSettings):
        self.url = url
        self.location = placement.without_password(url)
        self.model = embedding_model
        self.dim = dim
        self.settings = settings
        self.tokenizer = Tokenizer()
        self.writer = Writer(settings, self.tokenizer, dim)
        self.bm25 = Lexical(self.tokenizer)
        self.pool: ConnectionPool
        self.upkeep: Upkeep

    def connect(self) -> None:
        self.pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True},
            configure=register_vector,
            reconnect_timeout=RECONNECT_SECONDS,
            open=True,
            name="fivefold",
        )

    def close(self) -> None:
        self.upkeep.close()
        self.pool.close()

    # -- errors -------------------------------------------------------------------------------
    def translate(self, exc: BaseException) -> FivefoldError | None:
        if isinstance(exc, psycopg.Error | OSError):
            return StoreError(f"{self.location}: {exc}".strip())
        return None

    def read_again(self, exc: BaseException) -> bool:
        """After a restart each idle connection of the pool was dead and failed its next call:
        the pool checks them (the dead ones replaced) and the read is made again, once."""
        if not (isinstance(exc, psycopg.Error) and lost_connection(exc)):
            return False
        self.pool.check()
        return True

    # -- connections --------------------------------------------------------------------------
    @contextmanager
    def read(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn:
            yield conn

    def rows(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """Every row one read statement gives, on a pooled connection."""
        with self.read() as conn:
            return conn.execute(sql, params).fetchall()

    def row(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row one read statement gives (None: none), on a pooled connection."""
        with self.read() as conn:
            return conn.execute(sql, params).fetchone()

    def write(self, work: Callable[[psycopg.Connection, Deltas], T]) -> T:
        """``work`` in one transaction, its gathered deltas applied last; retried when
        Postgres rolled it back (two writers deadlocked, a lock wait timed out, a session
        turn changed under it) or its BEGIN met a connection the server had ended."""
        for attempt in range(WRITE_ATTEMPTS):
            began = False
            try:
                with self.pool.connection() as conn, conn.transaction():
                    began = True
                    deltas = Deltas()
                    result = work(conn, deltas)
                    growth = deltas.flush(conn)
                break
            except (
                pg_errors.DeadlockDetected,
                pg_errors.SerializationFailure,
                pg_errors.LockNotAvailable,
                MemoryGone,
            ):
                if attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.01 * 2**attempt * random.uniform(0.5, 1.5))
            except psycopg.OperationalError as exc:  # after those: they are operational too
                # A connection the server ended while it idled in the pool (a restart,
                # ``idle_session_timeout``, a proxy's cut) fails its BEGIN: nothing was sent,
                # so the write starts again once the pool has replaced its dead ones. Not one
                # cut off later: it may have committed. (A check as each connection is handed
                # out would cost a round trip a call, and psycopg_pool waits 1, 2, 4 ... s
                # between failed ones.)
                if began or not lost_connection(exc) or attempt == WRITE_ATTEMPTS - 1:
                    raise
                self.pool.check()
        self.upkeep.ask(growth)  # after the write has returned (``upkeep.py``)
        return result
