"""Negation demotion: a memory that matches what the query rules out ("not Kestrel", "other
than Python") moves below the rest, keeping the order of both."""

from __future__ import annotations

from fivefold.read.fuse import Fused
from fivefold.read.retrieve import match_confidence
from fivefold.read.stats import RecallStats
from fivefold.store.protocol import Store
from fivefold.types import ColumnWeights, ParsedQuery, Scope


def demote(
    store: Store,
    stats: RecallStats,
    scope: Scope,
    query: ParsedQuery,
    ranked: list[Fused],
    *,
    threshold: float,
    max_term_share: float,
    weights: ColumnWeights,
) -> tuple[list[Fused], frozenset[int]]:
    """Move memories that match a negated phrase (squashed BM25 of their own text above
    ``threshold``) or name a negated entity to the bottom, keeping their order; a memory
    struck several times sinks further. Returns the ranking and the ids demoted."""
    if not query.negations or not ranked:
        return ranked, frozenset()
    ids = [f.id for f in ranked]
    strikes: dict[int, int] = {}
    for phrase in query.negations:
        for memory_id, value in match_confidence(
            store.search,
            stats,
            scope,
            phrase.split(),
            ids,
            max_term_share=max_term_share,
            weights=weights,
        ).items():
            if value > threshold:
                strikes[memory_id] = strikes.get(memory_id, 0) + 1
    named = {r.name for r in query.negated_entities}
    # A memory naming a ruled-out entity is about it, whatever its words; a threshold no
    # squashed score reaches turns demotion off, this kind too.
    if named and threshold < 1.0:
        for memory_id, record in store.reads.get_memories(scope.namespace, ids).items():
            if named & set(record.entities):
                strikes[memory_id] = strikes.get(memory_id, 0) + 1
    order = {f.id: position for position, f in enumerate(ranked)}
    return sorted(ranked, key=lambda f: (strikes.get(f.id, 0), order[f.id])), frozenset(strikes)
