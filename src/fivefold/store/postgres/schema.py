"""The PostgreSQL schema, its migrations and the statements of its reads and upkeep (those of
the write path are ``write_sql.py``'s).

Shaped for Citus (SCALING.md): ``namespace`` is the first column of every table's primary key
and of every index, so each table can be distributed on it and co-located with the others, and
every statement of a recall names one namespace (a single-shard query). No foreign keys: the
backend deletes what a memory owned itself, in the same transaction.

As in the SQLite schema, ``user_id``/``agent_id`` hold ``''`` for "none", and datetimes are
UTC epoch seconds (``store/timeconv.py``). ``searched`` is the vector the dense leg searches:
the memory's own embedding, or its session-smoothed one (``store/context.py``); NULL only
inside the transaction that writes a session memory, until its context is computed, so the
HNSW graph takes each new memory once, with its final vector.

BM25 is the embedded store's (tantivy's), computed from rows: ``postings`` holds each (field,
term) list packed, a row per part (``packed.py``): per memory the term's frequency in its two
columns of a ``field`` (0: predicate, content; 1: its window, its own text with its session
context, each term counted as ``context.WINDOW_REPEATS`` says, and no second column), each
column's length as tantivy records it (``field_norm``) and the memory's type; ``term_stats``
each term's document frequency per column, and ``namespaces`` the memory count and each
column's token total, all per namespace. Every column is scored on its own.
"""

from __future__ import annotations

from typing import Any

from fivefold.store.shared.rows import COMENTION as COMENTION  # one name for both backends
from fivefold.store.sql import Dialect
from fivefold.store.sql import scope_sql as shared_scope_sql
from fivefold.types import Scope

SCHEMA_VERSION = 11

OWN, CONTEXT = 0, 1  # postings.field
CHUNK_BITS = 10  # a list's part holds the postings of 2 ** CHUNK_BITS consecutive ids at most

# Schemas 5 to 8 kept each term's postings in impact order (tf / (tf + k1 (1 - b + b D / L)),
# L a fixed length per field), for a scoring that stopped early; migration 5 makes the index, 9
# drops the table it indexed.
_IMPACT_INDEX = """
CREATE INDEX IF NOT EXISTS postings_impact ON postings (namespace, field, term, (first::float8 /
    (first::float8 + 0.3::float8 + 0.9::float8 * norm1::float8 / CASE field WHEN 0 THEN 4::float8
    ELSE 32::float8 END)) DESC) INCLUDE (memory_id, first, norm1, type) WHERE first > 0"""


