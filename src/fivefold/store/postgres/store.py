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
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

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
from fivefold.model import (
    CatalogEntry,
    Edge,
    Entity,
    Feedback,
    Finding,
    MemoryRecord,
    NewEdge,
    NewMemory,
    Scope,
)
from fivefold.store import batch, context
from fivefold.store.base import StoreSettings
from fivefold.store.context import Group, SessionRow
from fivefold.store.postgres import schema
from fivefold.store.postgres.beside import THREADED_FROM, Beside
from fivefold.store.postgres.context_rows import (
    Deltas,
    Growth,
    MemoryGone,
    PostgresContextRows,
    Posting,
    as_array,
    copy_lines,
    copy_postings,
    drop_postings,
    escape,
    insert_postings,
    postings,
    send_copy,
    sorted_text,
)
from fivefold.store.postgres.lexical import Lexical, namespace_row
from fivefold.store.postgres.lists import Version
from fivefold.store.postgres.read import PostgresReads
from fivefold.store.postgres.read import translating as _translating
from fivefold.store.rows import (
    edge_values,
    feedback_entries,
    stored_edge,
)
from fivefold.store.timeconv import to_ts
from fivefold.store.tokens import Counted, LineCounts, Tokenizer, window
from fivefold.text import normalize_name

T = TypeVar("T")
log = logging.getLogger("fivefold.store")
POOL_SIZE = 8
# Writers that deadlock or find a session turn rewritten under them start again, after a
# jittered wait (without it, two writers of one session retried in step and met again).
WRITE_ATTEMPTS = 8
_SMOOTHING_KEY = "context_smoothing"


