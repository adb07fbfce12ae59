"""Every read of the Postgres store: each takes a pooled connection and names its namespace
(the Citus distribution column: SCALING.md). ``PostgresStore`` (``store.py``) adds the
lifecycle and the writes."""

from __future__ import annotations

import functools
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool

from fivefold.embed.base import Vectors
from fivefold.errors import FivefoldError, StoreError
from fivefold.model import (
    CatalogEntry,
    ColumnWeights,
    EdgeHop,
    EdgeKind,
    EntityScore,
    MemoryAttributes,
    MemoryRecord,
    MemoryType,
    MentionHit,
    NeighbourStep,
    NewEdge,
    Scope,
    StoreStats,
)
from fivefold.store.base import StoreSettings
from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import as_array
from fivefold.store.postgres.lists import ListCache, Version
from fivefold.store.rows import edge_hop, memory_record, relation_from_row
from fivefold.store.timeconv import from_ts, to_ts
from fivefold.store.tokens import Tokenizer

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


def translating(cls: type[T]) -> type[T]:
    """Every public method raises ``StoreError`` where the driver or the server raised."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not callable(member):
            continue

        def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(method)
            def translated(self: PostgresReads, *args: Any, **kwargs: Any) -> Any:
                try:
                    return method(self, *args, **kwargs)
                except FivefoldError:
                    raise
                except (psycopg.Error, OSError) as exc:
                    raise StoreError(f"{self.location}: {exc}".strip()) from exc

            return translated

        setattr(cls, name, wrap(member))
    return cls


@translating
class PostgresReads:
    """Set by ``PostgresStore``: the pool, the settings, the tokenizer and the names it shows."""

    _pool: ConnectionPool
    _settings: StoreSettings
    _tokenizer: Tokenizer
    _catalogs: dict[str, tuple[Version, list[CatalogEntry]]]
    _lists: ListCache
    _model: str
    _location: str
    _dim: int
    _searched_ready = False  # the HNSW index is known to exist (``_derived_index``)
    _impact_ready = False  # and the postings' impact order
    _build_failed: dict[str, float]  # index -> when its build last failed (monotonic)
    lexical_pruned = 0  # searches the pruning answered (tests)
    lexical_by_impact = 0  # of which in impact order
    lexical_stopped_early = 0  # of which before reading every list to its end
    lexical_second_rounds = 0  # of the others, those MaxScore answered in a second round

    @property
    def location(self) -> str:
        """The URL without its password."""
        return self._location

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        with self._pool.connection() as conn:
            yield conn

    def _namespace_row(
        self, conn: psycopg.Connection, namespace: str, *, version: bool = False
    ) -> tuple[int, ...]:
        """Memories, generation and the token totals of the four columns; with ``version``,
        then the row version's ``xmin`` too (``lists.Version``)."""
        row = conn.execute(
            "SELECT memories, generation, tokens, xmin::text::bigint FROM namespaces "
            "WHERE namespace = %s",
            (namespace,),
        ).fetchone()
        if row is None:
            return (0, 0, 0, 0, 0, 0, 0) if version else (0, 0, 0, 0, 0, 0)
        found = (int(row[0]), int(row[1]), *(int(t) for t in row[2]))
        return (*found, int(row[3])) if version else found

    def namespace_generation(self, namespace: str) -> int:
        with self._read() as conn:
            return self._namespace_row(conn, namespace)[1]

    def memory_count(self, namespace: str) -> int:
        with self._read() as conn:
            return self._namespace_row(conn, namespace)[0]

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
        where, params = _scope_sql(scope)
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
            row = self._namespace_row(conn, namespace, version=True)
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
        wanted = [int(i) for i in entity_ids]
        where, params = _scope_sql(scope)
        with self._read() as conn:
            mentioned = conn.execute(
                "SELECT DISTINCT mn.entity_id FROM mentions mn "
                "JOIN memories m ON m.namespace = mn.namespace AND m.id = mn.memory_id "
                f"WHERE mn.namespace = %(ns)s AND mn.entity_id = ANY(%(ids)s::bigint[]) "
                f"AND {where}",
                {**params, "ids": wanted},
            ).fetchall()
        visible = {int(r[0]) for r in mentioned}
        for edge in self.edges_touching(scope, wanted):
            visible.update((edge.source_id, edge.target_id))
        return visible & set(wanted)

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
            total = self._namespace_row(conn, namespace)[0]
            # ``content``'s, as on the embedded store (its lexical.py says why).
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
        where, params = _scope_sql(scope)
        if types:
            where += " AND m.type = ANY(%(types)s::text[])"
            params["types"] = [t.value for t in types]
        out: list[list[tuple[int, float]]] = []
        with self._read() as conn, conn.transaction():
            size = self._namespace_row(conn, scope.namespace)[0]
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
        found, docs = self._lexical(scope, terms, k, types, within, weights)
        if not self._impact_ready and docs >= schema.IMPACT_INDEX_FROM:
            # The first search of a namespace this large ran without the impact order (the
            # same results, each list sorted on the fly); the next ones have it.
            with self._read() as conn, conn.transaction():
                total = conn.execute("SELECT pg_table_size('postings')")
                heap = int(total.fetchone()[0])  # type: ignore[index]
                built = self._try_index(
                    conn, "postings_impact", "postings", schema.CREATE_IMPACT_INDEX, heap
                )
            self._impact_ready = built
        return found

    def _lexical(
        self,
        scope: Scope,
        terms: Sequence[str],
        k: int,
        types: Sequence[MemoryType],
        within: Sequence[int] | None,
        weights: ColumnWeights,
    ) -> tuple[list[tuple[int, float]], int]:
        """``lexical_search``'s hits, and the namespace's size (0 when nothing was read)."""
        tokens = Counter(tok for t in terms if t for tok in self._tokenizer.terms(t))
        if not tokens or k <= 0 or (within is not None and len(within) == 0):
            return [], 0
        where, params = _scope_sql(scope)
        # Conditions on a posting's own columns ({p}: its table's alias, where it needs one).
        posting = []
        if types:
            posting.append("{p}type = ANY(%(types)s::text[])")
            params["types"] = [t.value for t in types]
        if within is not None:  # from a subquery: as ``schema.BM25_AMONG``
            posting.append("{p}memory_id = ANY((SELECT %(within)s::bigint[])::bigint[])")
            params["within"] = [int(i) for i in within]
        filters = _Filters(
            inner="".join(f" AND {c.format(p='')}" for c in posting),
            qualified="".join(f" AND {c.format(p='p.')}" for c in posting),
            rows=where if scope.user_id is not None or scope.agent_id is not None else None,
        )
        ordered = sorted(tokens.items())
        params["terms"] = [t for t, _ in ordered]
        # Each column is scored with its own statistics: field -> its two columns' weights.
        columns = {
            schema.OWN: (weights.predicate, weights.content),
            schema.CONTEXT: (weights.context, 0.0),  # the window: one column
        }
        fields = [f for f, (w1, w2) in columns.items() if w1 > 0.0 or w2 > 0.0]
        if not fields:
            return [], 0
        with self._read() as conn, conn.transaction():
            # One snapshot: the pruning's bounds and the scores see the same statistics.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            docs, generation, *totals, xmin = self._namespace_row(
                conn, scope.namespace, version=True
            )
            if docs == 0:
                return [], 0
            params["docs"] = docs
            for field in fields:
                t1, t2 = totals[2 * field : 2 * field + 2]
                # An empty column's average is 0 and no posting has a length in it.
                params |= {
                    f"avg1_{field}": max(t1 / docs, 1e-9),
                    f"avg2_{field}": max(t2 / docs, 1e-9),
                    f"w1_{field}": columns[field][0],
                    f"w2_{field}": columns[field][1],
                }
            stats = conn.execute(
                schema.BM25_TERM_STATS, {**params, "fields": list(fields)}
            ).fetchall()
            search = _Search(stats, fields, columns, tokens, params, filters, k, (generation, xmin))
            # A namespace searched and not written: its lists are read whole (and kept). A
            # scope, type or id filter keeps the pruning: the lists it reads are not whole.
            steady = filters.whole and self._lists.steady(scope.namespace, search.version)
            if within is None and not steady and not self._all_kept(search):
                found = None
                if all(columns[f][1] == 0.0 for f in fields):  # first columns only
                    found = self._by_impact(conn, search)
                if found is None:
                    found = self._pruned(conn, search)
                if found is not None:
                    return found, docs
            return _top(*_scores(conn, search, kept=self._lists), k), docs

    def _all_kept(self, search: _Search) -> bool:
        """Whether every list the search reads is in the process's cache: then scoring them
        all costs no read, and no pruning is tried."""
        if not search.filters.whole:
            return False
        namespace = str(search.params["ns"])
        return all(
            self._lists.get(namespace, search.version, _list_key(search, int(f), str(t)))
            is not None
            for f, t, _, _ in search.stats
        )

    def _by_impact(
        self, conn: psycopg.Connection, search: _Search
    ) -> list[tuple[int, float]] | None:
        """The exact top k from each (field, term) list's best postings (Fagin's threshold
        algorithm over the index ``postings_impact``), when only first columns are weighted.
        Each round reads every list's ``depth`` postings of highest impact (in the scope) and
        scores the memories read in full; a memory not read in any list scores less than the
        sum of the lists' bounds at their depth, so once that sum is below the k-th score, the
        top k is final. Otherwise the lists that could still matter go deeper. None: nothing
        is common enough to prune, more than ``IMPACT_LONG_LISTS`` lists are long (their
        impacts are too even to stop early: MaxScore does better), or the lists grew to half
        the postings."""
        stats, columns, tokens = search.stats, search.columns, search.tokens
        params, filters, k = search.params, search.filters, search.k
        docs = int(params["docs"])
        lists: list[tuple[int, str, float, float, int]] = []  # field, term, top, ratio, length
        total = 0  # postings scoring everything would read
        for field, term, df1, df2 in stats:
            total += int(df1) + int(df2)
            if int(df1) > 0:  # a list holds the postings with the term in the first column
                average = float(params[f"avg1_{field}"])
                top = tokens[term] * columns[int(field)][0] * _idf(docs, int(df1)) * 2.2
                ratio = schema.IMPACT_LENGTH[int(field)] / average
                lists.append((int(field), str(term), top, ratio, int(df1)))
        if total <= SCORE_ALL_POSTINGS or not lists:
            return None  # every posting is cheap to score
        if sum(entry[4] > 4 * IMPACT_DEPTH for entry in lists) > IMPACT_LONG_LISTS:
            return None
        # One more than a list's document frequency: reading fewer than asked is what says a
        # list was read to its end (the frequency is a statistic, and may have drifted).
        depths = [min(IMPACT_DEPTH, entry[4] + 1) for entry in lists]
        while True:
            read_rows = _best_postings(
                conn,
                [(e[0], e[1], d) for e, d in zip(lists, depths, strict=True)],
                params,
                filters,
            )
            counts: Counter[int] = Counter()
            lowest: dict[int, float] = {}
            for n, _, value in read_rows:
                counts[int(n)] += 1
                lowest[int(n)] = min(lowest.get(int(n), math.inf), float(value))
            among = list(dict.fromkeys(int(r[1]) for r in read_rows))
            rows = _top(*_scores(conn, search, among=among, kept=self._lists), k) if among else []
            read_out = [counts[i] < depth for i, depth in enumerate(depths)]
            if all(read_out):
                break  # every posting that scores in the scope was read
            bounds = [
                0.0 if done else entry[2] * _saturation_bound(lowest[i], entry[3])
                for i, (entry, done) in enumerate(zip(lists, read_out, strict=True))
            ]
            # Strictly below the k-th score (room left for the 12-place rounding): a memory not
            # read cannot tie with it either.
            theta = float(rows[-1][1]) - 1e-9 if len(rows) >= k else -math.inf
            if sum(bounds) < theta:
                self.lexical_stopped_early += 1
                break
            settled = len(rows) >= k and theta > 0.0
            depths = [
                d if done or (settled and bound == 0.0) else d * 4
                for d, done, bound in zip(depths, read_out, bounds, strict=True)
            ]
            if sum(depths) > total // 2:
                return None  # as dear as scoring everything
        self.lexical_pruned += 1
        self.lexical_by_impact += 1
        return [(int(i), float(s)) for i, s in rows]

    def _highest_impacts(
        self,
        conn: psycopg.Connection,
        stats: Sequence[tuple[Any, ...]],
        params: dict[str, Any],
        filters: _Filters,
    ) -> dict[tuple[int, str], float]:
        """Per (field, term) with the term in a first column, the highest impact of its
        postings in the scope (a read of one index entry each)."""
        held = [(int(f), str(t)) for f, t, df1, _ in stats if int(df1) > 0]
        rows = _best_postings(conn, [(f, t, 1) for f, t in held], params, filters)
        return {held[int(n)]: float(value) for n, _, value in rows}

    def _pruned(self, conn: psycopg.Connection, search: _Search) -> list[tuple[int, float]] | None:
        """The exact top k without scoring every memory a common token is in (MaxScore). The
        memories holding the rarest tokens (up to ``PRUNE_POSTINGS`` postings between them) are
        scored in full, each token of each field looked up for them alone; a token adds less
        than its weight x idf x (k1 + 1) x the largest saturation its postings reach (the
        impact of its first posting in ``postings_impact``, as a bound; 1 in a second column)
        to any memory, so the tokens whose bounds sum below the k-th score cannot lift a
        memory holding none of the others into the top k. If another token is not among the
        rare ones, the others' (essential) tokens are scored over their lists alone, and the
        memories whose part there is within the bounds' sum of the k-th score are scored in
        full. None: nothing is common enough to prune, fewer than k memories hold the rare
        tokens, or the essential tokens hold half the postings (score everything)."""
        stats, columns, tokens = search.stats, search.columns, search.tokens
        params, filters, k = search.params, search.filters, search.k
        docs = int(params["docs"])
        total = sum(int(row[2]) + int(row[3]) for row in stats)
        if total <= SCORE_ALL_POSTINGS:
            return None  # every posting is cheap to score
        highest = self._highest_impacts(conn, stats, params, filters)
        pairs: list[tuple[int, float, int, str]] = []  # (postings at most, bound, field, term)
        for field, term, df1, df2 in stats:
            w1, w2 = columns[int(field)]
            ratio = schema.IMPACT_LENGTH[int(field)] / float(params[f"avg1_{field}"])
            first = _saturation_bound(highest.get((int(field), str(term)), 0.0), ratio)
            # A column no memory has the token in adds nothing (its idf would be the largest).
            bound = tokens[term] * 2.2 * (w1 * _idf(docs, int(df1)) * first)
            bound += tokens[term] * 2.2 * w2 * _idf(docs, int(df2))
            pairs.append((int(df1) + int(df2), bound, int(field), str(term)))
        pairs.sort()
        rare: list[tuple[int, float, int, str]] = []
        for pair in pairs:
            if rare and sum(p[0] for p in rare) + pair[0] > PRUNE_POSTINGS:
                break
            rare.append(pair)
        found = conn.execute(
            schema.BM25_CANDIDATES.format(join=filters.join, inner=filters.inner),
            {**params, "rare_fields": [p[2] for p in rare], "rare_terms": [p[3] for p in rare]},
        ).fetchall()
        rows = _top(*_scores(conn, search, among=[int(r[0]) for r in found], kept=self._lists), k)
        # The tokens that together stay strictly below the k-th score (room left for the
        # 12-place rounding) cannot lift a memory without any other token into the top k.
        theta = float(rows[-1][1]) - 1e-9 if len(rows) >= k else 0.0
        below, total_bound = 0, 0.0
        by_bound = sorted(pairs, key=lambda p: p[1])
        while below < len(by_bound) and total_bound + by_bound[below][1] < theta:
            total_bound += by_bound[below][1]
            below += 1
        essential = by_bound[below:]
        if not set(essential) <= set(rare):
            if theta <= 0.0 or sum(p[0] for p in essential) > total // 2:
                return None  # as dear as scoring everything
            # A memory in the top k scores at least theta, of which the other tokens give it
            # less than their bounds' sum: its essential tokens' part is at least the rest.
            essential_pairs = {(p[2], p[3]) for p in essential}
            ids, part = _scores(conn, search, pairs=essential_pairs, kept=self._lists)
            among = set(ids[part >= theta - total_bound - 1e-9].tolist())
            wanted = sorted(among | {i for i, _ in rows})
            rows = _top(*_scores(conn, search, among=wanted, kept=self._lists), k)
            self.lexical_second_rounds += 1
        self.lexical_pruned += 1
        return rows

    def edges_touching(self, scope: Scope, entity_ids: Sequence[int]) -> list[EdgeHop]:
        if not entity_ids:
            return []
        where, params = _scope_sql(scope, "ed", shared=True)
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
        where, params = _scope_sql(scope, "ed", shared=True)
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
        where, params = _scope_sql(scope)
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
        where, params = _scope_sql(scope)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT m.id, m.event_at FROM memories m WHERE {where} AND m.type = 'event' "
                "AND m.event_at BETWEEN %(start)s AND %(end)s "
                "ORDER BY m.event_at DESC, m.id LIMIT %(k)s",
                {**params, "start": to_ts(start), "end": to_ts(end), "k": k},
            ).fetchall()
        return [(int(i), from_ts(t)) for i, t in rows]

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None:
        where, params = _scope_sql(scope, "s")
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