# Each entry migrates from the version before it; entry 0 creates version 1. ``{dim}`` is the
# store's embedding dimension.
MIGRATIONS: tuple[str, ...] = (
    """
CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
CREATE SEQUENCE IF NOT EXISTS fivefold_memory_ids;
CREATE SEQUENCE IF NOT EXISTS fivefold_entity_ids;
CREATE SEQUENCE IF NOT EXISTS fivefold_edge_ids;
CREATE TABLE memories (
    namespace      text NOT NULL,
    id             bigint NOT NULL DEFAULT nextval('fivefold_memory_ids'),
    user_id        text NOT NULL DEFAULT '',
    agent_id       text NOT NULL DEFAULT '',
    session_id     text,
    content        text NOT NULL,
    predicate      text,
    type           text NOT NULL,
    event_at       double precision,
    created_at     double precision NOT NULL,
    importance     double precision NOT NULL,
    metadata       text NOT NULL DEFAULT '{{}}',
    speaker        text,
    context_near   text NOT NULL DEFAULT '',
    context_far    text NOT NULL DEFAULT '',
    own_tokens     integer NOT NULL DEFAULT 0,
    context_tokens integer NOT NULL DEFAULT 0,
    embedding      vector({dim}) NOT NULL,
    searched       vector({dim}),
    PRIMARY KEY (namespace, id)
);
CREATE INDEX memories_scope ON memories (namespace, user_id, agent_id, id);
CREATE INDEX memories_event_at ON memories (namespace, type, event_at);
CREATE INDEX memories_session ON memories (namespace, user_id, agent_id, session_id, id)
    WHERE session_id IS NOT NULL;
CREATE INDEX memories_searched ON memories USING hnsw (searched vector_ip_ops);
CREATE TABLE postings (
    namespace text NOT NULL,
    field     smallint NOT NULL,
    term      text NOT NULL,
    memory_id bigint NOT NULL,
    first     real NOT NULL,
    second    real NOT NULL,
    length    integer NOT NULL,
    PRIMARY KEY (namespace, field, term, memory_id) INCLUDE (first, second, length)
);
CREATE TABLE term_stats (
    namespace text NOT NULL,
    field     smallint NOT NULL,
    term      text NOT NULL,
    df        integer NOT NULL,
    PRIMARY KEY (namespace, field, term)
);
CREATE TABLE entities (
    namespace  text NOT NULL,
    id         bigint NOT NULL DEFAULT nextval('fivefold_entity_ids'),
    name       text NOT NULL,
    norm       text NOT NULL,
    mentions   integer NOT NULL DEFAULT 0,
    created_at double precision NOT NULL,
    PRIMARY KEY (namespace, id),
    UNIQUE (namespace, norm)
);
CREATE TABLE aliases (
    namespace text NOT NULL,
    norm      text NOT NULL,
    alias     text NOT NULL,
    entity_id bigint NOT NULL,
    PRIMARY KEY (namespace, norm, entity_id)
);
CREATE INDEX aliases_entity ON aliases (namespace, entity_id);
CREATE TABLE mentions (
    namespace text NOT NULL,
    entity_id bigint NOT NULL,
    memory_id bigint NOT NULL,
    joined    boolean NOT NULL DEFAULT true,
    PRIMARY KEY (namespace, entity_id, memory_id)
);
CREATE INDEX mentions_memory ON mentions (namespace, memory_id, entity_id);
CREATE TABLE edges (
    namespace  text NOT NULL,
    id         bigint NOT NULL DEFAULT nextval('fivefold_edge_ids'),
    user_id    text NOT NULL DEFAULT '',
    agent_id   text NOT NULL DEFAULT '',
    source_id  bigint NOT NULL,
    target_id  bigint NOT NULL,
    relation   text NOT NULL,
    kind       text NOT NULL,
    confidence double precision NOT NULL,
    support    integer NOT NULL DEFAULT 1,
    valid_from double precision,
    valid_to   double precision,
    memory_id  bigint,
    created_at double precision NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX edges_source ON edges (namespace, source_id);
CREATE INDEX edges_target ON edges (namespace, target_id);
CREATE INDEX edges_memory ON edges (namespace, memory_id) WHERE memory_id IS NOT NULL;
CREATE UNIQUE INDEX edges_comention ON edges (namespace, user_id, agent_id, source_id, target_id)
    WHERE relation = 'co_mentioned';
CREATE TABLE sessions (
    namespace    text NOT NULL,
    user_id      text NOT NULL,
    agent_id     text NOT NULL,
    session_id   text NOT NULL,
    started_at   double precision NOT NULL,
    last_seen_at double precision NOT NULL,
    PRIMARY KEY (namespace, user_id, agent_id, session_id)
);
CREATE TABLE namespaces (
    namespace      text PRIMARY KEY,
    memories       bigint NOT NULL DEFAULT 0,
    generation     bigint NOT NULL DEFAULT 0,
    own_tokens     bigint NOT NULL DEFAULT 0,
    context_docs   bigint NOT NULL DEFAULT 0,
    context_tokens bigint NOT NULL DEFAULT 0
);
""",
    # 2: BM25 per column, with tantivy's lengths and IDF, as the embedded store scores it. The
    # posting rows are derived: dropped here and rebuilt from the memories by the store
    # (``PostgresStore._reindex_lexical``) in the same transaction.
    """
DROP TABLE postings;
DROP TABLE term_stats;
CREATE TABLE postings (
    namespace text NOT NULL,
    field     smallint NOT NULL,
    term      text NOT NULL,
    memory_id bigint NOT NULL,
    first     real NOT NULL,
    second    real NOT NULL,
    norm1     integer NOT NULL,
    norm2     integer NOT NULL,
    PRIMARY KEY (namespace, field, term, memory_id) INCLUDE (first, second, norm1, norm2)
);
CREATE TABLE term_stats (
    namespace text NOT NULL,
    field     smallint NOT NULL,
    term      text NOT NULL,
    df1       integer NOT NULL,
    df2       integer NOT NULL,
    PRIMARY KEY (namespace, field, term)
);
ALTER TABLE memories DROP COLUMN own_tokens, DROP COLUMN context_tokens,
    ADD COLUMN tokens integer[] NOT NULL DEFAULT '{{0,0,0,0}}';
ALTER TABLE namespaces DROP COLUMN own_tokens, DROP COLUMN context_docs,
    DROP COLUMN context_tokens, ADD COLUMN tokens bigint[] NOT NULL DEFAULT '{{0,0,0,0}}';
""",
    # 3: an edge's strength (the embedded store's schema.STRENGTH), indexed, so the graph walk
    # reads each entity's strongest edges first, capped, as the embedded store does; learned
    # fusion's feedback and models (no foreign keys, for Citus: forget deletes the labels).
    f"""
ALTER TABLE edges ADD COLUMN strength double precision GENERATED ALWAYS AS (
    CASE WHEN relation = '{COMENTION}' THEN 1.0 - power(0.5, least(greatest(support, 1), 62))
    ELSE confidence END) STORED;
DROP INDEX edges_source;
DROP INDEX edges_target;
CREATE INDEX edges_source ON edges (namespace, source_id, strength DESC, id);
CREATE INDEX edges_target ON edges (namespace, target_id, strength DESC, id);
CREATE SEQUENCE IF NOT EXISTS fivefold_feedback_ids;
CREATE TABLE feedback (
    namespace  text NOT NULL,
    id         bigint NOT NULL DEFAULT nextval('fivefold_feedback_ids'),
    query      text NOT NULL,
    args       text NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE TABLE feedback_labels (
    namespace   text NOT NULL,
    feedback_id bigint NOT NULL,
    memory_id   bigint NOT NULL,
    label       double precision NOT NULL,
    PRIMARY KEY (namespace, feedback_id, memory_id)
);
CREATE INDEX feedback_labels_memory ON feedback_labels (namespace, memory_id);
CREATE TABLE models (
    namespace  text NOT NULL,
    version    integer NOT NULL,
    accepted   boolean NOT NULL,
    created_at double precision NOT NULL,
    payload    text NOT NULL,
    PRIMARY KEY (namespace, version)
);
""",
    # 4: field 1 of the postings holds a memory's window (its own text with its session
    # context, one column) instead of its context at distance 1 and 2: rebuilt from the rows.
    """
TRUNCATE postings, term_stats;
""",
    # 5: (a) each term's postings in impact order (``_IMPACT_INDEX``), for scoring that stops
    # early; partial: a posting without the term in its first column adds nothing there, and
    # scoring given memories (no ``first > 0``) must keep using the primary key. (b) A memory's
    # type (which never changes) on its postings and mentions, so that a type filter is read
    # from the index instead of joining each posting's or mention's memory row. The postings
    # are rebuilt from the rows (``PostgresStore._reindex_lexical``). Each step can run again.
    f"""
TRUNCATE postings, term_stats;
ALTER TABLE postings ADD COLUMN IF NOT EXISTS type text NOT NULL;
ALTER TABLE postings DROP CONSTRAINT IF EXISTS postings_pkey;
ALTER TABLE postings ADD PRIMARY KEY (namespace, field, term, memory_id)
    INCLUDE (first, second, norm1, norm2, type);
{_IMPACT_INDEX};
ALTER TABLE mentions ADD COLUMN IF NOT EXISTS type text;
DELETE FROM mentions mn WHERE NOT EXISTS (
    SELECT 1 FROM memories m WHERE m.namespace = mn.namespace AND m.id = mn.memory_id);
UPDATE mentions mn SET type = m.type FROM memories m
WHERE m.namespace = mn.namespace AND m.id = mn.memory_id AND mn.type IS NULL;
ALTER TABLE mentions ALTER COLUMN type SET NOT NULL;
CREATE INDEX IF NOT EXISTS mentions_type ON mentions (namespace, entity_id, type, memory_id);
""",
    # 6: the HNSW index and the postings' impact order are made by the first search that needs
    # them (``CREATE_SEARCHED_INDEX``; the impact order until schema 9). A store that holds memories
    # keeps the ones it has; an empty one (a new store: entries 0 and 4 made them) drops
    # them, so that a bulk load keeps neither in step row by row.
    """
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM memories) THEN
        DROP INDEX IF EXISTS memories_searched;
        DROP INDEX IF EXISTS postings_impact;
    END IF;
END $$;
""",
    # 7: tokens are cut at ``MAX_TOKEN_CHARS``. A store holding a longer one (``LONG_TOKENS``)
    # has its postings made again from the rows (``PostgresStore._init_schema``): a forget or
    # a context update, cutting its tokens, would no longer find the whole one's rows.
    "SELECT 1",
    # 8: combining marks are word characters (``store/tokens.py``). A store holding text that
    # is not ASCII (``NOT_ASCII``) has its postings made again from the rows, and its entity
    # and alias keys made again (``NAMED_NOT_ASCII``, ``rows.new_keys``); ASCII text
    # tokenizes as before.
    "SELECT 1",
    # 9: each list packed, a row per part (``packed.py``) instead of a row per posting: made
    # again from the rows (``PostgresStore._reindex_lexical``). Not compressed: a list is read
    # whole, and compressing it cost more than the bytes it saved.
    """
DROP TABLE postings;
TRUNCATE term_stats;
CREATE TABLE postings (
    namespace text NOT NULL,
    field     smallint NOT NULL,
    term      text NOT NULL,
    part      bigint NOT NULL,
    packed    bytea NOT NULL,
    PRIMARY KEY (namespace, field, term, part)
);
ALTER TABLE postings ALTER COLUMN packed SET STORAGE EXTERNAL;
""",
    # 10: a memory's history: the key its exact repeats share (none for a conversation turn),
    # how often it was said and when last, the memory that superseded it, from when and why;
    # the slots a newer memory finds it by. Repeat keys of older memories: ``migrations.py``.
    """
ALTER TABLE memories ADD COLUMN IF NOT EXISTS repeat_key text;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS seen integer NOT NULL DEFAULT 1;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS last_seen_at float8;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS superseded_by bigint;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS valid_to float8;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS supersession text;
CREATE INDEX IF NOT EXISTS memories_repeat ON memories (namespace, user_id, agent_id, repeat_key)
    WHERE repeat_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_superseded ON memories (namespace, superseded_by)
    WHERE superseded_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS slots (
    namespace text NOT NULL,
    user_id   text NOT NULL,
    agent_id  text NOT NULL,
    slot      text NOT NULL,
    memory_id bigint NOT NULL,
    PRIMARY KEY (namespace, user_id, agent_id, slot, memory_id)
);
CREATE INDEX IF NOT EXISTS slots_memory ON slots (namespace, memory_id);
""",
    # 11: a learned model may be one user's (``learned.scope = "user"``); '' is the
    # namespace's, which every model stored before is. Versions still count per namespace.
    """
ALTER TABLE models ADD COLUMN IF NOT EXISTS user_id text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS models_user ON models (namespace, user_id, version);
""",
)
NAMED_NOT_ASCII = (
    "SELECT name, namespace, id, norm FROM entities WHERE octet_length(name) <> char_length(name)",
    "SELECT alias, namespace, entity_id, norm FROM aliases "
    "WHERE octet_length(alias) <> char_length(alias)",
)
FIND_REPEATS = """
SELECT repeat_key, id FROM memories
WHERE namespace = %s AND user_id = %s AND agent_id = %s AND session_id IS NULL
  AND repeat_key = ANY(%s::text[])
ORDER BY id
"""
SLOT_HOLDERS = """
SELECT slot, memory_id FROM (
  SELECT s.slot, s.memory_id,
         row_number() OVER (PARTITION BY s.slot ORDER BY s.memory_id DESC) AS place
  FROM slots s JOIN memories m ON m.namespace = s.namespace AND m.id = s.memory_id
  WHERE s.namespace = %s AND s.user_id = %s AND s.agent_id = %s AND m.superseded_by IS NULL
    AND s.slot = ANY(%s::text[])
) held WHERE place <= %s ORDER BY slot, memory_id DESC
"""
REPLACED = """
SELECT superseded_by, id FROM memories
WHERE namespace = %s AND superseded_by = ANY(%s::bigint[]) ORDER BY id
"""
# A key another row holds is left as it was (``rows.new_keys``).
REKEY_ENTITY = """
UPDATE entities SET norm = %(key)s WHERE namespace = %(ns)s AND id = %(id)s AND norm = %(old)s
  AND NOT EXISTS (SELECT 1 FROM entities WHERE namespace = %(ns)s AND norm = %(key)s)
"""
REKEY_ALIAS = """
UPDATE aliases SET norm = %(key)s
WHERE namespace = %(ns)s AND entity_id = %(id)s AND norm = %(old)s
  AND NOT EXISTS (SELECT 1 FROM aliases WHERE namespace = %(ns)s AND norm = %(key)s
                  AND entity_id = %(id)s)
"""
# The order of a memory's (and a namespace's) ``tokens``: predicate, content, window, and the
# window field's unused second column.
COLUMNS = ("predicate", "content", "window", "")

