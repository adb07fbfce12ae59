"""What the embedded store's roles share: one connection serialized by a lock (SQLite would
serialize writes anyway), a second one for the graph and temporal legs, the transactions, the
derived indexes (lexical and dense) kept in step with the rows, and the translation of SQLite's
errors into the store's words."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fivefold.errors import FivefoldError, StoreError
from fivefold.store.protocol import StoreSettings
from fivefold.store.sqlite import files, schema, vector_sync
from fivefold.store.sqlite.checkpoint import Checkpointer
from fivefold.store.sqlite.context_rows import SQLiteContextRows
from fivefold.store.sqlite.dense import NamespaceIndex
from fivefold.store.sqlite.graph_saves import GraphSaves
from fivefold.store.sqlite.lexical import LexicalIndexes
from fivefold.store.sqlite.snapshot import snapshot
from fivefold.store.sqlite.writer import Writer

log = logging.getLogger("fivefold.store")
Params = Sequence[Any] | Mapping[str, Any]  # positional (?) or named (:name)
# Transactions between prunings of the vector change log (a range delete on its key).
LOG_PRUNE_EVERY = 256


class Core:
    """Opened by ``SQLiteStore``, which then sets ``store_id``, the lexical indexes and the
    side connection (``attach``) once the schema is known to be fivefold's."""

    def __init__(self, path: str, *, embedding_model: str, dim: int, settings: StoreSettings):
        self.path = path
        self.settings = settings
        self.model = embedding_model
        self.dim = dim
        self.lock = threading.RLock()
        self.checkpoints: Checkpointer | None = None
        self.writes = 0  # bumped by every transaction: invalidates the term statistics memo
        self.opened = False  # an error before this is true: `fivefold doctor` cannot open it
        self.conn, self.read_only = files.connect(path)
        # Absolute: a relative path named another file once the process changed directory.
        self.file_path = path if path == ":memory:" else os.path.abspath(path)
        self.file = files.identity(self.file_path)
        self.context = SQLiteContextRows(self.conn, dim)
        self.writer = Writer(self.conn, settings, self.context, dim)
        self.store_id = ""
        self.lexical: LexicalIndexes
        self.logged = False
        self.dense: dict[str, NamespaceIndex] = {}
        # How dense indexes were brought up to date, for tests and `fivefold doctor`.
        self.catch_ups = 0
        self.reloads = 0
        self.graph_saves = GraphSaves()
        # The graph and temporal legs' connection (``walk``), on a file only.
        self._side: sqlite3.Connection | None = None
        self._side_lock = threading.Lock()

    def attach(self, store_id: str) -> None:
        """The parts that need the schema: the lexical indexes, the change log, the side
        connection and the checkpointer (last: a thread to stop on close)."""
        self.store_id = store_id
        self.lexical = LexicalIndexes(
            self.conn, self.path, store_id=store_id, read_only=self.read_only
        )
        self.logged = vector_sync.has_log(self.conn)
        if self.path != ":memory:":
            # Now, not at the first graph walk: on the file opened (a path deleted since would
            # be made an empty file there, which the next open refuses).
            side, _ = files.connect(self.file_path)
            side.execute("SELECT count(*) FROM meta").fetchone()  # maps the WAL index now too
            self._side = side
        if self.path != ":memory:" and not self.read_only:
            self.checkpoints = files.checkpointer(self.conn, self.path)
        self.opened = True

    def close(self) -> None:
        with self.lock:
            for namespace, index in self.dense.items():
                self.save_graph(namespace, index)
            try:
                self.lexical.close()
            finally:
                if self.checkpoints is not None:
                    self.checkpoints.close()  # before the last connection: it checkpoints all
                with self._side_lock:
                    if self._side is not None:
                        self._side.close()
                        self._side = None
                self.conn.close()

    # -- errors -------------------------------------------------------------------------------
    def translate(self, exc: BaseException) -> FivefoldError | None:
        """SQLite's errors name the file; a stored value that cannot be decoded (a damaged page
        met mid-recall: 'dvent' for 'event' after a flipped bit) is a store problem too."""
        if isinstance(exc, sqlite3.Error | UnicodeDecodeError):
            return files.translate(exc, self.path)
        if isinstance(exc, ValueError | TypeError | KeyError | IndexError | OverflowError):
            return StoreError(
                f"{self.path}: a stored value cannot be read ({exc}); the file may be damaged: "
                "`fivefold doctor` checks it"
            )
        return None

    def read_again(self, exc: BaseException) -> bool:
        return False  # a file does not drop its connection

    def refuse_write(self) -> None:
        if self.read_only:
            raise StoreError(
                f"{self.path} is open read-only (the file or its folder cannot be written): "
                "recall works, writes need a writable copy"
            )
        self.refuse_gone()

    def refuse_gone(self) -> None:
        if self.file is not None and files.identity(self.file_path) != self.file:
            # SQLite goes on writing to the file it opened: a write acknowledged now would be
            # gone when the path is next opened (a new store, or the file put there since).
            raise StoreError(
                f"{self.path} was deleted or replaced while this store was open: nothing was "
                "written (a write would not be in the file at that path); open it again"
            )

    # -- statements ---------------------------------------------------------------------------
    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, params)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise files.translate(exc, self.path, opened=self.opened) from exc

    def rows(self, sql: str, params: Params = ()) -> list[Any]:
        """Every row one read statement gives, under the store's lock."""
        with self.lock:
            return self.execute(sql, params).fetchall()

    def row(self, sql: str, params: Params = ()) -> Any:
        """The first row one read statement gives (None: none), under the store's lock."""
        with self.lock:
            return self.execute(sql, params).fetchone()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.refuse_write()
        with self.lock:
            self.writes += 1
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                # Again once the write lock is held: a write that waited for it (another
                # process's, up to the 30 s busy timeout) was acknowledged into a file deleted
                # meanwhile.
                self.refuse_gone()
                yield
                if self.writes % LOG_PRUNE_EVERY == 0 and vector_sync.has_log(self.conn):
                    self.conn.execute(schema.PRUNE_VECTOR_LOG, (schema.VECTOR_LOG_KEEP,))
                    self.lexical.prune_log()
                self.conn.execute("COMMIT")
                if self.checkpoints is not None:
                    self.checkpoints.wrote()
            except BaseException as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError | UnicodeDecodeError):
                    raise files.translate(exc, self.path) from exc
                raise

    @contextmanager
    def walk(self) -> Iterator[sqlite3.Connection]:
        """The graph and temporal legs' reads. On a file they have a connection of their own,
        so a recall's graph walk runs beside its text legs (on the other core: SQLite releases
        the GIL) instead of queueing for the store's lock (no write path reads through it: a
        reader sees what was committed when it starts). An in-memory database is one
        connection's: it uses the store's."""
        if self.path == ":memory:":
            with self.lock:
                yield self.conn
            return
        with self._side_lock:
            if self._side is None:
                raise StoreError(f"{self.path}: the store is closed")
            yield self._side

    # -- namespaces and the dense index ------------------------------------------------------
    def namespace_state(self, namespace: str) -> tuple[int, int, int]:
        """(memories, generation, vector generation) of a namespace; the caller holds the lock."""
        row = self.execute(schema.NAMESPACE_STATE, (namespace,)).fetchone()
        return (0, 0, 0) if row is None else (int(row[0]), int(row[1]), int(row[2]))

    def dense_index(self, namespace: str) -> NamespaceIndex:
        """This namespace's index, brought up to date: unchanged, caught up from the change
        log, or (new to this process, or the log cannot say) read whole. The caller holds the
        lock."""
        with snapshot(self.conn):
            count, _, vector_generation = self.namespace_state(namespace)
            index = self.dense.get(namespace)
            if index is not None and index.generation == vector_generation:
                return index
            if (
                index is not None
                and self.logged
                and vector_sync.catch_up(self.conn, index, namespace, count)
            ):
                index.generation = vector_generation
                self.catch_ups += 1
                return index
            index, built = vector_sync.load_index(
                self.conn,
                namespace,
                dim=self.dim,
                config=self.settings.index,
                generation=vector_generation,
                saved=self.hnsw_path(namespace),
                store_id=self.store_id,
                logged=self.logged,
            )
            self.reloads += 1
            self.dense[namespace] = index
            if built:
                self.save_graph(namespace, index)
            return index

    def save_graph(self, namespace: str, index: NamespaceIndex) -> None:
        """Save a graph built or changed since it was last saved, where saves are possible;
        a failure (a full disk) leaves it in memory and is never the caller's
        (``GraphSaves``)."""
        path = self.hnsw_path(namespace)
        if path is not None and index.uses_hnsw and index.hnsw_dirty:
            self.graph_saves.save(namespace, index, path, self.store_id)

    def hnsw_path(self, namespace: str) -> Path | None:
        if self.path == ":memory:" or self.read_only:
            return None
        digest = hashlib.sha256(namespace.encode()).hexdigest()[:24]
        return Path(self.path + ".vindex") / f"{digest}.usearch"