PRUNE_POSTINGS = 4_000  # postings the rarest tokens may hold between them to be scored first
# Up to this many postings in a query's lists, every memory they hold is scored (~0.45 us a
# posting here: 15 ms): measured on the 100k synthetic store (322 searches), that beat both
# pruned strategies below 40,000 postings (max 17 ms against 24-48) and tied them above.
SCORE_ALL_POSTINGS = 32_768
IMPACT_DEPTH = 256  # postings read from each list in the first round of ``_by_impact``
# At most this many lists longer than four rounds' depth for ``_by_impact``: measured on the
# 100k synthetic store (322 searches), impact order beat MaxScore at one or two (median 6 ms
# against 12, 19 against 22), lost from four (71 against 45).
IMPACT_LONG_LISTS = 2


def _saturation_bound(impact: float, ratio: float) -> float:
    """The most ``tf / (tf + 0.3 + 0.9 D / avg)`` can be for a posting whose impact (the same
    with ``L`` for ``avg``, ``schema.impact``) is at most ``impact``, given ``ratio`` = L / avg.
    With avg <= L the impact is itself a bound; with a longer average, D / avg = ratio D / L and
    0.3 >= ratio 0.3 give tf / (tf + ratio (0.3 + 0.9 D / L)) = s / (s + ratio (1 - s))."""
    if ratio >= 1.0 or impact <= 0.0:
        return max(impact, 0.0)
    return impact / (impact + ratio * (1.0 - impact))


