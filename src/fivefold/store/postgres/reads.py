"""The Postgres store's reads: memories, their attributes and vectors, the catalog of names, and
the statistics a recall needs. Each takes a pooled connection and names its namespace (the
Citus distribution column: SCALING.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fivefold.store.postgres import schema
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.lexical import namespace_row
from fivefold.store.postgres.lists import Version
from fivefold.store.records import CatalogEntry, MemoryAttributes, NamespaceState
from fivefold.store.shared.rows import ids_by_key, memory_attributes, memory_record, scope_columns
from fivefold.store.shared.timeconv import from_ts
from fivefold.store.shared.translate import EVERY, Role
from fivefold.types import MemoryRecord, Scope

# The catalog's entries of some keys, each with its entity's canonical name: a probe of the
# (namespace, norm) keys per key asked, however many names the namespace holds; an alias after
# a name of the same key, as in the whole catalog. (Here, not in schema.py, while that module
# is being split.)
_NAMES_BY_KEY = """
SELECT id, name, norm, false FROM entities
WHERE namespace = %(ns)s AND norm = ANY(%(keys)s::text[])
UNION ALL
SELECT a.entity_id, e.name, a.norm, true FROM aliases a
JOIN entities e ON e.namespace = a.namespace AND e.id = a.entity_id
WHERE a.namespace = %(ns)s AND a.norm = ANY(%(keys)s::text[])
ORDER BY 4, 1
"""


class PostgresReads(Role[Core], reads=EVERY):
    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._catalogs: dict[str, tuple[Version, list[CatalogEntry]]] = {}

    def state(self, namespace: str) -> NamespaceState:
        with self._core.read() as conn:
            row = namespace_row(conn, namespace)
        return NamespaceState(row[0], row[1])

    def get_memories(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        if not ids:
            return {}
        wanted = [int(i) for i in ids]
        with self._core.read() as conn:
            rows = conn.execute(
                schema.MEMORY_COLUMNS + " WHERE namespace = %s AND id = ANY(%s::bigint[])",
                (namespace, wanted),
            ).fetchall()
            if not rows:
                return {}
            entities: dict[int, list[str]] = {}
            for memory_id, name in conn.execute(schema.SELECT_MEMORY_ENTITIES, (namespace, wanted)):
                entities.setdefault(int(memory_id), []).append(str(name))
        return {int(r[0]): memory_record(r, entities.get(int(r[0]), [])) for r in rows}

    def recent_ids(self, scope: Scope, *, limit: int, before: int | None = None) -> list[int]:
        where, params = schema.scope_sql(scope)
        rows = self._core.rows(
            f"SELECT m.id FROM memories m WHERE {where} AND m.id < %(before)s "
            "ORDER BY m.id DESC LIMIT %(limit)s",
            {**params, "before": (1 << 63) - 1 if before is None else before, "limit": limit},
        )
        return [int(r[0]) for r in rows]

    def attributes(self, namespace: str, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        if not ids:
            return {}
        rows = self._core.rows(
            "SELECT id, importance, type, event_at, created_at, speaker, "
            "char_length(content), superseded_by FROM memories "
            "WHERE namespace = %s AND id = ANY(%s::bigint[])",
            (namespace, [int(i) for i in ids]),
        )
        return memory_attributes(rows)

    def catalog(self, namespace: str) -> Sequence[CatalogEntry]:
        with self._core.read() as conn:
            # The row's version, as the kept posting lists: a namespace made again (a schema
            # dropped and created) restarts its generations.
            row = namespace_row(conn, namespace, version=True)
            version = (row[1], row[-1])
            cached = self._catalogs.get(namespace)
            if cached is not None and cached[0] == version:
                return cached[1]
            rows = conn.execute(schema.SELECT_CATALOG, (namespace, namespace)).fetchall()
        entries = [CatalogEntry(int(i), str(n), str(k), bool(a)) for i, n, k, a in rows]
        self._catalogs[namespace] = (version, entries)
        return entries

    def names_by_key(self, namespace: str, keys: Sequence[str]) -> list[CatalogEntry]:
        if not keys:
            return []
        rows = self._core.rows(_NAMES_BY_KEY, {"ns": namespace, "keys": list(keys)})
        return [CatalogEntry(int(i), str(n), str(k), bool(a)) for i, n, k, a in rows]

    def visible_entities(self, scope: Scope, entity_ids: Sequence[int]) -> set[int]:
        if not entity_ids:
            return set()
        # Answered by the first mention or edge of the scope, an entity at a time (as SQLite's).
        where, params = schema.scope_sql(scope)
        edges, _ = schema.scope_sql(scope, "ed", shared=True)
        rows = self._core.rows(
            "SELECT e.id FROM unnest(%(ids)s::bigint[]) AS e(id) WHERE EXISTS (SELECT 1 "
            "FROM mentions mn JOIN memories m ON m.namespace = mn.namespace "
            "AND m.id = mn.memory_id WHERE mn.namespace = %(ns)s AND mn.entity_id = e.id "
            f"AND {where}) "
            f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.source_id = e.id AND {edges}) "
            f"OR EXISTS (SELECT 1 FROM edges ed WHERE ed.target_id = e.id AND {edges})",
            {**params, "ids": [int(i) for i in entity_ids]},
        )
        return {int(r[0]) for r in rows}

    def entity_frequencies(self, namespace: str, entity_ids: Sequence[int]) -> dict[int, int]:
        if not entity_ids:
            return {}
        rows = self._core.rows(
            "SELECT id, mentions FROM entities WHERE namespace = %s AND id = ANY(%s::bigint[])",
            (namespace, [int(i) for i in entity_ids]),
        )
        return {int(i): int(n) for i, n in rows}

    def term_document_frequencies(
        self, namespace: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        tokens = {t: self._core.tokenizer.terms(t) for t in terms}
        wanted = sorted({tok for toks in tokens.values() for tok in toks})
        with self._core.read() as conn, conn.transaction():  # the total and the counts agree
            total = namespace_row(conn, namespace)[0]
            # ``content``'s, as on the embedded store (store/sqlite/lexical.py says why).
            rows = conn.execute(
                "SELECT term, df2 FROM term_stats WHERE namespace = %s AND field = %s "
                "AND term = ANY(%s::text[])",
                (namespace, schema.OWN, wanted),
            ).fetchall()
        df = {str(t): int(n) for t, n in rows}
        # A term of several tokens ("e-mail") is as rare as its rarest token.
        return total, {
            t: min((df.get(x, 0) for x in toks), default=0) for t, toks in tokens.items()
        }

    def last_session_end(self, scope: Scope, exclude_session: str | None) -> datetime | None:
        where, params = schema.scope_sql(scope, "s")
        sql = f"SELECT max(s.last_seen_at) FROM sessions s WHERE {where}"
        if exclude_session is not None:
            sql += " AND s.session_id <> %(exclude)s"
            params["exclude"] = exclude_session
        row = self._core.row(sql, params)
        return None if row is None or row[0] is None else from_ts(row[0])

    def repeats(self, scope: Scope, keys: Sequence[str]) -> dict[str, list[int]]:
        if not keys:
            return {}
        where = scope_columns(scope)
        rows = self._core.rows(schema.FIND_REPEATS, (*where, list(keys)))
        return ids_by_key(rows)

    def slot_holders(self, scope: Scope, slots: Sequence[str], limit: int) -> dict[str, list[int]]:
        if not slots or limit <= 0:
            return {}
        where = scope_columns(scope)
        rows = self._core.rows(schema.SLOT_HOLDERS, (*where, list(slots), limit))
        return ids_by_key(rows)

    def replaced(self, namespace: str, ids: Sequence[int]) -> dict[int, list[int]]:
        if not ids:
            return {}
        rows = self._core.rows(schema.REPLACED, (namespace, [int(i) for i in ids]))
        out: dict[int, list[int]] = {}
        for successor, memory_id in rows:
            out.setdefault(int(successor), []).append(int(memory_id))
        return out
