"""The embedded store: one SQLite file (WAL), FTS5 for BM25, a B-tree on ``event_at``, entity
and edge tables, and the dense index derived from the vectors it holds.

All SQL of the embedded backend runs here; statements live in ``schema.py``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.errors import (
    EmbeddingModelMismatch,
    FivefoldError,
    InvalidInput,
    NotAFivefoldStore,
    StoreError,
)
from fivefold.extract.speaker import infer_speaker
from fivefold.store.base import (
    COPY_MARK,
    COPY_REFUSED,
    HELD_NAMESPACES,
    PROGRESS_MOVED,
    PROGRESS_PREFIX,
    Progress,
    StoreSettings,
    labels_found,
    mistyped_rows,
    unfinished_copy,
)
from fivefold.store.records import (
    CatalogEntry,
    EdgeHop,
    EntityScore,
    Feedback,
    MemoryAttributes,
    MentionHit,
    NeighbourStep,
    NewEdge,
    NewMemory,
)
from fivefold.store.shared.rows import feedback_entries, new_keys, relation_from_row
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.sqlite import check as sqlite_check
from fivefold.store.sqlite import files, schema, vector_sync
from fivefold.store.sqlite.checkpoint import Checkpointer
from fivefold.store.sqlite.context_rows import SQLiteContextRows
from fivefold.store.sqlite.dense import NamespaceIndex
from fivefold.store.sqlite.lexical import LexicalIndexes
from fivefold.store.sqlite.read import BY_ID, ReadQueries
from fivefold.store.sqlite.write import Writer
from fivefold.text import normalize_name
from fivefold.types import (
    ColumnWeights,
    Edge,
    Entity,
    Finding,
    MemoryRecord,
    MemoryType,
    Scope,
    StoreStats,
)

T = TypeVar("T")
log = logging.getLogger("fivefold.store")
DF_CACHE_TERMS = 20_000
# Transactions between prunings of the vector change log (a range delete on its key).
LOG_PRUNE_EVERY = 256


def _translating(cls: type[T]) -> type[T]:
    """Every public method raises ``StoreError`` (naming the file) where the driver raised or
    a stored value could not be decoded: a damaged page met mid-recall ('dvent' for 'event'
    after a flipped bit) is a store problem, not a ``sqlite3`` or ``ValueError`` escaping."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not callable(member):
            continue

        def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(method)
            def translated(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
                try:
                    return method(self, *args, **kwargs)
                except FivefoldError:
                    raise
                except sqlite3.Error as exc:
                    raise files.translate(exc, self._path) from exc
                except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
                    raise StoreError(
                        f"{self._path}: a stored value cannot be read ({exc}); the file may "
                        "be damaged: `fivefold doctor` checks it"
                    ) from exc

            return translated

        setattr(cls, name, wrap(member))
    return cls


@_translating
class SQLiteStore:
    """Thread-safe: one connection, serialized by a lock (SQLite would serialize writes anyway)."""

    keyed_names = False  # any text, NUL included, under any name (``Store.keyed_names``)

    def __init__(
        self, path: str, *, embedding_model: str, dim: int, settings: StoreSettings
    ) -> None:
        self._path = path
        self._settings = settings
        self._model = embedding_model
        self._dim = dim
        self._lock = threading.RLock()
        self._checkpoints: Checkpointer | None = None
        self._writes = 0  # bumped by every transaction: invalidates the term statistics memo
        self._created = False
        self._opened = False  # an error before this is true: `fivefold doctor` cannot open it
        if path != ":memory:" and not os.path.lexists(path):
            self._created = files.create_file(
                Path(path), files.meta(embedding_model, dim, self._settings.smoothing.tag)
            )
        self._conn, self.read_only = files.connect(path)
        # Absolute: a relative path named another file once the process changed directory.
        self._file_path = path if path == ":memory:" else os.path.abspath(path)
        self._file = files.identity(self._file_path)
        self._context = SQLiteContextRows(self._conn, dim)
        self._writer = Writer(self._conn, settings, self._context, dim)
        try:
            self._store_id = self._init_schema(embedding_model, dim)
            # Only once the file is known to be ours: never switch a stranger's database to WAL.
            if path != ":memory:" and not self.read_only:
                self._conn.execute("PRAGMA journal_mode = WAL")
                synced = "FULL" if settings.write.durable else "NORMAL"  # (``WriteConfig``)
                self._conn.execute(f"PRAGMA synchronous = {synced}")
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise files.translate(exc, path, opened=False) from exc
        except BaseException:
            self._conn.close()
            raise
        self._reads = ReadQueries(self._conn)
        # The graph and temporal legs' connection (``_walk_reads``), opened on first use.
        self._side: tuple[sqlite3.Connection, ReadQueries] | None = None
        self._side_lock = threading.Lock()
        self._lexical = LexicalIndexes(
            self._conn, path, store_id=self._store_id, read_only=self.read_only
        )
        self._logged = vector_sync.has_log(self._conn)
        self._dense: dict[str, NamespaceIndex] = {}
        # How dense indexes were brought up to date, for tests and `fivefold doctor`.
        self.catch_ups = 0
        self.reloads = 0
        self._catalogs: dict[str, tuple[int, list[CatalogEntry]]] = {}
        self._df_version: tuple[int, int] = (-1, -1)
        self._df_cache: dict[tuple[str, str], int] = {}
        self._df_totals: dict[str, int] = {}
        if path != ":memory:":
            # Now, not at the first graph walk: on the file opened (a path deleted since would
            # be made an empty file there, which the next open refuses).
            side, _ = files.connect(self._file_path)
            side.execute("SELECT count(*) FROM meta").fetchone()  # maps the WAL index now too
            self._side = (side, ReadQueries(side))
        if path != ":memory:" and not self.read_only:  # last: a thread to stop on close
            self._checkpoints = files.checkpointer(self._conn, path)
        self._opened = True

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def embedding_model(self) -> str:
        return self._model

    @property
    def location(self) -> str:
        return self._path

    @property
    def created(self) -> bool:
        return self._created

    def close(self) -> None:
        with self._lock:
            for namespace, index in self._dense.items():
                path = self._hnsw_path(namespace)
                if path is not None and index.uses_hnsw and index.hnsw_dirty:
                    # The graph is derived: if it cannot be saved (disk full), the next open
                    # patches the last saved one from the log, or builds it again.
                    with contextlib.suppress(OSError, RuntimeError):
                        index.save_hnsw(path, self._store_id)
            try:
                self._lexical.close()
            finally:
                if self._checkpoints is not None:
                    self._checkpoints.close()  # before the last connection: it checkpoints all
                with self._side_lock:
                    if self._side is not None:
                        self._side[0].close()
                        self._side = None
                self._conn.close()

    def _refuse_write(self) -> None:
        if self.read_only:
            raise StoreError(
                f"{self._path} is open read-only (the file or its folder cannot be written): "
                "recall works, writes need a writable copy"
            )
        self._refuse_gone()

    def _refuse_gone(self) -> None:
        if self._file is not None and files.identity(self._file_path) != self._file:
            # SQLite goes on writing to the file it opened: a write acknowledged now would be
            # gone when the path is next opened (a new store, or the file put there since).
            raise StoreError(
                f"{self._path} was deleted or replaced while this store was open: nothing was "
                "written (a write would not be in the file at that path); open it again"
            )

    def _init_schema(self, embedding_model: str, dim: int) -> str:
        """Create or check the schema; return the store's random id, which derived files
        (the saved HNSW graphs) carry so that a new store never adopts an old store's."""
        tables = self._tables()
        if tables and "meta" not in tables:
            raise NotAFivefoldStore(
                f"{self._path} is an SQLite database but not a fivefold store "
                f"(it has tables {sorted(tables)[:5]}); pick another path"
            )
        if not tables:
            created = self._create_schema(embedding_model, dim)
            if created is not None:
                return created
        meta = dict(self._execute("SELECT key, value FROM meta").fetchall())
        held = meta.get("schema_version")
        if (
            self.read_only
            and held is not None
            and held.isdigit()
            and (int(held) < schema.SCHEMA_VERSION)
        ):
            # "Recall works" would not be true: this version reads the store once migrated.
            raise StoreError(
                f"{self._path} is open read-only and holds fivefold schema {held}, which this "
                f"version reads once it has moved it to {schema.SCHEMA_VERSION}: open a "
                "writable copy once (recall works on it after)"
            )
        if not (held is not None and held.isdigit() and int(held) <= schema.SCHEMA_VERSION):
            raise NotAFivefoldStore(
                f"{self._path} has fivefold schema version {held}; this version of fivefold "
                f"reads up to {schema.SCHEMA_VERSION}: upgrade fivefold"
            )
        # Before any migration: a store opened with another model is refused as it was found.
        self._check_model(meta, embedding_model, dim)
        if meta.get("schema_version") == "1":
            self._refuse_write()
            self._migrate_1_to_2()
            meta = dict(self._execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema_version") in ("2", "3"):
            self._refuse_write()
            self._migrate_to_4()
            meta = dict(self._execute("SELECT key, value FROM meta").fetchall())
        for version, steps in (
            ("4", schema.MIGRATE_4_TO_5),
            ("5", schema.MIGRATE_5_TO_6),
            ("6", schema.MIGRATE_6_TO_7),
            ("7", schema.MIGRATE_7_TO_8),
        ):
            if meta.get("schema_version") == version:
                self._refuse_write()
                with self._transaction():
                    # Read again under the write lock: another process opening the store at
                    # the same time may have migrated it since (a second run would fail).
                    held = self._conn.execute(schema.SCHEMA_VERSION_OF).fetchone()
                    if held is not None and held[0] == version:
                        for statement in steps:
                            self._conn.execute(statement)
                        if version == "6":
                            self._rekey_names()
                meta = dict(self._execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema_version") != str(schema.SCHEMA_VERSION):
            raise NotAFivefoldStore(
                f"{self._path} has fivefold schema version {meta.get('schema_version')}; this "
                f"version of fivefold reads version {schema.SCHEMA_VERSION}"
            )
        if not self.read_only and not vector_sync.has_log(self._conn):
            with self._transaction():  # stores made before the change log existed
                for statement in schema.VECTOR_LOG_DDL:
                    self._conn.execute(statement)
        if meta.get(files.SMOOTHING_KEY) != self._settings.smoothing.tag and not self.read_only:
            # Read-only, the context stays as it was stored: reads remain consistent with it.
            self._rebuild_context()
        # Stores created before store ids existed get none; their saved graphs are rebuilt.
        return str(meta.get("store_id", ""))

    def _rekey_names(self) -> None:
        """Schema 7's entity and alias keys (``schema.MIGRATE_6_TO_7``), in its transaction."""
        kept = 0
        for select, update in zip(
            schema.NAMED_NOT_ASCII, (schema.REKEY_ENTITY, schema.REKEY_ALIAS), strict=True
        ):
            for key, rest, old in new_keys(self._conn.execute(select).fetchall()):
                kept += self._conn.execute(update, (key, *rest, old)).rowcount == 0
        if kept:
            log.warning("schema 7: %d entity or alias keys kept as they were (taken)", kept)

    def _check_model(self, meta: Mapping[str, str], embedding_model: str, dim: int) -> None:
        stored = meta.get("embedding_model", "?")
        if stored != embedding_model or meta.get("embedding_dim") != str(dim):
            raise EmbeddingModelMismatch(
                f"{self._path} was built with embedding model {stored!r} "
                f"({meta.get('embedding_dim')}-d) but is being opened with {embedding_model!r} "
                f"({dim}-d); open it with the model it was built with, or re-import into a "
                "new store"
            )

    def _tables(self) -> set[str]:
        return {r[0] for r in self._execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def _create_schema(self, embedding_model: str, dim: int) -> str | None:
        """A new store's tables and meta; None when another process created them first (two
        server workers opening a new file at once): the caller then reads them as its own."""
        with self._transaction():  # BEGIN IMMEDIATE: one creator at a time
            if self._tables():
                return None
            if self._path != ":memory:":
                shutil.rmtree(self._path + ".vindex", ignore_errors=True)
                shutil.rmtree(self._path + ".lexical", ignore_errors=True)
            for statement in files.ddl():
                self._conn.execute(statement)
            meta = files.meta(embedding_model, dim, self._settings.smoothing.tag)
            self._conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta)
        return dict(meta)["store_id"]

    def _migrate_1_to_2(self) -> None:
        """Schema 2 adds the session context columns; fill them from the rows."""
        with self._transaction():
            if self._conn.execute(schema.SCHEMA_VERSION_OF).fetchone() != ("1",):
                return  # another opener migrated it while this one waited for the lock
            for statement in schema.MIGRATE_1_TO_2.split(";"):
                if statement.strip():
                    self._conn.execute(statement)
            # Rows written before speakers existed get the one their text names, as new
            # writes do (the "Name: text" convention).
            rows = self._conn.execute("SELECT id, content FROM memories").fetchall()
            speakers = [(infer_speaker(c), i) for i, c in rows]
            self._conn.executemany(
                "UPDATE memories SET speaker = ? WHERE id = ?",
                [(s, i) for s, i in speakers if s is not None],
            )
            self._conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")

    def _migrate_to_4(self) -> None:
        """Schema 4 moves the lexical index out of FTS5 (lexical.py): the FTS5 tables of
        schema 2 (one pair) or 3 (a pair and a view per namespace) go, the lexical log comes,
        and each namespace's index is built from the rows on its first read."""
        with self._transaction():
            if self._conn.execute(schema.SCHEMA_VERSION_OF).fetchone() not in (("2",), ("3",)):
                return  # another opener migrated it while this one waited for the lock
            fts = self._conn.execute(
                "SELECT type, name FROM sqlite_master WHERE (type = 'view' AND name LIKE "
                "'lex_src_%') OR (type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%')"
            ).fetchall()
            for kind, name in fts:
                self._conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
            self._conn.execute("DROP TABLE IF EXISTS lexical_tables")
            for statement in schema.LEXICAL_LOG_DDL:
                self._conn.execute(statement)
            self._conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")

    def _rebuild_context(self) -> None:
        """Recompute every session memory's context with the configured smoothing (derived
        data: the dense indexes rebuild from it on their next read)."""
        with self._transaction():
            self._context.rebuild_all(self._settings.smoothing)
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (files.SMOOTHING_KEY, self._settings.smoothing.tag),
            )
            self._conn.execute(
                "UPDATE namespaces SET generation = generation + 1, "
                "vector_generation = vector_generation + 1"
            )

    # -- plumbing -------------------------------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.DatabaseError as exc:
            raise files.translate(exc, self._path, opened=self._opened) from exc

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._refuse_write()
        with self._lock:
            self._writes += 1
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                # Again once the write lock is held: a write that waited for it (another
                # process's, up to the 30 s busy timeout) was acknowledged into a file deleted
                # meanwhile.
                self._refuse_gone()
                yield
                if self._writes % LOG_PRUNE_EVERY == 0 and vector_sync.has_log(self._conn):
                    self._conn.execute(schema.PRUNE_VECTOR_LOG, (schema.VECTOR_LOG_KEEP,))
                    self._lexical.prune_log()
                self._conn.execute("COMMIT")
                if self._checkpoints is not None:
                    self._checkpoints.wrote()
            except BaseException as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    raise files.translate(exc, self._path) from exc
                raise

    @contextmanager
    def _walk_reads(self) -> Iterator[ReadQueries]:
        """The graph and temporal legs' reads. On a file they have a connection of their own,
        so a recall's graph walk runs beside its text legs (on the other core: SQLite releases
        the GIL) instead of queueing for the store's lock (no write path reads through it: a
        reader sees what was committed when it starts). An in-memory database is one
        connection's: it uses the store's."""
        if self._path == ":memory:":
            with self._lock:
                yield self._reads
            return
        with self._side_lock:
            if self._side is None:
                raise StoreError(f"{self._path}: the store is closed")
            yield self._side[1]

    # -- writes ---------------------------------------------------------------------------------
    def insert_memories(
        self,
        memories: Sequence[NewMemory],
        vectors: Vectors,
        *,
        progress: Progress | None = None,
        ids: Sequence[int] | None = None,
    ) -> list[MemoryRecord]:
        if len(memories) != len(vectors):
            raise InvalidInput("one vector per memory is required")
        if len(vectors) and vectors.shape[1] != self._dim:
            raise InvalidInput(f"vectors must have {self._dim} dimensions, got {vectors.shape[1]}")
        with self._transaction():
            written = self._writer.memories(memories, vectors, ids)
            if progress is not None:
                self._note_progress(progress)
        with self._lock:  # the lexical indexes share the connection: never beside a reader
            self._lexical.written(m.scope.namespace for m in memories)
        return written

    def delete_memory(self, memory_id: int, scope: Scope) -> bool:
        with self._transaction():
            namespace = self._writer.delete(memory_id, scope)
        if namespace is None:
            return False
        # Forgotten means gone from the index on disk too, not only once someone reads.
        with self._lock:
            self._lexical.current(namespace)
        return True

    def add_edge(
        self, edge: NewEdge, *, record: NewMemory | None = None, vector: Vectors | None = None
    ) -> Edge:
        records: list[NewMemory] = [] if record is None else [record]
        if records and (vector is None or len(vector) != self._dim):
            raise InvalidInput(f"the record needs one {self._dim}-d vector")
        matrix = np.asarray(vector if records else [], dtype=np.float32).reshape(
            len(records), self._dim
        )
        with self._transaction():
            return self._writer.edge(edge, records, matrix)

    def add_alias(self, namespace: str, name: str, alias: str) -> Entity:
        alias_norm = normalize_name(alias)
        if not alias_norm:
            raise InvalidInput(f"alias {alias!r} has no letters or digits")
        with self._transaction():
            return self._writer.alias(namespace, name, alias)

    # -- reads ----------------------------------------------------------------------------------
    def _namespace_state(self, namespace: str) -> tuple[int, int, int]:
        row = self._execute(schema.NAMESPACE_STATE, (namespace,)).fetchone()
        return (0, 0, 0) if row is None else (int(row[0]), int(row[1]), int(row[2]))

    def namespace_generation(self, namespace: str) -> int:
        with self._lock:
            return self._namespace_state(namespace)[1]

    def memory_count(self, namespace: str) -> int:
        with self._lock:
            return self._namespace_state(namespace)[0]

    def get_memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        with self._lock:
            return self._reads.memories(namespace, ids)

    def recent_ids(self, scope: Scope, *, limit: int, before: int | None = None) -> list[int]:
        with self._lock:
            return self._reads.recent_ids(scope, limit=limit, before=before)

    def attributes(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        with self._lock:
            return self._reads.attributes(namespace, ids)

    def catalog(self, namespace: str) -> Sequence[CatalogEntry]:
        with self._lock:
            row = self._execute(schema.CATALOG_VERSION, (namespace,)).fetchone()
            version = 0 if row is None else int(row[0])
            cached = self._catalogs.get(namespace)
            if cached is not None and cached[0] == version:
                return cached[1]
            entries = self._reads.catalog(namespace)
            self._catalogs[namespace] = (version, entries)
            return entries

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        with self._lock:
            return self._reads.visible_entities(scope, entity_ids)

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        with self._lock:
            return self._reads.entity_frequencies(namespace, entity_ids)

    def term_document_frequencies(
        self, namespace: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """Memoized until the next write by anyone: the optimizer's rarity feature, BM25's
        squash and negation all ask for the same few terms within one recall."""
        with self._lock:
            version = (self._writes, self._conn.execute("PRAGMA data_version").fetchone()[0])
            if version != self._df_version or len(self._df_cache) > DF_CACHE_TERMS:
                self._df_cache.clear()
                self._df_version = version
                self._df_totals.clear()
            missing = [t for t in dict.fromkeys(terms) if (namespace, t) not in self._df_cache]
            if missing or namespace not in self._df_totals:
                total, found = self._lexical.frequencies(namespace, missing)
                self._df_cache.update(((namespace, t), n) for t, n in found.items())
                self._df_totals[namespace] = total
            return self._df_totals[namespace], {t: self._df_cache[namespace, t] for t in terms}

    def lexical_search(
        self,
        scope: Scope,
        terms: Sequence[str],
        k: int,
        types: Sequence[MemoryType] = (),
        within: Sequence[int] | None = None,
        *,
        weights: ColumnWeights,
    ) -> list[tuple[int, float]]:
        with self._lock:
            return self._lexical.search(scope, terms, k, types, within, weights)

    def edges_touching(self, scope: Scope, entity_ids: Sequence[int]) -> list[EdgeHop]:
        with self._lock:
            return self._reads.edges_touching(scope, entity_ids)

    def neighbours(self, scope: Scope, step: NeighbourStep) -> list[tuple[int, float]]:
        with self._walk_reads() as reads:
            return reads.neighbours(scope, step)

    def mentions(
        self,
        scope: Scope,
        entities: Sequence[EntityScore],
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[MentionHit]:
        with self._walk_reads() as reads:
            return reads.mentions(scope, entities, k, types)

    def events_between(
        self, scope: Scope, start: datetime, end: datetime, k: int
    ) -> list[tuple[int, datetime]]:
        with self._walk_reads() as reads:
            return reads.events_between(scope, start, end, k)

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None:
        with self._lock:
            return self._reads.last_session_end(scope, exclude_session)

    def vectors(self, namespace: str, ids: Sequence[int]) -> dict[int, Vectors]:
        with self._lock:
            return self._reads.vectors(namespace, ids, self._dim)

    def vector_search(
        self,
        scope: Scope,
        queries: Vectors,
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[list[tuple[int, float]]]:
        with self._lock:
            index = self._dense_index(scope.namespace)
            return index.search(
                np.asarray(queries, dtype=np.float32),
                k,
                user=scope.user_id,
                agent=scope.agent_id,
                types=[t.value for t in types],
            )

    def _dense_index(self, namespace: str) -> NamespaceIndex:
        """This namespace's index, brought up to date: unchanged, caught up from the change
        log, or (new to this process, or the log cannot say) read whole."""
        with vector_sync.snapshot(self._conn):
            count, _, vector_generation = self._namespace_state(namespace)
            index = self._dense.get(namespace)
            if index is not None and index.generation == vector_generation:
                return index
            if (
                index is not None
                and self._logged
                and vector_sync.catch_up(self._conn, index, namespace, count)
            ):
                index.generation = vector_generation
                self.catch_ups += 1
                return index
            index = vector_sync.load_index(
                self._conn,
                namespace,
                dim=self._dim,
                config=self._settings.index,
                generation=vector_generation,
                saved=self._hnsw_path(namespace),
                store_id=self._store_id,
                logged=self._logged,
            )
            self.reloads += 1
            self._dense[namespace] = index
            return index

    # -- export ---------------------------------------------------------------------------------
    def relations(self, namespace: str) -> list[NewEdge]:
        with self._lock:
            rows = self._conn.execute(schema.SELECT_RELATIONS, (namespace,)).fetchall()
        return [relation_from_row(namespace, row) for row in rows]

    def aliases(self, namespace: str) -> list[tuple[str, str]]:
        with self._lock:
            rows = self._conn.execute(schema.SELECT_ALIASES, (namespace,)).fetchall()
        return [(str(name), str(alias)) for name, alias in rows]

    def check(self, *, repair: bool = False) -> list[Finding]:
        """Every index against the rows (``fivefold doctor``); ``repair`` rebuilds what is
        out of step. The rows themselves are checked, not repaired (but for a mention's type,
        a copy of its memory's)."""
        if repair:
            self._refuse_write()
        with self._lock:
            findings = [sqlite_check.check_database(self._conn)]
            if not findings[0].ok:
                # The indexes are built from the rows: read from damaged pages, the check
                # failed with SQLite's error in place of these findings.
                return [*findings, sqlite_check.unchecked_indexes()]
            if (note := self.copy_mark()) is not None:
                findings.append(unfinished_copy(note, self.stats().memories))
            mistyped = int(self._execute(schema.MISTYPED_MENTIONS).fetchone()[0])
            if mistyped and repair:
                with self._transaction():
                    self._conn.execute(schema.DROP_MISTYPED_TWINS)
                    self._conn.execute(schema.RETYPE_MENTIONS)
            findings.append(mistyped_rows("mentions", mistyped, repaired=repair))
            namespaces = [str(r[0]) for r in self._execute(schema.SELECT_NAMESPACES)]
            findings += self._lexical.check(namespaces, repair=repair)
            for namespace in namespaces:
                findings += self._check_dense(namespace, repair=repair)
            return findings

    def mark_copy(self, note: str | None) -> None:
        with self._transaction():
            if note is None:
                self._conn.execute("DELETE FROM meta WHERE key = ?", (COPY_MARK,))
                return
            marked = self._conn.execute("SELECT 1 FROM meta WHERE key = ?", (COPY_MARK,))
            held = self._conn.execute(f"SELECT 1 FROM ({HELD_NAMESPACES}) LIMIT 1")
            if marked.fetchone() is not None or held.fetchone() is not None:
                raise InvalidInput(f"{self._path}: {COPY_REFUSED}")
            self._conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (COPY_MARK, note))

    def held_namespaces(self) -> list[str]:
        with self._lock:
            return sorted(str(r[0]) for r in self._execute(HELD_NAMESPACES))

    def progress(self, key: str) -> str | None:
        with self._lock:
            row = self._execute(
                "SELECT value FROM meta WHERE key = ?", (PROGRESS_PREFIX + key,)
            ).fetchone()
        return None if row is None else str(row[0])

    def _note_progress(self, progress: Progress) -> None:
        key = PROGRESS_PREFIX + progress.key
        if progress.previous is None:
            noted = self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                (key, progress.value),
            )
        else:
            noted = self._conn.execute(
                "UPDATE meta SET value = ? WHERE key = ? AND value = ?",
                (progress.value, key, progress.previous),
            )
        if noted.rowcount != 1:  # raised in the write's transaction: it is rolled back
            raise StoreError(f"{self._path}: {PROGRESS_MOVED}")

    def copy_mark(self) -> str | None:
        with self._lock:
            row = self._execute("SELECT value FROM meta WHERE key = ?", (COPY_MARK,)).fetchone()
        return None if row is None else str(row[0])

    def next_memory_id(self, *, at_least: int | None = None) -> int:
        if at_least is None:
            with self._lock:
                return int(self._execute(schema.NEXT_MEMORY_ID).fetchone()[0])
        with self._transaction():
            now = int(self._conn.execute(schema.NEXT_MEMORY_ID).fetchone()[0])
            if at_least > now:  # AUTOINCREMENT's counter: the next id is one above it
                self._conn.execute("DELETE FROM sqlite_sequence WHERE name = 'memories'")
                self._conn.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('memories', ?)",
                    (at_least - 1,),
                )
        return max(now, at_least)

    # -- learned fusion ---------------------------------------------------------------------------
    def add_feedback(
        self,
        namespace: str,
        query: str,
        args: str,
        labels: Mapping[int, float],
        created_at: datetime,
    ) -> int:
        with self._transaction():
            ids = json.dumps(sorted(labels))
            found = self._conn.execute(f"SELECT id FROM memories WHERE {BY_ID}", (namespace, ids))
            labels_found(labels, (int(r[0]) for r in found))
            row = self._conn.execute(
                schema.INSERT_FEEDBACK, (namespace, query, args, to_ts(created_at))
            ).fetchone()
            self._conn.executemany(
                schema.INSERT_LABEL, [(row[0], int(i), float(v)) for i, v in sorted(labels.items())]
            )
        return int(row[0])

    def feedback(self, namespace: str) -> list[Feedback]:
        with self._lock:
            rows = self._execute(schema.SELECT_FEEDBACK, (namespace,)).fetchall()
        return feedback_entries(rows)

    def save_model(self, namespace: str, payload: str, *, accepted: bool) -> int:
        now = to_ts(datetime.now().astimezone())
        with self._transaction():
            row = self._conn.execute(
                schema.INSERT_MODEL, (namespace, int(accepted), now, payload, namespace)
            ).fetchone()
            # The next recall of the namespace sees the new model (readers cache by generation).
            self._conn.execute(schema.BUMP_NAMESPACE, (namespace, 0, 0))
        return int(row[0])

    def learned_model(self, namespace: str) -> tuple[int, str] | None:
        with self._lock:
            row = self._execute(schema.SELECT_MODEL, (namespace,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def compact(self) -> int:
        """The lexical indexes that deleted documents are rebuilt (tantivy's BM25 statistics
        count a deleted document until a merge drops it); in memory on a read-only store."""
        with self._lock:
            namespaces = [str(r[0]) for r in self._execute(schema.SELECT_NAMESPACES)]
            return self._lexical.compact(namespaces)

    def _check_dense(self, namespace: str, *, repair: bool) -> list[Finding]:
        """The saved graph first (loading the index would replace a damaged one), then the
        index this process searches against the rows."""
        findings = []
        saved = self._hnsw_path(namespace)
        if saved is not None and saved.exists():
            probe = NamespaceIndex(self._dim, self._settings.index)
            valid = probe.load_hnsw(saved, self._store_id) is not None
            if not valid and probe.load_hnsw(saved, self._store_id, any_build=True) is not None:
                findings.append(sqlite_check.older_saved_graph(namespace))
                valid = True  # sound, only built the older way: its next search builds it
            else:
                findings.append(
                    sqlite_check.check_saved_graph(saved, namespace, valid=valid, repair=repair)
                )
            if not valid and not repair:
                return findings  # leave the files as they were found
        part = f"dense index of namespace {namespace!r}"
        rows = {int(r[0]) for r in self._execute(schema.SELECT_NAMESPACE_IDS, (namespace,))}
        held = self._dense_index(namespace).ids()
        if held == rows:
            return [*findings, Finding(part, True, f"{len(rows):,} vectors, as in the rows")]
        detail = f"{len(held - rows)} extra and {len(rows - held)} missing vectors"
        repaired = False
        if repair:
            del self._dense[namespace]
            repaired = self._dense_index(namespace).ids() == rows
        return [*findings, Finding(part, repaired, detail, repaired)]

    def _hnsw_path(self, namespace: str) -> Path | None:
        if self._path == ":memory:" or self.read_only:
            return None
        digest = _stable_name(namespace)
        return Path(self._path + ".vindex") / f"{digest}.usearch"

    def stats(self, namespace: str | None = None) -> StoreStats:
        folders = {}
        if self._lexical.folder is not None:
            folders = {
                "lexical index": _folder_size(self._lexical.folder),
                "dense index": _folder_size(Path(self._path + ".vindex")),
            }
        with self._lock:
            return self._reads.stats(self._model, self._path, namespace, folders)


def _folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 when missing; a file removed while counting
    counts 0: another process may be merging segments)."""
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                total += path.stat().st_size
    return total


def _stable_name(namespace: str) -> str:
    import hashlib

    return hashlib.sha256(namespace.encode()).hexdigest()[:24]


__all__ = ["SQLiteStore"]
