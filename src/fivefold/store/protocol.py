"""What the engine asks of a backend, split by role: ``Reads`` (records and statistics),
``Search`` (the retrievers' candidate lists), ``Writes``, ``Admin`` (checks, copies, export,
upkeep) and ``Models`` (learned fusion's feedback and models). A ``Store`` is a backend assembled
from one object per role; each caller takes the role it needs.

The store selects and aggregates; ranking stays with the engine: a retriever asks for data
(nearest vectors, BM25 scores, edges, mentions, events in a range) and scores it itself
(``store/scoring.py`` for the graph).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from fivefold.config import ContextConfig, IndexConfig, WriteConfig
from fivefold.embed.base import Vectors
from fivefold.store.records import (
    CatalogEntry,
    EdgeRow,
    Feedback,
    Ids,
    MemoryAttributes,
    NamespaceState,
    NewEdge,
    NewMemory,
    Progress,
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


class Reads(Protocol):
    """Memories and the statistics a recall needs. Every read names its namespace: on a sharded
    Postgres it is the distribution column, and no read by id may cross a tenant's wall."""

    def get_memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        """The memories of ``namespace`` among ``ids`` (ids of other namespaces are absent)."""
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

    def names_by_key(self, namespace: str, keys: Sequence[str]) -> Sequence[CatalogEntry]:
        """The catalog's entries whose key is one of ``keys``, read by key (a small write
        need not read a catalog of 10,000 names); each ``name`` is its entity's canonical
        name, and an alias comes after a name of the same key."""
        ...

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        """The entities that a memory or an edge in ``scope`` names: a user must not learn,
        through query parsing, the names only another user's memories hold."""
        ...

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many memories mention each entity (its document frequency)."""
        ...

    def state(self, namespace: str) -> NamespaceState:
        """The namespace's memory count and generation, in one read."""
        ...

    def term_document_frequencies(
        self, namespace: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """The namespace's memory count and, per (stemmed-as-indexed) term, how many of its
        memories contain it: no other namespace's writes move these numbers."""
        ...

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None: ...

    def repeats(self, scope: Scope, keys: Sequence[str]) -> dict[str, list[int]]:
        """Per repeat key, the memories of exactly ``scope`` (no session) that have it."""
        ...

    def slot_holders(self, scope: Scope, slots: Sequence[str], limit: int) -> dict[str, list[int]]:
        """Per slot of ``slots``, the current (not superseded) memories of exactly ``scope``
        stating a value of it, newest first, at most ``limit`` each."""
        ...

    def replaced(self, namespace: str, ids: Sequence[int]) -> dict[int, list[int]]:
        """Per memory, the memories it superseded."""
        ...


class Search(Protocol):
    """The retrievers' candidates, each list in scope (the store applies it: no retriever can
    forget to)."""

    def vector_search(
        self,
        scope: Scope,
        queries: Vectors,
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[list[tuple[int, float]]]:
        """Per query vector, the ``k`` nearest memories in scope by cosine, best first."""
        ...

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

    def vectors(self, namespace: str, ids: Sequence[int]) -> dict[int, Vectors]:
        """The stored vectors of memories (what MMR and the exact re-score read)."""
        ...

    def strongest_edges(
        self, scope: Scope, entity_ids: Sequence[int], per_entity: int
    ) -> list[EdgeRow]:
        """Each entity's ``per_entity`` strongest edges in scope on each side (walked both
        ways), ties by edge id: what one hop of the graph walk scores."""
        ...

    def recent_mentions(
        self,
        scope: Scope,
        caps: Sequence[tuple[int, int]],
        types: Sequence[MemoryType] = (),
    ) -> list[Ids]:
        """Per (entity id, cap), the ids of the ``cap`` most recent memories in scope that
        mention the entity (of ``types`` when given), newest first."""
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


class Writes(Protocol):
    def insert_memories(
        self,
        memories: Sequence[NewMemory],
        vectors: Vectors,
        *,
        progress: Progress | None = None,
        ids: Sequence[int] | None = None,
        seen: Sequence[tuple[str, int]] = (),
        seen_at: datetime | None = None,
    ) -> list[MemoryRecord]:
        """Write all memories (with embeddings, index entries, mentions, co-mention edges,
        session log, slots and what they supersede) in one transaction; return their records
        in order, as ``get_memories`` would read them (built from the write: nothing is read
        after the commit). ``seen``: (namespace, id) of stored memories said again (exact
        repeats), counted in the same transaction, said again ``seen_at`` (default: now).
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

    def add_alias(self, namespace: str, name: str, alias: str, *, merge: bool = True) -> Entity:
        """``alias`` another name of the entity ``name`` (made if new); an entity whose own name
        the alias is folds into it (``merge``; else refused, as an alias of another entity
        always is)."""
        ...

    def merge_entities(self, namespace: str, name: str, other: str) -> Entity:
        """The entity ``other`` names folded into the one ``name`` names, in one transaction:
        mentions, edges and aliases move, and ``other`` is an alias after; ``NotFound`` when
        either names none."""
        ...

    def forget_traces(self, scope: Scope, feedback: Sequence[int]) -> None:
        """What a scope's memories, once each forgotten, leave behind: its edges (and the
        entities only they named), the ``feedback`` (ids) its recalls were given; of a whole
        namespace (no user or agent), also its entities, aliases, models and counters."""
        ...

    def supersede(self, scope: Scope, old: int, new: int, reason: str) -> bool:
        """Mark ``old`` as superseded by ``new`` (both of exactly ``scope``), replacing any
        supersession of ``old`` before; False when either is not there, ``InvalidInput`` when
        it would make a cycle."""
        ...


class Admin(Protocol):
    """Checks and repairs, copies between stores (``fivefold migrate``), export, upkeep."""

    def check(self, *, repair: bool = False) -> list[Finding]:
        """Every index checked against the rows; ``repair`` rebuilds what is out of step; a
        copy mark left behind (``mark_copy``) is a finding no repair clears."""
        ...

    def stats(self, namespace: str | None = None) -> StoreStats:
        """Counts of the whole store, or of one namespace."""
        ...

    def relations(self, namespace: str) -> list[NewEdge]:
        """The namespace's explicit edges (``relate``; co-mentions are derived from the
        memories), with their scope and the fact memory that records each, in write order."""
        ...

    def aliases(self, namespace: str) -> list[tuple[str, str]]:
        """(canonical name, alias) of every declared alias of the namespace."""
        ...

    def supersession_reasons(self, namespace: str, ids: Sequence[int]) -> dict[int, str]:
        """Why each of ``ids`` that was superseded was (for an export); the others left out."""
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

    def copy_mark(self) -> str | None:
        """The note of a copy under way or left unfinished (``mark_copy``), or None."""
        ...

    def progress(self, key: str) -> str | None:
        """A long job's note (an import's records written), or None."""
        ...

    def next_memory_id(self, *, at_least: int | None = None) -> int:
        """The id the store's next memory would take (ids are never reused, forgotten ones
        neither); with ``at_least``, first moved up to it if below (a copy carries its
        source's over, so that an id forgotten there is not given to another memory)."""
        ...

    def compact(self) -> int:
        """Purge from the derived indexes what replaced and forgotten memories left behind, so
        every statistic counts the current rows only, and merge what small writes split;
        returns how many indexes (embedded) or lists' chunks (Postgres) were rebuilt."""
        ...


class Models(Protocol):
    """Learned fusion's feedback and trained models, per namespace."""

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

    def save_model(
        self, namespace: str, payload: str, *, accepted: bool, user_id: str | None = None
    ) -> int:
        """Store a trained model (JSON) as the namespace's next version (versions count per
        namespace, its users' models among them); the version. ``user_id``: a model of that
        user's own, else the namespace's."""
        ...

    def learned_model(self, namespace: str, user_id: str | None = None) -> tuple[int, str] | None:
        """The newest accepted model of the namespace (``user_id`` None) or of one of its
        users: (version, payload). A user's model is never the namespace's, nor the reverse."""
        ...

    def model_users(self, namespace: str) -> list[str]:
        """The users of the namespace with an accepted model of their own, sorted."""
        ...


class Store(Protocol):
    """A backend: one object per role, and the store's own facts and lifecycle."""

    @property
    def reads(self) -> Reads: ...

    @property
    def search(self) -> Search: ...

    @property
    def writes(self) -> Writes: ...

    @property
    def admin(self) -> Admin: ...

    @property
    def models(self) -> Models: ...

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