def _idf(docs: int, df: int) -> float:
    if df <= 0:
        return 0.0
    return math.log(1 + (docs - min(df, docs) + 0.5) / (df + 0.5))


@dataclass(frozen=True, slots=True)
class _Filters:
    """A lexical search's scope beyond its namespace: conditions on a posting's own columns
    (``inner``; ``qualified`` with the alias ``p``), and on its memory's row (``rows``, or
    None: no join)."""

    inner: str
    qualified: str
    rows: str | None

    @property
    def whole(self) -> bool:
        """Whether a list read under these filters is the whole list (``lists.ListCache``)."""
        return not self.qualified and self.rows is None

    @property
    def join(self) -> str:
        return "" if self.rows is None else schema.BM25_FILTER_JOIN.format(filters=self.rows)


@dataclass(frozen=True, slots=True)
class _Search:
    """One lexical search, as its pruned strategies read it: each (field, term)'s document
    frequencies (``stats``), the fields and their columns' weights, the query's token counts,
    the statement parameters (statistics included), the scope, k, and the version of the
    namespace's row in the search's snapshot (``lists.Version``)."""

    stats: Sequence[tuple[Any, ...]]
    fields: Sequence[int]
    columns: Mapping[int, tuple[float, float]]
    tokens: Mapping[str, int]
    params: dict[str, Any]
    filters: _Filters
    k: int
    version: Version


