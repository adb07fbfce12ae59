"""The ``Store`` protocol: everything the engine asks of a backend.

Retrievers keep their scoring rules (hop scores, squashing, widening) to themselves and ask the
store only for data: nearest vectors, BM25 scores, edges, mentions, events in a range. A second
backend (PostgreSQL) implements the same protocol and passes the same contract tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from fivefold.config import ContextConfig, IndexConfig, WriteConfig
from fivefold.embed.base import Vectors
from fivefold.errors import NotFound
from fivefold.store.records import (
    CatalogEntry,
    EdgeHop,
    EntityScore,
    Feedback,
    MemoryAttributes,
    MentionHit,
    NeighbourStep,
    NewEdge,
    NewMemory,
)
from fivefold.store.shared.context import Smoothing
from fivefold.types import (
    ColumnWeights,
    Edge,
    Entity,
    Finding,
    MemoryRecord,
    MemoryType,
    Scope,
    StoreStats,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSettings:
    """What a backend is told when it opens: how memories are indexed (session context, the
    dense index) and the bounds on one write. Query-time scoring rules are not here: the
    retrievers pass them with each call."""

    context: ContextConfig = field(default_factory=ContextConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    write: WriteConfig = field(default_factory=WriteConfig)

    @property
    def smoothing(self) -> Smoothing:
        """The session context's reach and neighbour weights, as the rows are made with."""
        cfg = self.context
        return Smoothing(window=cfg.window, near=cfg.vector_near, far=cfg.vector_far)