META_DDL = "CREATE TABLE IF NOT EXISTS fivefold_meta (key text PRIMARY KEY, value text NOT NULL)"
# Planner statistics are refreshed when a namespace crosses a power of two from this size on: a
# table loaded faster than autovacuum looks at it is otherwise planned as if empty, and its
# searches run an order of magnitude slower.
ANALYZE_FROM = 256
ANALYZE = "ANALYZE (SKIP_LOCKED) memories, postings, term_stats, entities, mentions, edges, aliases"
# When a namespace of ``VACUUM_FROM`` memories or more grows an eighth (``growth_step``), the
# tables read by index alone are vacuumed, so their visibility map covers the new rows: an
# index-only scan otherwise visits the heap for each posting written since the last vacuum
# (autovacuum waits for 20 % more rows of the whole table), which on a store just loaded makes
# a common query's postings several times slower to read. A vacuum sets its tables' row counts
# too; their column statistics stay the last doubling's (an ANALYZE of every table at each
# eighth as well would weigh on a bulk load).
# Not below ``VACUUM_FROM``: a small namespace's postings are few, and a vacuum is of the whole
# table, so a store of many small tenants would vacuum it every few writes. Not ``memories``:
# its HNSW index makes a vacuum costly, and recall reads its heap anyway. SKIP_LOCKED: a writer
# does not wait for another's vacuum of the same table.
VACUUM_FROM = 16_384
VACUUM = "VACUUM (SKIP_LOCKED) postings, mentions, edges"