def _list_key(search: _Search, field: int, term: str) -> tuple[int, str, bool]:
    """A list's key in ``ListCache``: packed with its second column or not."""
    return field, term, search.columns[field][1] > 0.0


def _best_postings(
    conn: psycopg.Connection,
    lists: Sequence[tuple[int, str, int]],
    params: Mapping[str, Any],
    filters: _Filters,
) -> list[tuple[Any, ...]]:
    """Per (field, term, depth), its ``depth`` postings of highest impact in the scope, as
    (position in ``lists``, memory id, impact) rows; a depth of 0 reads nothing."""
    join = "" if filters.rows is None else schema.BM25_IMPACT_JOIN
    where = filters.qualified + ("" if filters.rows is None else f" AND {filters.rows}")
    statement = " UNION ALL ".join(
        schema.BM25_BY_IMPACT.format(
            n=n, field=int(field), depth=int(depth), join=join, filters=where
        )
        for n, (field, _, depth) in enumerate(lists)
        if depth > 0
    )
    if not statement:
        return []
    terms = {f"term_{n}": term for n, (_, term, _) in enumerate(lists)}
    return conn.execute(statement, {**params, **terms}).fetchall()


# A posting as ``schema.BM25_POSTINGS`` packs it: memory id, the term's frequency and the
# memory's length in the field's first and second columns.
_POSTING = np.dtype(
    [("id", ">i8"), ("first", ">f4"), ("second", ">f4"), ("norm1", ">i4"), ("norm2", ">i4")]
)
_FIRST = np.dtype([("id", ">i8"), ("first", ">f4"), ("norm1", ">i4")])  # a second weighted 0


