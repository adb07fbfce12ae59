"""The embedded store's writes inside a transaction (``SQLiteStore._transaction`` opens it
and commits it): a batch of memories in a statement per table, a memory's deletion with its
traces, a relation, an alias and an entity's resolution. The rules are shared with the Postgres
backend (``store/batch.py``, ``store/context.py``)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput
from fivefold.store.protocol import StoreSettings
from fivefold.store.records import NewEdge, NewMemory
from fivefold.store.shared import batch, context
from fivefold.store.shared.rows import (
    edge_values,
    refuse_self_edge,
    refuse_taken_alias,
    stored_edge,
)
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.sqlite import schema
from fivefold.store.sqlite.context_rows import SQLiteContextRows
from fivefold.text import normalize_name
from fivefold.types import Edge, Entity, MemoryRecord, Scope


class Writer:
    """A store's write statements on its connection, given its settings, its session context
    rows and the vectors' width; each runs inside the caller's transaction."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        settings: StoreSettings,
        context_rows: SQLiteContextRows,
        dim: int,
    ) -> None:
        self._conn = conn
        self._settings = settings
        self._context = context_rows
        self._dim = dim

    def memories(
        self,
        memories: Sequence[NewMemory],
        vectors: Vectors,
        given: Sequence[int] | None = None,
    ) -> list[MemoryRecord]:
        """Inside a transaction: a batch in a statement per table. Ids are taken first, the
        session context is worked out in memory, and each new memory is written once, with
        its final context; then the ones before it in its session, entities, mentions,
        co-mention edges, sessions and the namespace counts. Dense indexes learn of them from
        the change log (vector_sync) on their next search, the lexical index from its own."""
        if not memories:
            return []
        named = [
            batch.entity_keys(m.entities[: self._settings.write.max_entities]) for m in memories
        ]  # refuses a bad name before anything is written
        first = int(self._conn.execute(schema.NEXT_MEMORY_ID).fetchone()[0])
        if given is None:
            ids = list(range(first, first + len(memories)))
        else:
            ids = batch.given_ids(given, len(memories), first)
        blobs = [np.asarray(v, np.float32).tobytes() for v in vectors]
        rows = batch.session_context(
            memories, ids, vectors, self._settings.smoothing, self._context.newest
        )
        values = [(i, *batch.memory_values(m)) for i, m in zip(ids, memories, strict=True)]
        self._conn.executemany(
            schema.INSERT_MEMORY, [(*v, *rows.contexts.get(v[0], ("", ""))) for v in values]
        )
        self._conn.executemany(
            schema.INSERT_VECTOR,
            [(i, blob, _blob(rows.searched.get(i))) for i, blob in zip(ids, blobs, strict=True)],
        )
        # The memories before the batch in its sessions now have it as context.
        new = set(ids)
        self._conn.executemany(
            schema.UPDATE_CONTEXT,
            [(*text, i) for i, text in rows.contexts.items() if i not in new],
        )
        self._conn.executemany(
            schema.UPDATE_SEARCHED,
            [(_blob(v), i) for i, v in rows.searched.items() if i not in new],
        )
        found, names = self._entities(memories, ids, named)
        self._conn.executemany(
            schema.UPSERT_SESSION,
            [(*group, low, high) for group, (low, high) in batch.sessions(memories).items()],
        )
        counts = Counter(m.scope.namespace for m in memories)
        self._conn.executemany(
            schema.BUMP_NAMESPACE, [(ns, count, 1) for ns, count in counts.items()]
        )
        return batch.records(values, found, names)

    def _entities(
        self, memories: Sequence[NewMemory], ids: Sequence[int], named: Sequence[batch.Named]
    ) -> tuple[batch.Mentions, dict[int, str]]:
        """Names resolved per namespace (an alias wins, else the entity of that key, created
        with the first spelling met), then mentions, mention counts and co-mention edges.
        Returns the mentions and each named entity's stored name (id -> name)."""
        resolved: dict[tuple[str, str], int] = {}
        names: dict[int, str] = {}
        first = batch.first_spellings(memories, named)
        for namespace in dict.fromkeys(ns for ns, _ in first):
            keys = json.dumps([k for ns, k in first if ns == namespace])
            for statement in (schema.FIND_ENTITIES, schema.FIND_ALIASES):  # an alias wins
                for key, entity_id, name in self._conn.execute(statement, (namespace, keys)):
                    resolved[namespace, str(key)] = int(entity_id)
                    names[int(entity_id)] = str(name)
        for (namespace, key), (name, created) in first.items():  # new ones in first-met order
            if (namespace, key) not in resolved:
                row = self._conn.execute(
                    schema.UPSERT_ENTITY, (namespace, name, key, 0, created)
                ).fetchone()
                resolved[namespace, key] = int(row[0])
                names[int(row[0])] = str(row[1])
        found = batch.mentions(
            memories, ids, named, resolved, self._settings.write.max_comention_entities
        )
        self._conn.executemany(
            schema.INSERT_MENTION, [(e, m, int(j), t) for _, e, m, j, t in found.rows]
        )
        self._conn.executemany(
            schema.BUMP_ENTITY_MENTIONS, [(n, e) for (_, e), n in sorted(found.bumps.items())]
        )
        self._conn.executemany(
            schema.UPSERT_COMENTIONS,
            [(*key, n, created) for key, (n, created) in sorted(found.pairs.items())],
        )
        return found, names

    def entity_id(self, namespace: str, name: str, created: float, mentions: int) -> int:
        """Resolve a name to an entity (an alias wins over creating a new one)."""
        norm = normalize_name(name)
        if not norm:
            raise InvalidInput(f"entity name {name!r} has no letters or digits")
        alias = self._conn.execute(schema.FIND_ALIAS, (namespace, norm)).fetchone()
        if alias is not None:
            if mentions:
                self._conn.execute(schema.BUMP_ENTITY_MENTIONS, (mentions, alias[0]))
            return int(alias[0])
        row = self._conn.execute(
            schema.UPSERT_ENTITY, (namespace, name.strip(), norm, mentions, created)
        ).fetchone()
        return int(row[0])

    def delete(self, memory_id: int, scope: Scope) -> str | None:
        """A memory and its traces (mention counts, co-mention edges, its neighbours' context,
        entities only it named): its namespace, or None when the scope does not hold it."""
        row = self._conn.execute(
            "SELECT namespace, user_id, agent_id, session_id FROM memories WHERE id = ?",
            (memory_id,),
        ).fetchone()
        # Scope columns hold '' for "none" (schema.py).
        if row is None or not scope.admits(row[0], row[1] or None, row[2] or None):
            return None
        ns, user, agent, session = row
        around = context.around(self._context, memory_id)
        mentioned = self._conn.execute(
            "SELECT entity_id, joined FROM mentions WHERE memory_id = ? ORDER BY entity_id",
            (memory_id,),
        ).fetchall()
        entity_ids = [int(r[0]) for r in mentioned]
        joined = [int(r[0]) for r in mentioned if r[1]]
        for entity_id in entity_ids:
            self._conn.execute(schema.BUMP_ENTITY_MENTIONS, (-1, entity_id))
        for i, a in enumerate(joined):
            for b in joined[i + 1 :]:
                self._conn.execute(schema.DROP_COMENTION, (ns, user, agent, a, b))
        self._conn.execute(schema.PRUNE_COMENTIONS)
        self._conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        if session is not None:
            for statement in (schema.RESPAN_SESSION, schema.DROP_EMPTY_SESSION):
                self._conn.execute(statement, (ns, user, agent, session))
        # Its neighbours no longer carry its text: forgetting leaves no trace in context.
        context.refresh(self._context, around, self._settings.smoothing)
        # Entities only it named (no other mention, no edge, no alias a user declared)
        # go: a forgotten name no longer resolves.
        self._conn.execute(schema.DROP_ORPHAN_ENTITIES, (json.dumps(entity_ids),))
        self._conn.execute(schema.BUMP_NAMESPACE, (ns, -1, 1))
        return str(ns)

    def edge(self, edge: NewEdge, records: Sequence[NewMemory], matrix: Vectors) -> Edge:
        """A relation, with the memory that records it (``records``: none or one) first."""
        scope = edge.scope
        now = to_ts(datetime.now().astimezone())
        written = self.memories(records, matrix)
        memory_id = written[0].id if written else edge.memory_id
        source = self.entity_id(scope.namespace, edge.source, now, 0)
        target = self.entity_id(scope.namespace, edge.target, now, 0)
        refuse_self_edge(edge, source, target)
        cur = self._conn.execute(
            schema.INSERT_EDGE, edge_values(edge, source, target, memory_id, now)
        )
        self._conn.execute(schema.BUMP_NAMESPACE, (scope.namespace, 0, 0))
        return stored_edge(edge, int(cur.lastrowid or 0), memory_id)

    def alias(self, namespace: str, name: str, alias: str) -> Entity:
        """``alias`` (with letters or digits: the caller checked) for the entity ``name``
        resolves to, made if new."""
        entity_id = self.entity_id(namespace, name, to_ts(datetime.now().astimezone()), 0)
        norm = normalize_name(alias)
        taken = self._conn.execute(schema.NAME_TAKEN, (namespace, norm, namespace, norm))
        refuse_taken_alias(alias, entity_id, taken.fetchall())
        self._conn.execute(schema.INSERT_ALIAS, (namespace, norm, alias.strip(), entity_id))
        self._conn.execute(schema.BUMP_NAMESPACE, (namespace, 0, 0))
        canonical = self._conn.execute(
            "SELECT name FROM entities WHERE id = ?", (entity_id,)
        ).fetchone()[0]
        aliases = [
            r[0]
            for r in self._conn.execute(
                "SELECT alias FROM aliases WHERE entity_id = ? ORDER BY alias", (entity_id,)
            )
        ]
        return Entity(id=entity_id, namespace=namespace, name=canonical, aliases=tuple(aliases))


def _blob(vector: Vectors | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, np.float32).tobytes()


__all__ = ["Writer"]
