"""The embedded store's schema made, checked and brought up to date when it opens: numbered
steps, each in a transaction of its own that reads the version again under the write lock
(another process opening the store at the same time may have moved it since)."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fivefold.errors import NotAFivefoldStore, StoreError
from fivefold.extract.speaker import infer_speaker
from fivefold.store.shared.notes import check_model
from fivefold.store.shared.rows import new_keys
from fivefold.store.sqlite import files, schema, vector_sync
from fivefold.store.sqlite.core import Core
from fivefold.store.sqlite.schema import CATALOG_TRIGGERS, LEARNING_DDL, STRENGTH
from fivefold.text import repeat_key

log = logging.getLogger("fivefold.store")

# Schema 1 -> 2: session context columns (lexical and dense), rebuilt from the rows.
_TO_2 = """
ALTER TABLE memories ADD COLUMN speaker TEXT;
ALTER TABLE mentions ADD COLUMN joined INTEGER NOT NULL DEFAULT 1;
ALTER TABLE memories ADD COLUMN context_near TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN context_far TEXT NOT NULL DEFAULT '';
ALTER TABLE vectors ADD COLUMN context BLOB;
CREATE VIRTUAL TABLE context_fts USING fts5(
    context_near, context_far,
    content='memories', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE INDEX IF NOT EXISTS memories_session
    ON memories(namespace, user_id, agent_id, session_id) WHERE session_id IS NOT NULL;
"""

# Schema 4 -> 5: a mention carries its memory's type (a forced ``types=`` graph read walks only
# that type's mentions), and an edge its strength, indexed, so each hop reads an entity's
# strongest edges first instead of aggregating every edge of a hub; the learning tables.
_TO_5 = (
    "ALTER TABLE mentions ADD COLUMN type TEXT NOT NULL DEFAULT ''",
    "UPDATE mentions SET type = (SELECT type FROM memories WHERE id = mentions.memory_id)",
    "CREATE INDEX mentions_type ON mentions(entity_id, type, memory_id)",
    f"ALTER TABLE edges ADD COLUMN strength REAL GENERATED ALWAYS AS ({STRENGTH}) VIRTUAL",
    "DROP INDEX edges_source",
    "DROP INDEX edges_target",
    "CREATE INDEX edges_source ON edges(source_id, strength DESC)",
    "CREATE INDEX edges_target ON edges(target_id, strength DESC)",
    *(s for s in LEARNING_DDL.split(";") if s.strip()),
)

# Schema 5 -> 6: a mention's key leads with its entity and its memory's type (a memory's type
# never changes, so the key is as unique as (entity, memory)): one B-tree where there were two
# (the key and an index on (entity, type, memory)). Each read of an entity's newest mentions
# walks the key once per type. A write keeps one tree up to date instead of two, and runs
# faster for it on a large store.
_TO_6 = (
    # The key's columns first, in its order: SQLite 3.40's quick_check reports a NOT NULL
    # column of a WITHOUT ROWID table as NULL when they are declared in another order.
    """CREATE TABLE mentions_6 (
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    type      TEXT NOT NULL DEFAULT '',
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    joined    INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (entity_id, type, memory_id)
) WITHOUT ROWID""",
    "INSERT INTO mentions_6 (entity_id, memory_id, joined, type) "
    "SELECT entity_id, memory_id, joined, type FROM mentions ORDER BY entity_id, type, memory_id",
    "DROP TABLE mentions",
    "ALTER TABLE mentions_6 RENAME TO mentions",
    "CREATE INDEX mentions_memory ON mentions(memory_id, entity_id)",
)

# Schema 6 -> 7: combining marks are word characters (``store/tokens.py``). The lexical index of
# a namespace holding text that is not ASCII is rebuilt from the rows on its next use (its log
# marked pruned past what it holds: re-indexing the memories alone would leave the old terms in
# tantivy's statistics until a merge); ASCII text tokenizes as before. Entity and alias keys
# are made again in Python (``_rekey_names``). SQLite's length() counts
# characters (up to a NUL: ASCII text holding one is rebuilt too, needlessly), of its text cast
# to a blob bytes: they differ where a character is not ASCII.
_NOT_ASCII = " OR ".join(
    f"length(CAST({c} AS BLOB)) != length({c})"
    for c in ("content", "coalesce(predicate, '')", "context_near", "context_far")
)
_TO_7 = (
    # An entry newer than any index holds, for each such namespace, then the mark at it (a
    # mark only ever rises: ``PRUNE_LEXICAL_LOG`` keeps the higher).
    f"""INSERT INTO lexical_log (namespace, memory_id)
    SELECT namespace, min(id) FROM memories WHERE {_NOT_ASCII} GROUP BY namespace""",
    f"""INSERT INTO lexical_pruned (namespace, seq)
    SELECT namespace, max(seq) FROM lexical_log
    WHERE namespace IN (SELECT namespace FROM memories WHERE {_NOT_ASCII}) GROUP BY namespace
    ON CONFLICT (namespace) DO UPDATE SET seq = excluded.seq""",
)
_NAMED_NOT_ASCII = (
    "SELECT name, id, norm FROM entities WHERE length(CAST(name AS BLOB)) != length(name)",
    "SELECT alias, namespace, entity_id, norm FROM aliases "
    "WHERE length(CAST(alias AS BLOB)) != length(alias)",
)
# OR IGNORE: a key another row holds is left as it was (``rows.new_keys``).
_REKEY_ENTITY = "UPDATE OR IGNORE entities SET norm = ? WHERE id = ? AND norm = ?"
_REKEY_ALIAS = (
    "UPDATE OR IGNORE aliases SET norm = ? WHERE namespace = ? AND entity_id = ? AND norm = ?"
)

# Schema 7 -> 8: each namespace's catalog has a version of its own (``CATALOG_TRIGGERS``).
_TO_8 = (
    "ALTER TABLE namespaces ADD COLUMN catalog_version INTEGER NOT NULL DEFAULT 1",
    *CATALOG_TRIGGERS,
)


@dataclass(frozen=True, slots=True)
class Step:
    """From the version it is keyed by to ``to``: its statements, then ``then`` (Python's part),
    in one transaction."""

    to: int
    statements: tuple[str, ...] = ()
    then: Callable[[sqlite3.Connection], None] | None = None


def _speakers(conn: sqlite3.Connection) -> None:
    """Rows written before speakers existed get the one their text names, as new writes do
    (the "Name: text" convention)."""
    rows = conn.execute("SELECT id, content FROM memories").fetchall()
    speakers = [(infer_speaker(c), i) for i, c in rows]
    conn.executemany(
        "UPDATE memories SET speaker = ? WHERE id = ?",
        [(s, i) for s, i in speakers if s is not None],
    )


def _tantivy(conn: sqlite3.Connection) -> None:
    """Schema 4 moves the lexical index out of FTS5 (lexical.py): the FTS5 tables of schema 2
    (one pair) or 3 (a pair and a view per namespace) go, the lexical log comes, and each
    namespace's index is built from the rows on its first read."""
    fts = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE (type = 'view' AND name LIKE "
        "'lex_src_%') OR (type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%')"
    ).fetchall()
    for kind, name in fts:
        conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
    conn.execute("DROP TABLE IF EXISTS lexical_tables")
    for statement in schema.LEXICAL_LOG_DDL:
        conn.execute(statement)


def _rekey_names(conn: sqlite3.Connection) -> None:
    """Schema 7's entity and alias keys, made again in Python."""
    kept = 0
    for select, update in zip(_NAMED_NOT_ASCII, (_REKEY_ENTITY, _REKEY_ALIAS), strict=True):
        for key, rest, old in new_keys(conn.execute(select).fetchall()):
            kept += conn.execute(update, (key, *rest, old)).rowcount == 0
    if kept:
        log.warning("schema 7: %d entity or alias keys kept as they were (taken)", kept)


# Schema 8 -> 9: a memory's history (its repeats, what superseded it) and the slots a newer
# memory finds it by; the repeat keys of memories written before (``_history``).
_HISTORY_COLUMNS = (
    ("repeat_key", "TEXT"),
    ("seen", "INTEGER NOT NULL DEFAULT 1"),
    ("last_seen_at", "REAL"),
    ("superseded_by", "INTEGER"),
    ("valid_to", "REAL"),
    ("supersession", "TEXT"),
)


def _history(conn: sqlite3.Connection) -> None:
    held = {str(r[1]) for r in conn.execute("PRAGMA table_info(memories)")}
    for column, kind in _HISTORY_COLUMNS:
        if column not in held:  # a store made by a version in between may have some
            conn.execute(f"ALTER TABLE memories ADD COLUMN {column} {kind}")
    for statement in schema.HISTORY_DDL.split(";"):
        if statement.strip():
            conn.execute(statement)
    _repeat_keys(conn)


def _repeat_keys(conn: sqlite3.Connection) -> None:
    rows = conn.execute("SELECT id, content FROM memories WHERE session_id IS NULL").fetchall()
    conn.executemany(
        "UPDATE memories SET repeat_key = ? WHERE id = ?", [(repeat_key(c), i) for i, c in rows]
    )


def _model_users(conn: sqlite3.Connection) -> None:
    """Schema 9 -> 10: a learned model may be one user's (``schema.MODEL_USERS_DDL``)."""
    held = {str(r[1]) for r in conn.execute("PRAGMA table_info(models)")}
    add, index = schema.MODEL_USERS_DDL
    if "user_id" not in held:  # a store made by a version in between may have it
        conn.execute(add)
    conn.execute(index)


# Keyed by the version a step starts from.
STEPS: Mapping[int, Step] = {
    1: Step(2, tuple(s for s in _TO_2.split(";") if s.strip()), _speakers),
    2: Step(4, then=_tantivy),
    3: Step(4, then=_tantivy),
    4: Step(5, _TO_5),
    5: Step(6, _TO_6),
    6: Step(7, _TO_7, _rekey_names),
    7: Step(8, _TO_8),
    8: Step(9, then=_history),
    9: Step(10, then=_model_users),
}


def open_schema(core: Core) -> str:
    """Create or check the schema and bring it up to date; return the store's random id,
    which derived files (the saved HNSW graphs) carry so that a new store never adopts an old
    store's."""
    tables = _tables(core)
    if tables and "meta" not in tables:
        raise NotAFivefoldStore(
            f"{core.path} is an SQLite database but not a fivefold store "
            f"(it has tables {sorted(tables)[:5]}); pick another path"
        )
    if not tables:
        created = _create_schema(core)
        if created is not None:
            return created
    meta = _meta(core)
    held = meta.get("schema_version")
    if core.read_only and held is not None and held.isdigit() and int(held) < schema.SCHEMA_VERSION:
        # "Recall works" would not be true: this version reads the store once migrated.
        raise StoreError(
            f"{core.path} is open read-only and holds fivefold schema {held}, which this "
            f"version reads once it has moved it to {schema.SCHEMA_VERSION}: open a "
            "writable copy once (recall works on it after)"
        )
    if not (held is not None and held.isdigit() and int(held) <= schema.SCHEMA_VERSION):
        raise NotAFivefoldStore(
            f"{core.path} has fivefold schema version {held}; this version of fivefold "
            f"reads up to {schema.SCHEMA_VERSION}: upgrade fivefold"
        )
    # Before any migration: a store opened with another model is refused as it was found.
    check_model(meta, location=core.path, model=core.model, dim=core.dim)
    while (version := int(meta.get("schema_version") or 0)) in STEPS:
        core.refuse_write()
        step = STEPS[version]
        with core.transaction():
            if core.conn.execute(schema.SCHEMA_VERSION_OF).fetchone() == (str(version),):
                for statement in step.statements:
                    core.conn.execute(statement)
                if step.then is not None:
                    step.then(core.conn)
                core.conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(step.to),)
                )
        meta = _meta(core)
    if meta.get("schema_version") != str(schema.SCHEMA_VERSION):
        raise NotAFivefoldStore(
            f"{core.path} has fivefold schema version {meta.get('schema_version')}; this "
            f"version of fivefold reads version {schema.SCHEMA_VERSION}"
        )
    if not core.read_only and not vector_sync.has_log(core.conn):
        with core.transaction():  # stores made before the change log existed
            for statement in schema.VECTOR_LOG_DDL:
                core.conn.execute(statement)
    if meta.get(files.SMOOTHING_KEY) != core.settings.smoothing.tag and not core.read_only:
        # Read-only, the context stays as it was stored: reads remain consistent with it.
        _rebuild_context(core)
    # Stores created before store ids existed get none; their saved graphs are rebuilt.
    return str(meta.get("store_id", ""))


