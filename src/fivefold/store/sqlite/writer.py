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
from fivefold.errors import InvalidInput, NotFound
from fivefold.store.protocol import StoreSettings
from fivefold.store.records import NewEdge, NewMemory
from fivefold.store.shared import batch, context
from fivefold.store.shared.rows import (
    edge_values,
    refuse_self_edge,
    scope_columns,
    stored_edge,
    taken_by,
)
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.sql import Dialect, forget_edges_sql, forget_rows_sql
from fivefold.store.sqlite import schema, write_sql
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

    def seen_again(self, seen: Sequence[tuple[str, int]], at: datetime) -> None:
        """Memories said again (exact repeats, by namespace and id): counted, with when."""
        when = to_ts(at)
        self._conn.executemany(write_sql.SEEN_AGAIN, [(when, int(i), ns) for ns, i in seen])

    def supersede(self, scope: Scope, old: int, new: int, reason: str) -> bool:
        """``new`` replaces ``old``, both of ``scope`` (exactly): False when either is not
        there; ``InvalidInput`` when ``new`` is (transitively) superseded by ``old``."""
        where = scope_columns(scope)
        held = {
            int(i): (s, v, e, c)
            for i, s, v, e, c in self._conn.execute(
                "SELECT id, superseded_by, valid_to, event_at, created_at FROM memories "
                "WHERE id IN (?, ?) AND namespace = ? AND user_id = ? AND agent_id = ?",
                (old, new, *where),
            )
        }
        if old not in held or new not in held:
            return False
        batch.refuse_cycle(old, new, lambda i: self._successor(i))
        _, _, event_at, created_at = held[new]
        since = event_at if event_at is not None else created_at
        self._conn.execute(write_sql.SUPERSEDE, (new, since, reason, old, *where, new, True))
        self._conn.execute(schema.BUMP_NAMESPACE, (scope.namespace, 0, 0))
        return True

    def fold(self, keep: int, gone: int) -> None:
        _fold(self._conn, keep, gone)

    def merge(self, namespace: str, name: str, other: str) -> Entity:
        """Entity ``other`` (by name or alias) folded into entity ``name``."""
        keep, gone = (self._named(namespace, n) for n in (name, other))
        if keep != gone:
            self.fold(keep, gone)
        return self.alias(namespace, name, other)

    def _named(self, namespace: str, name: str) -> int:
        norm = normalize_name(name)
        for statement in (
            write_sql.FIND_ALIAS,
            "SELECT id FROM entities WHERE namespace = ? AND norm = ?",
        ):
            row = self._conn.execute(statement, (namespace, norm)).fetchone()
            if row is not None:
                return int(row[0])
        raise NotFound(f"no entity named {name!r} in namespace {namespace!r}")

    def forget_traces(self, scope: Scope, feedback: Sequence[int]) -> None:
        conn, ns = self._conn, scope.namespace
        named = conn.execute(*forget_edges_sql(scope, Dialect.SQLITE)).fetchall()
        conn.execute("DELETE FROM feedback WHERE id IN (SELECT value FROM json_each(?))",
                     (json.dumps(sorted(int(i) for i in feedback)),))  # fmt: skip
        for statement, params in forget_rows_sql(scope, Dialect.SQLITE):
            conn.execute(statement, params)
        entities = sorted({int(e) for pair in named for e in pair})
        conn.execute(write_sql.DROP_ORPHAN_ENTITIES, (json.dumps(entities),))
        conn.execute(schema.BUMP_NAMESPACE, (ns, 0, 1))

    def _successor(self, memory_id: int) -> int | None:
        row = self._conn.execute(
            "SELECT superseded_by FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

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
        first = int(self._conn.execute(write_sql.NEXT_MEMORY_ID).fetchone()[0])
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
            write_sql.INSERT_MEMORY,
            [
                (*v, *rows.contexts.get(v[0], ("", "")), *batch.history_values(m))
                for v, m in zip(values, memories, strict=True)
            ],
        )
        self._conn.executemany(write_sql.INSERT_SLOT, batch.slot_rows(memories, ids))
        self._conn.executemany(write_sql.SUPERSEDE, batch.supersessions(memories, ids))
        self._conn.executemany(
            write_sql.INSERT_VECTOR,
            [(i, blob, _blob(rows.searched.get(i))) for i, blob in zip(ids, blobs, strict=True)],
        )
        # The memories before the batch in its sessions now have it as context.
        new = set(ids)
        self._conn.executemany(
            write_sql.UPDATE_CONTEXT,
            [(*text, i) for i, text in rows.contexts.items() if i not in new],
        )
        self._conn.executemany(
            write_sql.UPDATE_SEARCHED,
            [(_blob(v), i) for i, v in rows.searched.items() if i not in new],
        )
        found, names = self._entities(memories, ids, named)
        self._conn.executemany(
            write_sql.UPSERT_SESSION,
            [(*group, low, high) for group, (low, high) in batch.sessions(memories).items()],
        )
        counts = Counter(m.scope.namespace for m in memories)
        self._conn.executemany(
            schema.BUMP_NAMESPACE, [(ns, count, 1) for ns, count in counts.items()]
        )
        return batch.fresh_records(memories, batch.records(values, found, names))

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
            for statement in (write_sql.FIND_ENTITIES, write_sql.FIND_ALIASES):  # an alias wins
                for key, entity_id, name in self._conn.execute(statement, (namespace, keys)):
                    resolved[namespace, str(key)] = int(entity_id)
                    names[int(entity_id)] = str(name)
        for (namespace, key), (name, created) in first.items():  # new ones in first-met order
            if (namespace, key) not in resolved:
                row = self._conn.execute(
                    write_sql.UPSERT_ENTITY, (namespace, name, key, 0, created)
                ).fetchone()
                resolved[namespace, key] = int(row[0])
                names[int(row[0])] = str(row[1])
        found = batch.mentions(
            memories, ids, named, resolved, self._settings.write.max_comention_entities
        )
        self._conn.executemany(
            write_sql.INSERT_MENTION, [(e, m, int(j), t) for _, e, m, j, t in found.rows]
        )
        self._conn.executemany(
            write_sql.BUMP_ENTITY_MENTIONS, [(n, e) for (_, e), n in sorted(found.bumps.items())]
        )
        self._conn.executemany(
            write_sql.UPSERT_COMENTIONS,
            [(*key, n, created) for key, (n, created) in sorted(found.pairs.items())],
        )
        return found, names

    def entity_id(self, namespace: str, name: str, created: float, mentions: int) -> int:
        """Resolve a name to an entity (an alias wins over creating a new one)."""
        norm = normalize_name(name)
        if not norm:
            raise InvalidInput(f"entity name {name!r} has no letters or digits")
        alias = self._conn.execute(write_sql.FIND_ALIAS, (namespace, norm)).fetchone()
        if alias is not None:
            if mentions:
                self._conn.execute(write_sql.BUMP_ENTITY_MENTIONS, (mentions, alias[0]))
            return int(alias[0])
        row = self._conn.execute(
            write_sql.UPSERT_ENTITY, (namespace, name.strip(), norm, mentions, created)
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
            self._conn.execute(write_sql.BUMP_ENTITY_MENTIONS, (-1, entity_id))
        for i, a in enumerate(joined):
            for b in joined[i + 1 :]:
                self._conn.execute(write_sql.DROP_COMENTION, (ns, user, agent, a, b))
        self._conn.execute(write_sql.PRUNE_COMENTIONS)
        successor, until = self._conn.execute(
            "SELECT superseded_by, valid_to FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        self._conn.execute(write_sql.RESTORE_SUPERSEDED, (successor, until, successor, memory_id))
        self._conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        if session is not None:
            for statement in (write_sql.RESPAN_SESSION, write_sql.DROP_EMPTY_SESSION):
                self._conn.execute(statement, (ns, user, agent, session))
        # Its neighbours no longer carry its text: forgetting leaves no trace in context.
        context.refresh(self._context, around, self._settings.smoothing)
        # Entities only it named (no other mention, no edge, no alias a user declared)
        # go: a forgotten name no longer resolves.
        self._conn.execute(write_sql.DROP_ORPHAN_ENTITIES, (json.dumps(entity_ids),))
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
            write_sql.INSERT_EDGE, edge_values(edge, source, target, memory_id, now)
        )
        self._conn.execute(schema.BUMP_NAMESPACE, (scope.namespace, 0, 0))
        return stored_edge(edge, int(cur.lastrowid or 0), memory_id)

    def alias(self, namespace: str, name: str, alias: str, *, merge: bool = True) -> Entity:
        """``alias`` (with letters or digits: the caller checked) for the entity ``name``
        resolves to, made if new; an entity the alias is the name of is folded into it
        (``merge``)."""
        entity_id = self.entity_id(namespace, name, to_ts(datetime.now().astimezone()), 0)
        norm = normalize_name(alias)
        taken = self._conn.execute(write_sql.NAME_TAKEN, (namespace, norm, namespace, norm))
        for other in taken_by(alias, entity_id, taken.fetchall(), merge=merge):
            self.fold(entity_id, other)
        self._conn.execute(write_sql.INSERT_ALIAS, (namespace, norm, alias.strip(), entity_id))
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


def _fold(conn: sqlite3.Connection, keep: int, gone: int) -> None:
    """Entity ``gone`` folded into ``keep`` (of one namespace): its mentions, edges and aliases
    move to it, co-mention supports add up, and its name becomes one of ``keep``'s aliases."""
    conn.execute(
        "DELETE FROM mentions WHERE entity_id = ? AND (type, memory_id) IN "
        "(SELECT type, memory_id FROM mentions WHERE entity_id = ?)",
        (gone, keep),
    )
    conn.execute("UPDATE mentions SET entity_id = ? WHERE entity_id = ?", (keep, gone))
    conn.execute(
        "UPDATE entities SET mentions = (SELECT count(*) FROM mentions WHERE entity_id = ?) "
        "WHERE id = ?",
        (keep, keep),
    )
    comention = f"relation = '{schema.COMENTION}' AND (source_id = ? OR target_id = ?)"
    pairs = conn.execute(
        "SELECT namespace, user_id, agent_id, source_id, target_id, support, created_at "
        f"FROM edges WHERE {comention}",
        (gone, gone),
    ).fetchall()
    conn.execute(f"DELETE FROM edges WHERE {comention}", (gone, gone))
    for row in batch.folded_pairs(pairs, keep, gone):
        conn.execute(write_sql.UPSERT_COMENTIONS, row)
    for side in ("source_id", "target_id"):
        conn.execute(f"UPDATE edges SET {side} = ? WHERE {side} = ?", (keep, gone))
    conn.execute("DELETE FROM edges WHERE source_id = target_id")
    conn.execute(
        "DELETE FROM aliases WHERE entity_id = ? AND norm IN "
        "(SELECT norm FROM aliases WHERE entity_id = ?)",
        (gone, keep),
    )
    conn.execute("UPDATE aliases SET entity_id = ? WHERE entity_id = ?", (keep, gone))
    namespace, name, norm = conn.execute(
        "DELETE FROM entities WHERE id = ? RETURNING namespace, name, norm", (gone,)
    ).fetchone()
    conn.execute(write_sql.INSERT_ALIAS, (namespace, norm, name, keep))


def _blob(vector: Vectors | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, np.float32).tobytes()


__all__ = ["Writer"]
