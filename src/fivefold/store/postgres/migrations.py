"""The Postgres store's schema made, checked and brought up to date when it opens (one opener at
a time: a lock on the schema's name), the lists made again where a migration changed how they
are made, and ``doctor``'s comparison of the store's tables with those this version makes."""

from __future__ import annotations

import logging
import uuid

import psycopg

from fivefold.errors import NotAFivefoldStore
from fivefold.store.postgres import placement, schema
from fivefold.store.postgres.context_rows import Deltas, PostgresContextRows
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.reindex import reindex
from fivefold.store.shared import context
from fivefold.store.shared.notes import check_model
from fivefold.store.shared.rows import new_keys
from fivefold.text import repeat_key

log = logging.getLogger("fivefold.store")
SMOOTHING_KEY = "context_smoothing"


def open_schema(core: Core) -> tuple[bool, bool, bool]:
    """Create or migrate the schema (one opener at a time). Returns whether the stored
    context was made with other smoothing settings and must be rebuilt, whether the
    postings were rebuilt from the memories by a migration, and whether this open made
    the store."""
    with psycopg.connect(core.url, autocommit=True) as conn, conn.transaction():
        name, _ = placement.pick(conn, core.location)
        conn.execute(schema.SCHEMA_LOCK, (name,))
        placement.own_schema(conn, core.location)
        placement.check_vector(conn, core.location)
        exists = conn.execute("SELECT to_regclass('fivefold_meta') IS NOT NULL").fetchone()
        if not (exists and exists[0]):
            foreign = conn.execute("SELECT to_regclass('memories') IS NOT NULL").fetchone()
            if foreign and foreign[0]:
                raise NotAFivefoldStore(
                    f"{core.location} has a 'memories' table that fivefold did not make; "
                    "use another database or schema"
                )
        conn.execute(schema.META_DDL)
        found = conn.execute("SELECT key, value FROM fivefold_meta").fetchall()
        meta: dict[str, str] = {str(k): str(v) for k, v in found}
        version = _schema_version(meta.get("schema_version", "0"), core.location)
        if version > schema.SCHEMA_VERSION:
            raise NotAFivefoldStore(
                f"{core.location} has fivefold schema version {version}; this version of "
                f"fivefold reads up to {schema.SCHEMA_VERSION}: upgrade fivefold"
            )
        if meta:  # before any migration: one opened with another model is left as found
            check_model(meta, location=core.location, model=core.model, dim=core.dim)
        for step in schema.MIGRATIONS[version:]:
            conn.execute(step.format(dim=core.dim))
        if 0 < version < 8:
            _rekey_names(conn)
        if 0 < version < 10:
            _repeat_keys(conn)
        # Schema 9's packed lists (and 2, 4 and 5's derived rows, 7's cut tokens, 8's
        # combining marks before them).
        reindexed = 0 < version < 9
        if reindexed:
            reindex(conn, core.tokenizer)
        created = not meta
        if created:
            meta = {
                "embedding_model": core.model,
                "embedding_dim": str(core.dim),
                "store_id": uuid.uuid4().hex,
                SMOOTHING_KEY: core.settings.smoothing.tag,
            }
            for key, value in meta.items():
                conn.execute("INSERT INTO fivefold_meta (key, value) VALUES (%s, %s)", (key, value))
        conn.execute(
            "INSERT INTO fivefold_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(schema.SCHEMA_VERSION),),
        )
    return meta.get(SMOOTHING_KEY) != core.settings.smoothing.tag, reindexed, created


def _rekey_names(conn: psycopg.Connection) -> None:
    """Schema 8's entity and alias keys (``schema.NAMED_NOT_ASCII``), in its transaction."""
    kept = 0
    for select, update in zip(
        schema.NAMED_NOT_ASCII, (schema.REKEY_ENTITY, schema.REKEY_ALIAS), strict=True
    ):
        for key, (namespace, row_id), old in new_keys(conn.execute(select).fetchall()):
            params = {"key": key, "ns": namespace, "id": row_id, "old": old}
            kept += conn.execute(update, params).rowcount == 0
    if kept:
        log.warning("schema 8: %d entity or alias keys kept as they were (taken)", kept)


