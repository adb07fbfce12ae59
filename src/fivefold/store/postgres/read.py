"""Every read of the Postgres store: each takes a pooled connection and names its namespace
(the Citus distribution column: SCALING.md). ``PostgresStore`` (``store.py``) adds the
lifecycle and the writes."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from fivefold.embed.base import Vectors
from fivefold.errors import FivefoldError, StoreError
from fivefold.store.base import StoreSettings
from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import as_array
from fivefold.store.postgres.lexical import Lexical, namespace_row
from fivefold.store.postgres.lists import Version
from fivefold.store.records import (
    CatalogEntry,
    EdgeHop,
    EntityScore,
    MemoryAttributes,
    MentionHit,
    NeighbourStep,
    NewEdge,
)
from fivefold.store.shared.rows import edge_hop, memory_record, relation_from_row
from fivefold.store.shared.timeconv import from_ts, to_ts
from fivefold.store.shared.tokens import Tokenizer
from fivefold.types import ColumnWeights, EdgeKind, MemoryRecord, MemoryType, Scope, StoreStats

T = TypeVar("T")
log = logging.getLogger("fivefold.store")
# After a failed build of a derived index (a statement or lock timeout, too little memory),
# searches go on without it, and the next build is tried this long after.
BUILD_RETRY_S = 300.0
# The graph retriever's caps, as the SQLite backend reads them (store/sqlite/read.py).
MENTIONS_PER_RESULT = 4
MIN_MENTIONS_PER_ENTITY = 200
REACHED_MENTIONS_DIVISOR = 4
_TABLES = ("memories", "postings", "term_stats", "entities", "aliases", "mentions", "edges")


# A connection the server ended (shut down, restarted, terminated it, its idle session timed
# out) or that was lost.
_LOST = frozenset({"57P01", "57P02", "57P03", "57P05"})


def lost_connection(exc: BaseException) -> bool:
    """Not a pool that gave no connection in its time (``PoolTimeout`` is an operational error
    too): asking again would wait as long again."""
    if isinstance(exc, PoolTimeout) or not isinstance(exc, psycopg.OperationalError):
        return False
    return exc.sqlstate is None or exc.sqlstate in _LOST


def translating(cls: type[T], *, reads: bool = False) -> type[T]:
    """Every public method raises ``StoreError`` where the driver or the server raised. With
    ``reads``, a call that met a connection the server had ended is made again, once, after
    the pool has checked its idle ones: after a restart each of them was dead and failed its
    next call (8 calls in a row; 3 of 10 served requests answered 503: a hostile pass's find).
    Only reads: a write cut off may have committed."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not callable(member):
            continue

        def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(method)
            def translated(self: PostgresReads, *args: Any, **kwargs: Any) -> Any:
                try:
                    try:
                        return method(self, *args, **kwargs)
                    except psycopg.Error as exc:
                        if not (reads and lost_connection(exc)):
                            raise
                        self._pool.check()  # the idle connections: the dead ones replaced
                        return method(self, *args, **kwargs)
                except FivefoldError:
                    raise
                except (psycopg.Error, OSError) as exc:
                    raise StoreError(f"{self.location}: {exc}".strip()) from exc

            return translated

        setattr(cls, name, wrap(member))
    return cls


def translating_reads(cls: type[T]) -> type[T]:
    return translating(cls, reads=True)


@translating_reads
class PostgresReads:
    """Set by ``PostgresStore``: the pool, the settings, the tokenizer and the names it shows."""

    _pool: ConnectionPool
    _settings: StoreSettings
    _tokenizer: Tokenizer
    _catalogs: dict[str, tuple[Version, list[CatalogEntry]]]
    _bm25: Lexical
    _model: str
    _location: str
    _dim: int
    _searched_ready = False  # the HNSW index is known to exist (``_derived_index``)
    _build_failed: dict[str, float]  # index -> when its build last failed (monotonic)

    @property
    def location(self) -> str:
        """The URL without its password."""
        return self._location

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        with self._pool.connection() as conn:
            yield conn

    def namespace_generation(self, namespace: str) -> int:
        with self._read() as conn:
            return namespace_row(conn, namespace)[1]

    def memory_count(self, namespace: str) -> int:
        with self._read() as conn:
            return namespace_row(conn, namespace)[0]

    def get_memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        if not ids:
            return {}
        wanted = [int(i) for i in ids]
        with self._read() as conn:
            rows = conn.execute(
                schema.MEMORY_COLUMNS + " WHERE namespace = %s AND id = ANY(%s::bigint[])",
                (namespace, wanted),
            ).fetchall()
            if not rows:
                return {}
            entities: dict[int, list[str]] = {}
            for memory_id, name in conn.execute(schema.SELECT_MEMORY_ENTITIES, (namespace, wanted)):
                entities.setdefault(int(memory_id), []).append(str(name))
        return {int(r[0]): memory_record(r, entities.get(int(r[0]), [])) for r in rows}

    def recent_ids(self, scope: Scope, *, limit: int, before: int | None = None) -> list[int]:
        where, params = schema.scope_sql(scope)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT m.id FROM memories m WHERE {where} AND m.id < %(before)s "
                "ORDER BY m.id DESC LIMIT %(limit)s",
                {**params, "before": (1 << 63) - 1 if before is None else before, "limit": limit},
            ).fetchall()
        return [int(r[0]) for r in rows]

    def attributes(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, importance, type, event_at, created_at, speaker, "
                "char_length(content) FROM memories "
                "WHERE namespace = %s AND id = ANY(%s::bigint[])",
                (namespace, [int(i) for i in ids]),
            ).fetchall()
        return {
            int(i): MemoryAttributes(
                float(v), MemoryType(t), None if e is None else from_ts(e), from_ts(c), s, int(n)
            )
            for i, v, t, e, c, s, n in rows
        }

    def catalog(self, namespace: str) -> Sequence[CatalogEntry]:
        with self._read() as conn:
            # The row's version, as the kept posting lists: a namespace made again (a schema
            # dropped and created) restarts its generations.
            row = namespace_row(conn, namespace, version=True)
            version = (row[1], row[-1])
            cached = self._catalogs.get(namespace)
            if cached is not None and cached[0] == version:
                return cached[1]
            rows = conn.execute(schema.SELECT_CATALOG, (namespace, namespace)).fetchall()
        entries = [CatalogEntry(int(i), str(n), str(k), bool(a)) for i, n, k, a in rows]
        self._catalogs[namespace] = (version, entries)
        return entries

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        if not entity_ids:
            return set()
        # Answered by the first mention or edge of the scope, an entity at a time (as SQLite's).
        where, params = schema.scope_sql(scope)
        edges, _ = schema.scope_sql(scope, "ed", shared=True)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT e.id FROM unnest(%(ids)s::bigint[]) AS e(id) WHERE EXISTS (SELECT 1 "
                "FROM mentions mn JOIN memories m ON m.namespace = mn.namespace "
                "AND m.id = mn.memory_id WHERE mn.namespace = %(ns)s AND mn.entity_id = e.id "
                f"AND {where}) "
                f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.source_id = e.id AND {edges}) "
                f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.target_id = e.id AND {edges})",
                {**params, "ids": [int(i) for i in entity_ids]},
            ).fetchall()
        return {int(r[0]) for r in rows}

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        if not entity_ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, mentions FROM entities WHERE namespace = %s AND id = ANY(%s::bigint[])",
                (namespace, [int(i) for i in entity_ids]),
            ).fetchall()
        return {int(i): int(n) for i, n in rows}

    def term_document_frequencies(
        self, namespace: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        tokens = {t: self._tokenizer.terms(t) for t in terms}
        wanted = sorted({tok for toks in tokens.values() for tok in toks})
        with self._read() as conn, conn.transaction():  # the total and the counts agree
            total = namespace_row(conn, namespace)[0]
            # ``content``'s, as on the embedded store (store/sqlite/lexical.py says why).
            rows = conn.execute(
                "SELECT term, df2 FROM term_stats WHERE namespace = %s AND field = %s "
                "AND term = ANY(%s::text[])",
                (namespace, schema.OWN, wanted),
            ).fetchall()
        df = {str(t): int(n) for t, n in rows}
        # A term of several tokens ("e-mail") is as rare as its rarest token.
        return total, {
            t: min((df.get(x, 0) for x in toks), default=0) for t, toks in tokens.items()
        }

    def vectors(self, namespace: str, ids: Sequence[int]) -> dict[int, Vectors]:
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, embedding FROM memories "
                "WHERE namespace = %s AND id = ANY(%s::bigint[])",
                (namespace, [int(i) for i in ids]),
            ).fetchall()
        return {int(i): as_array(v) for i, v in rows}

    def vector_search(
        self,
        scope: Scope,
        queries: Vectors,
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[list[tuple[int, float]]]:
        if k <= 0:
            return [[] for _ in range(len(queries))]
        where, params = schema.scope_sql(scope)
        if types:
            where += " AND m.type = ANY(%(types)s::text[])"
            params["types"] = [t.value for t in types]
        out: list[list[tuple[int, float]]] = []
        with self._read() as conn, conn.transaction():
            size = namespace_row(conn, scope.namespace)[0]
            # Exact below the threshold, as the embedded store: ``+ 0`` keeps the planner off
            # the HNSW index. Above it, iterative scans keep filtering until k rows pass.
            exact = size < self._settings.index.hnsw_threshold
            if not exact and not self._searched_ready:
                total = conn.execute("SELECT coalesce(sum(memories), 0) FROM namespaces")
                vectors = int(total.fetchone()[0])  # type: ignore[index]
                graph = vectors * self._dim * schema.BUILD_BYTES_PER_DIMENSION
                built = self._try_index(
                    conn, "memories_searched", "memories", schema.CREATE_SEARCHED_INDEX, graph
                )
                exact = not built  # no graph: the exact order, as below the threshold
            if not exact:
                search = max(self._settings.index.hnsw_expansion_search, k)
                conn.execute(f"SET LOCAL hnsw.ef_search = {int(search)}")
                conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            sql = _vector_sql(where, exact=exact)
            for query in np.asarray(queries, dtype=np.float32):
                rows = conn.execute(sql, {**params, "q": query, "k": k}).fetchall()
                hits = [(int(i), float(s)) for i, s in rows]
                hits.sort(key=lambda h: (-h[1], h[0]))  # relaxed order: sort what came back
                out.append(hits)
        self._searched_ready = self._searched_ready or not exact  # committed by now
        return out

    def _try_index(
        self, conn: psycopg.Connection, name: str, table: str, ddl: str, memory: int
    ) -> bool:
        """``_derived_index`` in a savepoint of the caller's transaction. Whether the index
        exists: a failed build is logged, the caller searches without it, and the build is
        tried again ``BUILD_RETRY_S`` later (not on every search)."""
        failed = self._build_failed.get(name)
        if failed is not None and time.monotonic() - failed < BUILD_RETRY_S:
            return False
        try:
            with conn.transaction():
                self._derived_index(conn, name, table, ddl, memory)
        except psycopg.Error as exc:
            self._build_failed[name] = time.monotonic()
            log.warning(
                "%s: building the index %s failed; searches go on without it: %s",
                self.location,
                name,
                exc,
            )
            return False
        self._build_failed.pop(name, None)
        return True

    def _derived_index(
        self, conn: psycopg.Connection, name: str, table: str, ddl: str, memory: int
    ) -> None:
        """Build index ``name`` of ``table`` (``ddl``) if no process has, in the caller's
        transaction: one process builds, the others wait for it and find it. The build holds
        a lock that makes writers wait, as the first search of a large namespace waits for the
        embedded store's indexes. ``memory``: bytes the build wants (``maintenance_work_mem``
        is raised to it, up to ``schema.BUILD_MEMORY_CAP_MB``, never lowered)."""
        # By the table's own oid: the store's, whichever schema comes first on the path.
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s::regclass::oid::text || '.' || %s))",
            (schema.DERIVED_INDEX_LOCK, table, name),
        )
        found = conn.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass AND c.relname = %s",
            (table, name),
        ).fetchone()
        if found is not None:
            return
        row = conn.execute("SELECT pg_size_bytes(current_setting('maintenance_work_mem'))")
        configured = int(row.fetchone()[0])  # type: ignore[index]
        wanted = min(memory, schema.BUILD_MEMORY_CAP_MB << 20)
        if wanted > configured:
            conn.execute(f"SET LOCAL maintenance_work_mem = '{wanted >> 20}MB'")
        conn.execute(ddl)

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
        return self._bm25.search(self._read, scope, terms, k, types, within, weights)[0]

    def edges_touching(self, scope: Scope, entity_ids: Sequence[int]) -> list[EdgeHop]:
        if not entity_ids:
            return []
        where, params = schema.scope_sql(scope, "ed", shared=True)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT source_id, target_id, kind, confidence, support, relation, valid_to "
                f"FROM edges ed WHERE {where} AND (ed.source_id = ANY(%(ids)s::bigint[]) "
                "OR ed.target_id = ANY(%(ids)s::bigint[]))",
                {**params, "ids": [int(i) for i in entity_ids]},
            ).fetchall()
        return [edge_hop(row) for row in rows]

    def neighbours(self, scope: Scope, step: NeighbourStep) -> list[tuple[int, float]]:
        if not step.frontier or step.limit <= 0:
            return []
        where, params = schema.scope_sql(scope, "ed", shared=True)
        # The factor of an edge, as graph.py documents it (the same as the SQLite backend's,
        # multiplied in the same order): its strength, the prior of its kind, its freshness.
        factor = (
            "ed.strength "
            "* (CASE ed.kind WHEN 'structural' THEN %(p_structural)s::float8 "
            "WHEN 'semantic' THEN %(p_semantic)s::float8 ELSE %(p_lifecycle)s::float8 END) "
            "* (CASE WHEN ed.valid_to IS NOT NULL AND ed.valid_to < %(now)s::float8 "
            "THEN %(expired)s::float8 ELSE 1.0 END)"
        )
        # Each frontier entity's strongest edges in scope, capped (NeighbourStep.per_entity),
        # ties by edge id: the embedded store reads the same ones.
        sides = [
            "SELECT e.there, e.path FROM f CROSS JOIN LATERAL ("
            f"SELECT ed.{there} AS there, f.w * {factor} AS path FROM edges ed "
            f"WHERE ed.namespace = %(ns)s AND ed.{here} = f.id AND {where} "
            "ORDER BY ed.strength DESC, ed.id LIMIT %(per_entity)s) AS e"
            for here, there in (("source_id", "target_id"), ("target_id", "source_id"))
        ]
        sql = (
            "WITH f(id, w) AS (SELECT * FROM unnest(%(ids)s::bigint[], %(ws)s::float8[])) "
            "SELECT there, max(path) AS best FROM ("
            + " UNION ALL ".join(sides)
            + ") AS x WHERE there <> ALL(%(exclude)s::bigint[]) "
            "GROUP BY there ORDER BY best DESC, there LIMIT %(limit)s"
        )
        frontier = sorted(step.frontier.items())
        args = {
            **params,
            "ids": [int(e) for e, _ in frontier],
            "ws": [float(w) for _, w in frontier],
            "p_structural": step.priors.get(EdgeKind.STRUCTURAL, 1.0),
            "p_semantic": step.priors.get(EdgeKind.SEMANTIC, 1.0),
            "p_lifecycle": step.priors.get(EdgeKind.LIFECYCLE, 1.0),
            "now": to_ts(step.now),
            "expired": step.expired_freshness,
            "exclude": sorted(int(e) for e in step.exclude),
            "limit": step.limit,
            "per_entity": step.per_entity,
        }
        with self._read() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(int(e), float(w)) for e, w in rows]

    def mentions(
        self,
        scope: Scope,
        entities: Sequence[EntityScore],
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[MentionHit]:
        if not entities or k <= 0:
            return []
        where, params = schema.scope_sql(scope)
        # A mention carries its memory's type: only a user or agent scope joins the row.
        join = ""
        if scope.user_id is not None or scope.agent_id is not None:
            join = "JOIN memories m ON m.namespace = mn.namespace AND m.id = mn.memory_id "
            join += f"AND {where} "
        typed = ""
        if types:
            typed = "AND mn.type = ANY(%(types)s::text[]) "
            params["types"] = [t.value for t in types]
        direct_cap = max(MENTIONS_PER_RESULT * k, MIN_MENTIONS_PER_ENTITY)
        reached_cap = max(1, k // REACHED_MENTIONS_DIVISOR)
        # Per entity its most recent mentions in scope (capped, as in the SQLite backend),
        # then the noisy-or, the tie-breaks and the top k in SQL. ln() of a zero is an error
        # here even in the branch CASE does not take, so its argument is floored. Sums are
        # rounded to 12 places: their order varies with the plan, and equal evidence must tie
        # exactly (then fall back to id order), as it does in SQLite.
        sql = (
            "WITH e AS (SELECT * FROM unnest(%(ids)s::bigint[], %(scores)s::float8[], "
            "%(hops)s::int[], %(rarity)s::float8[], %(caps)s::int[]) "
            "AS e(entity_id, score, hops, rarity, cap)), "
            "s AS (SELECT x.memory_id, e.score, e.hops, e.rarity FROM e CROSS JOIN LATERAL ("
            f"SELECT mn.memory_id FROM mentions mn {join}"
            f"WHERE mn.namespace = %(ns)s AND mn.entity_id = e.entity_id {typed}"
            "ORDER BY mn.memory_id DESC LIMIT e.cap) AS x) "
            "SELECT memory_id, round((CASE WHEN count(*) = 1 OR max(score) >= 1.0 "
            "THEN least(1.0, max(score)) "
            "ELSE 1.0 - exp(sum(ln(greatest(1.0 - score, 1e-300)))) END)::numeric, 12)::float8 "
            "AS score, min(hops), sum((hops = 0)::int) AS touched, "
            "round(sum(CASE WHEN hops = 0 THEN rarity ELSE 0.0 END)::numeric, 12)::float8 "
            "AS rarity "
            "FROM s GROUP BY memory_id "
            "ORDER BY score DESC, touched DESC, rarity DESC, memory_id LIMIT %(k)s"
        )
        args = {
            **params,
            "ids": [e.entity_id for e in entities],
            "scores": [e.score for e in entities],
            "hops": [e.hops for e in entities],
            "rarity": [e.rarity for e in entities],
            "caps": [direct_cap if e.hops == 0 else reached_cap for e in entities],
            "k": k,
        }
        with self._read() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [
            MentionHit(int(i), float(score), int(hops), int(touched), float(rarity))
            for i, score, hops, touched, rarity in rows
        ]

    def events_between(
        self, scope: Scope, start: datetime, end: datetime, k: int
    ) -> list[tuple[int, datetime]]:
        where, params = schema.scope_sql(scope)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT m.id, m.event_at FROM memories m WHERE {where} AND m.type = 'event' "
                "AND m.event_at BETWEEN %(start)s AND %(end)s "
                "ORDER BY m.event_at DESC, m.id LIMIT %(k)s",
                {**params, "start": to_ts(start), "end": to_ts(end), "k": k},
            ).fetchall()
        return [(int(i), from_ts(t)) for i, t in rows]

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None:
        where, params = schema.scope_sql(scope, "s")
        sql = f"SELECT max(s.last_seen_at) FROM sessions s WHERE {where}"
        if exclude_session is not None:
            sql += " AND s.session_id <> %(exclude)s"
            params["exclude"] = exclude_session
        with self._read() as conn:
            row = conn.execute(sql, params).fetchone()
        return None if row is None or row[0] is None else from_ts(row[0])

    def relations(self, namespace: str) -> list[NewEdge]:
        with self._read() as conn:
            rows = conn.execute(schema.SELECT_RELATIONS, (namespace,)).fetchall()
        return [relation_from_row(namespace, row) for row in rows]

    def aliases(self, namespace: str) -> list[tuple[str, str]]:
        with self._read() as conn:
            rows = conn.execute(schema.SELECT_ALIASES, (namespace,)).fetchall()
        return [(str(name), str(alias)) for name, alias in rows]

    def stats(self, namespace: str | None = None) -> StoreStats:
        where, params = (
            ("", {}) if namespace is None else (" WHERE namespace = %(ns)s", {"ns": namespace})
        )
        with self._read() as conn, conn.transaction():

            def count(table: str) -> int:
                row = conn.execute(f"SELECT count(*) FROM {table}{where}", params).fetchone()
                return int(row[0]) if row else 0

            namespaces = conn.execute(
                f"SELECT namespace, memories FROM namespaces{where}", params
            ).fetchall()
            types = conn.execute(
                f"SELECT type, count(*) FROM memories{where} GROUP BY type", params
            ).fetchall()
            size = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) "
                "FROM unnest(%s::text[]) AS t",
                (list(_TABLES),),
            ).fetchone()
            return StoreStats(
                memories=count("memories"),
                entities=count("entities"),
                edges=count("edges"),
                namespaces={str(k): int(v) for k, v in sorted(namespaces) if v},
                types={str(k): int(v) for k, v in sorted(types)},
                embedding_model=self._model,
                size_bytes=int(size[0]) if size else 0,
                location=self._location,
                parts={"tables": int(size[0]) if size else 0},
            )


def _vector_sql(where: str, *, exact: bool) -> str:
    """The k nearest by inner product (parameters q and k) among the rows ``where`` selects.
    Exact: ``+ 0`` keeps the planner off the HNSW index, and equal distances come in id order
    (as the embedded store's exact search). Through the index: by distance alone; the caller
    sorts what comes back. A tie-break by id there put an incremental sort above the index
    scan, and the scan then read twice the buffers (measured at 100k: 2.6 against 1.4 ms a
    search with the index in memory, 6.4-9.5 against 3.3-4.4 with it read from the OS)."""
    order = "(m.searched <#> %(q)s) + 0, m.id" if exact else "m.searched <#> %(q)s"
    return (
        f"SELECT m.id, -(m.searched <#> %(q)s) AS score FROM memories m WHERE {where} "
        f"ORDER BY {order} LIMIT %(k)s"
    )


__all__ = ["PostgresReads", "translating"]