@_translating
class PostgresStore(PostgresReads):
    """Lifecycle and writes here; every read is ``PostgresReads``'s (``read.py``)."""

    keyed_names = True  # index rows of 2,704 bytes at most; text without NUL

    def __init__(
        self, url: str, *, embedding_model: str, dim: int, settings: StoreSettings
    ) -> None:
        self._url = url
        self._location = _without_password(url)
        self._model = embedding_model
        self._dim = dim
        self._settings = settings
        self._tokenizer = Tokenizer()
        self._lines = LineCounts(self._tokenizer)
        self._catalogs: dict[str, tuple[Version, list[CatalogEntry]]] = {}
        self._bm25 = Lexical(self._tokenizer)
        self._build_failed: dict[str, float] = {}
        try:
            rebuild, reindexed = self._init_schema()
            self._pool = ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                kwargs={"autocommit": True},
                configure=register_vector,
                open=True,
                name="fivefold",
            )
        except FivefoldError:
            raise
        except (psycopg.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {self._location}: {exc}") from exc
        if rebuild:
            self._rebuild_context()
        if reindexed:  # every posting row is new: no page of them is marked all-visible yet
            self._maintain(Growth(analyze=True, vacuum=True))

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def embedding_model(self) -> str:
        return self._model

    def close(self) -> None:
        self._pool.close()

    def _init_schema(self) -> tuple[bool, bool]:
        """Create or migrate the schema (one opener at a time). Returns whether the stored
        context was made with other smoothing settings and must be rebuilt, and whether the
        postings were rebuilt from the memories by a migration."""
        with psycopg.connect(self._url, autocommit=True) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (schema.SCHEMA_LOCK,))
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
            version = int(meta.get("schema_version", "0"))
            if version > schema.SCHEMA_VERSION:
                raise NotAFivefoldStore(
                    f"{self._location} has fivefold schema version {version}; this version of "
                    f"fivefold reads up to {schema.SCHEMA_VERSION}: upgrade fivefold"
                )
            held = conn.execute(schema.LONG_TOKENS).fetchone() if 5 <= version < 7 else None
            long_tokens = held is not None and bool(held[0])
            for step in schema.MIGRATIONS[version:]:
                conn.execute(step.format(dim=self._dim))
            if long_tokens:  # schema 7
                conn.execute("TRUNCATE postings, term_stats")
            # The posting rows of schemas 2, 4 and 5 are derived, and 7's cut tokens.
            reindexed = 0 < version < 5 or long_tokens
            if reindexed:
                self._reindex_lexical(conn)
            if not meta:
                meta = {
                    "embedding_model": self._model,
                    "embedding_dim": str(self._dim),
                    "store_id": uuid.uuid4().hex,
                    _SMOOTHING_KEY: self._smoothing().tag,
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
        stored = meta.get("embedding_model", "?")
        if stored != self._model or meta.get("embedding_dim") != str(self._dim):
            raise EmbeddingModelMismatch(
                f"{self._location} was built with embedding model {stored!r} "
                f"({meta.get('embedding_dim')}-d) but is being opened with {self._model!r} "
                f"({self._dim}-d); open it with the model it was built with, or migrate into a "
                "new store"
            )
        return meta.get(_SMOOTHING_KEY) != self._smoothing().tag, reindexed

    def _smoothing(self) -> context.Smoothing:
        cfg = self._settings.context
        return context.Smoothing(window=cfg.window, near=cfg.vector_near, far=cfg.vector_far)

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
                context.refresh(rows, ids, self._smoothing())
                rows.flush()
                deltas.memories[namespace] += 0  # bumps the generation: caches drop
            conn.execute(
                "UPDATE fivefold_meta SET value = %s WHERE key = %s",
                (self._smoothing().tag, _SMOOTHING_KEY),
            )

        self._write(run)

    # -- plumbing -------------------------------------------------------------------------------
    def _write(self, work: Callable[[psycopg.Connection, Deltas], T]) -> T:
        """``work`` in one transaction, its gathered deltas applied last; retried when two
        writers deadlock (Postgres aborts one of them)."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self._pool.connection() as conn, conn.transaction():
                    deltas = Deltas()
                    result = work(conn, deltas)
                    growth = deltas.flush(conn)
                break
            except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure, MemoryGone):
                if attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.01 * 2**attempt * random.uniform(0.5, 1.5))
        if growth.analyze or growth.vacuum:
            self._maintain(growth)
        return result

    def _maintain(self, growth: Growth) -> None:
        """The visibility map and planner statistics, as a write's growth asks (outside its
        transaction: VACUUM cannot run inside one). The write is committed by then, so a
        failure here is logged, not raised: the caller must not retry it, and autovacuum does
        the same work later."""
        try:
            with self._pool.connection() as conn:
                if growth.vacuum:
                    conn.execute(schema.VACUUM)
                if growth.analyze:
                    conn.execute(schema.ANALYZE)
        except psycopg.Error as exc:
            log.warning("%s: refreshing statistics after a write failed: %s", self.location, exc)

    # -- writes ---------------------------------------------------------------------------------
    def insert_memories(
        self, memories: Sequence[NewMemory], vectors: Vectors
    ) -> list[MemoryRecord]:
        if len(memories) != len(vectors):
            raise InvalidInput("one vector per memory is required")
        if len(vectors) and vectors.shape[1] != self._dim:
            raise InvalidInput(f"vectors must have {self._dim} dimensions, got {vectors.shape[1]}")
        return self._write(
            lambda conn, deltas: self._write_memories(conn, deltas, memories, vectors)
        )

    def _write_memories(
        self,
        conn: psycopg.Connection,
        deltas: Deltas,
        memories: Sequence[NewMemory],
        vectors: Vectors,
    ) -> list[MemoryRecord]:
        """A batch in a few statements: ids reserved at once, rows and postings sent together,
        entities, mentions, co-mentions and sessions resolved per batch (the same rules as
        the SQLite backend's row-by-row path), then the session context."""
        if not memories:
            return []
        for position, memory in enumerate(memories):
            _no_nul(
                position,
                content=memory.content,
                predicate=memory.predicate,
                speaker=memory.speaker,
                session_id=memory.session_id,
                entity=" ".join(memory.entities),
            )
        bounds = self._settings.write
        named = [
            batch.entity_keys(m.entities[: bounds.max_entities]) for m in memories
        ]  # refuses first
        # Before the ids: a session's writes then take their ids in the order they commit.
        _lock_sessions(conn, (g for m in memories if (g := batch.group_of(m)) is not None))
        counted = self._lines.count([(m.predicate or "", m.content) for m in memories])
        reserved = conn.execute(
            "SELECT nextval('fivefold_memory_ids') FROM generate_series(1, %s)", (len(memories),)
        ).fetchall()
        ids = sorted(int(r[0]) for r in reserved)
        # Each new row is written once with its final context and searched vector, and each
        # older row its context changes in one update: every row version is an insertion into
        # the HNSW graph.
        rows = batch.session_context(
            memories, ids, vectors, self._smoothing(), lambda w, n: self._newest(conn, w, n)
        )
        texts = rows.contexts
        # Every memory has a window: its own text (counted above), and its neighbours' where
        # it has some.
        around = self._lines.count([texts.get(i, ("", "")) for i in ids])
        windows = [
            window(own.second, ctx.first, ctx.second)
            for own, ctx in zip(counted, around, strict=True)
        ]
        values = [(i, *batch.memory_values(m)) for i, m in zip(ids, memories, strict=True)]
        _execute_many(
            conn,
            schema.INSERT_MEMORY,
            [
                _memory_row(r, v, c, texts.get(r[0], ("", "")), w, rows.searched.get(r[0]))
                for r, v, c, w in zip(values, vectors, counted, windows, strict=True)
            ],
        )
        new_postings = self._new_postings(deltas, memories, ids, counted, windows)
        # The older rows' changes are worked out beside the new postings' COPY and the entities
        # (``Beside``: this thread waits on the server meanwhile); ``deltas`` is the other
        # thread's until its result is taken.
        older = Beside(
            partial(self._older_changes, deltas=deltas, rows=rows, new=set(ids)),
            threaded=len(memories) >= THREADED_FROM,
        )
        for text in new_postings:
            send_copy(conn, text)
        found, names = self._write_entities(conn, memories, ids, named)
        self._write_sessions(conn, memories)
        self._update_older(conn, older.result())
        return batch.records(values, found, names)

    @staticmethod
    def _newest(
        conn: psycopg.Connection, wanted: Sequence[tuple[Group, int]], limit: int
    ) -> dict[Group, list[tuple[int, SessionRow]]]:
        """One statement per namespace (a shard's), for all its sessions wanted."""
        out: dict[Group, list[tuple[int, SessionRow]]] = {}
        for namespace in dict.fromkeys(group[0] for group, _ in wanted):
            mine = [(k, g, b) for k, (g, b) in enumerate(wanted) if g[0] == namespace]
            params = {
                "k": [k for k, _, _ in mine],
                "usr": [g[1] for _, g, _ in mine],
                "agt": [g[2] for _, g, _ in mine],
                "ses": [g[3] for _, g, _ in mine],
                "below": [b for _, _, b in mine],
                "ns": namespace,
                "limit": limit,
            }
            # Binary: pgvector parses its text form float by float (1.4 s of a 30 s bulk
            # write of 20,000 memories).
            with conn.cursor(binary=True) as cur:
                for k, i, c, v, n, f in cur.execute(schema.NEWEST_IN_SESSIONS, params):
                    row = (int(i), SessionRow(str(c), as_array(v), (str(n), str(f))))
                    out.setdefault(wanted[int(k)][0], []).append(row)
        return out

    def _older_changes(
        self, *, deltas: Deltas, rows: context.BatchRows, new: set[int]
    ) -> OlderRows:
        """The rows before the batch in its sessions: their new context text (and its
        postings) and searched vector, worked out without the connection."""
        older = [
            (i, group[0]) for i in rows.searched if i not in new and (group := rows.group_of(i))
        ]
        texts = [(rows.was.get(i, rows.context_of(i)), rows.context_of(i)) for i, _ in older]
        own = self._lines.count([(rows.content_of(i), "") for i, _ in older])
        counted = self._lines.count([text for pair in texts for text in pair])
        out = OlderRows()
        for n, ((memory_id, namespace), (old, text)) in enumerate(zip(older, texts, strict=True)):
            was, now = counted[2 * n], counted[2 * n + 1]
            before = window(own[n].first, was.first, was.second)
            after = window(own[n].first, now.first, now.second)
            if text != old:  # its window changed with it
                out.gone.append((namespace, schema.CONTEXT, sorted(before.terms), memory_id))
                deltas.add(namespace, schema.CONTEXT, before, -1)
                out.fresh += postings(namespace, memory_id, after)
                deltas.add(namespace, schema.CONTEXT, after, 1)
            vector = rows.searched[memory_id]
            out.updates.append(
                (
                    *text,
                    after.first_length,
                    after.second_length,
                    None if vector is None else np.asarray(vector, np.float32),
                    namespace,
                    memory_id,
                    *old,
                )
            )
        return out

    @staticmethod
    def _update_older(conn: psycopg.Connection, older: OlderRows) -> None:
        """The older rows' changes (``_older_changes``), in one update each. Each row only if
        it still holds the context this batch read: another writer may have deleted it, or
        rewritten it with a turn of its own in the same session, since; then the postings this
        batch would remove and add are not the row's, and the write starts again from a fresh
        read. Each row updated is locked until the commit."""
        types: dict[int, str] = {}
        if older.updates:
            with conn.cursor() as cur:
                cur.executemany(schema.UPDATE_CONTEXT_AND_SEARCHED, older.updates, returning=True)
                while True:
                    types.update((int(i), str(t)) for i, t in cur.fetchall())
                    if not cur.nextset():
                        break
            if len(types) != len(older.updates):
                raise MemoryGone(
                    f"{len(older.updates) - len(types)} memories before this batch in its "
                    "sessions were changed or deleted by a concurrent write; nothing was "
                    "written: try again"
                )
        if older.gone:
            # A statement per row, on its own key: one for all of them (~30,000 keys a batch
            # here) was planned as a hash join over a scan of every posting.
            _execute_many(conn, schema.DELETE_POSTINGS, older.gone)
        copy_postings(conn, schema.CONTEXT, older.fresh, types)

    @staticmethod
    def _new_postings(
        deltas: Deltas,
        memories: Sequence[NewMemory],
        ids: Sequence[int],
        counted: Sequence[Counted],
        windows: Sequence[Counted],
    ) -> list[bytes]:
        """The postings of the new rows' own text and of their window, as COPY's text."""
        own: list[str] = []
        around: list[str] = []
        escaped: dict[str, str] = {}
        for memory, memory_id, count, text in zip(memories, ids, counted, windows, strict=True):
            namespace = memory.scope.namespace
            if namespace not in escaped:
                escaped[namespace] = escape(namespace)
            ns, mtype = escaped[namespace], memory.type.value
            own += copy_lines(ns, schema.OWN, memory_id, count, mtype)
            deltas.add(namespace, schema.OWN, count, 1)
            deltas.memories[namespace] += 1
            around += copy_lines(ns, schema.CONTEXT, memory_id, text, mtype)
            deltas.add(namespace, schema.CONTEXT, text, 1)
        return [sorted_text(own), sorted_text(around)]

    def _write_entities(
        self,
        conn: psycopg.Connection,
        memories: Sequence[NewMemory],
        ids: Sequence[int],
        named: Sequence[batch.Named],
    ) -> tuple[batch.Mentions, dict[int, str]]:
        """Names resolved per namespace (an alias wins, else the entity of that key, created
        with the first spelling met), then mentions, mention counts and co-mention edges.
        Returns the mentions and each named entity's stored name (id -> name)."""
        first = batch.first_spellings(memories, named)
        resolved: dict[tuple[str, str], int] = {}
        names: dict[int, str] = {}
        for namespace in dict.fromkeys(ns for ns, _ in first):
            keys = [k for ns, k in first if ns == namespace]
            for statement in (schema.FIND_ENTITIES, schema.FIND_ALIASES):  # an alias wins
                for key, entity_id, name in conn.execute(
                    statement, {"ns": namespace, "keys": keys}
                ):
                    resolved[namespace, str(key)] = int(entity_id)
                    names[int(entity_id)] = str(name)
        fresh = [key for key in first if key not in resolved]  # in first-met order
        if fresh:
            rows = conn.execute(
                schema.UPSERT_ENTITIES,
                _columns([(ns, first[ns, k][0], k, first[ns, k][1]) for ns, k in fresh]),
            ).fetchall()
            resolved.update(((str(ns), str(k)), int(i)) for i, ns, k, _ in rows)
            names.update((int(i), str(name)) for i, _, _, name in rows)
        found = batch.mentions(
            memories, ids, named, resolved, self._settings.write.max_comention_entities
        )
        if found.rows:
            conn.execute(schema.INSERT_MENTIONS, _columns([r[:4] for r in found.rows]))
            ordered = sorted(found.bumps.items())
            conn.execute(
                schema.BUMP_ENTITIES_MENTIONS,
                ([k[0] for k, _ in ordered], [k[1] for k, _ in ordered], [n for _, n in ordered]),
            )
        if found.pairs:
            pairs = sorted(found.pairs.items())
            conn.execute(
                schema.UPSERT_COMENTIONS,
                (
                    *_columns([key for key, _ in pairs]),
                    [n for _, (n, _) in pairs],
                    [created for _, (_, created) in pairs],
                ),
            )
        return found, names

    def _write_sessions(self, conn: psycopg.Connection, memories: Sequence[NewMemory]) -> None:
        spans = sorted(batch.sessions(memories).items())
        if spans:
            conn.execute(
                schema.UPSERT_SESSIONS,
                (
                    *_columns([group for group, _ in spans]),
                    [low for _, (low, _) in spans],
                    [high for _, (_, high) in spans],
                ),
            )

    def _entity_id(
        self, conn: psycopg.Connection, namespace: str, name: str, created: float, mentions: int
    ) -> int:
        norm = normalize_name(name)
        if not norm:
            raise InvalidInput(f"entity name {name!r} has no letters or digits")
        alias = conn.execute(schema.FIND_ALIAS, (namespace, norm)).fetchone()
        if alias is not None:
            if mentions:
                conn.execute(schema.BUMP_ENTITY_MENTIONS, (mentions, namespace, alias[0]))
            return int(alias[0])
        row = conn.execute(
            schema.UPSERT_ENTITY, (namespace, name.strip(), norm, mentions, created)
        ).fetchone()
        return int(row[0]) if row else 0

    def delete_memory(self, memory_id: int, scope: Scope) -> bool:
        return self._write(lambda conn, deltas: self._delete(conn, deltas, memory_id, scope))

    def _delete(
        self, conn: psycopg.Connection, deltas: Deltas, memory_id: int, scope: Scope
    ) -> bool:
        ns = scope.namespace
        session = conn.execute(
            "SELECT user_id, agent_id, session_id FROM memories WHERE namespace = %s AND id = %s",
            (ns, memory_id),
        ).fetchone()
        if session is not None and session[2]:  # its neighbours' context is refreshed below
            _lock_sessions(conn, [(ns, session[0] or "", session[1] or "", session[2])])
        row = conn.execute(
            "SELECT user_id, agent_id, predicate, content, context_near, context_far "
            "FROM memories WHERE namespace = %s AND id = %s FOR UPDATE",
            (ns, memory_id),
        ).fetchone()
        if row is None or not scope.admits(ns, row[0] or None, row[1] or None):
            return False
        user, agent, predicate, content, near, far = row
        rows = PostgresContextRows(conn, self._tokenizer, deltas, self._dim)
        rows.namespace = ns
        around = context.around(rows, memory_id)
        mentioned = conn.execute(
            "SELECT entity_id, joined FROM mentions WHERE namespace = %s AND memory_id = %s "
            "ORDER BY entity_id",
            (ns, memory_id),
        ).fetchall()
        entity_ids = [int(r[0]) for r in mentioned]
        joined = [int(r[0]) for r in mentioned if r[1]]
        for entity_id in entity_ids:
            conn.execute(schema.BUMP_ENTITY_MENTIONS, (-1, ns, entity_id))
        for i, a in enumerate(joined):
            for b in joined[i + 1 :]:
                conn.execute(schema.DROP_COMENTION, (ns, user, agent, a, b))
        conn.execute(schema.PRUNE_COMENTIONS, (ns,))
        own, ctx = self._tokenizer.count([(predicate or "", content), (near, far)])
        gone = window(own.second, ctx.first, ctx.second)
        drop_postings(conn, ns, schema.OWN, memory_id, own)
        deltas.add(ns, schema.OWN, own, -1)
        deltas.memories[ns] -= 1
        drop_postings(conn, ns, schema.CONTEXT, memory_id, gone)
        deltas.add(ns, schema.CONTEXT, gone, -1)
        conn.execute(
            "DELETE FROM mentions WHERE namespace = %s AND memory_id = %s", (ns, memory_id)
        )
        conn.execute("DELETE FROM edges WHERE namespace = %s AND memory_id = %s", (ns, memory_id))
        conn.execute("DELETE FROM memories WHERE namespace = %s AND id = %s", (ns, memory_id))
        conn.execute(
            "DELETE FROM feedback_labels WHERE namespace = %s AND memory_id = %s", (ns, memory_id)
        )
        context.refresh(rows, around, self._smoothing())
        rows.flush()
        conn.execute(schema.DROP_ORPHAN_ENTITIES, (ns, entity_ids))
        return True

    def add_edge(
        self, edge: NewEdge, *, record: NewMemory | None = None, vector: Vectors | None = None
    ) -> Edge:
        scope = edge.scope
        _no_nul(None, source=edge.source, relation=edge.relation, target=edge.target)
        records: list[NewMemory] = [] if record is None else [record]
        if records and (vector is None or len(vector) != self._dim):
            raise InvalidInput(f"the record needs one {self._dim}-d vector")
        matrix = np.asarray(vector if records else [], dtype=np.float32).reshape(
            len(records), self._dim
        )

        def run(conn: psycopg.Connection, deltas: Deltas) -> tuple[int, int | None]:
            now = to_ts(datetime.now().astimezone())
            written = self._write_memories(conn, deltas, records, matrix)
            memory_id = written[0].id if written else edge.memory_id
            source = self._entity_id(conn, scope.namespace, edge.source, now, 0)
            target = self._entity_id(conn, scope.namespace, edge.target, now, 0)
            row = conn.execute(
                schema.INSERT_EDGE, edge_values(edge, source, target, memory_id, now)
            ).fetchone()
            deltas.memories[scope.namespace] += 0  # a new generation: caches drop
            return (int(row[0]) if row else 0), memory_id

        edge_id, memory_id = self._write(run)
        return stored_edge(edge, edge_id, memory_id)

    def add_alias(self, namespace: str, name: str, alias: str) -> Entity:
        _no_nul(None, name=name, alias=alias)
        alias_norm = normalize_name(alias)
        if not alias_norm:
            raise InvalidInput(f"alias {alias!r} has no letters or digits")

        def run(conn: psycopg.Connection, deltas: Deltas) -> Entity:
            now = to_ts(datetime.now().astimezone())
            entity_id = self._entity_id(conn, namespace, name, now, 0)
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
        _no_nul(None, query=query, args=args)

        def run(conn: psycopg.Connection, deltas: Deltas) -> int:
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
        """Per namespace, the document frequencies and counts against the posting rows and the
        memories; ``repair`` recomputes them from those rows."""
        findings = []
        with self._read() as conn:
            conn.execute("SELECT 1")
            findings.append(Finding("database", True, "reachable"))
            namespaces = [
                str(r[0])
                for r in conn.execute(
                    "SELECT namespace FROM namespaces UNION SELECT DISTINCT namespace FROM memories"
                ).fetchall()
            ]
        for namespace in sorted(namespaces):
            part = f"lexical statistics of namespace {namespace!r}"
            if self._statistics_agree(namespace):
                findings.append(Finding(part, True, "match the rows"))
                continue
            if repair:
                self._recount(namespace)
            fixed = repair and self._statistics_agree(namespace)
            findings.append(Finding(part, fixed, "out of step with the rows", fixed))
        return findings

    def compact(self) -> int:
        """Nothing to do: the posting rows and statistics change in the writing transaction."""
        return 0

    def _statistics_agree(self, namespace: str) -> bool:
        with self._read() as conn, conn.transaction():
            wrong = conn.execute(
                f"SELECT count(*) FROM ({_COUNTED_TERMS}) AS p "
                "FULL JOIN (SELECT field, term, df1, df2 FROM term_stats "
                "WHERE namespace = %(ns)s AND (df1 > 0 OR df2 > 0)) AS t USING (field, term) "
                "WHERE (p.n1, p.n2) IS DISTINCT FROM (t.df1, t.df2)",
                {"ns": namespace},
            ).fetchone()
            counted = conn.execute(_COUNTED_TOKENS, {"ns": namespace}).fetchone()
            kept = namespace_row(conn, namespace)
        expected = tuple(int(v) for v in counted) if counted else (0, 0, 0, 0, 0)
        return wrong is not None and wrong[0] == 0 and (kept[0], *kept[2:]) == expected

    def _recount(self, namespace: str) -> None:
        def run(conn: psycopg.Connection, deltas: Deltas) -> None:
            conn.execute("DELETE FROM term_stats WHERE namespace = %s", (namespace,))
            conn.execute(
                "INSERT INTO term_stats (namespace, field, term, df1, df2) "
                f"SELECT %(ns)s, field, term, n1, n2 FROM ({_COUNTED_TERMS}) AS p",
                {"ns": namespace},
            )
            conn.execute(
                "INSERT INTO namespaces (namespace) VALUES (%s) ON CONFLICT DO NOTHING",
                (namespace,),
            )
            conn.execute(
                "UPDATE namespaces SET (memories, tokens) = (SELECT c, ARRAY[t1, t2, t3, t4] "
                f"FROM ({_COUNTED_TOKENS}) AS x(c, t1, t2, t3, t4)), "
                "generation = generation + 1 WHERE namespace = %(ns)s",
                {"ns": namespace},
            )

        self._write(run)

    def _reindex_lexical(self, conn: psycopg.Connection) -> None:
        """Every memory's posting rows, document frequencies and token counts again from its
        text (a schema migration, inside its transaction)."""
        deltas = Deltas()
        conn.execute("UPDATE namespaces SET tokens = '{0,0,0,0}'")
        with conn.cursor(name="fivefold_reindex") as rows:
            rows.execute(
                "SELECT namespace, id, coalesce(predicate, ''), content, context_near, "
                "context_far FROM memories ORDER BY namespace, id"
            )
            while batch := rows.fetchmany(2_000):
                counted = self._tokenizer.count([(r[2], r[3]) for r in batch])
                around = self._tokenizer.count([(r[4], r[5]) for r in batch])
                windows = [
                    window(own.second, ctx.first, ctx.second)
                    for own, ctx in zip(counted, around, strict=True)
                ]
                flat: dict[int, list[Posting]] = {schema.OWN: [], schema.CONTEXT: []}
                lengths = []
                for row, own, ctx in zip(batch, counted, windows, strict=True):
                    namespace, memory_id = str(row[0]), int(row[1])
                    flat[schema.OWN] += postings(namespace, memory_id, own)
                    deltas.add(namespace, schema.OWN, own, 1)
                    flat[schema.CONTEXT] += postings(namespace, memory_id, ctx)
                    deltas.add(namespace, schema.CONTEXT, ctx, 1)
                    columns = [own.first_length, own.second_length]
                    columns += [ctx.first_length, ctx.second_length]
                    lengths.append((columns, namespace, memory_id))
                for kind, rows_of in flat.items():
                    insert_postings(conn, kind, rows_of)
                with conn.cursor() as cur:
                    cur.executemany(
                        "UPDATE memories SET tokens = %s WHERE namespace = %s AND id = %s",
                        lengths,
                    )
        deltas.flush(conn)
        conn.execute("UPDATE namespaces SET generation = generation + 1")


# Per field and term of a namespace: how many memories hold it in each column.
_COUNTED_TERMS = """
SELECT field, term, count(*) FILTER (WHERE first > 0) AS n1,
       count(*) FILTER (WHERE second > 0) AS n2
FROM postings WHERE namespace = %(ns)s GROUP BY field, term
"""
# A namespace's memory count and each column's token total, from the memories.
_COUNTED_TOKENS = """
SELECT count(*), coalesce(sum(tokens[1]), 0), coalesce(sum(tokens[2]), 0),
       coalesce(sum(tokens[3]), 0), coalesce(sum(tokens[4]), 0)
FROM memories WHERE namespace = %(ns)s
"""


def _no_nul(item: int | None, **texts: str | None) -> None:
    """PostgreSQL text cannot hold a NUL character: refused before anything is written (the
    SQLite backend stores it). ``item``: the position in a batch, named as ``remember_many``
    names it."""
    where = "" if item is None else f"item {item}: "
    for name, value in texts.items():
        if value is not None and "\x00" in value:
            raise InvalidInput(
                f"{where}{name} contains a NUL character, which PostgreSQL text cannot store",
                item=item,
            )


@dataclass(slots=True)
class OlderRows:
    """What a batch changes in the rows before it in its sessions: the parameters of
    ``UPDATE_CONTEXT_AND_SEARCHED`` and of ``DELETE_POSTINGS``, and the new window postings."""

    updates: list[tuple[Any, ...]] = field(default_factory=list)
    gone: list[tuple[str, int, list[str], int]] = field(default_factory=list)
    fresh: list[Posting] = field(default_factory=list)


def _execute_many(conn: psycopg.Connection, statement: str, params: Sequence[Any]) -> None:
    with conn.cursor() as cur:
        cur.executemany(statement, params)


def _columns(rows: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows as columns: the arrays a statement unnests."""
    return [list(column) for column in zip(*rows, strict=True)]


def _lock_sessions(conn: psycopg.Connection, groups: Iterable[Group]) -> None:
    """Take the sessions' write locks (``schema.SESSION_LOCK``), in one order for every writer:
    two cannot wait on each other for them."""
    keys = sorted(set(_session_keys(groups)))
    if keys:
        conn.execute(schema.LOCK_SESSIONS, (schema.SESSION_LOCK, keys))


def _session_keys(groups: Iterable[Group]) -> Iterator[int]:
    """Each session's lock key: its namespace and a bucket of its user, agent and id, as a
    signed 32-bit integer (stable across processes, unlike ``hash``)."""
    for namespace, user, agent, session in groups:
        bucket = zlib.crc32("\x00".join((user, agent, session)).encode()) % schema.SESSION_BUCKETS
        key = zlib.crc32(f"{namespace}\x00{bucket}".encode())
        yield key - (1 << 32) if key >= 1 << 31 else key


def _memory_row(
    values: tuple[Any, ...],
    vector: Vectors,
    counted: Counted,
    text: tuple[str, str],
    window: Counted,
    searched: Vectors | None,
) -> tuple[Any, ...]:
    embedding = np.asarray(vector, np.float32)
    return (
        *values,  # the id, then ``batch.memory_values``
        [counted.first_length, counted.second_length, window.first_length, window.second_length],
        *text,
        embedding,
        embedding if searched is None else np.asarray(searched, np.float32),
    )


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


__all__ = ["PostgresStore"]
