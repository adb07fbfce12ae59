"""The write pipeline beside the read pipeline: every item of a batch validated and inferred
(type, entities, dates, speaker, predicate), the ones without a vector embedded in one call, and
the batch written in one transaction. Nothing is written until all of it is ready."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from fivefold import validate
from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput, NotFound
from fivefold.extract.entities import extract_entities, lookup_keys
from fivefold.gate import Gate, gated
from fivefold.read.args import RecallArgs
from fivefold.store import Store
from fivefold.store.records import Feedback, NewEdge, NewMemory, Progress
from fivefold.store.shared.timeconv import from_ts, to_ts
from fivefold.text import normalize_name
from fivefold.types import Dedup, Edge, Entity, MemoryRecord, Scope, Supersession
from fivefold.write import history
from fivefold.write.prepare import OUTRIGHT, VECTOR_FIELD, prepare
from fivefold.write.vectors import embed_text, unit_vectors

# Memories forgotten a transaction at a time by ``forget_scope``, newest first.
FORGET_BATCH = 500
# A batch of at most this many memories reads the names it may link by key; a larger one reads
# its namespace's catalog once (a bulk write looks up more keys than most catalogs hold).
KEYED_BATCH = 16


class Writer:
    """Writes memories, edges and aliases; thread-safe as its store is. Its calls count on the
    facade's gate, so closing the facade waits for them."""

    def __init__(self, store: Store, embedder: Embedder, config: Config, gate: Gate) -> None:
        self._store = store
        self._embedder = embedder
        self._config = config
        self._gate = gate

    @gated
    def remember_many(
        self, items: Iterable[Mapping[str, Any]], *, progress: Progress | None = None
    ) -> list[MemoryRecord]:
        """Store every item in one transaction. ``progress``: a long job's note written in the
        same transaction (``Store.progress`` reads it back), so that what it says was written
        always was: an import resumes from it."""
        prepared, given, now = self._prepare_items(items)
        if not prepared:
            return []
        self._check_supersedes(prepared)
        write = self._config.write
        planned = history.plan(
            self._store.reads,
            prepared,
            dedup=write.dedup is Dedup.EXACT,
            detect=write.supersede is Supersession.AUTO,
        )
        vectors = self._vectors(
            planned.fresh, {k: given[p] for k, p in enumerate(planned.positions) if p in given}
        )
        written = self._store.writes.insert_memories(
            planned.fresh, vectors, progress=progress, seen=planned.seen, seen_at=now
        )
        return _as_asked(planned, written, len(prepared), now)

    @gated
    def relate(self, edge: NewEdge, item: Mapping[str, Any] | None) -> Edge:
        """Write the edge and, with ``item``, the fact memory that records it: both or neither."""
        fact: NewMemory | None = None
        vector = None
        if item is not None:
            prepared, vectors = self.prepare_batch([item])
            fact, vector = prepared[0], vectors[0]
        return self._store.writes.add_edge(edge, record=fact, vector=vector)

    @gated
    def forget_scope(self, scope: Scope, session_id: str | None = None) -> int:
        """Every memory of the scope (of one session of it, with ``session_id``) forgotten, each
        with its traces, then what the scope leaves besides (its edges, the feedback its recalls
        were given; a whole namespace's entities, aliases and models). Returns how many
        memories were forgotten."""
        reads, writes = self._store.reads, self._store.writes
        forgotten, before = 0, None
        while ids := reads.recent_ids(scope, limit=FORGET_BATCH, before=before):
            before = ids[-1]
            if session_id is not None:
                held = reads.get_memories(scope.namespace, ids)
                ids = [i for i in ids if i in held and held[i].session_id == session_id]
            forgotten += sum(writes.delete_memory(i, scope) for i in ids)
        if session_id is None:
            given = self._store.models.feedback(scope.namespace)
            writes.forget_traces(scope, [f.id for f in given if _asked_in(f, scope)])
        return forgotten

    @gated
    def supersede(self, scope: Scope, old: int, new: int) -> bool:
        return self._store.writes.supersede(scope, old, new, OUTRIGHT)

    @gated
    def alias(self, namespace: str, name: str, alias: str) -> Entity:
        return self._store.writes.add_alias(namespace, name, alias)

    @gated
    def merge_entities(self, namespace: str, name: str, other: str) -> Entity:
        return self._store.writes.merge_entities(namespace, name, other)

    def prepare_batch(
        self, items: Iterable[Mapping[str, Any]]
    ) -> tuple[list[NewMemory], np.ndarray]:
        """Validate and infer every item, and embed what has no precomputed vector: all of it
        before anything is written."""
        prepared, given, _ = self._prepare_items(items)
        return prepared, self._vectors(prepared, given)

    def _prepare_items(
        self, items: Iterable[Mapping[str, Any]]
    ) -> tuple[list[NewMemory], dict[int, np.ndarray], datetime]:
        """Every item validated and inferred, the vectors given with them (by position, made
        unit length) and the time of the batch (to the store's precision)."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInput(f"items must be a list of dicts, got {type(items).__name__}")
        batch = list(items)
        now = from_ts(to_ts(datetime.now(UTC)))
        if not batch:
            return [], {}, now
        prepared: list[NewMemory] = []
        given: dict[int, Any] = {}
        known: dict[Scope, Mapping[str, str]] = {}
        keyed = len(batch) <= KEYED_BATCH
        for position, item in enumerate(batch):
            if not isinstance(item, Mapping):
                raise InvalidInput(f"must be a dict, got {type(item).__name__}", item=position)
            fields = dict(item)
            if VECTOR_FIELD in fields:
                given[position] = fields.pop(VECTOR_FIELD)
            try:
                prepared.append(self._prepare(fields, now, known, keyed=keyed))
            except InvalidInput as exc:
                raise InvalidInput(str(exc), item=position) from exc
        dim = self._embedder.dim
        vectors: dict[int, np.ndarray] = {}
        if given:
            units = unit_vectors(list(given.values()), dim, list(given))
            vectors = dict(zip(given, units, strict=True))
        return _share_batch_names(prepared, batch, known), vectors, now

    def _check_supersedes(self, prepared: Sequence[NewMemory]) -> None:
        """A memory the caller says an item supersedes is a stored one of the item's scope."""
        for position, memory in enumerate(prepared):
            for old in memory.supersedes:
                record = self._store.reads.get_memories(memory.scope.namespace, [old.target])
                held = record.get(old.target)
                if held is None or (held.user_id, held.agent_id) != (
                    memory.scope.user_id,
                    memory.scope.agent_id,
                ):
                    where = f"item {position}: " if len(prepared) > 1 else ""
                    raise NotFound(
                        f"{where}supersedes={old.target}: no memory with that id in the scope"
                    )

    def _prepare(
        self,
        fields: Mapping[str, Any],
        now: datetime,
        known: dict[Scope, Mapping[str, str]],
        *,
        keyed: bool,
    ) -> NewMemory:
        scope = validate.scope(
            fields.get("namespace", "default"),
            fields.get("user_id"),
            fields.get("agent_id"),
            written=True,
        )
        if scope not in known:
            known[scope] = NamesByKey(self._store, scope) if keyed else self._known_names(scope)
        return prepare(
            fields,
            known=known[scope],
            now=now,
            default_importance=self._config.default_importance,
            max_entities=self._config.write.max_entities,
        )

    def _vectors(
        self, prepared: Sequence[NewMemory], given: Mapping[int, np.ndarray]
    ) -> np.ndarray:
        """The given vectors (unit length already), then the others embedded in one call."""
        dim = self._embedder.dim
        out = np.zeros((len(prepared), dim), dtype=np.float32)
        if given:
            out[list(given)] = np.array(list(given.values()), dtype=np.float32)
        missing = [i for i in range(len(prepared)) if i not in given]
        if missing:
            out[missing] = self._embedder.embed([embed_text(prepared[i]) for i in missing])
        return out

    def _known_names(self, scope: Scope) -> dict[str, str]:
        """The names a write in ``scope`` links to: a user's (or agent's) write sees only the
        names its own scope's memories and edges carry, so it never links to, and so never
        reveals or strengthens, a name only another user wrote."""
        entries = self._store.reads.catalog(scope.namespace)
        if scope.user_id is not None or scope.agent_id is not None:
            visible = self._store.reads.visible_entities(scope, [e.entity_id for e in entries])
            entries = [e for e in entries if e.entity_id in visible]
        canonical = {e.entity_id: e.name for e in entries if not e.is_alias}
        return {e.key: canonical.get(e.entity_id, e.name) for e in entries}


