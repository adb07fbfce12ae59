"""Graph retriever: walk typed edges from the query's entities, score the memories that mention
what the walk reaches.

A memory that mentions an entity ``h`` hops from a query entity scores
``hop(h) x prod(edge_confidence x type_prior x freshness)`` along the best path, with
``hop = 1.0, 0.6, 0.35, 0.15``. Structural edges have prior 1.0, semantic (co-mention,
inferred) 0.9; a lifecycle edge whose ``valid_to`` has passed has freshness 0.3. Roots resolved
with confidence below 0.7 are all walked, each weighted by its confidence.

Two additions to the bare formula, both because a speaker named in half the memories is weak
evidence: each entity's score is multiplied by its specificity ``ln(N/df)/ln(N)`` (config
``graph.rarity_weighting``), and a memory's scores over the entities it names combine by
noisy-or, so one naming two query entities outranks one naming either. Equal scores are then
ordered by how many query entities a memory names and how rare they are (``store/scoring.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from fivefold.config import GraphConfig
from fivefold.read.retrieve.lexical import idf
from fivefold.read.retrieve.ranking import clip01
from fivefold.store.protocol import Store
from fivefold.store.scoring import EntityScore, NeighbourStep, mentions, neighbours
from fivefold.types import EdgeKind, EntityRef, MemoryType, Scope, Scored


def graph_search(
    store: Store,
    scope: Scope,
    refs: Sequence[EntityRef],
    *,
    total: int,
    depth: int,
    now: datetime,
    config: GraphConfig,
    multi_hop: bool = False,
    types: Sequence[MemoryType] = (),
    frontier_cap: int | None = None,
) -> tuple[Scored, ...]:
    """``total``: the namespace's memory count; ``frontier_cap`` overrides
    ``config.frontier_cap`` (the optimizer's plans set it)."""
    if not refs:
        return ()
    cap = config.frontier_cap if frontier_cap is None else frontier_cap
    reached = _walk(store, scope, refs, now, config, multi_hop, cap)
    frequencies = store.reads.entity_frequencies(scope.namespace, list(reached))
    scores = []
    for entity_id, (path, hops) in reached.items():
        frequency = frequencies.get(entity_id, 0)
        score = config.hop_scores[min(hops, len(config.hop_scores) - 1)] * path
        if config.rarity_weighting:
            score *= specificity(total, frequency)
        scores.append(EntityScore(entity_id, score, hops, idf(total, frequency)))
    hits = mentions(store.search, scope, scores, depth, types)
    return tuple(Scored(h.memory_id, clip01(h.score), hops=h.hops) for h in hits)


def specificity(total: int, frequency: int) -> float:
    """``ln(N / df) / ln(N)`` in [0, 1]: 1 for an entity one memory names, ~0.1 for one named
    in half of 600 memories. Tiny namespaces (N < 2) cannot tell, so every entity counts fully."""
    if total < 2 or frequency <= 0:
        return 1.0
    return min(1.0, max(0.0, math.log(total / frequency) / math.log(total)))


def _walk(
    store: Store,
    scope: Scope,
    refs: Sequence[EntityRef],
    now: datetime,
    config: GraphConfig,
    multi_hop: bool,
    frontier_cap: int,
) -> dict[int, tuple[float, int]]:
    """Best path product and hop count of every entity reached, roots included. Each hop keeps
    the ``frontier_cap`` best new entities, from each frontier entity's strongest edges (the
    store reads no more: a hub's thousands of co-mention edges are never all read)."""
    reached: dict[int, tuple[float, int]] = {}
    for ref in refs:
        weight = 1.0 if ref.confidence >= config.ambiguous_below else ref.confidence
        if weight > reached.get(ref.entity_id, (0.0, 0))[0]:
            reached[ref.entity_id] = (weight, 0)
    frontier = {e: p for e, (p, _) in reached.items()}
    max_hops = config.multi_hop_max_hops if multi_hop else config.max_hops
    priors = {
        EdgeKind.STRUCTURAL: config.structural_prior,
        EdgeKind.SEMANTIC: config.semantic_prior,
        EdgeKind.LIFECYCLE: config.lifecycle_prior,
    }
    for hop in range(1, max_hops + 1):
        if not frontier:
            break
        step = NeighbourStep(
            frontier=frontier,
            priors=priors,
            now=now,
            expired_freshness=config.expired_freshness,
            exclude=reached.keys(),
            limit=frontier_cap,
        )
        frontier = dict(neighbours(store.search, scope, step))
        for entity_id, path in frontier.items():
            reached[entity_id] = (path, hop)
    return reached
