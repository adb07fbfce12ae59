"""What the engine and a store pass each other: memories and edges ready to be written, and
what the retrievers and the write path read back. None of it is public API."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fivefold.types import EdgeKind, MemoryType, Scope


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory with every field resolved (inference already done), ready to be written."""

    content: str
    type: MemoryType
    predicate: str | None
    event_at: datetime | None
    created_at: datetime
    entities: tuple[str, ...]
    importance: float
    scope: Scope
    session_id: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class NewEdge:
    source: str
    relation: str
    target: str
    kind: EdgeKind
    confidence: float
    valid_from: datetime | None
    valid_to: datetime | None
    scope: Scope
    memory_id: int | None = None


@dataclass(frozen=True, slots=True)
class EdgeHop:
    """One traversable edge as the graph retriever sees it (direction does not matter)."""

    source_id: int
    target_id: int
    kind: EdgeKind
    confidence: float
    valid_to: datetime | None


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
class MentionHit:
    """A memory reached from scored entities: the best entity score and tie-break evidence."""

    memory_id: int
    score: float
    hops: int
    touched: int
    rarity: float


@dataclass(frozen=True, slots=True)
class EntityScore:
    entity_id: int
    score: float
    hops: int
    rarity: float


@dataclass(frozen=True, slots=True)
class MemoryAttributes:
    """What fusion and the post-fusion policies read of a candidate, without its text:
    ``length`` is the content's length in characters (a feature of learned fusion)."""

    importance: float
    type: MemoryType
    event_at: datetime | None
    created_at: datetime
    speaker: str | None = None
    length: int = 0


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A name (canonical or alias) that resolves to an entity, with its normalized key."""

    entity_id: int
    name: str
    key: str
    is_alias: bool


@dataclass(frozen=True, slots=True)
class Feedback:
    """What a caller said of one recall (``Memory.feedback``): the query, the recall's other
    arguments as JSON, and per memory 1.0 when it answered (relevant or used). Labels of a
    memory forgotten since are gone."""

    id: int
    query: str
    args: str
    labels: Mapping[int, float]
    created_at: datetime