def growth_step(memories: int) -> int:
    """Which eighth of which power of two a namespace of ``memories`` is in (0 below
    ``ANALYZE_FROM``): from ``VACUUM_FROM``, the tables are vacuumed when it moves to the
    next."""
    if memories < ANALYZE_FROM:
        return 0
    bits = memories.bit_length()
    return bits * 8 + ((memories >> (bits - 4)) & 7)


# One opener at a time creates or migrates a store's schema (its name hashed in: a migration,
# which may reindex for minutes, must not hold every other store of the database back).
SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('fivefold schema ' || %s, 0))"
# One opener of the database at a time makes the pgvector extension (``IF NOT EXISTS`` does not
# keep two at once from colliding: fresh stores opened together can fail).
EXTENSION_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('fivefold pgvector', 0))"
MAKE_EXTENSION = "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"
# One process at a time builds a store's derived index (with its table's oid and the index's
# name hashed in).
DERIVED_INDEX_LOCK = 0x0F1F_5EA4
# pgvector's HNSW index of the searched vectors, made by the first search that needs it
# (``PostgresReads._derived_index``), as the embedded store builds its HNSW graph: until then
# a write inserts into no graph. Inserting each memory into the graph as it is written halves
# ingest; building it once from the loaded rows is one sorted pass.
CREATE_SEARCHED_INDEX = (
    "CREATE INDEX IF NOT EXISTS memories_searched ON memories USING hnsw (searched vector_ip_ops)"
)
# Memory for the HNSW build, per memory and dimension (its vector twice over: the vector, its
# graph links, slack), capped: pgvector builds much faster while the graph fits in
# ``maintenance_work_mem`` (64 MB by default: about 20,000 memories of 384 dimensions here).
BUILD_BYTES_PER_DIMENSION = 8
BUILD_MEMORY_CAP_MB = 2048
MODEL_LOCK = 0x0F1F  # with the namespace's hash: one model version numbered at a time

