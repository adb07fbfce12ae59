"""Semantic retriever: cosine between the query (and its rewrites) and memory embeddings.

Vectors are L2-normalized, so the store's dot product is the cosine; it is clipped to [0, 1]
(an opposite direction is no evidence). With rewrites, a memory keeps its best score over all
phrasings.
"""

from __future__ import annotations

from collections.abc import Sequence

from fivefold.embed.base import Vectors
from fivefold.read.retrieve.ranking import clip01, ranked
from fivefold.store.protocol import Search
from fivefold.types import MemoryType, Scope, Scored


def semantic_search(
    search: Search,
    scope: Scope,
    query_vectors: Vectors,
    *,
    depth: int,
    types: Sequence[MemoryType] = (),
) -> tuple[Scored, ...]:
    if len(query_vectors) == 0:
        return ()
    best: dict[int, float] = {}
    for results in search.vector_search(scope, query_vectors, depth, types):
        for memory_id, cosine in results:
            score = clip01(cosine)
            if score > best.get(memory_id, -1.0):
                best[memory_id] = score
    return ranked(Scored(i, c) for i, c in best.items())[:depth]
