"""The embedded store's writes: each in one transaction (``Writer`` holds the statements), and
the lexical index told of it once committed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput
from fivefold.store.records import NewEdge, NewMemory, Progress
from fivefold.store.shared.batch import check_vectors
from fivefold.store.shared.notes import note_progress
from fivefold.store.shared.translate import Role
from fivefold.store.sqlite import write_sql
from fivefold.store.sqlite.core import Core
from fivefold.text import normalize_name
from fivefold.types import Edge, Entity, MemoryRecord, Scope


class SQLiteWrites(Role[Core]):
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
        core = self._core
        check_vectors(memories, vectors, core.dim)
        with core.transaction():
            written = core.writer.memories(memories, vectors, ids)
            core.writer.seen_again(seen, seen_at or datetime.now(UTC))
            if progress is not None:
                note_progress(
                    lambda sql, params: core.conn.execute(sql, params).rowcount,
                    progress,
                    insert=write_sql.INSERT_PROGRESS,
                    update=write_sql.UPDATE_PROGRESS,
                    location=core.path,
                )
        with core.lock:  # the lexical indexes share the connection: never beside a reader
            core.lexical.written(m.scope.namespace for m in memories)
        return written

    def delete_memory(self, memory_id: int, scope: Scope) -> bool:
        core = self._core
        with core.transaction():
            namespace = core.writer.delete(memory_id, scope)
        if namespace is None:
            return False
        # Forgotten means gone from the index on disk too, not only once someone reads.
        with core.lock:
            core.lexical.current(namespace)
        return True

    def add_edge(
        self, edge: NewEdge, *, record: NewMemory | None = None, vector: Vectors | None = None
    ) -> Edge:
        core = self._core
        records: list[NewMemory] = [] if record is None else [record]
        if records and (vector is None or len(vector) != core.dim):
            raise InvalidInput(f"the record needs one {core.dim}-d vector")
        matrix = np.asarray(vector if records else [], dtype=np.float32).reshape(
            len(records), core.dim
        )
        with core.transaction():
            return core.writer.edge(edge, records, matrix)

    def add_alias(self, namespace: str, name: str, alias: str, *, merge: bool = True) -> Entity:
        if not normalize_name(alias):
            raise InvalidInput(f"alias {alias!r} has no letters or digits")
        with self._core.transaction():
            return self._core.writer.alias(namespace, name, alias, merge=merge)

    def merge_entities(self, namespace: str, name: str, other: str) -> Entity:
        with self._core.transaction():
            return self._core.writer.merge(namespace, name, other)

    def forget_traces(self, scope: Scope, feedback: Sequence[int]) -> None:
        with self._core.transaction():
            self._core.writer.forget_traces(scope, feedback)

    def supersede(self, scope: Scope, old: int, new: int, reason: str) -> bool:
        with self._core.transaction():
            return self._core.writer.supersede(scope, old, new, reason)