# A list's parts, for a merge (``packed.Rewrites``): per (term, chunk) wanted, each part in it.
READ_PARTS = f"""
SELECT e.n, p.ctid::text, p.packed
FROM unnest(%(terms)s::text[], %(chunks)s::bigint[]) WITH ORDINALITY AS e(term, chunk, n)
CROSS JOIN LATERAL (
    SELECT ctid, packed FROM postings
    WHERE namespace = %(ns)s AND field = %(field)s AND term = e.term
      AND part >= (e.chunk << {CHUNK_BITS}) AND part < ((e.chunk + 1) << {CHUNK_BITS})
) AS p
"""
# The parts a merge read, by their row's address: the lists' ``term_stats`` rows, locked before
# the read, keep every other merge of them waiting (a statement by keys was planned as a hash
# join over a scan of every part).
DELETE_PARTS = "DELETE FROM postings WHERE namespace = %s AND ctid = ANY(%s::tid[])"
# A namespace's lists with more than ``%(parts)s`` parts in a chunk (``PostgresStore.compact``).
FRAGMENTED = f"""
SELECT field, term, part >> {CHUNK_BITS} FROM postings WHERE namespace = %(ns)s
GROUP BY 1, 2, 3 HAVING count(*) > %(parts)s LIMIT %(limit)s
"""
COPY_POSTINGS = "COPY postings (namespace, field, term, part, packed) FROM STDIN (FORMAT BINARY)"
MEMORY_COLUMNS = """
SELECT id, namespace, user_id, agent_id, session_id, content, predicate, type, event_at,
       created_at, importance, metadata, speaker, seen, last_seen_at, superseded_by, valid_to
FROM memories
"""
# Document frequencies move in sorted order: concurrent writers lock shared rows in the same
# order, so they wait for each other instead of deadlocking.
BUMP_TERMS = """
INSERT INTO term_stats (namespace, field, term, df1, df2)
SELECT %s, %s, t.term, t.n1, t.n2 FROM unnest(%s::text[], %s::int[], %s::int[])
    AS t(term, n1, n2) ORDER BY t.term
ON CONFLICT (namespace, field, term) DO UPDATE
SET df1 = term_stats.df1 + excluded.df1, df2 = term_stats.df2 + excluded.df2
"""
BUMP_NAMESPACE = """
INSERT INTO namespaces AS n (namespace, memories, generation, tokens)
VALUES (%s, %s, 1, %s::bigint[])
ON CONFLICT (namespace) DO UPDATE SET
    memories = n.memories + excluded.memories,
    generation = n.generation + 1,
    tokens = ARRAY(SELECT a + b FROM unnest(n.tokens, excluded.tokens) AS x(a, b))
RETURNING n.memories
"""
SELECT_CATALOG = """
SELECT id, name, norm, false FROM entities WHERE namespace = %s
UNION ALL
SELECT entity_id, alias, norm, true FROM aliases WHERE namespace = %s
"""
SELECT_MEMORY_ENTITIES = """
SELECT mn.memory_id, e.name FROM mentions mn
JOIN entities e ON e.namespace = mn.namespace AND e.id = mn.entity_id
WHERE mn.namespace = %s AND mn.memory_id = ANY(%s::bigint[]) ORDER BY e.id
"""

