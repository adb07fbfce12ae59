"""BM25 for the Postgres backend: what the lexical leg reads and how it scores it.

The embedded store's formula (tantivy's, field by field) over the packed lists and document-
frequency rows of one namespace (``schema``), the top k exact. Each query token's list is read
whole, its parts joined by the server into one value (``packed.py``), and scored here (numpy);
a type, id or scope filter is applied to the postings read. A store object keeps the lists it
reads (``lists.ListCache``) until the namespace is written. ``read.PostgresReads.
lexical_search`` calls ``Lexical.search``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from fivefold.store.postgres import schema
from fivefold.store.postgres.lists import ListCache, Version
from fivefold.store.postgres.packed import NORM_VALUES, decode, type_code
from fivefold.store.shared.tokens import Tokenizer
from fivefold.types import ColumnWeights, MemoryType, Scope


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
    locks itself)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self.kept = ListCache()

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
        # Each column is scored with its own statistics: field -> its two columns' weights.
        columns = {
            schema.OWN: (weights.predicate, weights.content),
            schema.CONTEXT: (weights.context, 0.0),  # the window: one column
        }
        fields = [f for f, (w1, w2) in columns.items() if w1 > 0.0 or w2 > 0.0]
        if not fields:
            return [], 0
        namespace = scope.namespace
        params: dict[str, Any] = {"ns": namespace, "terms": sorted(tokens), "fields": fields}
        with read() as conn, conn.transaction():
            # One snapshot: the statistics, the lists and the scope agree.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            docs, generation, *totals, xmin = namespace_row(conn, namespace, version=True)
            if docs == 0:
                return [], 0
            version = (generation, xmin)
            stats = [
                (int(f), str(t), int(df1), int(df2))
                for f, t, df1, df2 in conn.execute(schema.BM25_TERM_STATS, params).fetchall()
            ]
            found = self._lists(conn, namespace, version, [(f, t) for f, t, _, _ in stats])
            visible = None
            if scope.user_id is not None or scope.agent_id is not None:
                visible = self._scope_ids(conn, scope, version)
        keep = _Keep(
            types=np.asarray(sorted({type_code(t.value) for t in types}), dtype=np.uint8),
            among=None if within is None else np.unique(np.asarray(within, dtype=np.int64)),
            visible=visible,
        )
        averages = {
            f: (max(totals[2 * f] / docs, 1e-9), max(totals[2 * f + 1] / docs, 1e-9))
            for f in fields
        }
        search = _Search(float(docs), columns, averages, tokens)
        return _top(*_scores(search, stats, found, keep), k), docs

    def _lists(
        self,
        conn: psycopg.Connection,
        namespace: str,
        version: Version,
        wanted: Sequence[tuple[int, str]],
    ) -> list[np.ndarray]:
        """Each (field, term) list of ``wanted`` whole, in order: kept ones from the cache,
        the others read in one statement (and kept)."""
        out: list[np.ndarray | None] = [self.kept.get(namespace, version, key) for key in wanted]
        unread = [n for n, found in enumerate(out) if found is None]
        if unread:
            with conn.cursor(binary=True) as cursor:
                rows = cursor.execute(
                    schema.BM25_LISTS,
                    {
                        "ns": namespace,
                        "list_fields": [wanted[n][0] for n in unread],
                        "list_terms": [wanted[n][1] for n in unread],
                    },
                ).fetchall()
            for (_, packed), n in zip(rows, unread, strict=True):  # ORDER BY e.n: in order
                postings = decode(wanted[n][0], packed)
                self.kept.put(namespace, version, wanted[n], postings)
                out[n] = postings
        return [found for found in out if found is not None]

    def _scope_ids(self, conn: psycopg.Connection, scope: Scope, version: Version) -> np.ndarray:
        """The ids of the scope's memories, ascending (kept as a list is)."""
        key = (-1, f"{scope.user_id!r}\x00{scope.agent_id!r}")
        found = self.kept.get(scope.namespace, version, key)
        if found is not None:
            return found
        where, params = schema.scope_sql(scope)
        with conn.cursor(binary=True) as cursor:
            row = cursor.execute(schema.SCOPE_IDS.format(where=where), params).fetchone()
        ids = np.sort(np.frombuffer((row[0] if row else None) or b"", dtype=">i8").astype(np.int64))
        self.kept.put(scope.namespace, version, key, ids)
        return ids


@dataclass(frozen=True, slots=True)
class _Search:
    """What scoring needs besides the lists: the namespace's memory count, each field's
    columns' weights and average lengths, and the query's tokens with their counts."""

    docs: float
    columns: dict[int, tuple[float, float]]
    averages: dict[int, tuple[float, float]]
    tokens: Counter[str]


@dataclass(frozen=True, slots=True)
class _Keep:
    """The postings a search scores: of these types (all when empty), of these ids (all when
    None), of the scope's memories (all the namespace's when None); ascending ids."""

    types: np.ndarray
    among: np.ndarray | None
    visible: np.ndarray | None

    def mask(self, postings: np.ndarray) -> np.ndarray | None:
        """Which of ``postings`` are kept; None: all of them."""
        mask = None
        if len(self.types):
            mask = np.isin(postings["type"], self.types)
        for wanted in (self.among, self.visible):
            if wanted is not None:
                found = _members(postings["id"], wanted)
                mask = found if mask is None else mask & found
        return mask


def _scores(
    search: _Search,
    stats: Sequence[tuple[int, str, int, int]],
    lists: Sequence[np.ndarray],
    keep: _Keep,
) -> tuple[np.ndarray, np.ndarray]:
    """Each kept memory's BM25 score from the query's (field, token) lists: (ids, scores), in
    no order, a memory holding none of the tokens left out. Every memory's terms are added in
    the same order, so two memories with the same text score exactly the same."""
    ids: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    for (field, term, df1, df2), found in zip(stats, lists, strict=True):
        mask = keep.mask(found)
        if mask is not None:
            found = found[mask]
        if not len(found):
            continue
        w1, w2 = search.columns[field]
        avg1, avg2 = search.averages[field]
        first = found["first"].astype(np.float64)
        norm1 = NORM_VALUES[found["norm1"]]
        # BM25 as ``schema`` documents it (k1 = 1.2, b = 0.75), in the same order of operations.
        score = (w1 * _idf_of(search.docs, df1)) * first * 2.2
        score /= first + 1.2 * (0.25 + 0.75 * norm1 / avg1)
        if w2 > 0.0:  # else it adds 0 to each (and the window field has no second column)
            second = found["second"].astype(np.float64)
            norm2 = NORM_VALUES[found["norm2"]]
            other = (w2 * _idf_of(search.docs, df2)) * second * 2.2
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


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k highest scores above 0, best first, equal ones in id order. Rounded to 12
    places: a sum of the same terms in another order differs in its last bits, and equal
    scores must tie."""
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


__all__ = ["Lexical", "namespace_row"]