def rebuild_context(core: Core) -> None:
    """Every session memory's context made again with the configured smoothing."""

    def run(conn: psycopg.Connection, deltas: Deltas) -> None:
        rows = PostgresContextRows(conn, core.tokenizer, deltas, core.dim)
        found = conn.execute(
            "SELECT namespace, id FROM memories WHERE session_id IS NOT NULL ORDER BY namespace, id"
        ).fetchall()
        by_namespace: dict[str, list[int]] = {}
        for namespace, memory_id in found:
            by_namespace.setdefault(str(namespace), []).append(int(memory_id))
        for namespace, ids in by_namespace.items():
            rows.namespace = namespace
            context.refresh(rows, ids, core.settings.smoothing)
            rows.flush()
            deltas.memories[namespace] += 0  # bumps the generation: caches drop
        conn.execute(
            "UPDATE fivefold_meta SET value = %s WHERE key = %s",
            (core.settings.smoothing.tag, SMOOTHING_KEY),
        )

    core.write(run)


# A schema's tables' columns (type with its modifier: vector(384), varchar(200); NOT NULL; a
# default) and its sequences.
_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0
  AND NOT a.attisdropped
"""
_SEQUENCES = "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'S'"
Column = tuple[str, bool, bool]  # type, NOT NULL, has a default


def schema_drift(conn: psycopg.Connection, dim: int) -> list[str]:
    """What in the store's tables differs from those this version makes: a table, column or
    sequence missing, a column of another type or nullability, a column added NOT NULL with no
    default (every insert fails). The expected ones are made afresh as temporary tables
    (``pg_temp``: no right beyond the TEMP every role has) and rolled back, so there is no
    second list of columns to keep in step with the migrations."""
    mine = _value(conn, "SELECT current_schema()")
    found, held = _columns(conn, mine)
    with conn.transaction(force_rollback=True):
        path = _value(conn, "SELECT current_setting('search_path')")
        # The store's path after it: the vector type where the store finds it.
        conn.execute(f"SET LOCAL search_path = pg_temp, {path}")
        conn.execute(schema.META_DDL)
        for step in schema.MIGRATIONS:
            conn.execute(step.format(dim=dim))
        scratch = _value(conn, "SELECT pg_my_temp_schema()::regnamespace")
        expected, sequences = _columns(conn, scratch)
    tables = {table for table, _ in found}
    drift = sorted({f"table {t} is missing" for t, _ in expected if t not in tables})
    drift += [f"sequence {name} is missing" for name in sorted(sequences - held)]
    for (table, column), (kind, not_null, _) in sorted(expected.items()):
        if table not in tables:
            continue
        got = found.get((table, column))
        if got is None:
            drift.append(f"{table}.{column} is missing")
        elif got[0] != kind:
            drift.append(f"{table}.{column} is {got[0]}, not {kind}")
        elif got[1] != not_null:
            drift.append(f"{table}.{column} is {'' if got[1] else 'not '}NOT NULL")
    ours = {table for table, _ in expected}
    for (table, column), (_, not_null, default) in sorted(found.items()):
        # Every insert, which does not name it, fails.
        if table in ours and (table, column) not in expected and not_null and not default:
            drift.append(f"{table}.{column} is an added NOT NULL column with no default")
    return drift


def _value(conn: psycopg.Connection, query: str) -> str:
    row = conn.execute(query).fetchone()
    return "" if row is None else str(row[0])


def _columns(
    conn: psycopg.Connection, namespace: str
) -> tuple[dict[tuple[str, str], Column], set[str]]:
    columns = {
        (str(t), str(c)): (str(k), bool(n), bool(d))
        for t, c, k, n, d in conn.execute(_COLUMNS, (namespace,))
    }
    return columns, {str(r[0]) for r in conn.execute(_SEQUENCES, (namespace,))}


def _schema_version(value: str, location: str) -> int:
    """The stored schema version; another program's value in fivefold's meta table is not a
    store of ours (it was a raw ``ValueError``, or a negative one indexed the migrations)."""
    if not (value.isascii() and value.isdigit()):
        raise NotAFivefoldStore(
            f"{location}: its fivefold_meta table holds schema_version {value!r}, which "
            "fivefold never writes; use another database or schema"
        )
    return int(value)


def _repeat_keys(conn: psycopg.Connection) -> None:
    """Schema 10's repeat keys of the memories written before it (no conversation turn)."""
    rows = conn.execute(
        "SELECT namespace, id, content FROM memories WHERE session_id IS NULL"
    ).fetchall()
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE memories SET repeat_key = %s WHERE namespace = %s AND id = %s",
            [(repeat_key(str(c)), ns, int(i)) for ns, i, c in rows],
        )