def _meta(core: Core) -> dict[str, str]:
    return dict(core.execute("SELECT key, value FROM meta").fetchall())


def _tables(core: Core) -> set[str]:
    return {r[0] for r in core.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _create_schema(core: Core) -> str | None:
    """A new store's tables and meta; None when another process created them first (two
    server workers opening a new file at once): the caller then reads them as its own."""
    with core.transaction():  # BEGIN IMMEDIATE: one creator at a time
        if _tables(core):
            return None
        if core.path != ":memory:":
            shutil.rmtree(core.path + ".vindex", ignore_errors=True)
            shutil.rmtree(core.path + ".lexical", ignore_errors=True)
        for statement in files.ddl():
            core.conn.execute(statement)
        meta = files.meta(core.model, core.dim, core.settings.smoothing.tag)
        core.conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta)
    return dict(meta)["store_id"]


def _rebuild_context(core: Core) -> None:
    """Recompute every session memory's context with the configured smoothing (derived data:
    the dense indexes rebuild from it on their next read)."""
    with core.transaction():
        core.context.rebuild_all(core.settings.smoothing)
        core.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (files.SMOOTHING_KEY, core.settings.smoothing.tag),
        )
        core.conn.execute(
            "UPDATE namespaces SET generation = generation + 1, "
            "vector_generation = vector_generation + 1"
        )
