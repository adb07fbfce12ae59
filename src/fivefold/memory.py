"""The facade: ``Memory.open``, remember, relate, recall, explain, get, forget (DESIGN §1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from fivefold import validate
from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput, NotFound, alone
from fivefold.extract.entities import extract_entities
from fivefold.extract.prepare import MAX_PREDICATE_CHARS, VECTOR_FIELD, given_vector, prepare
from fivefold.gate import Gate, gated
from fivefold.learn.model import Example
from fivefold.learn.train import questions, train
from fivefold.read.metrics import MetricsSnapshot
from fivefold.read.reader import Reader, RecallArgs
from fivefold.store import Store, StoreSettings, open_store
from fivefold.store.base import Progress
from fivefold.store.rows import refuse_self_edge
from fivefold.text import normalize_name
from fivefold.types import (
    Edge,
    Entity,
    Explanation,
    MemoryRecord,
    NewEdge,
    NewMemory,
    RecallResult,
    Scope,
    StoreStats,
    TrainReport,
)


class Memory:
    """A memory store plus the engine that reads and writes it. Thread-safe; a context manager."""

    def __init__(self, store: Store, embedder: Embedder, config: Config) -> None:
        self._store = store
        self._embedder = embedder
        self._config = config
        self._reader = Reader(store, embedder, config)
        self._gate = Gate(store.location)

    @classmethod
    def open(
        cls,
        target: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        config: Config | None = None,
    ) -> Memory:
        """Open (or create) a store: a file path, ``":memory:"``, ``sqlite:///path``; ``None``
        for the default file in the user data directory."""
        if embedder is None:
            from fivefold.embed.minilm import MiniLMEmbedder

            embedder = MiniLMEmbedder()
        config = config or Config()
        settings = StoreSettings(context=config.context, index=config.index, write=config.write)
        store = open_store(
            target, embedding_model=embedder.name, dim=embedder.dim, settings=settings
        )
        return cls(store, embedder, config)

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the store once the calls in flight are done; later calls are refused."""
        self._gate.close(self._store.close)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def config(self) -> Config:
        return self._config

    @property
    def embedder(self) -> Embedder:
        return self._embedder

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
    ) -> MemoryRecord:
        """Store one memory. ``speaker`` is who said or did it; when None it is read from a
        leading "Name: text", as conversation transcripts write turns."""
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
        return self._remember_many(items, None)

    @gated
    def _remember_noting(
        self, items: Iterable[Mapping[str, Any]], progress: Progress
    ) -> list[MemoryRecord]:
        """``remember_many``, noting a long job's ``progress`` in the same transaction
        (``Store.progress`` reads it back): the import's resume."""
        return self._remember_many(items, progress)

    def _remember_many(
        self, items: Iterable[Mapping[str, Any]], progress: Progress | None
    ) -> list[MemoryRecord]:
        prepared, vectors = self._prepare_batch(items)
        if not prepared:
            return []
        return self._store.insert_memories(prepared, vectors, progress=progress)

    def _prepare_batch(
        self, items: Iterable[Mapping[str, Any]]
    ) -> tuple[list[NewMemory], np.ndarray]:
        """Validate and infer every item, and embed what has no precomputed vector: all of it
        before anything is written."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInput(f"items must be a list of dicts, got {type(items).__name__}")
        batch = list(items)
        if not batch:
            return [], np.zeros((0, self._embedder.dim), dtype=np.float32)
        now = datetime.now(UTC)
        prepared: list[NewMemory] = []
        given: dict[int, Any] = {}
        known: dict[Scope, dict[str, str]] = {}
        for position, item in enumerate(batch):
            if not isinstance(item, Mapping):
                raise InvalidInput(f"must be a dict, got {type(item).__name__}", item=position)
            fields = dict(item)
            if VECTOR_FIELD in fields:
                given[position] = fields.pop(VECTOR_FIELD)
            try:
                prepared.append(self._prepare(fields, now, known))
            except InvalidInput as exc:
                raise InvalidInput(str(exc), item=position) from exc
        prepared = _share_batch_names(prepared, batch, known)
        return prepared, self._vectors(prepared, given)

    def _prepare(
        self, fields: Mapping[str, Any], now: datetime, known: dict[Scope, dict[str, str]]
    ) -> NewMemory:
        scope = validate.scope(
            fields.get("namespace", "default"),
            fields.get("user_id"),
            fields.get("agent_id"),
            written=True,
        )
        if scope not in known:
            known[scope] = self._known_names(scope)
        return prepare(
            fields,
            known=known[scope],
            now=now,
            default_importance=self._config.default_importance,
            max_entities=self._config.write.max_entities,
        )

    def _vectors(self, prepared: Sequence[NewMemory], given: Mapping[int, Any]) -> np.ndarray:
        """Given vectors checked first (cheap), then the others embedded in one call."""
        dim = self._embedder.dim
        out = np.zeros((len(prepared), dim), dtype=np.float32)
        if given:
            out[list(given)] = _unit_vectors(list(given.values()), dim, list(given))
        missing = [i for i in range(len(prepared)) if i not in given]
        if missing:
            out[missing] = self._embedder.embed([_embed_text(prepared[i]) for i in missing])
        return out

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
        fact: NewMemory | None = None
        vector = None
        if item is not None:
            prepared, vectors = self._prepare_batch([item])
            fact, vector = prepared[0], vectors[0]
        # The fact and its edge in one transaction: a failed edge leaves no fact behind.
        return self._store.add_edge(edge, record=fact, vector=vector)

    @gated
    def alias(self, name: str, alias: str, *, namespace: str = "default") -> Entity:
        """Make ``alias`` another name of the entity ``name`` (created if new)."""
        return self._store.add_alias(*alias_of(name, alias, namespace=namespace))

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
        if not self._store.delete_memory(validate.memory_id(memory_id), scope):
            raise NotFound(f"no memory with id {memory_id}{_in(scope)}")

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
        record = self._store.get_memories(scope.namespace, [wanted]).get(wanted)
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
        ids = self._store.recent_ids(scope, limit=count, before=below)
        records = self._store.get_memories(scope.namespace, ids)
        return [records[i] for i in ids if i in records]

    @gated
    def stats(self, *, namespace: str | None = None) -> StoreStats:
        """Counts of the store, or of one namespace's memories, entities and edges."""
        if namespace is None:
            return self._store.stats()
        return self._store.stats(validate.read_name(namespace, "namespace"))

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
        records = self._store.get_memories(scope.namespace, sorted(set(named)))
        for memory_id in named:
            record = records.get(memory_id)
            if record is None or not scope.admits(
                record.namespace, record.user_id, record.agent_id
            ):
                raise NotFound(f"no memory with id {memory_id}{_in(scope)}")
        labels = dict.fromkeys(named, 1.0)
        # The recall as fivefold writes it: one recall_id written two ways (padded, with keys
        # of its own) is one recall to training.
        return self._store.add_feedback(
            scope.namespace, args.text, args.to_token(), labels, datetime.now(UTC)
        )

    @gated
    def examples(self, *, namespace: str = "default") -> list[Example]:
        """What ``train`` fits on: each recall with feedback asked again, its candidates and
        their features labelled by the feedback (for benchmarks and trainers of your own)."""
        name = validate.read_name(namespace, "namespace")
        return self._reader.examples(questions(self._store.feedback(name)))

    @gated
    def train(self, *, namespace: str = "default") -> TrainReport:
        """Fit learned fusion on the namespace's feedback and keep it if it does no worse than
        the rules on held-out recalls (``optimizer.mode = "learned"`` ranks with it)."""
        name = validate.read_name(namespace, "namespace")
        return train(self._reader, self._store, name, self._config.learned)

    @gated
    def explain(self, query: str, k: int = 10, **kwargs: Any) -> Explanation:
        """Everything recall decided: the parse, the features, the plan, each retriever's
        list and every fusion term (never served from the cache). It takes recall's arguments
        (DESIGN: ``explain(query, **same_args)``); ``min_confidence`` is checked, then not
        applied: explain shows every hit."""
        if "min_confidence" in kwargs and kwargs["min_confidence"] is not None:
            validate.unit_interval(kwargs["min_confidence"], "min_confidence")
        kwargs.pop("min_confidence", None)
        return self._reader.explain(RecallArgs.of(query, k, **kwargs))

    def metrics(self) -> MetricsSnapshot:
        """Plans selected, latency per plan, cache hit rate, rerank latency (this process)."""
        return self._reader.metrics()

    def _known_names(self, scope: Scope) -> dict[str, str]:
        """The names a write in ``scope`` links to: a user's (or agent's) write sees only the
        names its own scope's memories and edges carry, so it never links to, and so never
        reveals or strengthens, a name only another user wrote."""
        entries = self._store.catalog(scope.namespace)
        if scope.user_id is not None or scope.agent_id is not None:
            visible = self._store.visible_entities(scope, [e.entity_id for e in entries])
            entries = [e for e in entries if e.entity_id in visible]
        canonical = {e.entity_id: e.name for e in entries if not e.is_alias}
        return {e.key: canonical.get(e.entity_id, e.name) for e in entries}


