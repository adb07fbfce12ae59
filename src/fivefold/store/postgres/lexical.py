"""BM25 for the Postgres backend: what the lexical leg reads and how it scores it.

The embedded store's formula (tantivy's, field by field) over the posting and document-
frequency rows of one namespace (``schema``), the top k exact. The server packs each query
token's postings into one value per list and the client sums the scores (numpy). A store object
keeps the whole lists it reads (``lists.ListCache``); a query whose lists are long is pruned:
in impact order (a threshold algorithm over the index ``postings_impact``) or as MaxScore does.
``read.PostgresReads.lexical_search`` calls ``Lexical.search`` and builds the impact index.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from fivefold.model import ColumnWeights, MemoryType, Scope
from fivefold.store.postgres import schema
from fivefold.store.postgres.lists import ListCache, Version
from fivefold.store.tokens import Tokenizer

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


def namespace_row(
    conn: psycopg.Connection, namespace: str, *, version: bool = False
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


class Lexical:
    """One store object's BM25 searches, shared by its threads: the lists it keeps (the cache
    locks itself), and what its pruning did (counters for tests, not locked)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self.kept = ListCache()
        self.pruned = 0  # searches the pruning answered
        self.by_impact = 0  # of which in impact order
        self.stopped_early = 0  # of which before reading every list to its end
        self.second_rounds = 0  # of the others, those MaxScore answered in a second round

    def search(
        self,
        read: Callable[[], AbstractContextManager[psycopg.Connection]],
        scope: Scope,
        terms: Sequence[str],
        k: int,
        types: Sequence[MemoryType],
        within: Sequence[int] | None,
        weights: ColumnWeights,
    ) -> tuple[list[tuple[int, float]], int]:
        """The top k and the namespace's size (0 when nothing was read), read through a
        connection of ``read`` in one snapshot."""
        tokens = Counter(tok for t in terms if t for tok in self._tokenizer.terms(t))
        if not tokens or k <= 0 or (within is not None and len(within) == 0):
            return [], 0
        where, params = schema.scope_sql(scope)
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
        with read() as conn, conn.transaction():
            # One snapshot: the pruning's bounds and the scores see the same statistics.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            docs, generation, *totals, xmin = namespace_row(conn, scope.namespace, version=True)
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
            steady = filters.whole and self.kept.steady(scope.namespace, search.version)
            if within is None and not steady and not self._all_kept(search):
                found = None
                if all(columns[f][1] == 0.0 for f in fields):  # first columns only
                    found = self._by_impact(conn, search)
                if found is None:
                    found = self._pruned(conn, search)
                if found is not None:
                    return found, docs
            return _top(*_scores(conn, search, kept=self.kept), k), docs

    def _all_kept(self, search: _Search) -> bool:
        """Whether every list the search reads is in the process's cache: then scoring them
        all costs no read, and no pruning is tried."""
        if not search.filters.whole:
            return False
        namespace = str(search.params["ns"])
        return all(
            self.kept.get(namespace, search.version, _list_key(search, int(f), str(t))) is not None
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
            rows = _top(*_scores(conn, search, among=among, kept=self.kept), k) if among else []
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
                self.stopped_early += 1
                break
            settled = len(rows) >= k and theta > 0.0
            depths = [
                d if done or (settled and bound == 0.0) else d * 4
                for d, done, bound in zip(depths, read_out, bounds, strict=True)
            ]
            if sum(depths) > total // 2:
                return None  # as dear as scoring everything
        self.pruned += 1
        self.by_impact += 1
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
        rows = _top(*_scores(conn, search, among=[int(r[0]) for r in found], kept=self.kept), k)
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
            ids, part = _scores(conn, search, pairs=essential_pairs, kept=self.kept)
            among = set(ids[part >= theta - total_bound - 1e-9].tolist())
            wanted = sorted(among | {i for i, _ in rows})
            rows = _top(*_scores(conn, search, among=wanted, kept=self.kept), k)
            self.second_rounds += 1
        self.pruned += 1
        return rows


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


__all__ = [
    "IMPACT_DEPTH",
    "IMPACT_LONG_LISTS",
    "PRUNE_POSTINGS",
    "SCORE_ALL_POSTINGS",
    "Lexical",
    "namespace_row",
]
