"""The write pipeline beside the read pipeline: every item of a batch validated and inferred
(type, entities, dates, speaker, predicate), the ones without a vector embedded in one call, and
the batch written in one transaction. Nothing is written until all of it is ready."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from fivefold import validate
from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput
from fivefold.extract.entities import extract_entities
from fivefold.gate import Gate, gated
from fivefold.store import Store
from fivefold.store.protocol import Progress
from fivefold.store.records import NewEdge, NewMemory
from fivefold.text import normalize_name
from fivefold.types import Edge, Entity, MemoryRecord, Scope
from fivefold.write.prepare import VECTOR_FIELD, prepare
from fivefold.write.vectors import embed_text, unit_vectors


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
        prepared, vectors = self.prepare_batch(items)
        if not prepared:
            return []
        return self._store.writes.insert_memories(prepared, vectors, progress=progress)

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
    def alias(self, namespace: str, name: str, alias: str) -> Entity:
        return self._store.writes.add_alias(namespace, name, alias)

    def prepare_batch(
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
            out[list(given)] = unit_vectors(list(given.values()), dim, list(given))
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
