"""Lexical retriever: BM25 over the predicate (weighted 4x) and the memory's window (its
content with its session neighbours' text, ``store/context.py``), or over predicate and content
alone (context off; negation; the own-text match), stop words dropped.

BM25 is unbounded, so fusion and negation see it through a documented monotone map:

    c = s / (s + 0.5 * S_q)        S_q = sum of the query terms' IDFs in ``content``

``S_q`` is what one memory of average length scores when it holds every query term once in
its content, scored on its own columns (each field is scored on its own and BM25 gives tf 1 at
average length exactly the IDF), so such a memory gets c ~ 0.67; a predicate hit (4x) ~ 0.89;
a single term buried in a long text falls below 0.5. Through its window (each own term counted
four times) the same memory scores about 1.7x its window IDFs, which are lower than its
content IDFs (a window holds more memories' words). For one query the map is strictly
increasing in ``s``, so it never reorders the BM25 list; it only makes scores of different
queries comparable enough for one threshold (negation's 0.6, on own columns).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from fivefold.config import Config
from fivefold.read.retrieve.ranking import ranked
from fivefold.store.protocol import Search
from fivefold.types import ColumnWeights, MemoryType, Scope, Scored

HALF_SATURATION = 0.5
COMMON_TERM_MIN_DOCS = 1000
DEFAULT_WEIGHTS = Config().bm25_weights()
OWN_TEXT_WEIGHTS = Config().own_text_weights()


def idf(total: int, frequency: int) -> float:
    """BM25's IDF as the backends score it (Lucene's and tantivy's: never below 0, so a
    ubiquitous term still weighs a little). A frequency above the total (counts read while
    another process wrote) counts as all."""
    frequency = min(frequency, total)
    return math.log(1.0 + (total - frequency + 0.5) / (frequency + 0.5))


class TermStats(Protocol):
    def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The namespace's memory count and each term's document frequency."""
        ...


def query_weight(stats: TermStats, terms: Sequence[str]) -> float:
    total, frequencies = stats.frequencies(terms)
    return sum(idf(total, frequencies.get(t, 0)) for t in terms)


def selective_terms(stats: TermStats, terms: Sequence[str], max_share: float) -> list[str]:
    """``terms`` without those in more than ``max_share`` of the store and more than
    ``COMMON_TERM_MIN_DOCS`` memories (below that, scoring a term's documents is cheap), unless
    that would leave none: then all of them."""
    if max_share >= 1.0 or not terms:
        return list(terms)
    total, frequencies = stats.frequencies(terms)
    limit = max(max_share * total, COMMON_TERM_MIN_DOCS)
    kept = [t for t in terms if frequencies.get(t, 0) <= limit]
    return kept or list(terms)


def squash(score: float, weight: float) -> float:
    if score <= 0.0 or weight <= 0.0:
        return 0.0
    half = HALF_SATURATION * weight
    # 1 - h/(s+h) equals s/(s+h) but stays monotone under float rounding.
    return 1.0 - half / (score + half)


def lexical_search(
    search: Search,
    stats: TermStats,
    scope: Scope,
    terms: Sequence[str],
    *,
    hint_terms: Sequence[str] = (),
    depth: int,
    types: Sequence[MemoryType] = (),
    max_term_share: float = 1.0,
    weights: ColumnWeights = DEFAULT_WEIGHTS,
) -> tuple[Scored, ...]:
    """``hint_terms`` (from predicate hints) are sent twice: a repeated term counts double.
    Terms in more than ``max_term_share`` of the
    store are left out when a rarer one remains (``selective_terms``)."""
    if not terms:
        return ()
    terms = selective_terms(stats, terms, max_term_share)
    query_terms = [*terms, *(t for t in hint_terms if t in terms)]
    hits = search.lexical_search(scope, query_terms, depth, types, weights=weights)
    if not hits:
        return ()
    weight = query_weight(stats, query_terms)
    return ranked(Scored(i, squash(s, weight)) for i, s in hits)


def match_confidence(
    search: Search,
    stats: TermStats,
    scope: Scope,
    terms: Sequence[str],
    within: Sequence[int],
    *,
    max_term_share: float = 1.0,
    weights: ColumnWeights = OWN_TEXT_WEIGHTS,
) -> dict[int, float]:
    """Squashed BM25 of each memory's own text in ``within`` against ``terms`` (negation
    demotion; learned fusion's own-text match).
    As in ``lexical_search``, a common term is left out when a rarer one remains: "other than
    Project Taldra" rules out what names Taldra, and "project" would weigh in for half of a
    large store."""
    if not terms or not within:
        return {}
    terms = selective_terms(stats, terms, max_term_share)
    # A memory is demoted for what it says (``weights``: its own columns), not for what its
    # session neighbours say.
    hits = search.lexical_search(scope, terms, len(within), (), within, weights=weights)
    weight = query_weight(stats, terms)
    return {i: squash(s, weight) for i, s in hits}