# BM25 over the posting tables, as tantivy scores it (query/bm25.rs): per query token (a
# repeated one counts again) and column, the column's weight times
# idf = ln(1 + (N - df + 0.5) / (df + 0.5)) times tf (k1 + 1) / (tf + k1 (1 - b + b D / avgdl)),
# with D the memory's length in that column as tantivy keeps it (``norm``), avgdl the column's
# token total over N, N the namespace's memory count; k1 = 1.2, b = 0.75. A column a memory
# lacks adds 0 (tf 0). The client computes it (``lexical._scores``) from each (field, token)'s
# list, its parts joined here into one value. LATERAL: each list is read on its own key,
# whatever the planner's statistics say.
BM25_LISTS = """
SELECT e.n, (
    SELECT string_agg(p.packed, ''::bytea) FROM postings p
    WHERE p.namespace = %(ns)s AND p.field = e.field AND p.term = e.term)
FROM unnest(%(list_fields)s::smallint[], %(list_terms)s::text[]) WITH ORDINALITY
    AS e(field, term, n)
ORDER BY e.n
"""
# In one order: a memory's score sums its lists' parts in this order, and a float sum's last
# bits depend on it (without it, a reindex that moved the rows could turn a near tie around).
BM25_TERM_STATS = """
SELECT field, term, df1, df2 FROM term_stats
WHERE namespace = %(ns)s AND field = ANY(%(fields)s::smallint[]) AND term = ANY(%(terms)s::text[])
ORDER BY field, term
"""
# The memories of a scope narrower than the namespace (a user, an agent), packed: a posting's
# memory is checked against them on the client. ``{where}``: ``scope_sql``'s.
SCOPE_IDS = "SELECT string_agg(int8send(m.id), ''::bytea) FROM memories m WHERE {where}"

