"""The PostgreSQL store (psycopg 3, a connection pool, pgvector).

Several processes and threads share one database: each call takes a pooled connection, writes
run in one transaction each (retried when Postgres breaks a deadlock between two writers), and
every statement names its namespace. Ranking matches the SQLite backend: BM25 with FTS5's
formula over the same tokens (``tokens.py``), per-namespace statistics, the same graph walk and
the same context rules; the dense leg is exact below ``index.hnsw_threshold`` memories in a
namespace and pgvector's HNSW (iterative scans under the scope filter) above it.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from fivefold.embed.base import Vectors
from fivefold.errors import (
    EmbeddingModelMismatch,
    FivefoldError,
    InvalidInput,
    NotAFivefoldStore,
    StoreError,
)
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
from fivefold.store.postgres import placement, schema
from fivefold.store.postgres.context_rows import (
    Deltas,
    Growth,
    MemoryGone,
    PostgresContextRows,
)
from fivefold.store.postgres.lexical import Lexical, namespace_row
from fivefold.store.postgres.lists import Version
from fivefold.store.postgres.packed import (
    CHUNK_BITS,
    Entry,
    copy_parts,
    decode,
    parts,
    type_code,
)
from fivefold.store.postgres.read import PostgresReads, lost_connection
from fivefold.store.postgres.read import translating as _translating
from fivefold.store.postgres.upkeep import Upkeep
from fivefold.store.postgres.write import Writer, move_memory_ids, next_memory_id, no_nul
from fivefold.store.records import CatalogEntry, Feedback, NewEdge, NewMemory
from fivefold.store.shared import context
from fivefold.store.shared.rows import (
    edge_values,
    feedback_entries,
    new_keys,
    refuse_self_edge,
    refuse_taken_alias,
    stored_edge,
)
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.shared.tokens import Tokenizer, window
from fivefold.text import normalize_name
from fivefold.types import Edge, Entity, Finding, MemoryRecord, Scope

T = TypeVar("T")
log = logging.getLogger("fivefold.store")
POOL_SIZE = 8
# Writers that deadlock, time out waiting for a lock (``lock_timeout``: rolled back as a
# deadlock is) or find a session turn rewritten under them start again, after a jittered wait
# (without it, two writers of one session retried in step and met again).
WRITE_ATTEMPTS = 8
# A server gone: the pool's attempts to connect back off (1, 2, 4 ... s) this long, then the
# next call starts them over. psycopg_pool's 300 s let the waits grow to minutes: a store down
# 150 s stayed down ~85 s after the server came back (a hostile pass).
RECONNECT_SECONDS = 10.0
_SMOOTHING_KEY = "context_smoothing"


@_translating
class PostgresStore(PostgresReads):
    """Lifecycle, transactions (retried, then maintained) and upkeep here; the statements of a
    write are ``Writer``'s (``write.py``), every read is ``PostgresReads``'s (``read.py``)."""

    keyed_names = True  # index rows of 2,704 bytes at most; text without NUL

    def __init__(
        self, url: str, *, embedding_model: str, dim: int, settings: StoreSettings
    ) -> None:
        self._url = url
        self._location = placement.without_password(url)
        self._model = embedding_model
        self._dim = dim
        self._settings = settings
        self._tokenizer = Tokenizer()
        self._writer = Writer(settings, self._tokenizer, dim)
        self._catalogs: dict[str, tuple[Version, list[CatalogEntry]]] = {}
        self._bm25 = Lexical(self._tokenizer)
        self._build_failed: dict[str, float] = {}
        try:
            rebuild, reindexed, self._created = self._init_schema()
            self._pool = ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                kwargs={"autocommit": True},
                configure=register_vector,
                reconnect_timeout=RECONNECT_SECONDS,
                open=True,
                name="fivefold",
            )
        except FivefoldError:
            raise
        except (psycopg.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {self._location}: {exc}") from exc
        self._upkeep = Upkeep(self._pool.connection, self._location, self._compact_namespace)
        if rebuild:
            self._rebuild_context()
        if reindexed:  # every posting row is new: no page of them is marked all-visible yet
            self._upkeep.run(Growth(analyze=True, vacuum=True))

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def embedding_model(self) -> str:
        return self._model

    @property
    def created(self) -> bool:
        return self._created

    def close(self) -> None:
        self._upkeep.close()
        self._pool.close()

    def _init_schema(self) -> tuple[bool, bool, bool]:
        """Create or migrate the schema (one opener at a time). Returns whether the stored
        context was made with other smoothing settings and must be rebuilt, whether the
        postings were rebuilt from the memories by a migration, and whether this open made
        the store."""
        with psycopg.connect(self._url, autocommit=True) as conn, conn.transaction():
            name, _ = placement.pick(conn, self._location)
            conn.execute(schema.SCHEMA_LOCK, (name,))
            placement.own_schema(conn, self._location)
            placement.check_vector(conn, self._location)
            exists = conn.execute("SELECT to_regclass('fivefold_meta') IS NOT NULL").fetchone()
            if not (exists and exists[0]):
                foreign = conn.execute("SELECT to_regclass('memories') IS NOT NULL").fetchone()
                if foreign and foreign[0]:
                    raise NotAFivefoldStore(
                        f"{self._location} has a 'memories' table that fivefold did not make; "
                        "use another database or schema"
                    )
            conn.execute(schema.META_DDL)
            found = conn.execute("SELECT key, value FROM fivefold_meta").fetchall()
            meta: dict[str, str] = {str(k): str(v) for k, v in found}
            version = _schema_version(meta.get("schema_version", "0"), self._location)
            if version > schema.SCHEMA_VERSION:
                raise NotAFivefoldStore(
                    f"{self._location} has fivefold schema version {version}; this version of "
                    f"fivefold reads up to {schema.SCHEMA_VERSION}: upgrade fivefold"
                )
            if meta:  # before any migration: one opened with another model is left as found
                self._check_model(meta)
            for step in schema.MIGRATIONS[version:]:
                conn.execute(step.format(dim=self._dim))
            if 0 < version < 8:
                self._rekey_names(conn)
            # Schema 9's packed lists (and 2, 4 and 5's derived rows, 7's cut tokens, 8's
            # combining marks before them).
            reindexed = 0 < version < 9
            if reindexed:
                self._reindex_lexical(conn)
            created = not meta
            if created:
                meta = {
                    "embedding_model": self._model,
                    "embedding_dim": str(self._dim),
                    "store_id": uuid.uuid4().hex,
                    _SMOOTHING_KEY: self._settings.smoothing.tag,
                }
                for key, value in meta.items():
                    conn.execute(
                        "INSERT INTO fivefold_meta (key, value) VALUES (%s, %s)", (key, value)
                    )
            conn.execute(
                "INSERT INTO fivefold_meta (key, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(schema.SCHEMA_VERSION),),
            )
        return meta.get(_SMOOTHING_KEY) != self._settings.smoothing.tag, reindexed, created

    def _check_model(self, meta: dict[str, str]) -> None:
        stored = meta.get("embedding_model", "?")
        if stored != self._model or meta.get("embedding_dim") != str(self._dim):
            raise EmbeddingModelMismatch(
                f"{self._location} was built with embedding model {stored!r} "
                f"({meta.get('embedding_dim')}-d) but is being opened with {self._model!r} "
                f"({self._dim}-d); open it with the model it was built with, or migrate into a "
                "new store"
            )

    def _rebuild_context(self) -> None:
        def run(conn: psycopg.Connection, deltas: Deltas) -> None:
            rows = PostgresContextRows(conn, self._tokenizer, deltas, self._dim)
            found = conn.execute(
                "SELECT namespace, id FROM memories WHERE session_id IS NOT NULL "
                "ORDER BY namespace, id"
            ).fetchall()
            by_namespace: dict[str, list[int]] = {}
            for namespace, memory_id in found:
                by_namespace.setdefault(str(namespace), []).append(int(memory_id))
            for namespace, ids in by_namespace.items():
                rows.namespace = namespace
                context.refresh(rows, ids, self._settings.smoothing)
                rows.flush()
                deltas.memories[namespace] += 0  # bumps the generation: caches drop
            conn.execute(
                "UPDATE fivefold_meta SET value = %s WHERE key = %s",
                (self._settings.smoothing.tag, _SMOOTHING_KEY),
            )

        self._write(run)

    # -- plumbing -------------------------------------------------------------------------------
    def _write(self, work: Callable[[psycopg.Connection, Deltas], T]) -> T:
        """``work`` in one transaction, its gathered deltas applied last; retried when
        Postgres rolled it back (two writers deadlocked, a lock wait timed out, a session
        turn changed under it) or its BEGIN met a connection the server had ended."""
        for attempt in range(WRITE_ATTEMPTS):
            began = False
            try:
                with self._pool.connection() as conn, conn.transaction():
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
                # so the write starts again once the pool has replaced its dead ones (after a
                # restart, 7 forgets in a row failed). Not one cut off later: it may have
                # committed. (A check as each connection is handed out would cost a round trip
                # a call, and psycopg_pool waits 1, 2, 4 ... s between failed ones.)
                if began or not lost_connection(exc) or attempt == WRITE_ATTEMPTS - 1:
                    raise
                self._pool.check()
        self._upkeep.ask(growth)  # after the write has returned (``upkeep.py``)
        return result

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

        def run(conn: psycopg.Connection, deltas: Deltas) -> list[MemoryRecord]:
            written = self._writer.memories(conn, deltas, memories, vectors, ids)
            if progress is not None:
                _note_progress(conn, progress, self._location)
            return written

        return self._write(run)

    def delete_memory(self, memory_id: int, scope: Scope) -> bool:
        return self._write(lambda conn, deltas: self._writer.delete(conn, deltas, memory_id, scope))

    def add_edge(
        self, edge: NewEdge, *, record: NewMemory | None = None, vector: Vectors | None = None
    ) -> Edge:
        scope = edge.scope
        no_nul(None, source=edge.source, relation=edge.relation, target=edge.target)
        records: list[NewMemory] = [] if record is None else [record]
        if records and (vector is None or len(vector) != self._dim):
            raise InvalidInput(f"the record needs one {self._dim}-d vector")
        matrix = np.asarray(vector if records else [], dtype=np.float32).reshape(
            len(records), self._dim
        )

        def run(conn: psycopg.Connection, deltas: Deltas) -> tuple[int, int | None]:
            now = to_ts(datetime.now().astimezone())
            written = self._writer.memories(conn, deltas, records, matrix)
            memory_id = written[0].id if written else edge.memory_id
            source = self._writer.entity_id(conn, scope.namespace, edge.source, now, 0)
            target = self._writer.entity_id(conn, scope.namespace, edge.target, now, 0)
            refuse_self_edge(edge, source, target)
            row = conn.execute(
                schema.INSERT_EDGE, edge_values(edge, source, target, memory_id, now)
            ).fetchone()
            deltas.memories[scope.namespace] += 0  # a new generation: caches drop
            return (int(row[0]) if row else 0), memory_id

        edge_id, memory_id = self._write(run)
        return stored_edge(edge, edge_id, memory_id)

    def add_alias(self, namespace: str, name: str, alias: str) -> Entity:
        no_nul(None, name=name, alias=alias)
        alias_norm = normalize_name(alias)
        if not alias_norm:
            raise InvalidInput(f"alias {alias!r} has no letters or digits")

        def run(conn: psycopg.Connection, deltas: Deltas) -> Entity:
            now = to_ts(datetime.now().astimezone())
            # One alias declaration of a namespace at a time: two of one key to two entities
            # would each pass the check below before either is committed.
            conn.execute(schema.ALIAS_LOCK, (namespace,))
            entity_id = self._writer.entity_id(conn, namespace, name, now, 0)
            taken = conn.execute(schema.NAME_TAKEN, {"ns": namespace, "norm": alias_norm})
            refuse_taken_alias(alias, entity_id, taken.fetchall())
            conn.execute(schema.INSERT_ALIAS, (namespace, alias_norm, alias.strip(), entity_id))
            deltas.memories[namespace] += 0
            canonical = conn.execute(
                "SELECT name FROM entities WHERE namespace = %s AND id = %s",
                (namespace, entity_id),
            ).fetchone()
            aliases = conn.execute(
                "SELECT alias FROM aliases WHERE namespace = %s AND entity_id = %s ORDER BY alias",
                (namespace, entity_id),
            ).fetchall()
            return Entity(
                id=entity_id,
                namespace=namespace,
                name=str(canonical[0]) if canonical else name,
                aliases=tuple(str(a[0]) for a in aliases),
            )

        return self._write(run)

    # -- learned fusion ---------------------------------------------------------------------------
    def add_feedback(
        self,
        namespace: str,
        query: str,
        args: str,
        labels: Mapping[int, float],
        created_at: datetime,
    ) -> int:
        no_nul(None, query=query, args=args)

        def run(conn: psycopg.Connection, deltas: Deltas) -> int:
            # Locked until the commit: a forget of one waits for this write, whose label it
            # then deletes, or this one for the forget, after which the memory is not found.
            found = conn.execute(
                "SELECT id FROM memories WHERE namespace = %s AND id = ANY(%s::bigint[]) "
                "FOR KEY SHARE",
                (namespace, sorted(labels)),
            )
            labels_found(labels, (int(r[0]) for r in found))
            row = conn.execute(
                "INSERT INTO feedback (namespace, query, args, created_at) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (namespace, query, args, to_ts(created_at)),
            ).fetchone()
            feedback_id = int(row[0]) if row else 0
            ordered = sorted(labels.items())
            conn.execute(
                "INSERT INTO feedback_labels (namespace, feedback_id, memory_id, label) "
                "SELECT %s, %s, t.m, t.l FROM unnest(%s::bigint[], %s::float8[]) AS t(m, l) "
                "ON CONFLICT (namespace, feedback_id, memory_id) "
                "DO UPDATE SET label = excluded.label",
                (
                    namespace,
                    feedback_id,
                    [int(i) for i, _ in ordered],
                    [float(v) for _, v in ordered],
                ),
            )
            return feedback_id

        return self._write(run)

    def feedback(self, namespace: str) -> list[Feedback]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT f.id, f.query, f.args, f.created_at, l.memory_id, l.label FROM feedback f "
                "LEFT JOIN feedback_labels l ON l.namespace = f.namespace AND l.feedback_id = f.id "
                "WHERE f.namespace = %s ORDER BY f.id, l.memory_id",
                (namespace,),
            ).fetchall()
        return feedback_entries(rows)

    def save_model(self, namespace: str, payload: str, *, accepted: bool) -> int:
        def run(conn: psycopg.Connection, deltas: Deltas) -> int:
            # One version at a time per namespace: the next number is taken under a lock.
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s::int, hashtext(%s))",
                (schema.MODEL_LOCK, namespace),
            )
            row = conn.execute(
                "INSERT INTO models (namespace, version, accepted, created_at, payload) "
                "SELECT %s, coalesce(max(version), 0) + 1, %s, %s, %s FROM models "
                "WHERE namespace = %s RETURNING version",
                (namespace, accepted, to_ts(datetime.now().astimezone()), payload, namespace),
            ).fetchone()
            deltas.memories[namespace] += 0  # the namespace's generation moves: readers reload
            return int(row[0]) if row else 0

        return self._write(run)

    def learned_model(self, namespace: str) -> tuple[int, str] | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT version, payload FROM models WHERE namespace = %s AND accepted "
                "ORDER BY version DESC LIMIT 1",
                (namespace,),
            ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    # -- upkeep ---------------------------------------------------------------------------------
    def check(self, *, repair: bool = False) -> list[Finding]:
        """Per namespace, its posting lists against its memories (each posting's memory and
        type), its document frequencies and counts against both, and every mention's type
        against its memory's; ``repair`` makes the lists and statistics again from the
        memories."""
        findings = []
        with self._read() as conn:
            conn.execute("SELECT 1")
            findings.append(Finding("database", True, "reachable"))
        tables = self._tables_finding()
        findings.append(tables)
        if tables.detail.startswith("differ"):  # what follows reads those tables
            return [*findings, Finding("rows", False, "not checked: the tables are not whole")]
        if (note := self.copy_mark()) is not None:
            findings.append(unfinished_copy(note, self.stats().memories))
        with self._read() as conn:
            mentions = int((conn.execute(schema.MISTYPED).fetchone() or (0,))[0])
            namespaces = [
                str(r[0])
                for r in conn.execute(
                    "SELECT namespace FROM namespaces UNION SELECT DISTINCT namespace FROM memories"
                ).fetchall()
            ]
        if repair and mentions:
            self._write(lambda conn, _: conn.execute(schema.RETYPE).rowcount)
        findings.append(mistyped_rows("mentions", mentions, repaired=repair))
        lists = {namespace: self._lists_check(namespace) for namespace in sorted(namespaces)}
        mistyped = sum(found.mistyped for found in lists.values())
        findings.append(mistyped_rows("postings", mistyped, repaired=repair))
        for namespace, found in lists.items():
            part = f"lexical statistics of namespace {namespace!r}"
            if found.agree and not found.stray:
                if found.mistyped and repair:
                    self._reindex(namespace)
                findings.append(Finding(part, True, "match the rows"))
                continue
            if repair:
                self._reindex(namespace)
            after = self._lists_check(namespace) if repair else found
            fixed = repair and after.agree and not after.stray
            detail = "out of step with the rows"
            if found.stray:
                detail += f" ({found.stray:,} postings of no memory, or twice in a list)"
            findings.append(Finding(part, fixed, detail, fixed))
        return findings

    def _tables_finding(self) -> Finding:
        """The store's tables against those this version makes: a column dropped or retyped
        by hand failed every write while doctor said all was well (a hostile pass)."""
        try:
            with self._read() as conn:
                drift = schema_drift(conn, self._dim)
        except psycopg.Error as exc:  # a role without even TEMP: not a fault of the store
            return Finding("tables", True, f"not checked: {exc}".strip())
        if not drift:
            return Finding("tables", True, "match the schema")
        return Finding("tables", False, "differ from the schema: " + "; ".join(drift))

    def mark_copy(self, note: str | None) -> None:
        with self._pool.connection() as conn, conn.transaction():
            if note is None:
                conn.execute("DELETE FROM fivefold_meta WHERE key = %s", (COPY_MARK,))
                return
            # The key is unique: of two copies marking at once, the second finds the first's
            # row (it waits for it to commit) and inserts nothing.
            claimed = conn.execute(
                "INSERT INTO fivefold_meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO NOTHING RETURNING key",
                (COPY_MARK, note),
            ).fetchone()
            held = conn.execute(f"SELECT 1 FROM ({HELD_NAMESPACES}) AS held LIMIT 1").fetchone()
            if claimed is None or held is not None:
                raise InvalidInput(f"{self._location}: {COPY_REFUSED}")

    def held_namespaces(self) -> list[str]:
        with self._read() as conn:
            return sorted(str(r[0]) for r in conn.execute(HELD_NAMESPACES))

    def progress(self, key: str) -> str | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT value FROM fivefold_meta WHERE key = %s", (PROGRESS_PREFIX + key,)
            ).fetchone()
        return None if row is None else str(row[0])

    def next_memory_id(self, *, at_least: int | None = None) -> int:
        if at_least is None:
            with self._read() as conn:
                return next_memory_id(conn)
        return self._write(lambda conn, _: move_memory_ids(conn, at_least))

    def copy_mark(self) -> str | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT value FROM fivefold_meta WHERE key = %s", (COPY_MARK,)
            ).fetchone()
        return None if row is None else str(row[0])

    def compact(self) -> int:
        """Each list's parts of a chunk merged into one where a chunk holds more than
        ``COMPACT_PARTS`` (a small write adds a part to each list it is in; a search reads a
        list's parts as rows). Statistics change in the writing transaction: nothing else is
        left behind. Returns how many lists' chunks were merged."""
        with self._read() as conn:
            found = conn.execute("SELECT namespace FROM namespaces ORDER BY namespace")
            namespaces = [str(r[0]) for r in found.fetchall()]
        return sum(self._compact_namespace(namespace) for namespace in namespaces)

    def _compact_namespace(self, namespace: str, stop: Callable[[], bool] = bool) -> int:
        """``compact`` for one namespace, ``COMPACT_BATCH`` chunks of lists a transaction (a
        writer of those lists waits for one), until none is left, ``stop()`` says so, or as
        many rounds as there were batches at first (writers may fragment lists as fast)."""
        params = {"ns": namespace, "parts": COMPACT_PARTS, "limit": COMPACT_BATCH}
        merged, rounds = 0, None
        while not stop():
            with self._read() as conn:
                if rounds is None:
                    held = conn.execute(
                        f"SELECT count(*) FROM ({schema.FRAGMENTED}) AS f",
                        {**params, "limit": None},
                    ).fetchone()
                    rounds = -(-int(held[0] if held else 0) // COMPACT_BATCH)
                groups = conn.execute(schema.FRAGMENTED, params).fetchall()
            if not groups or rounds <= 0:
                break

            def run(conn: psycopg.Connection, deltas: Deltas, found: list[Any] = groups) -> None:
                for kind, term, chunk in found:
                    deltas.lists.touch(namespace, int(kind), str(term), int(chunk))

            self._write(run)
            merged += len(groups)
            rounds -= 1
        return merged

    def _reindex(self, namespace: str) -> None:
        """A namespace's lists and statistics made again from its memories (doctor's repair)."""
        self._write(lambda conn, _: self._reindex_lexical(conn, namespace))

    def _lists_check(self, namespace: str) -> ListsCheck:
        """A namespace's lists against its memories, its document frequencies and counts
        against its lists and memories, in one snapshot (every list decoded here: the server
        cannot read them)."""
        with self._read() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            held = conn.execute(
                "SELECT id, type FROM memories WHERE namespace = %s ORDER BY id", (namespace,)
            ).fetchall()
            stats = conn.execute(
                "SELECT field, term, df1, df2 FROM term_stats "
                "WHERE namespace = %s AND (df1 > 0 OR df2 > 0)",
                (namespace,),
            ).fetchall()
            counted = conn.execute(_COUNTED_TOKENS, {"ns": namespace}).fetchone()
            kept = namespace_row(conn, namespace)
            ids = np.asarray([int(r[0]) for r in held], dtype=np.int64)
            codes = np.asarray([type_code(str(r[1])) for r in held], dtype=np.uint8)
            check = ListsCheck()
            documents: dict[tuple[int, str], tuple[int, int]] = {}
            # A list at a time, through a cursor on the server: a large namespace's lists
            # together are more than the client should hold.
            with conn.cursor(name="fivefold_lists", binary=True) as cursor:
                cursor.execute(
                    "SELECT field, term, string_agg(packed, ''::bytea) FROM postings "
                    "WHERE namespace = %s GROUP BY field, term",
                    (namespace,),
                )
                for kind, term, packed in cursor:
                    postings = decode(int(kind), packed)
                    at = np.minimum(np.searchsorted(ids, postings["id"]), max(len(ids) - 1, 0))
                    known = ids[at] == postings["id"] if len(ids) else np.zeros(len(postings), bool)
                    check.stray += int((~known).sum()) + len(postings)
                    check.stray -= len(np.unique(postings["id"]))
                    check.mistyped += int((codes[at[known]] != postings["type"][known]).sum())
                    wide = int(kind) == schema.OWN  # the window field has no second column
                    first = int((postings["first"] > 0).sum())
                    second = int((postings["second"] > 0).sum()) if wide else 0
                    if first or second:
                        documents[int(kind), str(term)] = (first, second)
        expected = tuple(int(v) for v in counted) if counted else (0, 0, 0, 0, 0)
        check.agree = (
            documents == {(int(f), str(t)): (int(d1), int(d2)) for f, t, d1, d2 in stats}
            and (kept[0], *kept[2:]) == expected
        )
        return check

    @staticmethod
    def _rekey_names(conn: psycopg.Connection) -> None:
        """Schema 8's entity and alias keys (``schema.NAMED_NOT_ASCII``), in its transaction."""
        kept = 0
        for select, update in zip(
            schema.NAMED_NOT_ASCII, (schema.REKEY_ENTITY, schema.REKEY_ALIAS), strict=True
        ):
            for key, (namespace, row_id), old in new_keys(conn.execute(select).fetchall()):
                params = {"key": key, "ns": namespace, "id": row_id, "old": old}
                kept += conn.execute(update, params).rowcount == 0
        if kept:
            log.warning("schema 8: %d entity or alias keys kept as they were (taken)", kept)

    def _reindex_lexical(self, conn: psycopg.Connection, namespace: str | None = None) -> None:
        """Every memory's postings, document frequencies and token counts again from its text
        (of one namespace, or of all: a schema migration, whose lists are empty), inside the
        caller's transaction. Rows are indexed a chunk at a time (``packed.CHUNK``): each list
        gets one part per chunk."""
        deltas = Deltas()
        if namespace is None:
            conn.execute("UPDATE namespaces SET tokens = '{0,0,0,0}'")
            where, params = "", {}
        else:
            # Writers wait: a memory written meanwhile would be indexed twice, or not at all.
            conn.execute("LOCK TABLE memories, postings IN SHARE ROW EXCLUSIVE MODE")
            for table in ("postings", "term_stats"):
                conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (namespace,))
            conn.execute(  # its row may be gone too
                "INSERT INTO namespaces (namespace) VALUES (%s) ON CONFLICT DO NOTHING",
                (namespace,),
            )
            conn.execute(
                "UPDATE namespaces SET tokens = '{0,0,0,0}', memories = (SELECT count(*) "
                "FROM memories WHERE namespace = %(ns)s) WHERE namespace = %(ns)s",
                {"ns": namespace},
            )
            where, params = "WHERE namespace = %(ns)s ", {"ns": namespace}
        with conn.cursor(name="fivefold_reindex") as rows:
            rows.execute(
                "SELECT namespace, id, type, coalesce(predicate, ''), content, context_near, "
                f"context_far FROM memories {where}ORDER BY namespace, id",
                params,
            )
            pending: list[tuple[Any, ...]] = []
            while batch := rows.fetchmany(2_000):
                pending += batch
                last = (pending[-1][0], int(pending[-1][1]) >> CHUNK_BITS)
                cut = len(pending)
                while cut and (pending[cut - 1][0], int(pending[cut - 1][1]) >> CHUNK_BITS) == last:
                    cut -= 1
                self._index_rows(conn, deltas, pending[:cut])
                pending = pending[cut:]
            self._index_rows(conn, deltas, pending)
        deltas.flush(conn)
        conn.execute(f"UPDATE namespaces SET generation = generation + 1 {where}".strip(), params)

    def _index_rows(
        self, conn: psycopg.Connection, deltas: Deltas, rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """``_reindex_lexical``'s memories (namespace, id, type, predicate, content, context):
        their postings written, their counts in ``deltas``."""
        if not rows:
            return
        counted = self._tokenizer.count([(r[3], r[4]) for r in rows])
        around = self._tokenizer.count([(r[5], r[6]) for r in rows])
        entries: dict[tuple[str, int], list[Entry]] = {}
        lengths = []
        for row, own, ctx in zip(rows, counted, around, strict=True):
            namespace, memory_id, code = str(row[0]), int(row[1]), type_code(str(row[2]))
            win = window(own.second, ctx.first, ctx.second)
            entries.setdefault((namespace, schema.OWN), []).append((memory_id, own, code))
            deltas.add(namespace, schema.OWN, own, 1)
            entries.setdefault((namespace, schema.CONTEXT), []).append((memory_id, win, code))
            deltas.add(namespace, schema.CONTEXT, win, 1)
            columns = [own.first_length, own.second_length, win.first_length, win.second_length]
            lengths.append((columns, namespace, memory_id))
        for (namespace, kind), found in entries.items():
            copy_parts(conn, namespace, kind, parts(kind, found))
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE memories SET tokens = %s WHERE namespace = %s AND id = %s", lengths
            )


# A chunk's parts of a list are merged once there are more than this many (bulk writes leave
# one or two, which merging would only rewrite), ``COMPACT_BATCH`` lists' chunks a transaction.
COMPACT_PARTS = 4
COMPACT_BATCH = 2_000


@dataclass
class ListsCheck:
    """``PostgresStore._lists_check``'s findings on a namespace."""

    mistyped: int = 0  # postings carrying another type than their memory's
    stray: int = 0  # postings of no memory of the namespace, or a memory's second in a list
    agree: bool = True  # document frequencies and counts match the lists and the memories


# A namespace's memory count and each column's token total, from the memories.
_COUNTED_TOKENS = """
SELECT count(*), coalesce(sum(tokens[1]), 0), coalesce(sum(tokens[2]), 0),
       coalesce(sum(tokens[3]), 0), coalesce(sum(tokens[4]), 0)
FROM memories WHERE namespace = %(ns)s
"""


__all__ = ["PostgresStore"]


# A schema's tables' columns (type with its modifier: vector(384), varchar(200); NOT NULL; a
# default) and its sequences.
_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0
  AND NOT a.attisdropped
"""
_SEQUENCES = "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'S'"
Column = tuple[str, bool, bool]  # type, NOT NULL, has a default


def schema_drift(conn: psycopg.Connection, dim: int) -> list[str]:
    """What in the store's tables differs from those this version makes: a table, column or
    sequence missing, a column of another type or nullability, a column added NOT NULL with no
    default (every insert fails). The expected ones are made afresh as temporary tables
    (``pg_temp``: no right beyond the TEMP every role has) and rolled back, so there is no
    second list of columns to keep in step with the migrations."""
    mine = _value(conn, "SELECT current_schema()")
    found, held = _columns(conn, mine)
    with conn.transaction(force_rollback=True):
        path = _value(conn, "SELECT current_setting('search_path')")
        # The store's path after it: the vector type where the store finds it.
        conn.execute(f"SET LOCAL search_path = pg_temp, {path}")
        conn.execute(schema.META_DDL)
        for step in schema.MIGRATIONS:
            conn.execute(step.format(dim=dim))
        scratch = _value(conn, "SELECT pg_my_temp_schema()::regnamespace")
        expected, sequences = _columns(conn, scratch)
    tables = {table for table, _ in found}
    drift = sorted({f"table {t} is missing" for t, _ in expected if t not in tables})
    drift += [f"sequence {name} is missing" for name in sorted(sequences - held)]
    for (table, column), (kind, not_null, _) in sorted(expected.items()):
        if table not in tables:
            continue
        got = found.get((table, column))
        if got is None:
            drift.append(f"{table}.{column} is missing")
        elif got[0] != kind:
            drift.append(f"{table}.{column} is {got[0]}, not {kind}")
        elif got[1] != not_null:
            drift.append(f"{table}.{column} is {'' if got[1] else 'not '}NOT NULL")
    ours = {table for table, _ in expected}
    for (table, column), (_, not_null, default) in sorted(found.items()):
        # Every insert, which does not name it, fails.
        if table in ours and (table, column) not in expected and not_null and not default:
            drift.append(f"{table}.{column} is an added NOT NULL column with no default")
    return drift


def _value(conn: psycopg.Connection, query: str) -> str:
    row = conn.execute(query).fetchone()
    return "" if row is None else str(row[0])


def _columns(
    conn: psycopg.Connection, namespace: str
) -> tuple[dict[tuple[str, str], Column], set[str]]:
    columns = {
        (str(t), str(c)): (str(k), bool(n), bool(d))
        for t, c, k, n, d in conn.execute(_COLUMNS, (namespace,))
    }
    return columns, {str(r[0]) for r in conn.execute(_SEQUENCES, (namespace,))}


def _schema_version(value: str, location: str) -> int:
    """The stored schema version; another program's value in fivefold's meta table is not a
    store of ours (it was a raw ``ValueError``, or a negative one indexed the migrations)."""
    if not (value.isascii() and value.isdigit()):
        raise NotAFivefoldStore(
            f"{location}: its fivefold_meta table holds schema_version {value!r}, which "
            "fivefold never writes; use another database or schema"
        )
    return int(value)


def _note_progress(conn: psycopg.Connection, progress: Progress, location: str) -> None:
    key = PROGRESS_PREFIX + progress.key
    if progress.previous is None:
        noted = conn.execute(
            "INSERT INTO fivefold_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
            (key, progress.value),
        )
    else:
        noted = conn.execute(
            "UPDATE fivefold_meta SET value = %s WHERE key = %s AND value = %s",
            (progress.value, key, progress.previous),
        )
    if noted.rowcount != 1:  # raised in the write's transaction: it is rolled back
        raise StoreError(f"{location}: {PROGRESS_MOVED}")
