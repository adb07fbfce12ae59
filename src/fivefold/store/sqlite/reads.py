"""The embedded store's reads: memories, their attributes and vectors, the catalog of names,
and the statistics a recall needs. Every query that returns memories applies the scope here, in
SQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from fivefold.store.records import CatalogEntry, MemoryAttributes, NamespaceState
from fivefold.store.shared.rows import ids_by_key, memory_attributes, memory_record, scope_columns
from fivefold.store.shared.timeconv import from_ts
from fivefold.store.shared.translate import Role
from fivefold.store.sql import scope_sql
from fivefold.store.sqlite import schema
from fivefold.store.sqlite.core import Core
from fivefold.store.sqlite.schema import BY_ID, id_list
from fivefold.types import MemoryRecord, Scope

DF_CACHE_TERMS = 20_000


class SQLiteReads(Role[Core]):
    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._catalogs: dict[str, tuple[int, list[CatalogEntry]]] = {}
        self._df_version: tuple[int, int] = (-1, -1)
        self._df_cache: dict[tuple[str, str], int] = {}
        self._df_totals: dict[str, int] = {}

    def get_memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        if not ids:
            return {}
        wanted = id_list(ids)
        with self._core.lock:
            conn = self._core.conn
            rows = conn.execute(
                schema.SELECT_MEMORY_COLUMNS + f" WHERE {BY_ID}", (namespace, wanted)
            ).fetchall()
            if not rows:
                return {}
            entities: dict[int, list[str]] = {}
            for memory_id, name in conn.execute(schema.SELECT_MEMORY_ENTITIES, (wanted,)):
                entities.setdefault(memory_id, []).append(name)
        return {row[0]: memory_record(row, entities.get(row[0], [])) for row in rows}

    def recent_ids(self, scope: Scope, *, limit: int, before: int | None = None) -> list[int]:
        params = {
            "ns": scope.namespace,
            "user": scope.user_id,
            "agent": scope.agent_id,
            "before": (1 << 63) - 1 if before is None else before,
            "limit": limit,
        }
        return [int(r[0]) for r in self._core.rows(schema.SELECT_RECENT_IDS, params)]

    def attributes(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        if not ids:
            return {}
        rows = self._core.rows(
            "SELECT id, importance, type, event_at, created_at, speaker, length(content), "
            f"superseded_by FROM memories WHERE {BY_ID}",
            (namespace, id_list(ids)),
        )
        return memory_attributes(rows)

    def catalog(self, namespace: str) -> list[CatalogEntry]:
        """The same list while no name of the namespace changes (its catalog version)."""
        with self._core.lock:
            row = self._core.execute(schema.CATALOG_VERSION, (namespace,)).fetchone()
            version = 0 if row is None else int(row[0])
            cached = self._catalogs.get(namespace)
            if cached is not None and cached[0] == version:
                return cached[1]
            entries = self._read_catalog(namespace)
            self._catalogs[namespace] = (version, entries)
            return entries

    def _read_catalog(self, namespace: str) -> list[CatalogEntry]:
        rows = self._core.conn.execute(schema.SELECT_CATALOG, (namespace, namespace))
        return [CatalogEntry(int(i), name, norm, bool(a)) for i, name, norm, a in rows]

    def names_by_key(self, namespace: str, keys: Sequence[str]) -> list[CatalogEntry]:
        if not keys:
            return []
        args = {"ns": namespace, "keys": json.dumps(list(keys))}
        rows = self._core.rows(schema.SELECT_NAMES_BY_KEY, args)
        return [CatalogEntry(int(i), name, norm, bool(a)) for i, name, norm, a in rows]

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        """Each entity a memory or an edge of ``scope`` names: asked an entity at a time, and
        answered by the first such row (every mention and edge of a popular name was read)."""
        if not entity_ids:
            return set()
        where, params = scope_sql(scope)
        edges, edge_params = scope_sql(scope, "ed", shared=True)
        sql = (
            "SELECT j.value FROM json_each(:ids) j WHERE EXISTS (SELECT 1 FROM mentions mn "
            f"JOIN memories m ON m.id = mn.memory_id WHERE mn.entity_id = j.value AND {where}) "
            f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.source_id = j.value AND {edges}) "
            f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.target_id = j.value AND {edges})"
        )
        args = {"ids": id_list(entity_ids), **params, **edge_params}
        return {int(r[0]) for r in self._core.rows(sql, args)}

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        if not entity_ids:
            return {}
        rows = self._core.rows(
            f"SELECT id, mentions FROM entities WHERE {BY_ID}", (namespace, id_list(entity_ids))
        )
        return {int(i): int(n) for i, n in rows}

    def state(self, namespace: str) -> NamespaceState:
        with self._core.lock:
            memories, generation, _ = self._core.namespace_state(namespace)
        return NamespaceState(memories, generation)

    def term_document_frequencies(
        self, namespace: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """Memoized until the next write by anyone: the optimizer's rarity feature, BM25's
        squash and negation all ask for the same few terms within one recall."""
        core = self._core
        with core.lock:
            version = (core.writes, core.conn.execute("PRAGMA data_version").fetchone()[0])
            if version != self._df_version or len(self._df_cache) > DF_CACHE_TERMS:
                self._df_cache.clear()
                self._df_version = version
                self._df_totals.clear()
            missing = [t for t in dict.fromkeys(terms) if (namespace, t) not in self._df_cache]
            if missing or namespace not in self._df_totals:
                total, found = core.lexical.frequencies(namespace, missing)
                self._df_cache.update(((namespace, t), n) for t, n in found.items())
                self._df_totals[namespace] = total
            return self._df_totals[namespace], {t: self._df_cache[namespace, t] for t in terms}

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None:
        where, params = scope_sql(scope, "s")
        sql = f"SELECT max(s.last_seen_at) FROM sessions s WHERE {where}"
        if exclude_session is not None:
            sql += " AND s.session_id != :session"
            params["session"] = exclude_session
        row = self._core.row(sql, params)
        return None if row is None or row[0] is None else from_ts(row[0])

    def repeats(self, scope: Scope, keys: Sequence[str]) -> dict[str, list[int]]:
        if not keys:
            return {}
        where = scope_columns(scope)
        return ids_by_key(self._core.rows(schema.FIND_REPEATS, (*where, json.dumps(list(keys)))))

    def slot_holders(self, scope: Scope, slots: Sequence[str], limit: int) -> dict[str, list[int]]:
        if not slots or limit <= 0:
            return {}
        where = scope_columns(scope)
        rows = self._core.rows(schema.SLOT_HOLDERS, (*where, json.dumps(list(slots)), limit))
        return ids_by_key(rows)

    def replaced(self, namespace: str, ids: Sequence[int]) -> dict[int, list[int]]:
        if not ids:
            return {}
        out: dict[int, list[int]] = {}
        for successor, memory_id in self._core.rows(schema.REPLACED, (namespace, id_list(ids))):
            out.setdefault(int(successor), []).append(int(memory_id))
        return out