def alias_of(name: object, alias: object, *, namespace: object = "default") -> tuple[str, str, str]:
    """``alias``'s arguments checked, without a store: (namespace, name, alias)."""
    checked = (
        validate.name_text(namespace, "namespace"),
        validate.entity_name(name, "name"),
        validate.entity_name(alias, "alias"),
    )
    for what, value in (("alias", checked[2]), ("entity name", checked[1])):  # the store's order
        if not normalize_name(value):
            raise InvalidInput(f"{what} {value!r} has no letters or digits")
    return checked


def relation_of(
    source: object,
    relation: object,
    target: object,
    *,
    kind: object = "structural",
    confidence: object = 1.0,
    valid_from: object = None,
    valid_to: object = None,
    namespace: object = "default",
    user_id: object = None,
    agent_id: object = None,
    record: object = True,
) -> tuple[NewEdge, dict[str, Any] | None]:
    """``relate``'s arguments checked, without a store: the edge, and the fact memory's item
    when ``record`` (the CLI refuses a bad relation before it opens a store, which a refused
    write at a new path left behind, empty)."""
    if not isinstance(record, bool):  # "no" would be taken as True
        raise InvalidInput(f"record must be True or False, got {record!r}")
    source = validate.entity_name(source, "source").strip()
    target = validate.entity_name(target, "target").strip()
    name = validate.name_text(relation, "relation").strip()
    for side, value in (("source", source), ("target", target)):
        if not normalize_name(value):
            raise InvalidInput(f"{side}={value!r} has no letters or digits")
    start = validate.when(valid_from, "valid_from")
    end = validate.when(valid_to, "valid_to")
    if start is not None and end is not None and end < start:
        raise InvalidInput("valid_to is before valid_from")
    edge = NewEdge(
        source=source,
        relation=name,
        target=target,
        kind=validate.edge_kind(kind),
        confidence=validate.unit_interval(confidence, "confidence"),
        valid_from=start,
        valid_to=end,
        scope=validate.scope(namespace, user_id, agent_id, written=True),
    )
    predicate = f"{source} {name.replace('_', ' ')} {target}"
    if record and len(predicate) > MAX_PREDICATE_CHARS:
        raise InvalidInput(
            f"source, relation and target make a fact of {len(predicate):,} characters "
            f"(the limit is {MAX_PREDICATE_CHARS:,}); record=False adds the edge alone"
        )
    # One key is one entity whatever the store holds (an alias can only make more pairs one).
    refuse_self_edge(edge, normalize_name(source), normalize_name(target))
    if not record:
        return edge, None
    scope = edge.scope
    item = {
        "content": _relation_sentence(source, name, target, end),
        "type": "fact",
        "predicate": predicate,
        "entities": [source, target],
        "namespace": scope.namespace,
        "user_id": scope.user_id,
        "agent_id": scope.agent_id,
    }
    return edge, {k: v for k, v in item.items() if v is not None}


