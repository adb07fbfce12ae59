"""Which retrievers a parsed query gives something to work with: shared by every plan."""

from __future__ import annotations

from fivefold.types import ParsedQuery, RetrieverName

# Why a retriever without input is left out (the balanced plan reports it).
MISSING_INPUT = {
    RetrieverName.SEMANTIC: "nothing left to embed after removing negations",
    RetrieverName.LEXICAL: "no content terms",
    RetrieverName.GRAPH: "no entity of the store named in the query",
    RetrieverName.TEMPORAL: "no time window in the query",
}


def has_input(retriever: RetrieverName, query: ParsedQuery) -> bool:
    """The type leg is decided by type hints, not by the query text: always True here."""
    if retriever is RetrieverName.SEMANTIC:
        return bool(query.focus.strip())
    if retriever is RetrieverName.LEXICAL:
        return bool(query.terms)
    if retriever is RetrieverName.GRAPH:
        return bool(query.entity_refs)
    if retriever is RetrieverName.TEMPORAL:
        return query.temporal_window is not None
    return True
