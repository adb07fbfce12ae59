"""The facade: ``Memory.open``, remember, relate, recall, explain, get, forget. It validates what
the caller gives and hands the work to the write pipeline (``write``) or the read pipeline
(``read``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from fivefold import validate
from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput, NotFound, alone
from fivefold.gate import Gate, gated
from fivefold.learn.model import Example
from fivefold.learn.train import questions, train
from fivefold.read.args import RecallArgs
from fivefold.read.history import chain
from fivefold.read.metrics import MetricsSnapshot
from fivefold.read.reader import Reader
from fivefold.read.rerank.base import Reranker
from fivefold.read.rerank.providers import build_reranker, close_reranker
from fivefold.store import Store, StoreSettings, open_store
from fivefold.types import (
    Edge,
    Entity,
    Explanation,
    MemoryRecord,
    RecallResult,
    Scope,
    StoreStats,
    TrainReport,
)
from fivefold.write.messages import message_items
from fivefold.write.pipeline import Writer
from fivefold.write.relations import alias_of, relation_of


class Memory:
    """A memory store plus the engine that reads and writes it. Thread-safe; a context manager."""

    def __init__(
        self, store: Store, embedder: Embedder, config: Config, *, reranker: Reranker | None = None
    ) -> None:
        """``reranker``: the one ``config.rerank`` names, if already built (else built here)."""
        self._store = store
        self._embedder = embedder
        self._config = config
        # This memory's to close, as it is built from the config (an endpoint's connections).
        self._reranker = reranker if reranker is not None else build_reranker(config.rerank)
        self._reader = Reader(store, embedder, config, self._reranker)
        self._gate = Gate(store.location)
        self._writer = Writer(store, embedder, config, self._gate)
        # An embedder built from the config is this memory's to close (an endpoint's connections).
        self._owns_embedder = False

    @classmethod
    def open(
        cls,
        target: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        config: Config | None = None,
    ) -> Memory:
        """Open (or create) a store: a file path, ``":memory:"``, ``sqlite:///path``; ``None``
        for the default file in the user data directory. The embedder is the one
        ``config.embed`` names unless one is given."""
        config = config or Config()
        owned = embedder is None
        if embedder is None:
            from fivefold.embed.providers import build_embedder

            embedder = build_embedder(config.embed)
        settings = StoreSettings(context=config.context, index=config.index, write=config.write)
        try:
            # Before the store: a missing API key or model setting is said before a file is made.
            reranker = build_reranker(config.rerank)
            try:
                store = open_store(
                    target, embedding_model=embedder.name, dim=embedder.dim, settings=settings
                )
            except BaseException:
                close_reranker(reranker)
                raise
        except BaseException:
            if owned:
                _close_embedder(embedder)
            raise
        memory = cls(store, embedder, config, reranker=reranker)
        memory._owns_embedder = owned
        return memory

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the store once the calls in flight are done; later calls are refused."""
        self._gate.close(self._close)

    def _close(self) -> None:
        self._store.close()
        close_reranker(self._reranker)
        if self._owns_embedder:
            _close_embedder(self._embedder)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def config(self) -> Config:
        return self._config

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def writer(self) -> Writer:
        """The write pipeline (an import notes its progress through it)."""
        return self._writer

    # -- writes ---------------------------------------------------------------------------------
    @gated
    def remember(
        self,
        content: str,
        *,
        type: str | None = None,
        predicate: str | None = None,
        event_at: datetime | str | None = None,
        entities: Sequence[str] | None = None,
        importance: float | None = None,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        speaker: str | None = None,
        supersedes: int | None = None,
    ) -> MemoryRecord:
        """Store one memory. ``speaker`` is who said or did it; when None it is read from a
        leading "Name: text", as conversation transcripts write turns. ``supersedes``: the id of
        an older memory of the same scope this one replaces. An exact repeat of a stored memory
        writes nothing: the stored one comes back, counted as seen again (``created`` False)."""
        item = {
            "content": content,
            "type": type,
            "predicate": predicate,
            "event_at": event_at,
            "entities": entities,
            "importance": importance,
            "namespace": namespace,
            "user_id": user_id,
            "agent_id": agent_id,
            "session_id": session_id,
            "metadata": metadata,
            "speaker": speaker,
            "supersedes": supersedes,
        }
        try:
            return self.remember_many([{k: v for k, v in item.items() if v is not None}])[0]
        except InvalidInput as exc:
            if (single := alone(exc)) is not None:
                raise single from exc
            raise

    @gated
    def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """Store many memories in one transaction with one batched embedding call. An item may
        carry a precomputed ``vector`` (same model and dimension as the store's)."""
        return self._writer.remember_many(items)

    @gated
    def remember_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        session_id: str | None = None,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
        at: datetime | str | None = None,
    ) -> list[MemoryRecord]:
        """Store a chat in the OpenAI format (``[{"role", "content", "name"?}]``): each turn a
        memory spoken by its name (else its role), in order, in one session (``session_id``,
        else a new one), written ``at`` (default: now). A malformed message names its index;
        nothing is written then."""
        items = message_items(
            messages,
            session_id=session_id,
            namespace=namespace,
            user_id=user_id,
            agent_id=agent_id,
            at=at,
        )
        return self._writer.remember_many(items)

    @gated
    def relate(
        self,
        source: str,
        relation: str,
        target: str,
        *,
        kind: str = "structural",
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
        record: bool = True,
    ) -> Edge:
        """Add a typed edge between two entities (created if new). With ``record`` (default) the
        relation is also stored as a fact memory, so recall can return it as evidence."""
        edge, item = relation_of(
            source,
            relation,
            target,
            kind=kind,
            confidence=confidence,
            valid_from=valid_from,
            valid_to=valid_to,
            namespace=namespace,
            user_id=user_id,
            agent_id=agent_id,
            record=record,
        )
        # The fact and its edge in one transaction: a failed edge leaves no fact behind.
        return self._writer.relate(edge, item)

    @gated
    def supersede(
        self,
        old_id: int,
        new_id: int,
        *,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Say outright that memory ``new_id`` replaces ``old_id`` (both of exactly this scope);
        forgetting ``new_id`` later makes ``old_id`` current again."""
        scope = validate.scope(namespace, user_id, agent_id, written=True)
        old, new = validate.memory_id(old_id, "old_id"), validate.memory_id(new_id, "new_id")
        if not self._writer.supersede(scope, old, new):
            raise NotFound(f"no memories with ids {old} and {new} both{_in(scope)}")

    @gated
    def history(
        self,
        memory_id: int,
        *,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[MemoryRecord]:
        """The supersession chain of a memory, oldest first: what it replaced and what replaced
        it (a memory that replaced nothing and was not replaced is its own history)."""
        record = self.get(memory_id, namespace=namespace, user_id=user_id, agent_id=agent_id)
        return chain(self._store.reads, record)

    @gated
    def merge_entities(self, name: str, other: str, *, namespace: str = "default") -> Entity:
        """Fold the entity ``other`` names into the one ``name`` names (their mentions, edges and
        aliases), in one transaction; ``other`` is an alias of it after."""
        return self._writer.merge_entities(*alias_of(name, other, namespace=namespace))

    @gated
    def alias(self, name: str, alias: str, *, namespace: str = "default") -> Entity:
        """Make ``alias`` another name of the entity ``name`` (created if new); when the alias is
        another entity's own name, that entity is folded into this one (``merge_entities``)."""
        return self._writer.alias(*alias_of(name, alias, namespace=namespace))

    @gated
    def forget(
        self,
        memory_id: int,
        *,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Delete a memory and every trace only it supported (its index entries, mentions,
        co-mention edges, its session neighbours' context, and entities nothing else names).
        Like every call, it acts in a scope: an id outside it raises ``NotFound``."""
        scope = validate.scope(namespace, user_id, agent_id)
        if not self._store.writes.delete_memory(validate.memory_id(memory_id), scope):
            raise NotFound(f"no memory with id {memory_id}{_in(scope)}")

    @gated
    def forget_scope(
        self,
        namespace: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Forget every trace of a scope: its memories (of one session, with ``session_id``)
        with their index entries, the entities only they named, its edges and the feedback its
        recalls were given. Returns how many memories were forgotten."""
        scope = validate.scope(namespace, user_id, agent_id)
        session = validate.optional_read_name(session_id, "session_id")
        return self._writer.forget_scope(scope, session)

    @gated
    def get(
        self,
        memory_id: int,
        *,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> MemoryRecord:
        """The memory with this id, if it is in the scope (else ``NotFound``)."""
        scope = validate.scope(namespace, user_id, agent_id)
        wanted = validate.memory_id(memory_id)
        record = self._store.reads.get_memories(scope.namespace, [wanted]).get(wanted)
        if record is None or not scope.admits(record.namespace, record.user_id, record.agent_id):
            raise NotFound(f"no memory with id {memory_id}{_in(scope)}")
        return record

    @gated
    def browse(
        self,
        *,
        limit: int = 50,
        before: int | None = None,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[MemoryRecord]:
        """The newest memories in the scope, newest first; pass the last id seen as ``before``
        for the next page."""
        scope = validate.scope(namespace, user_id, agent_id)
        count = validate.top_k(limit, "limit")
        below = None if before is None else validate.memory_id(before)
        ids = self._store.reads.recent_ids(scope, limit=count, before=below)
        records = self._store.reads.get_memories(scope.namespace, ids)
        return [records[i] for i in ids if i in records]

    @gated
    def stats(self, *, namespace: str | None = None) -> StoreStats:
        """Counts of the store, or of one namespace's memories, entities and edges."""
        if namespace is None:
            return self._store.admin.stats()
        return self._store.admin.stats(validate.read_name(namespace, "namespace"))

    # -- reads ----------------------------------------------------------------------------------
    @gated
    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
        now: datetime | str | None = None,
        types: Sequence[str] | str | None = None,
        budget: str = "mid",
        session_id: str | None = None,
        min_confidence: float | None = None,
        include_superseded: bool = True,
    ) -> RecallResult:
        """The memories that answer ``query``, best first, with the plan that found them. With
        ``min_confidence``, hits whose calibrated confidence is below it are left out and
        counted in ``RecallResult.dropped``."""
        floor = (
            None
            if min_confidence is None
            else validate.unit_interval(min_confidence, "min_confidence")
        )
        result = self._reader.recall(
            RecallArgs.of(
                query,
                k,
                namespace=namespace,
                user_id=user_id,
                agent_id=agent_id,
                now=now,
                types=types,
                budget=budget,
                session_id=session_id,
                include_superseded=include_superseded,
            )
        )
        if floor is None:
            return result
        kept = tuple(h for h in result.hits if h.confidence >= floor)
        return replace(result, hits=kept, dropped=len(result.hits) - len(kept))

    @gated
    def feedback(
        self,
        recall_id: str,
        *,
        relevant: Sequence[int] = (),
        used: Sequence[int] = (),
    ) -> int:
        """Say which memories answered a recall (``relevant``) or which the agent used
        (``used``), for learned fusion to train on (``train``); any memory of the recall's
        scope may be named, found or not. Returns the feedback's id."""
        args = RecallArgs.from_token(recall_id)
        named = [*validate.id_list(relevant, "relevant"), *validate.id_list(used, "used")]
        if not named:
            raise InvalidInput(
                "feedback names no memory: give the ids that answered (relevant) or were used"
            )
        scope = args.scope
        records = self._store.reads.get_memories(scope.namespace, sorted(set(named)))
        for memory_id in named:
            record = records.get(memory_id)
            if record is None or not scope.admits(
                record.namespace, record.user_id, record.agent_id
            ):
                raise NotFound(f"no memory with id {memory_id}{_in(scope)}")
        labels = dict.fromkeys(named, 1.0)
        # The recall as fivefold writes it: one recall_id written two ways (padded, with keys
        # of its own) is one recall to training.
        return self._store.models.add_feedback(
            scope.namespace, args.text, args.to_token(), labels, datetime.now(UTC)
        )

    @gated
    def examples(self, *, namespace: str = "default") -> list[Example]:
        """What ``train`` fits on: each recall with feedback asked again, its candidates and
        their features labelled by the feedback (for benchmarks and trainers of your own)."""
        name = validate.read_name(namespace, "namespace")
        return self._reader.examples(questions(self._reader, self._store.models.feedback(name)))

    @gated
    def train(self, *, namespace: str = "default") -> TrainReport:
        """Fit learned fusion on the namespace's feedback and keep it if it does better than
        the rules on held-out recalls: of users it was not fit on, for the namespace's model;
        with ``learned.scope = "user"``, a model per user on that user's own feedback
        (``optimizer.mode = "learned"`` ranks with it)."""
        name = validate.read_name(namespace, "namespace")
        return train(self._reader, self._store, name, self._config.learned)

    @gated
    def explain(self, query: str, k: int = 10, **kwargs: Any) -> Explanation:
        """Everything recall decided: the parse, the features, the plan, each retriever's
        list and every fusion term (never served from the cache). It takes recall's arguments
        (``explain(query, **same_args)``), so a recall can be explained as it was asked;
        ``min_confidence`` is checked, then not applied: explain shows every hit."""
        if "min_confidence" in kwargs and kwargs["min_confidence"] is not None:
            validate.unit_interval(kwargs["min_confidence"], "min_confidence")
        kwargs.pop("min_confidence", None)
        return self._reader.explain(RecallArgs.of(query, k, **kwargs))

    def metrics(self) -> MetricsSnapshot:
        """Plans selected, latency per plan, cache hit rate, rerank latency (this process)."""
        return self._reader.metrics()


def _in(scope: Scope) -> str:
    where = f" in namespace {scope.namespace!r}"
    if scope.user_id is not None:
        where += f" for user {scope.user_id!r}"
    if scope.agent_id is not None:
        where += f" for agent {scope.agent_id!r}"
    return where


def _close_embedder(embedder: Embedder) -> None:
    close = getattr(embedder, "close", None)
    if callable(close):
        close()