def _scores(
    conn: psycopg.Connection,
    search: _Search,
    *,
    among: Sequence[int] | np.ndarray | None = None,
    pairs: Collection[tuple[int, str]] | None = None,
    kept: ListCache | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each memory's BM25 score in the scope (of ``among`` only, when given) from the query's
    (field, token) lists (of ``pairs`` only, when given): (ids, scores), in no order, a memory
    holding none of the tokens left out. The postings come packed, a list per row, and are
    scored here: as SQL, the same sums cost the server 3-5 us a posting in sorting and
    grouping (0.3 us to read and pack). A whole list is taken from ``kept`` when it holds it
    (filtered to ``among`` here), and one read whole is kept there. Every memory's terms are
    added in the same order, so two memories with the same text score exactly the same."""
    params, columns = search.params, search.columns
    lists = [
        (int(f), str(t), int(df1), int(df2))
        for f, t, df1, df2 in search.stats
        if pairs is None or (int(f), str(t)) in pairs
    ]
    if not lists or (among is not None and len(among) == 0):
        return np.empty(0, np.int64), np.empty(0, np.float64)
    cache = kept if search.filters.whole else None
    namespace = str(params["ns"])
    wanted = None if among is None else np.unique(np.asarray(among, dtype=np.int64))
    postings: dict[int, np.ndarray] = {}  # position in ``lists`` -> its postings
    if cache is not None:
        for n, (field, term, _, _) in enumerate(lists):
            found = cache.get(namespace, search.version, _list_key(search, field, term))
            if found is not None:  # whole: limited to ``among`` here
                postings[n] = found if wanted is None else found[_members(found["id"], wanted)]
    unread = [n for n in range(len(lists)) if n not in postings]
    read = _read_lists(conn, search, [lists[n] for n in unread], wanted)
    for n, found in zip(unread, read, strict=True):
        postings[n] = found
        if cache is not None and wanted is None:  # read whole: kept
            field, term = lists[n][0], lists[n][1]
            cache.put(namespace, search.version, _list_key(search, field, term), found)
    docs = float(params["docs"])
    ids: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    for n, (field, term, df1, df2) in enumerate(lists):  # in the same order, read or kept
        found = postings[n]
        if not len(found):
            continue
        w1, w2 = columns[field]
        first = found["first"].astype(np.float64)
        norm1 = found["norm1"].astype(np.float64)
        avg1, avg2 = float(params[f"avg1_{field}"]), float(params[f"avg2_{field}"])
        # BM25 as ``schema`` documents it (k1 = 1.2, b = 0.75), in the same order of operations.
        score = (w1 * _idf_of(docs, df1)) * first * 2.2
        score /= first + 1.2 * (0.25 + 0.75 * norm1 / avg1)
        if w2 > 0.0:  # else it adds 0 to each
            second = found["second"].astype(np.float64)
            norm2 = found["norm2"].astype(np.float64)
            other = (w2 * _idf_of(docs, df2)) * second * 2.2
            score += other / (second + 1.2 * (0.25 + 0.75 * norm2 / avg2))
        ids.append(found["id"].astype(np.int64))
        parts.append(search.tokens[term] * score)
    if not ids:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    memory, slot = np.unique(np.concatenate(ids), return_inverse=True)
    return memory, np.bincount(slot, weights=np.concatenate(parts), minlength=len(memory))


def _members(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each of ``ids`` is in ``wanted`` (ascending, unique)."""
    if not len(wanted):
        return np.zeros(len(ids), dtype=bool)
    at = np.minimum(np.searchsorted(wanted, ids), len(wanted) - 1)
    return np.asarray(wanted[at] == ids)


def _read_lists(
    conn: psycopg.Connection,
    search: _Search,
    lists: Sequence[tuple[int, str, int, int]],
    among: np.ndarray | None,
) -> list[np.ndarray]:
    """The postings of each (field, term, ...) of ``lists`` in the search's scope (of
    ``among`` only, when given), packed by the server (``schema.BM25_POSTINGS``), in order."""
    if not lists:
        return []
    filters, columns = search.filters, search.columns
    where = filters.qualified + ("" if filters.rows is None else f" AND {filters.rows}")
    statement = schema.BM25_POSTINGS.format(
        join="" if filters.rows is None else schema.BM25_IMPACT_JOIN,
        filters=where + ("" if among is None else schema.BM25_AMONG),
    )
    # Binary: the packed lists as bytes (as text, hex: twice the bytes, then decoded).
    with conn.cursor(binary=True) as cursor:
        found = cursor.execute(
            statement,
            {
                **search.params,
                "list_fields": [f for f, _, _, _ in lists],
                "list_terms": [t for _, t, _, _ in lists],
                "list_wide": [columns[f][1] > 0.0 for f, _, _, _ in lists],
                "among": None if among is None else among.tolist(),
            },
        ).fetchall()
    out: list[np.ndarray] = []
    for n, packed in found:  # ORDER BY e.n: one row per list, in order
        wide = columns[lists[int(n) - 1][0]][1] > 0.0
        out.append(np.frombuffer(packed or b"", dtype=_POSTING if wide else _FIRST))
    return out


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k highest scores above 0, best first, equal ones in id order. Rounded to 12
    places: the pruned searches sum a memory's terms from other reads than a full one, and
    must give the same scores and order (an exact tie stays one)."""
    keep = scores > 0.0
    ids, scores = ids[keep], np.round(scores[keep], 12)
    if len(ids) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return [(int(i), float(s)) for i, s in zip(ids[order], scores[order], strict=True)]


def _idf_of(docs: float, df: int) -> float:
    """BM25's idf as the SQL of ``schema`` wrote it: a count above the memories' is capped."""
    return math.log(1 + (docs - min(df, docs) + 0.5) / (df + 0.5))


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


def _scope_sql(
    scope: Scope, alias: str = "m", *, shared: bool = False
) -> tuple[str, dict[str, Any]]:
    """``namespace`` always; ``user_id``/``agent_id`` only when the scope sets them. With
    ``shared``, rows written namespace-wide ('' user or agent) are visible to every user and
    agent of the namespace too (as in the SQLite backend). Named parameters: ns, user, agent."""
    match = "IN ('', %({})s)" if shared else "= %({})s"
    clauses, params = [f"{alias}.namespace = %(ns)s"], {"ns": scope.namespace}
    if scope.user_id is not None:
        clauses.append(f"{alias}.user_id {match.format('user')}")
        params["user"] = scope.user_id
    if scope.agent_id is not None:
        clauses.append(f"{alias}.agent_id {match.format('agent')}")
        params["agent"] = scope.agent_id
    return " AND ".join(clauses), params


__all__ = ["PostgresReads", "translating"]
