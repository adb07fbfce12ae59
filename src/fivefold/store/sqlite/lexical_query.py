"""Reading a tantivy lexical index: the BM25 query of a recall's terms, scope and filters, its
best hits with their ties at the cut, and the document frequencies of terms."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import tantivy

from fivefold.store.shared.tokens import Tokenizer
from fivefold.store.sqlite.lexical_documents import TEXT_FIELDS, exact
from fivefold.types import ColumnWeights, MemoryType, Scope

TIE_SLACK = 8  # hits fetched beyond k, so that ties at the cut are usually seen in one search
Hit = tuple[float, tantivy.DocAddress]


def bm25_query(
    schema: tantivy.Schema,
    tokenizer: Tokenizer,
    *,
    scope: Scope,
    terms: Sequence[str],
    types: Sequence[MemoryType],
    within: Sequence[int] | None,
    weights: ColumnWeights,
) -> tantivy.Query | None:
    """The query of ``terms`` (a repeated term counts again) within the scope, the types and
    ``within``, each field boosted by its weight (None: nothing can match)."""
    tokens: Counter[str] = Counter()
    for term in terms:
        tokens.update(tokenizer.terms(term))
    boosts = [
        (field, weight)
        for field, weight in zip(
            TEXT_FIELDS, (weights.predicate, weights.content, weights.context), strict=True
        )
        if weight > 0.0
    ]
    if not tokens or not boosts or (within is not None and not within):
        return None
    s = schema
    query = tantivy.Query.boolean_query(
        [
            (
                tantivy.Occur.Should,
                tantivy.Query.boost_query(
                    tantivy.Query.term_query(s, field, token), weight * count
                ),
            )
            for token, count in sorted(tokens.items())
            for field, weight in boosts
        ]
    )
    filters = []
    if scope.user_id is not None:
        filters.append(tantivy.Query.term_query(s, "user", exact(scope.user_id)))
    if scope.agent_id is not None:
        filters.append(tantivy.Query.term_query(s, "agent", exact(scope.agent_id)))
    if types:
        values = [exact(t.value) for t in types]
        filters.append(tantivy.Query.term_set_query(s, "type", values))
    if within is not None:
        filters.append(tantivy.Query.term_set_query(s, "id", [int(i) for i in within]))
    if filters:
        # Scored 0: a filter admits memories, it does not rank them.
        must = tantivy.Occur.Must
        zero = tantivy.Query.const_score_query
        query = tantivy.Query.boolean_query(
            [(must, query), *((must, zero(f, 0.0)) for f in filters)]
        )
    return query


def ranked(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> list[tuple[int, float]]:
    """The ``k`` best memories of ``query``, best first, ties by id."""
    hits = _top(searcher, query, k)
    if not hits:
        return []
    ids = ids_at(searcher, [address for _, address in hits])
    found = [(i, float(score)) for (score, _), i in zip(hits, ids, strict=True)]
    found.sort(key=lambda hit: (-hit[1], hit[0]))
    return found[:k]


def frequencies(
    searcher: tantivy.Searcher, tokenizer: Tokenizer, terms: Sequence[str]
) -> tuple[int, dict[str, int]]:
    """The index's document count and, per term, how many documents hold it in ``content``
    (a term of several tokens counts as its rarest)."""
    out: dict[str, int] = {}
    for term in terms:
        tokens = tokenizer.terms(term)
        counts = [int(searcher.doc_freq("content", t)) for t in tokens]
        out[term] = min(counts) if counts else 0
    return int(searcher.num_docs), out


def _top(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> list[Hit]:
    """The ``k`` best hits and every hit tying with the k-th: tantivy breaks ties by where a
    document sits in its segments (a memory rewritten with new context moves to a new one), the
    engine by id, so the hits that tie at the cut are all fetched and the caller picks by id."""
    limit = k + TIE_SLACK
    while True:
        # count=False: counting every match would defeat the early stop.
        hits = searcher.search(query, limit, count=False).hits
        if len(hits) < limit or hits[-1][0] < hits[k - 1][0]:
            return hits
        limit *= 4


def ids_at(searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]) -> list[int]:
    """Memory ids from the fast field, without loading documents."""
    ids = searcher.fast_field_values("id", addresses)
    return [int(i) if isinstance(i, int) else -1 for i in ids]


__all__ = ["bm25_query", "frequencies", "ids_at", "ranked"]
