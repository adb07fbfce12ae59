"""What the engine and a store pass each other: memories and edges ready to be written, and
what the retrievers and the write path read back. None of it is public API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from fivefold.types import EdgeKind, MemoryType, Scope

# Memory ids as a store reads them: a list, or an array where it parses them in bulk.
Ids = Sequence[int] | npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Supersedes:
    """An older memory (a stored id, or a position earlier in the same batch) that a new one
    replaces, and why; ``outright`` when the caller said so (it replaces a supersession the
    engine inferred)."""

    target: int
    reason: str
    outright: bool = False


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
    # What its exact repeats share (``text.repeat_key``); None: it has none (a conversation
    # turn is an utterance: two of a session that say the same words are both kept).
    repeat_key: str | None = None
    # How often the batch says it (its exact repeats in the same batch are written once).
    seen: int = 1
    # What it states a value of ("user|residence"), for the newer memories it may be replaced by.
    slots: tuple[str, ...] = ()
    # The older memories it supersedes, stored ones by id and ones earlier in its own batch by
    # position, each with the reason.
    supersedes: tuple[Supersedes, ...] = ()
    supersedes_batch: tuple[Supersedes, ...] = ()

    @property
    def said_at(self) -> datetime:
        """When what it states holds from: the time it gives, else when it was written."""
        return self.event_at or self.created_at


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
class EdgeRow:
    """An edge as one hop of the graph walk reads it, from the side of ``entity_id`` (the
    frontier's entity) to ``there``: its strength (a co-mention's ``1 - 0.5^support``, else its
    confidence), its kind, and ``valid_to`` as a timestamp (None: no end)."""

    entity_id: int
    there: int
    strength: float
    kind: EdgeKind
    valid_to: float | None


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
    superseded_by: int | None = None  # the memory that superseded it (None: it is current)


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


@dataclass(frozen=True, slots=True)
class Progress:
    """A long job's note under ``key``: ``value`` replaces ``previous`` (None: no note)."""

    key: str
    value: str
    previous: str | None


@dataclass(frozen=True, slots=True)
class NamespaceState:
    """A namespace's memory count, and its generation: a counter every write in it bumps
    (the caches of names, models and results key on it)."""

    memories: int
    generation: int
