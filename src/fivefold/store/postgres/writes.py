"""The Postgres store's writes: each in one transaction of the core's (retried, then
maintained), the statements ``Writer``'s."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import psycopg

from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput
from fivefold.store.postgres import write_sql
from fivefold.store.postgres.context_rows import Deltas
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.write_rows import no_nul
from fivefold.store.records import NewEdge, NewMemory, Progress
from fivefold.store.shared.batch import check_vectors
from fivefold.store.shared.notes import note_progress
from fivefold.store.shared.rows import (
    edge_values,
    refuse_self_edge,
    stored_edge,
    taken_by,
)
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.shared.translate import Role
from fivefold.text import normalize_name
from fivefold.types import Edge, Entity, MemoryRecord, Scope


class PostgresWrites(Role[Core]):
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
        check_vectors(memories, vectors, self._core.dim)

        def run(conn: psycopg.Connection, deltas: Deltas) -> list[MemoryRecord]:
            written = self._core.writer.memories(conn, deltas, memories, vectors, ids)
            now = to_ts(seen_at or datetime.now().astimezone())
            self._core.writer.seen_again(conn, seen, now)
            for namespace in {ns for ns, _ in seen}:
                deltas.memories[namespace] += 0  # a new generation: caches drop
            if progress is not None:
                note_progress(
                    lambda sql, params: conn.execute(sql, params).rowcount,
                    progress,
                    insert=write_sql.INSERT_PROGRESS,
                    update=write_sql.UPDATE_PROGRESS,
                    location=self._core.location,
                )
            return written

        return self._core.write(run)

    def delete_memory(self, memory_id: int, scope: Scope) -> bool:
        return self._core.write(
            lambda conn, deltas: self._core.writer.delete(conn, deltas, memory_id, scope)
        )

    def add_edge(
        self, edge: NewEdge, *, record: NewMemory | None = None, vector: Vectors | None = None
    ) -> Edge:
        scope = edge.scope
        no_nul(None, source=edge.source, relation=edge.relation, target=edge.target)
        records: list[NewMemory] = [] if record is None else [record]
        if records and (vector is None or len(vector) != self._core.dim):
            raise InvalidInput(f"the record needs one {self._core.dim}-d vector")
        matrix = np.asarray(vector if records else [], dtype=np.float32).reshape(
            len(records), self._core.dim
        )

        def run(conn: psycopg.Connection, deltas: Deltas) -> tuple[int, int | None]:
            now = to_ts(datetime.now().astimezone())
            written = self._core.writer.memories(conn, deltas, records, matrix)
            memory_id = written[0].id if written else edge.memory_id
            source = self._core.writer.entity_id(conn, scope.namespace, edge.source, now, 0)
            target = self._core.writer.entity_id(conn, scope.namespace, edge.target, now, 0)
            refuse_self_edge(edge, source, target)
            row = conn.execute(
                write_sql.INSERT_EDGE, edge_values(edge, source, target, memory_id, now)
            ).fetchone()
            deltas.memories[scope.namespace] += 0  # a new generation: caches drop
            return (int(row[0]) if row else 0), memory_id

        edge_id, memory_id = self._core.write(run)
        return stored_edge(edge, edge_id, memory_id)

    def merge_entities(self, namespace: str, name: str, other: str) -> Entity:
        no_nul(None, name=name, alias=other)

        def run(conn: psycopg.Connection, deltas: Deltas) -> Entity:
            conn.execute(write_sql.ALIAS_LOCK, (namespace,))
            keep, gone = (self._core.writer.named(conn, namespace, n) for n in (name, other))
            if keep != gone:
                self._core.writer.fold(conn, namespace, keep, gone)
            deltas.memories[namespace] += 0
            return self._aliased(conn, namespace, keep, other, merge=False)

        return self._core.write(run)

    def add_alias(self, namespace: str, name: str, alias: str, *, merge: bool = True) -> Entity:
        no_nul(None, name=name, alias=alias)
        alias_norm = normalize_name(alias)
        if not alias_norm:
            raise InvalidInput(f"alias {alias!r} has no letters or digits")

        def run(conn: psycopg.Connection, deltas: Deltas) -> Entity:
            now = to_ts(datetime.now().astimezone())
            # One alias declaration of a namespace at a time: two of one key to two entities
            # would each pass the check below before either is committed.
            conn.execute(write_sql.ALIAS_LOCK, (namespace,))
            entity_id = self._core.writer.entity_id(conn, namespace, name, now, 0)
            deltas.memories[namespace] += 0
            return self._aliased(conn, namespace, entity_id, alias, merge=merge)

        return self._core.write(run)

    def _aliased(
        self, conn: psycopg.Connection, namespace: str, entity_id: int, alias: str, *, merge: bool
    ) -> Entity:
        """``alias`` added to the entity (entities it is the name of folded in, with
        ``merge``), and the entity as it is then."""
        alias_norm = normalize_name(alias)
        taken = conn.execute(write_sql.NAME_TAKEN, {"ns": namespace, "norm": alias_norm})
        for other in taken_by(alias, entity_id, taken.fetchall(), merge=merge):
            self._core.writer.fold(conn, namespace, entity_id, other)
        conn.execute(write_sql.INSERT_ALIAS, (namespace, alias_norm, alias.strip(), entity_id))
        canonical = conn.execute(
            "SELECT name FROM entities WHERE namespace = %s AND id = %s",
            (namespace, entity_id),
        ).fetchone()
        aliases = conn.execute(
            "SELECT alias FROM aliases WHERE namespace = %s AND entity_id = %s ORDER BY alias",
            (namespace, entity_id),
        ).fetchall()
        return Entity(
            id=entity_id,
            namespace=namespace,
            name=str(canonical[0]) if canonical else alias,
            aliases=tuple(str(a[0]) for a in aliases),
        )

    def forget_traces(self, scope: Scope, feedback: Sequence[int]) -> None:
        def run(conn: psycopg.Connection, deltas: Deltas) -> None:
            self._core.writer.forget_traces(conn, scope, feedback)
            deltas.memories[scope.namespace] += 0  # a new generation: caches drop

        self._core.write(run)

    def supersede(self, scope: Scope, old: int, new: int, reason: str) -> bool:
        def run(conn: psycopg.Connection, deltas: Deltas) -> bool:
            done = self._core.writer.supersede(conn, scope, old, new, reason)
            deltas.memories[scope.namespace] += 0  # a new generation: caches drop
            return done

        return self._core.write(run)