class Store(Protocol):
    @property
    def embedding_model(self) -> str: ...

    @property
    def keyed_names(self) -> bool:
        """Whether the backend keys names in index rows of bounded size and its text cannot
        hold a NUL character (Postgres): what the write bounds of ``validate`` protect. A
        copy into such a store from one without them checks the source first (``migrate``)."""
        ...

    @property
    def location(self) -> str: ...

    @property
    def created(self) -> bool:
        """Whether this open made the store (of several processes opening a new one at once,
        the one whose store is the one they all open)."""
        ...

    def close(self) -> None: ...

    # -- writes ------------------------------------------------------------------------------
    def insert_memories(
        self,
        memories: Sequence[NewMemory],
        vectors: Vectors,
        *,
        progress: Progress | None = None,
        ids: Sequence[int] | None = None,
    ) -> list[MemoryRecord]:
        """Write all memories (with embeddings, index entries, mentions, co-mention edges and
        session log) in one transaction; return their records in order, as ``get_memories``
        would read them (built from the write: nothing is read after the commit).
        ``progress``: a job's note set in the same transaction (read by ``progress``), so
        that what it says was written always was, and nothing more; the note must still be
        ``previous`` (None: none), else ``StoreError`` and nothing is written (two runs of
        one job at once would each write what the other does). ``ids``: the memories' ids,
        given (a copy keeps its source's: ``batch.given_ids``), instead of the store's next."""
        ...

    def delete_memory(self, memory_id: int, scope: Scope) -> bool:
        """Delete a memory of ``scope`` (a user or agent of None matches any) and every trace
        only it supported; False when no such memory is in the scope."""
        ...

    def add_edge(
        self, edge: NewEdge, *, record: NewMemory | None = None, vector: Vectors | None = None
    ) -> Edge:
        """Write the edge and, when given, the fact memory that records it (with its vector)
        in one transaction: both or neither."""
        ...

    def add_alias(self, namespace: str, name: str, alias: str) -> Entity: ...

    # -- reads -------------------------------------------------------------------------------
    def get_memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        """The memories of ``namespace`` among ``ids`` (ids of other namespaces are absent).
        Every read names its namespace: on a sharded Postgres it is the distribution column,
        and no read by id may cross a tenant's wall."""
        ...

    def recent_ids(self, scope: Scope, *, limit: int, before: int | None = None) -> list[int]:
        """Ids of the newest memories in ``scope`` (below ``before`` when given), newest first."""
        ...

    def attributes(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        """What fusion and post-filters need of each candidate, without loading its text."""
        ...

    def catalog(self, namespace: str) -> Sequence[CatalogEntry]:
        """Every entity name and alias of a namespace, for query-side resolution."""
        ...

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        """The entities that a memory or an edge in ``scope`` names: a user must not learn,
        through query parsing, the names only another user's memories hold."""
        ...

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many memories mention each entity (its document frequency)."""
        ...

    def memory_count(self, namespace: str) -> int: ...

    def namespace_generation(self, namespace: str) -> int:
        """A counter bumped by every write in the namespace (caches key on it)."""
        ...

    def term_document_frequencies(
        self, namespace: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """The namespace's memory count and, per (stemmed-as-indexed) term, how many of its
        memories contain it: no other namespace's writes move these numbers."""
        ...

    def vector_search(
        self,
        scope: Scope,
        queries: Vectors,
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[list[tuple[int, float]]]:
        """Per query vector, the ``k`` nearest memories in scope by cosine, best first."""
        ...

    def vectors(self, namespace: str, ids: Sequence[int]) -> dict[int, Vectors]: ...

    def lexical_search(
        self,
        scope: Scope,
        terms: Sequence[str],
        k: int,
        types: Sequence[MemoryType] = (),
        within: Sequence[int] | None = None,
        *,
        weights: ColumnWeights,
    ) -> list[tuple[int, float]]:
        """BM25 (positive, higher is better) over predicate and content and the session
        neighbours' text, each at its weight, with the statistics (memory count, average
        lengths, document frequencies) of ``scope.namespace`` alone; best first. ``terms`` are
        plain words; the store escapes them, so query syntax never reaches the engine."""
        ...

    def edges_touching(self, scope: Scope, entity_ids: Sequence[int]) -> list[EdgeHop]: ...

    def neighbours(self, scope: Scope, step: NeighbourStep) -> list[tuple[int, float]]:
        """One hop of the graph walk: every entity one edge in scope away from the frontier
        (walked both ways), with its best path weight ``w x edge confidence x prior(kind) x
        freshness`` (a co-mention's confidence is ``1 - 0.5^support``), ``step.exclude``
        left out, best first, ties by id, at most ``step.limit``."""
        ...

    def mentions(
        self,
        scope: Scope,
        entities: Sequence[EntityScore],
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[MentionHit]:
        """Memories in scope that mention any of the scored entities, ranked by best entity
        score, then by how many of them they touch, then by their summed rarity, then by id."""
        ...

    def events_between(
        self,
        scope: Scope,
        start: datetime,
        end: datetime,
        k: int,
    ) -> list[tuple[int, datetime]]:
        """Event memories in scope with ``start <= event_at <= end``, most recent first."""
        ...

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None: ...

    # -- export (``fivefold migrate``) ---------------------------------------------------------
    def relations(self, namespace: str) -> list[NewEdge]:
        """The namespace's explicit edges (``relate``; co-mentions are derived from the
        memories), with their scope and the fact memory that records each, in write order."""
        ...

    def aliases(self, namespace: str) -> list[tuple[str, str]]:
        """(canonical name, alias) of every declared alias of the namespace."""
        ...

    def check(self, *, repair: bool = False) -> list[Finding]:
        """Every index checked against the rows; ``repair`` rebuilds what is out of step; a
        copy mark left behind (``mark_copy``) is a finding no repair clears."""
        ...

    def held_namespaces(self) -> list[str]:
        """Every namespace holding anything (``HELD_NAMESPACES``), sorted."""
        ...

    def mark_copy(self, note: str | None) -> None:
        """Mark the store as receiving a copy (``fivefold migrate``: ``note`` says from where
        and when), or with None clear the mark once the copy is whole: a copy killed half way
        leaves its mark, and ``check`` reports it. Marking is refused (``InvalidInput``), in
        one transaction, when a mark is there already or any namespace holds anything."""
        ...

    def progress(self, key: str) -> str | None:
        """A long job's note (an import's records written: ``importers``), or None."""
        ...

    def copy_mark(self) -> str | None:
        """The note of a copy under way or left unfinished (``mark_copy``), or None."""
        ...

    def next_memory_id(self, *, at_least: int | None = None) -> int:
        """The id the store's next memory would take (ids are never reused, forgotten ones
        neither); with ``at_least``, first moved up to it if below (a copy carries its
        source's over, so that an id forgotten there is not given to another memory)."""
        ...

    # -- learned fusion ------------------------------------------------------------------------
    def add_feedback(
        self,
        namespace: str,
        query: str,
        args: str,
        labels: Mapping[int, float],
        created_at: datetime,
    ) -> int:
        """Record feedback on one recall (labels of memories of ``namespace``); its id."""
        ...

    def feedback(self, namespace: str) -> list[Feedback]:
        """The namespace's feedback, oldest first."""
        ...

    def save_model(self, namespace: str, payload: str, *, accepted: bool) -> int:
        """Store a trained model (JSON) as the namespace's next version; the version."""
        ...

    def learned_model(self, namespace: str) -> tuple[int, str] | None:
        """The newest accepted model of the namespace: (version, payload)."""
        ...

    def compact(self) -> int:
        """Purge from the derived indexes what replaced and forgotten memories left behind, so
        every statistic counts the current rows only, and merge what small writes split;
        returns how many indexes (embedded) or lists' chunks (Postgres) were rebuilt."""
        ...

    def stats(self, namespace: str | None = None) -> StoreStats:
        """Counts of the whole store, or of one namespace."""
        ...


COPY_MARK = "copy_in_progress"  # the meta key of ``Store.mark_copy``
PROGRESS_PREFIX = "progress:"  # the meta keys of ``Store.progress``
PROGRESS_MOVED = (
    "another run of the same import wrote to this store meanwhile (its progress moved): "
    "nothing of this batch was written; run the command again once the other has ended"
)


@dataclass(frozen=True, slots=True)
class Progress:
    """A long job's note under ``key``: ``value`` replaces ``previous`` (None: no note)."""

    key: str
    value: str
    previous: str | None


def labels_found(labels: Mapping[int, float], found: Iterable[int]) -> None:
    """``add_feedback``'s check, in its transaction, that each labelled memory is there: a
    forget between the caller's check and the write left a raw foreign key error (SQLite) or a
    label of a forgotten memory (Postgres: a hostile pass's race)."""
    if missing := sorted(set(labels) - set(found)):
        raise NotFound(f"no memory with id {missing[0]} (forgotten meanwhile)")


def unfinished_copy(note: str, memories: int) -> Finding:
    """``check``'s finding for a copy mark left behind (or a copy still running)."""
    return Finding(
        "copy",
        False,
        f"a copy into this store has not finished ({note}; {memories:,} memories copied): "
        "if it is not still running, copy again into an empty store (a new file, or a new "
        "Postgres schema); no repair clears this",
    )


def mistyped_rows(rows: str, mistyped: int, *, repaired: bool) -> Finding:
    """``check``'s finding on the ``rows`` (mentions; on Postgres postings too) that carry their
    memory's type, so that each type's read finds them: one with another type is missed by its
    own type's read (and by every read, when the type is none of the memory types)."""
    part = f"{rows}' memory types"
    if not mistyped:
        return Finding(part, True, f"every one of the {rows} carries its memory's type")
    detail = f"{mistyped:,} {rows} carry another type than their memory's (reads miss them)"
    return Finding(part, repaired, detail, repaired)


COPY_REFUSED = (
    "another copy into this store is under way or did not finish, or it holds data (memories, "
    "entities, relations, aliases, feedback or a model)"
)
# The namespaces holding anything of their own, on either backend (the same tables): a
# namespace of ``relate(record=False)`` edges or of feedback alone has no memories.
HELD_NAMESPACES = """
SELECT namespace FROM namespaces WHERE memories > 0
UNION SELECT namespace FROM entities
UNION SELECT namespace FROM edges
UNION SELECT namespace FROM aliases
UNION SELECT namespace FROM feedback
UNION SELECT namespace FROM models
"""
