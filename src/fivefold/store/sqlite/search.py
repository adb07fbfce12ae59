"""The embedded store's candidate lists: the dense index, the lexical index, a hop's strongest
edges, each entity's most recent mentions, and events in a time range. The graph and temporal
reads run on the core's second connection, beside the text legs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.store.records import EdgeRow, Ids
from fivefold.store.shared.rows import edge_kind
from fivefold.store.shared.timeconv import from_ts, to_ts
from fivefold.store.shared.translate import Role
from fivefold.store.sql import scope_sql
from fivefold.store.sqlite.core import Core
from fivefold.store.sqlite.schema import BY_ID, id_list
from fivefold.types import ColumnWeights, MemoryType, Scope


class SQLiteSearch(Role[Core]):
    def vector_search(
        self,
        scope: Scope,
        queries: Vectors,
        k: int,
        types: Sequence[MemoryType] = (),
    ) -> list[list[tuple[int, float]]]:
        with self._core.lock:
            index = self._core.dense_index(scope.namespace)
            return index.search(
                np.asarray(queries, dtype=np.float32),
                k,
                user=scope.user_id,
                agent=scope.agent_id,
                types=[t.value for t in types],
            )

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
        with self._core.lock:
            return self._core.lexical.search(scope, terms, k, types, within, weights)

    def vectors(self, namespace: str, ids: Sequence[int]) -> dict[int, Vectors]:
        if not ids:
            return {}
        rows = self._core.rows(
            "SELECT v.memory_id, v.embedding FROM vectors v "
            "JOIN memories m ON m.id = v.memory_id "
            "WHERE +m.namespace = ? AND m.id IN (SELECT value FROM json_each(?))",
            (namespace, id_list(ids)),
        )
        dim = self._core.dim
        return {int(i): np.frombuffer(blob, dtype=np.float32).reshape(dim) for i, blob in rows}

    def strongest_edges(
        self, scope: Scope, entity_ids: Sequence[int], per_entity: int
    ) -> list[EdgeRow]:
        if not entity_ids or per_entity <= 0:
            return []
        where, params = scope_sql(scope, "ed", shared=True)
        # Read down the (entity, strength) index and capped: a hub's thousands of co-mention
        # edges are never all read.
        parts = []
        args: dict[str, Any] = {**params, "cap": per_entity}
        for n, entity_id in enumerate(sorted(set(entity_ids))):
            args[f"e{n}"] = int(entity_id)
            for here, there in (("source_id", "target_id"), ("target_id", "source_id")):
                parts.append(
                    f"SELECT * FROM (SELECT :e{n}, ed.{there}, ed.strength, ed.kind, ed.valid_to "
                    f"FROM edges ed WHERE ed.{here} = :e{n} AND {where} "
                    "ORDER BY ed.strength DESC, ed.id LIMIT :cap)"
                )
        with self._core.walk() as conn:
            rows = conn.execute(" UNION ALL ".join(parts), args).fetchall()
        return [EdgeRow(int(e), int(t), float(s), edge_kind(k), v) for e, t, s, k, v in rows]

    def recent_mentions(
        self,
        scope: Scope,
        caps: Sequence[tuple[int, int]],
        types: Sequence[MemoryType] = (),
    ) -> list[Ids]:
        if not caps:
            return []
        narrower = scope.user_id is not None or scope.agent_id is not None
        with self._core.walk() as conn:
            ours = None
            if not narrower:
                # An entity belongs to one namespace and so do the memories that mention it: for
                # a scope of the whole namespace, the entities are checked to be the
                # namespace's once, and their mentions need no look-up of each memory.
                found = conn.execute(
                    f"SELECT id FROM entities WHERE {BY_ID}",
                    (scope.namespace, id_list([e for e, _ in caps])),
                )
                ours = {int(r[0]) for r in found}
            asked = [(n, e, cap) for n, (e, cap) in enumerate(caps) if ours is None or e in ours]
            if not asked:
                return [() for _ in caps]
            sql, args = _mentions_sql(scope, asked, types, narrower=narrower)
            rows = conn.execute(sql, args).fetchall()
        lists: list[Ids] = [() for _ in caps]
        for owner, ids in rows:
            lists[int(owner)] = np.array(ids.split(","), dtype=np.int64)
        return lists

    def events_between(
        self, scope: Scope, start: datetime, end: datetime, k: int
    ) -> list[tuple[int, datetime]]:
        where, params = scope_sql(scope)
        sql = (
            "SELECT m.id, m.event_at FROM memories m "
            f"WHERE {where} AND m.type = 'event' AND m.event_at BETWEEN :start AND :end "
            "ORDER BY m.event_at DESC, m.id LIMIT :k"
        )
        args = {**params, "start": to_ts(start), "end": to_ts(end), "k": k}
        with self._core.walk() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(int(i), from_ts(t)) for i, t in rows]


def _mentions_sql(
    scope: Scope,
    asked: Sequence[tuple[int, int, int]],
    types: Sequence[MemoryType],
    *,
    narrower: bool,
) -> tuple[str, dict[str, Any]]:
    """Per (position, entity, cap): the entity's most recent mentions in scope, walked backwards
    on the (entity_id, type, memory_id) key once per type (forced, or every type), so the cost
    is bounded by the cap, not by how many memories name a hub or how few of them have the
    type; one row per entity, its ids joined. A narrower scope (a user, an agent) joins the
    memories for their owner."""
    where, params = scope_sql(scope) if narrower else ("1", {})
    join = "JOIN memories m ON m.id = mn.memory_id " if narrower else ""
    kinds = [t.value for t in types or MemoryType]
    args: dict[str, Any] = {**params, **{f"t{i}": kind for i, kind in enumerate(kinds)}}
    parts = []
    for n, entity_id, cap in asked:
        args.update({f"e{n}": int(entity_id), f"c{n}": int(cap)})
        reads = " UNION ALL ".join(
            "SELECT * FROM (SELECT mn.memory_id AS memory_id FROM mentions mn "
            f"{join}WHERE mn.entity_id = :e{n} AND {where} AND mn.type = :t{i} "
            f"ORDER BY mn.memory_id DESC LIMIT :c{n})"
            for i in range(len(kinds))
        )
        parts.append(
            f"SELECT {n} AS owner, memory_id FROM "
            f"(SELECT * FROM ({reads}) ORDER BY memory_id DESC LIMIT :c{n})"
        )
    sql = f"SELECT owner, group_concat(memory_id) FROM ({' UNION ALL '.join(parts)}) GROUP BY owner"
    return sql, args
