"""Read queries of the embedded store. Every query that returns memories applies the scope here,
in SQL, so no retriever can forget to."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.store.records import (
    CatalogEntry,
    EdgeHop,
    EntityScore,
    MemoryAttributes,
    MentionHit,
    NeighbourStep,
)
from fivefold.store.shared.rows import edge_hop, memory_record
from fivefold.store.shared.timeconv import from_ts, to_ts
from fivefold.store.sqlite import schema
from fivefold.types import EdgeKind, MemoryRecord, MemoryType, Scope, StoreStats


def scope_sql(scope: Scope, alias: str = "m", *, shared: bool = False) -> tuple[str, list[Any]]:
    """``namespace = ?`` always; ``user_id``/``agent_id`` only when the scope sets them. With
    ``shared``, rows written namespace-wide ('' user or agent, e.g. an org chart's edges) are
    visible to every user and agent of the namespace too."""
    match = "IN ('', ?)" if shared else "= ?"
    clauses, params = [f"{alias}.namespace = ?"], [scope.namespace]
    if scope.user_id is not None:
        clauses.append(f"{alias}.user_id {match}")
        params.append(scope.user_id)
    if scope.agent_id is not None:
        clauses.append(f"{alias}.agent_id {match}")
        params.append(scope.agent_id)
    return " AND ".join(clauses), params


# Rows of one namespace among a list of ids: the unary ``+`` keeps SQLite from answering through
# an index on the namespace (which reads every row of the namespace: 50 ms for 200 ids at 100k)
# rather than looking each id up.
BY_ID = "+namespace = ? AND id IN (SELECT value FROM json_each(?))"


class ReadQueries:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        if not ids:
            return {}
        id_json = json.dumps([int(i) for i in ids])
        rows = self._conn.execute(
            schema.SELECT_MEMORY_COLUMNS + f" WHERE {BY_ID}",
            (namespace, id_json),
        ).fetchall()
        if not rows:
            return {}
        entities: dict[int, list[str]] = {}
        for memory_id, name in self._conn.execute(schema.SELECT_MEMORY_ENTITIES, (id_json,)):
            entities.setdefault(memory_id, []).append(name)
        return {row[0]: memory_record(row, entities.get(row[0], [])) for row in rows}

    def recent_ids(self, scope: Scope, *, limit: int, before: int | None) -> list[int]:
        params = {
            "ns": scope.namespace,
            "user": scope.user_id,
            "agent": scope.agent_id,
            "before": (1 << 63) - 1 if before is None else before,
            "limit": limit,
        }
        return [int(r[0]) for r in self._conn.execute(schema.SELECT_RECENT_IDS, params)]

    def attributes(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        if not ids:
            return {}
        rows = self._conn.execute(
            "SELECT id, importance, type, event_at, created_at, speaker, length(content) "
            f"FROM memories WHERE {BY_ID}",
            (namespace, json.dumps([int(i) for i in ids])),
        )
        return {
            int(i): MemoryAttributes(
                float(v), MemoryType(t), None if e is None else from_ts(e), from_ts(c), s, int(n)
            )
            for i, v, t, e, c, s, n in rows
        }

    def catalog(self, namespace: str) -> list[CatalogEntry]:
        rows = self._conn.execute(schema.SELECT_CATALOG, (namespace, namespace))
        return [CatalogEntry(int(i), name, norm, bool(a)) for i, name, norm, a in rows]

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        """Each entity a memory or an edge of ``scope`` names: asked an entity at a time, and
        answered by the first such row (every mention and edge of a popular name was read: a
        user-scoped query resolving a common word took 30 ms at 4,000 memories)."""
        if not entity_ids:
            return set()
        where, params = scope_sql(scope)
        edges, edge_params = scope_sql(scope, "ed", shared=True)
        rows = self._conn.execute(
            "SELECT j.value FROM json_each(?) j WHERE EXISTS (SELECT 1 FROM mentions mn "
            f"JOIN memories m ON m.id = mn.memory_id WHERE mn.entity_id = j.value AND {where}) "
            f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.source_id = j.value AND {edges}) "
            f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.target_id = j.value AND {edges})",
            [json.dumps([int(i) for i in entity_ids]), *params, *edge_params, *edge_params],
        )
        return {int(r[0]) for r in rows}

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        if not entity_ids:
            return {}
        rows = self._conn.execute(
            f"SELECT id, mentions FROM entities WHERE {BY_ID}",
            (namespace, json.dumps([int(i) for i in entity_ids])),
        )
        return {int(i): int(n) for i, n in rows}

    def edges_touching(self, scope: Scope, entity_ids: Sequence[int]) -> list[EdgeHop]:
        if not entity_ids:
            return []
        where, params = scope_sql(scope, "edges", shared=True)
        ids = json.dumps([int(i) for i in entity_ids])
        sql = (
            "SELECT source_id, target_id, kind, confidence, support, relation, valid_to FROM edges "
            f"WHERE {where} AND (source_id IN (SELECT value FROM json_each(?)) "
            "OR target_id IN (SELECT value FROM json_each(?)))"
        )
        return [edge_hop(row) for row in self._conn.execute(sql, [*params, ids, ids])]

    def neighbours(self, scope: Scope, step: NeighbourStep) -> list[tuple[int, float]]:
        if not step.frontier or step.limit <= 0:
            return []
        where, params = scope_sql(scope, "ed", shared=True)
        # The factor of an edge, as graph.py documents it: its strength (schema.STRENGTH) times
        # the prior of its kind and its freshness.
        factor = (
            "ed.strength "
            "* (CASE ed.kind WHEN 'structural' THEN ? WHEN 'semantic' THEN ? ELSE ? END) "
            "* (CASE WHEN ed.valid_to IS NOT NULL AND ed.valid_to < ? THEN ? ELSE 1.0 END)"
        )
        factor_args = [
            step.priors.get(EdgeKind.STRUCTURAL, 1.0),
            step.priors.get(EdgeKind.SEMANTIC, 1.0),
            step.priors.get(EdgeKind.LIFECYCLE, 1.0),
            to_ts(step.now),
            step.expired_freshness,
        ]
        # Each frontier entity's strongest edges in scope (ties by edge id, as on Postgres),
        # read down the (entity, strength) index and capped (NeighbourStep.per_entity): a hub's
        # thousands of co-mention edges are never all read.
        parts, args = [], []
        for entity_id, weight in sorted(step.frontier.items()):
            for here, there in (("source_id", "target_id"), ("target_id", "source_id")):
                parts.append(
                    f"SELECT * FROM (SELECT ed.{there} AS there, ? * {factor} AS path "
                    f"FROM edges ed WHERE ed.{here} = ? AND {where} "
                    "ORDER BY ed.strength DESC, ed.id LIMIT ?)"
                )
                args += [float(weight), *factor_args, int(entity_id), *params, step.per_entity]
        sql = (
            f"SELECT there, max(path) AS best FROM ({' UNION ALL '.join(parts)}) "
            "WHERE there NOT IN (SELECT value FROM json_each(?)) "
            "GROUP BY there ORDER BY best DESC, there LIMIT ?"
        )
        args += [json.dumps(sorted(int(e) for e in step.exclude)), step.limit]
        return [(int(e), float(w)) for e, w in self._conn.execute(sql, args)]

    def mentions(
        self, scope: Scope, entities: Sequence[EntityScore], k: int, types: Sequence[MemoryType]
    ) -> list[MentionHit]:
        if not entities or k <= 0:
            return []
        # An entity belongs to one namespace and so do the memories that mention it: for a
        # scope of the whole namespace, the entities are checked to be the namespace's once,
        # and their mentions need no look-up of each memory. A narrower scope (a user, an
        # agent) joins the memories for their owner.
        narrower = scope.user_id is not None or scope.agent_id is not None
        if not narrower:
            ours = {
                int(r[0])
                for r in self._conn.execute(
                    f"SELECT id FROM entities WHERE {BY_ID}",
                    (scope.namespace, json.dumps([e.entity_id for e in entities])),
                )
            }
            entities = [e for e in entities if e.entity_id in ours]
            if not entities:
                return []
        where, params = scope_sql(scope) if narrower else ("1", [])
        join = "JOIN memories m ON m.id = mn.memory_id " if narrower else ""
        # Per entity, its most recent mentions in scope, walked backwards on the (entity_id,
        # type, memory_id) key once per type (forced, or every type): the cost is bounded by
        # the cap, not by how many memories name a hub or how few of them have the type.
        # Entities reached over edges score 0.6 or less: k/4 of their mentions is plenty.
        # The capped reads are one UNION ALL, and the noisy-or, the tie-breaks and the top k
        # are computed in SQL: a 2-hop walk names ~10k memories, too many to score row by row.
        read = (
            "SELECT * FROM (SELECT mn.memory_id AS memory_id FROM mentions mn "
            f"{join}WHERE mn.entity_id = ? AND {where}"
            "{typed} ORDER BY mn.memory_id DESC LIMIT ?)"
        )
        kinds = [t.value for t in types or MemoryType]
        reads = " UNION ALL ".join(read.format(typed=" AND mn.type = ?") for _ in kinds)
        part = (
            "SELECT memory_id, ? AS score, ? AS hops, ? AS rarity FROM "
            f"(SELECT * FROM ({reads}) ORDER BY memory_id DESC LIMIT ?)"
        )
        direct_cap = max(MENTIONS_PER_RESULT * k, MIN_MENTIONS_PER_ENTITY)
        reached_cap = max(1, k // REACHED_MENTIONS_DIVISOR)
        parts: list[str] = []
        args: list[Any] = []
        for entity in entities:
            parts.append(part)
            cap = direct_cap if entity.hops == 0 else reached_cap
            args += [entity.score, entity.hops, entity.rarity]
            for kind in kinds:
                args += [entity.entity_id, *params, kind, cap]
            args.append(cap)
        sql = (
            f"WITH s AS ({' UNION ALL '.join(parts)}) "
            # Noisy-or: 1 - prod(1 - s) as exp(sum(ln(1 - s))); one entity keeps its score
            # exactly, and a fully confident one (ln 0) makes it 1.0.
            "SELECT s.memory_id, CASE WHEN count(*) = 1 OR max(s.score) >= 1.0 "
            "THEN min(1.0, max(s.score)) "
            "ELSE 1.0 - exp(sum(ln(1.0 - s.score))) END AS score, "
            "min(s.hops), sum(s.hops = 0) AS touched, "
            "total(CASE WHEN s.hops = 0 THEN s.rarity ELSE 0.0 END) AS rarity "
            "FROM s GROUP BY s.memory_id "
            "ORDER BY score DESC, touched DESC, rarity DESC, s.memory_id LIMIT ?"
        )
        rows = self._conn.execute(sql, [*args, k])
        return [
            MentionHit(int(i), float(score), int(hops), int(touched), float(rarity))
            for i, score, hops, touched, rarity in rows
        ]

    def events_between(
        self, scope: Scope, start: datetime, end: datetime, k: int
    ) -> list[tuple[int, datetime]]:
        where, params = scope_sql(scope)
        sql = (
            "SELECT m.id, m.event_at FROM memories m "
            f"WHERE {where} AND m.type = 'event' AND m.event_at BETWEEN ? AND ? "
            "ORDER BY m.event_at DESC, m.id LIMIT ?"
        )
        rows = self._conn.execute(sql, [*params, to_ts(start), to_ts(end), k])
        return [(int(i), from_ts(t)) for i, t in rows]

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None:
        where, params = scope_sql(scope, alias="s")
        sql = f"SELECT max(s.last_seen_at) FROM sessions s WHERE {where}"
        if exclude_session is not None:
            sql += " AND s.session_id != ?"
            params.append(exclude_session)
        row = self._conn.execute(sql, params).fetchone()
        return None if row is None or row[0] is None else from_ts(row[0])

    def vectors(self, namespace: str, ids: Sequence[int], dim: int) -> dict[int, Vectors]:
        if not ids:
            return {}
        rows = self._conn.execute(
            "SELECT v.memory_id, v.embedding FROM vectors v JOIN memories m ON m.id = v.memory_id "
            "WHERE +m.namespace = ? AND m.id IN (SELECT value FROM json_each(?))",
            (namespace, json.dumps([int(i) for i in ids])),
        )
        return {int(i): np.frombuffer(blob, dtype=np.float32).reshape(dim) for i, blob in rows}

    def stats(
        self, model: str, location: str, namespace: str | None, folders: Mapping[str, int]
    ) -> StoreStats:
        """``folders``: the sizes of the derived indexes' folders beside the file."""
        one = self._conn.execute
        # With a namespace every count is that namespace's (a tenant sees only its own).
        where, params = ("", ()) if namespace is None else (" WHERE namespace = ?", (namespace,))
        namespaces = dict(one(f"SELECT namespace, memories FROM namespaces{where}", params))
        types = dict(one(f"SELECT type, count(*) FROM memories{where} GROUP BY type", params))
        size = 0
        if location != ":memory:":
            size = sum(
                os.path.getsize(p)
                for p in (location, location + "-wal", location + "-shm")
                if os.path.exists(p)
            )

        def count(table: str) -> int:
            return int(one(f"SELECT count(*) FROM {table}{where}", params).fetchone()[0])

        return StoreStats(
            memories=count("memories"),
            entities=count("entities"),
            edges=count("edges"),
            namespaces={str(k): int(v) for k, v in sorted(namespaces.items()) if v},
            types={str(k): int(v) for k, v in sorted(types.items())},
            embedding_model=model,
            size_bytes=size + sum(folders.values()),
            location=location,
            parts={"database": size, **folders},
        )


# Mentions read per entity: enough for any ranking the graph retriever returns (depth k), few
# enough that a speaker named in a million memories costs a bounded index walk.
MENTIONS_PER_RESULT = 4
MIN_MENTIONS_PER_ENTITY = 200
# Entities reached over edges read k / 4 mentions each: on LoCoMo k and k/4 gave the same R@10
# (57.3 vs 57.5 balanced, 62.7 both optimized); on the 100k synthetic store the graph leg of
# entity questions fell from 43 to 26 ms at the median.
REACHED_MENTIONS_DIVISOR = 4
