"""The Postgres store's candidate lists: pgvector (exact below ``index.hnsw_threshold`` memories
in a namespace, HNSW with iterative scans under the scope filter above it), BM25 over the packed
posting lists, a hop's strongest edges, each entity's most recent mentions, and events in a
time range."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from fivefold.embed.base import Vectors
from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import as_array
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.lexical import namespace_row
from fivefold.store.records import EdgeRow, Ids
from fivefold.store.shared.rows import edge_kind
from fivefold.store.shared.timeconv import from_ts, to_ts
from fivefold.store.shared.translate import EVERY, Role
from fivefold.types import ColumnWeights, MemoryType, Scope

log = logging.getLogger("fivefold.store")
# After a failed build of a derived index (a statement or lock timeout, too little memory),
# searches go on without it, and the next build is tried this long after.
BUILD_RETRY_S = 300.0


class PostgresSearch(Role[Core], reads=EVERY):
    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._searched_ready = False  # the HNSW index is known to exist (``_derived_index``)
        self._build_failed: dict[str, float] = {}  # index -> when its build last failed

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
        with self._core.read() as conn, conn.transaction():
            size = namespace_row(conn, scope.namespace)[0]
            # Exact below the threshold, as the embedded store: ``+ 0`` keeps the planner off
            # the HNSW index. Above it, iterative scans keep filtering until k rows pass.
            exact = size < self._core.settings.index.hnsw_threshold
            if not exact and not self._searched_ready:
                total = conn.execute("SELECT coalesce(sum(memories), 0) FROM namespaces")
                vectors = int(total.fetchone()[0])  # type: ignore[index]
                graph = vectors * self._core.dim * schema.BUILD_BYTES_PER_DIMENSION
                built = self._try_index(
                    conn, "memories_searched", "memories", schema.CREATE_SEARCHED_INDEX, graph
                )
                exact = not built  # no graph: the exact order, as below the threshold
            if not exact:
                search = max(self._core.settings.index.hnsw_expansion_search, k)
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
                self._core.location,
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
        return self._core.bm25.search(self._core.read, scope, terms, k, types, within, weights)[0]

    def vectors(self, namespace: str, ids: Sequence[int]) -> dict[int, Vectors]:
        if not ids:
            return {}
        rows = self._core.rows(
            "SELECT id, embedding FROM memories WHERE namespace = %s AND id = ANY(%s::bigint[])",
            (namespace, [int(i) for i in ids]),
        )
        return {int(i): as_array(v) for i, v in rows}

    def strongest_edges(
        self, scope: Scope, entity_ids: Sequence[int], per_entity: int
    ) -> list[EdgeRow]:
        if not entity_ids or per_entity <= 0:
            return []
        where, params = schema.scope_sql(scope, "ed", shared=True)
        # Each entity's strongest edges in scope on each side, capped, ties by edge id (the
        # embedded store reads the same ones).
        sides = [
            f"SELECT f.id, ed.{there}, ed.strength, ed.kind, ed.valid_to FROM f CROSS JOIN "
            f"LATERAL (SELECT ed.{there}, ed.strength, ed.kind, ed.valid_to FROM edges ed "
            f"WHERE ed.namespace = %(ns)s AND ed.{here} = f.id AND {where} "
            "ORDER BY ed.strength DESC, ed.id LIMIT %(cap)s) AS ed"
            for here, there in (("source_id", "target_id"), ("target_id", "source_id"))
        ]
        sql = "WITH f(id) AS (SELECT unnest(%(ids)s::bigint[])) " + " UNION ALL ".join(sides)
        args = {**params, "ids": sorted({int(e) for e in entity_ids}), "cap": per_entity}
        rows = self._core.rows(sql, args)
        return [
            EdgeRow(int(e), int(t), float(s), edge_kind(k), None if v is None else float(v))
            for e, t, s, k, v in rows
        ]

    def recent_mentions(
        self,
        scope: Scope,
        caps: Sequence[tuple[int, int]],
        types: Sequence[MemoryType] = (),
    ) -> list[Ids]:
        if not caps:
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
        sql = (
            "SELECT e.n, x.ids FROM unnest(%(ids)s::bigint[], %(caps)s::int[]) "
            "WITH ORDINALITY AS e(entity_id, cap, n) CROSS JOIN LATERAL ("
            f"SELECT array_agg(r.memory_id) AS ids FROM (SELECT mn.memory_id FROM mentions mn "
            f"{join}WHERE mn.namespace = %(ns)s AND mn.entity_id = e.entity_id {typed}"
            "ORDER BY mn.memory_id DESC LIMIT e.cap) AS r) AS x"
        )
        args: dict[str, Any] = {
            **params,
            "ids": [int(e) for e, _ in caps],
            "caps": [int(c) for _, c in caps],
        }
        rows = self._core.rows(sql, args)
        lists: list[Ids] = [() for _ in caps]
        for n, ids in rows:
            if ids:
                lists[int(n) - 1] = ids
        return lists

    def events_between(
        self, scope: Scope, start: datetime, end: datetime, k: int
    ) -> list[tuple[int, datetime]]:
        where, params = schema.scope_sql(scope)
        rows = self._core.rows(
            f"SELECT m.id, m.event_at FROM memories m WHERE {where} AND m.type = 'event' "
            "AND m.event_at BETWEEN %(start)s AND %(end)s "
            "ORDER BY m.event_at DESC, m.id LIMIT %(k)s",
            {**params, "start": to_ts(start), "end": to_ts(end), "k": k},
        )
        return [(int(i), from_ts(t)) for i, t in rows]


def _vector_sql(where: str, *, exact: bool) -> str:
    """The k nearest by inner product (parameters q and k) among the rows ``where`` selects.
    Exact: ``+ 0`` keeps the planner off the HNSW index, and equal distances come in id order
    (as the embedded store's exact search). Through the index: by distance alone; the caller
    sorts what comes back. A tie-break by id there puts an incremental sort above the index
    scan, and the scan then reads twice the buffers."""
    order = "(m.searched <#> %(q)s) + 0, m.id" if exact else "m.searched <#> %(q)s"
    return (
        f"SELECT m.id, -(m.searched <#> %(q)s) AS score FROM memories m WHERE {where} "
        f"ORDER BY {order} LIMIT %(k)s"
    )