def _share_batch_names(
    prepared: list[NewMemory],
    batch: Sequence[Mapping[str, Any]],
    known: Mapping[Scope, Mapping[str, str]],
) -> list[NewMemory]:
    """Extract entities again with the names found anywhere in the batch (in the same scope),
    so that a bulk import links "the OAuth PR" in memory 300 to the "OAuth PR" first named in
    memory 12, as one-by-one writes would have."""
    names: dict[Scope, dict[str, str]] = {}
    for memory in prepared:
        extra = names.setdefault(memory.scope, {})
        for name in memory.entities:
            extra.setdefault(normalize_name(name), name)
    out = []
    merged_of: dict[Scope, dict[str, str]] = {}  # once per scope: the catalog can be large
    for memory, item in zip(prepared, batch, strict=True):
        if item.get("entities") is not None:
            out.append(memory)
            continue
        merged = merged_of.get(memory.scope)
        if merged is None:
            merged = merged_of[memory.scope] = {
                **names[memory.scope],
                **known.get(memory.scope, {}),
            }
        text = f"{memory.content}\n{memory.predicate or ''}"
        out.append(replace(memory, entities=tuple(extract_entities(text, merged))))
    return out


def _embed_text(memory: NewMemory) -> str:
    if memory.predicate and memory.predicate not in memory.content:
        return f"{memory.content}\n{memory.predicate}"
    return memory.content