class NamesByKey(Mapping[str, str]):
    """The names of a scope a small write links to, read by key: the keys each text looks up
    (``lookup_keys``) on the store's (namespace, key) index, instead of the whole catalog,
    which every new name changes (a relation to a new entity read 10,000 names again). Called
    with a text, it reads the keys of it not read yet; as a mapping, it holds what was read."""

    def __init__(self, store: Store, scope: Scope) -> None:
        self._store = store
        self._scope = scope
        self._read: set[str] = set()
        self._found: dict[str, str] = {}

    def __call__(self, text: str) -> Mapping[str, str]:
        keys = sorted(lookup_keys(text) - self._read)
        if keys:
            self._read.update(keys)
            entries = self._store.reads.names_by_key(self._scope.namespace, keys)
            scope = self._scope
            if entries and (scope.user_id is not None or scope.agent_id is not None):
                ids = sorted({e.entity_id for e in entries})
                visible = self._store.reads.visible_entities(scope, ids)
                entries = [e for e in entries if e.entity_id in visible]
            self._found.update((e.key, e.name) for e in entries)  # an alias last: it wins
        return self

    def __getitem__(self, key: str) -> str:
        return self._found[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._found)

    def __len__(self) -> int:
        return len(self._found)


def _asked_in(feedback: Feedback, scope: Scope) -> bool:
    """Whether a feedback's recall was asked in ``scope`` (a user or agent of None: any)."""
    try:
        asked = RecallArgs.from_token(feedback.args).scope
    except InvalidInput:  # a recall_id an older version took: the namespace's, then
        return scope.user_id is None and scope.agent_id is None
    return scope.admits(asked.namespace, asked.user_id, asked.agent_id)


def _as_asked(
    planned: history.Plan, written: Sequence[MemoryRecord], count: int, now: datetime
) -> list[MemoryRecord]:
    """The records in the order of the batch: each new memory's, and for a repeat the memory
    it repeats, said again (``created`` False)."""
    out: list[MemoryRecord | None] = [None] * count
    for position, record in zip(planned.positions, written, strict=True):
        out[position] = record
    again = Counter(memory_id for _, memory_id in planned.seen)  # said again, as stored
    for position, repeat in sorted(planned.repeats.items()):
        if repeat.stored is not None:
            held = repeat.stored
            seen = held.seen + again[held.id]
            out[position] = replace(held, seen=seen, last_seen_at=now, created=False)
        else:
            first = out[repeat.earlier if repeat.earlier is not None else position]
            assert first is not None
            out[position] = replace(first, created=False)
    return [r for r in out if r is not None]


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