# ``fivefold doctor``: mentions whose type is not their memory's (a type-filtered read, by
# ``mentions_type``, misses them), and their repair. A posting's type is checked on the client
# (``PostgresStore._lists_check``).
MISTYPED = """
SELECT count(*) FROM mentions mn JOIN memories m
    ON m.namespace = mn.namespace AND m.id = mn.memory_id WHERE mn.type <> m.type
"""
RETYPE = """UPDATE mentions mn SET type = m.type FROM memories m
    WHERE m.namespace = mn.namespace AND m.id = mn.memory_id AND mn.type <> m.type"""

# Explicit edges and declared aliases, for export (``fivefold migrate``), in write order.
SELECT_RELATIONS = f"""
SELECT s.name, ed.relation, t.name, ed.kind, ed.confidence, ed.valid_from, ed.valid_to,
       ed.user_id, ed.agent_id, ed.memory_id
FROM edges ed
JOIN entities s ON s.namespace = ed.namespace AND s.id = ed.source_id
JOIN entities t ON t.namespace = ed.namespace AND t.id = ed.target_id
WHERE ed.namespace = %s AND ed.relation <> '{COMENTION}' ORDER BY ed.id
"""
SELECT_ALIASES = """
SELECT e.name, a.alias FROM aliases a
JOIN entities e ON e.namespace = a.namespace AND e.id = a.entity_id
WHERE a.namespace = %s ORDER BY e.id, a.alias
"""


def scope_sql(
    scope: Scope, alias: str = "m", *, shared: bool = False
) -> tuple[str, dict[str, Any]]:
    """``sql.scope_sql`` in this backend's parameter style (named: ns, user, agent)."""
    return shared_scope_sql(scope, alias, shared=shared, dialect=Dialect.POSTGRES)


__all__ = ["COMENTION", "MIGRATIONS", "SCHEMA_VERSION", "scope_sql"]