def _relation_sentence(source: str, relation: str, target: str, until: datetime | None) -> str:
    sentence = f"{source} {relation.replace('_', ' ')} {target}"
    if until is not None:
        sentence += f" (until {until.date().isoformat()})"
    return sentence + "."


def _unit_vectors(raws: Sequence[Any], dim: int, positions: Sequence[int]) -> np.ndarray:
    """``_unit_vector`` of each, in a few array operations when every one is ``dim`` finite,
    non-zero numbers (a bulk load gives thousands); else one at a time, so the first bad one
    is named. Each row's arithmetic is ``_unit_vector``'s, in the same order."""
    vectors: np.ndarray | None
    try:
        vectors = np.array(raws, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # Overflow: an int past a float's range
        vectors = None
    if vectors is None or vectors.shape != (len(raws), dim) or not np.all(np.isfinite(vectors)):
        return np.array([_unit_vector(r, dim, p) for r, p in zip(raws, positions, strict=True)])
    scales = np.max(np.abs(vectors), axis=1)
    if not np.all(scales > 0.0):
        return np.array([_unit_vector(r, dim, p) for r, p in zip(raws, positions, strict=True)])
    scaled = vectors / scales[:, None]
    norms = np.sqrt(np.vecdot(scaled, scaled))  # each row's own dot, as ``_unit_vector``'s
    unit: np.ndarray = (scaled / norms[:, None]).astype(np.float32)
    return unit


def _unit_vector(raw: Any, dim: int, position: int) -> np.ndarray:
    try:
        vector = given_vector(raw, dim)
    except InvalidInput as exc:
        raise InvalidInput(exc.detail, item=position) from None
    scaled = vector / float(np.max(np.abs(vector)))  # no overflow in the norm of [1e300, ...]
    return (scaled / np.linalg.norm(scaled)).astype(np.float32)


def _in(scope: Scope) -> str:
    where = f" in namespace {scope.namespace!r}"
    if scope.user_id is not None:
        where += f" for user {scope.user_id!r}"
    if scope.agent_id is not None:
        where += f" for agent {scope.agent_id!r}"
    return where
