"""How the graph retriever scores what a store reads, written once for every backend: a hop's
best path to each entity over the strongest edges, and a memory's score over the entities it
mentions (noisy-or), with the tie-breaks. The stores only select the rows (a hop's strongest
edges, each entity's most recent mentions), capped here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from fivefold.store.protocol import Search
from fivefold.store.records import EdgeRow, Ids
from fivefold.store.shared.timeconv import to_ts
from fivefold.types import EdgeKind, MemoryType, Scope

# Mentions read per entity the query names: enough for any ranking the graph retriever returns
# (depth k), few enough that a speaker named in a million memories costs a bounded index walk.
MENTIONS_PER_RESULT = 4
MIN_MENTIONS_PER_ENTITY = 200
# Entities reached over edges score 0.6 or less: k / 4 of their mentions is plenty.
REACHED_MENTIONS_DIVISOR = 4
# Scores and rarities summed over a memory's entities are rounded: a float sum's last bits
# depend on the order of its terms, and equal evidence must tie exactly (then rank by id).
SUM_DECIMALS = 12


@dataclass(frozen=True, slots=True, kw_only=True)
class NeighbourStep:
    """What one hop of the graph walk needs: the frontier (entity id -> path weight so far),
    the edge priors by kind, the freshness of a lifecycle edge whose ``valid_to`` is before
    ``now``, the entities already reached, and how many to keep."""

    frontier: Mapping[int, float]
    priors: Mapping[EdgeKind, float]
    now: datetime
    expired_freshness: float
    exclude: Collection[int]
    limit: int

    @property
    def per_entity(self) -> int:
        """Edges read per frontier entity, strongest first. A hop keeps ``limit`` entities, so
        no entity contributes more; twice that leaves room for the kind's prior and an expired
        edge's freshness to reorder an entity's edges (they only ever lower a strength)."""
        return 2 * self.limit


@dataclass(frozen=True, slots=True)
class EntityScore:
    entity_id: int
    score: float
    hops: int
    rarity: float


@dataclass(frozen=True, slots=True)
class MentionHit:
    """A memory reached from scored entities: its score and tie-break evidence."""

    memory_id: int
    score: float
    hops: int
    touched: int
    rarity: float


def best_paths(rows: Sequence[EdgeRow], step: NeighbourStep) -> list[tuple[int, float]]:
    """Every entity one edge away from the frontier, with its best path weight
    ``w x strength x prior(kind) x freshness``, the entities already reached left out, best
    first, ties by id, at most ``step.limit``."""
    if not rows or step.limit <= 0:
        return []
    now = to_ts(step.now)
    exclude = step.exclude if isinstance(step.exclude, set | frozenset) else set(step.exclude)
    best: dict[int, float] = {}
    for row in rows:
        if row.there in exclude:
            continue
        fresh = step.expired_freshness if row.valid_to is not None and row.valid_to < now else 1.0
        path = step.frontier[row.entity_id] * row.strength * step.priors.get(row.kind, 1.0) * fresh
        if path > best.get(row.there, -1.0):
            best[row.there] = path
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return ranked[: step.limit]


def mention_caps(entities: Sequence[EntityScore], k: int) -> list[tuple[int, int]]:
    """How many of each entity's most recent mentions are read for a ranking of depth ``k``."""
    direct = max(MENTIONS_PER_RESULT * k, MIN_MENTIONS_PER_ENTITY)
    reached = max(1, k // REACHED_MENTIONS_DIVISOR)
    return [(e.entity_id, direct if e.hops == 0 else reached) for e in entities]


def rank_mentions(
    entities: Sequence[EntityScore], mentioned: Sequence[Ids], k: int
) -> list[MentionHit]:
    """Memories ranked by their entities' scores combined by noisy-or (``1 - prod(1 - s)``;
    one entity keeps its score exactly, a fully confident one makes it 1), then by how many
    named entities they mention, then by those entities' summed rarity, then by id.
    ``mentioned[i]``: the ids of the memories that mention ``entities[i]``."""
    lengths = [len(ids) for ids in mentioned]
    if k <= 0 or not sum(lengths):
        return []
    ids = np.concatenate([np.asarray(m, dtype=np.int64) for m in mentioned])
    owner = np.repeat(np.arange(len(entities)), lengths)
    score = np.array([e.score for e in entities], dtype=np.float64)[owner]
    hops = np.array([e.hops for e in entities], dtype=np.int64)[owner]
    rarity = np.array([e.rarity for e in entities], dtype=np.float64)[owner]
    memories, at = np.unique(ids, return_inverse=True)
    count = np.bincount(at, minlength=len(memories))
    best = np.full(len(memories), -np.inf)
    np.maximum.at(best, at, score)
    logs = np.bincount(at, weights=np.log(np.maximum(1.0 - score, 1e-300)), minlength=len(memories))
    single = (count == 1) | (best >= 1.0)
    combined = np.where(single, np.minimum(1.0, best), 1.0 - np.exp(logs))
    combined = np.round(combined, SUM_DECIMALS)
    direct = hops == 0
    touched = np.bincount(at, weights=direct, minlength=len(memories)).astype(np.int64)
    summed = np.bincount(at, weights=np.where(direct, rarity, 0.0), minlength=len(memories))
    summed = np.round(summed, SUM_DECIMALS)
    nearest = np.full(len(memories), np.iinfo(np.int64).max)
    np.minimum.at(nearest, at, hops)
    order = np.lexsort((memories, -summed, -touched, -combined))[:k]
    return [
        MentionHit(
            int(memories[i]), float(combined[i]), int(nearest[i]), int(touched[i]), float(summed[i])
        )
        for i in order
    ]


def neighbours(search: Search, scope: Scope, step: NeighbourStep) -> list[tuple[int, float]]:
    """One hop of the graph walk: the frontier's strongest edges, read, then scored."""
    if not step.frontier or step.limit <= 0:
        return []
    return best_paths(search.strongest_edges(scope, list(step.frontier), step.per_entity), step)


def mentions(
    search: Search,
    scope: Scope,
    entities: Sequence[EntityScore],
    k: int,
    types: Sequence[MemoryType] = (),
) -> list[MentionHit]:
    """The memories that mention the scored entities, read, then ranked."""
    if not entities or k <= 0:
        return []
    return rank_mentions(
        entities, search.recent_mentions(scope, mention_caps(entities, k), types), k
    )
