"""The statements of the PostgreSQL write path: memory rows, their ids and sessions, entities,
mentions, edges and aliases, and the advisory locks that order concurrent writers.

The tables they write are ``schema.py``'s.
"""

from __future__ import annotations

from fivefold.store import sql
from fivefold.store.shared.rows import COMENTION
from fivefold.store.sql import Dialect

# A long job's note (``note_progress``): its first, then each next, which changes no row where
# another run of the job moved the note meanwhile.
INSERT_PROGRESS = (
    "INSERT INTO fivefold_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING"
)
UPDATE_PROGRESS = "UPDATE fivefold_meta SET value = %s WHERE key = %s AND value = %s"
INSERT_SLOT = (
    "INSERT INTO slots (namespace, user_id, agent_id, slot, memory_id) "
    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
# An older memory of the same scope replaced by a newer one; one the engine inferred is not
# replaced again (it is no longer current), one the caller names always is.
SUPERSEDE = """
UPDATE memories SET superseded_by = %s, valid_to = %s, supersession = %s
WHERE id = %s AND namespace = %s AND user_id = %s AND agent_id = %s AND id <> %s
  AND (superseded_by IS NULL OR %s)
"""
# A memory forgotten hands what it superseded to the memory that superseded it (or makes it
# current again).
RESTORE_SUPERSEDED = """
UPDATE memories SET superseded_by = %s, valid_to = %s,
    supersession = CASE WHEN %s::bigint IS NULL THEN NULL ELSE supersession END
WHERE namespace = %s AND superseded_by = %s
"""
SEEN_AGAIN = (
    "UPDATE memories SET seen = seen + 1, last_seen_at = %s WHERE namespace = %s AND id = %s"
)
# Memory ids: writers that take them from the sequence share this lock (none waits for
# another); one that gives its own (a copy keeping its source's) or moves the sequence holds it
# alone, so that no id it checked is taken before it commits. Per store: its schema's name.
_IDS_KEY = "hashtextextended('fivefold memory ids ' || current_schema(), 0)"
IDS_SHARED = f"SELECT pg_advisory_xact_lock_shared({_IDS_KEY})"
IDS_EXCLUSIVE = f"SELECT pg_advisory_xact_lock({_IDS_KEY})"
# Ids for a batch, the shared lock taken first in the same statement (no row is made before
# the one-row lock subquery has run): no round trip of its own.
RESERVE_IDS = f"""
SELECT nextval('fivefold_memory_ids') FROM ({IDS_SHARED}) AS held, generate_series(1, %s)
"""
# With a bucket of a session's hash (``write_locks.session_keys``): one write of a session at a
# time, from before it takes its ids. Two writers of one session read neither's rows (neither
# had committed) and each linked its turns as if alone, for good: a forgotten turn's text then
# stayed in a neighbour's window. Buckets bound the locks a batch of many sessions takes.
SESSION_LOCK = 0x0F20
SESSION_BUCKETS = 64  # per namespace
LOCK_SESSIONS = "SELECT count(pg_advisory_xact_lock(%s::int, k)) FROM unnest(%s::int[]) AS k"
# A batch's memory rows, by binary COPY (a parameterized INSERT a row costs the client a
# statement's worth of dumping each).
COPY_MEMORIES = """
COPY memories (id, namespace, user_id, agent_id, session_id, content, predicate, type, event_at,
    created_at, importance, metadata, speaker, tokens, context_near, context_far, embedding,
    searched, repeat_key, seen, last_seen_at)
FROM STDIN (FORMAT BINARY)
"""
MEMORY_TYPES = (
    ["int8"]
    + ["text"] * 7
    + ["float8"] * 3
    + ["text"] * 2
    + ["int4[]"]
    + ["text"] * 2
    + ["vector"] * 2
    + ["text", "int4", "float8"]
)
# Per (session, id) wanted in one namespace, the session's newest rows below that id.
NEWEST_IN_SESSIONS = """
SELECT w.k, m.id, m.content, m.embedding, m.context_near, m.context_far, m.type
FROM unnest(%(k)s::int[], %(usr)s::text[], %(agt)s::text[], %(ses)s::text[], %(below)s::bigint[])
    AS w(k, usr, agt, ses, below)
CROSS JOIN LATERAL (
    SELECT id, content, embedding, context_near, context_far, type FROM memories
    WHERE namespace = %(ns)s AND user_id = w.usr AND agent_id = w.agt AND session_id = w.ses
      AND id < w.below
    ORDER BY id DESC LIMIT %(limit)s
) m
ORDER BY w.k, m.id
"""
UPDATE_CONTEXT_AND_SEARCHED = """
UPDATE memories SET context_near = %s, context_far = %s,
    tokens = ARRAY[tokens[1], tokens[2], %s, %s], searched = coalesce(%s::vector, embedding)
WHERE namespace = %s AND id = %s AND context_near = %s AND context_far = %s
RETURNING id
"""
# (key, entity id, its stored name): the names are the written records' (``batch.records``).
FIND_ALIASES = """
SELECT a.norm, a.entity_id, e.name FROM (
    SELECT norm, min(entity_id) AS entity_id FROM aliases
    WHERE namespace = %(ns)s AND norm = ANY(%(keys)s::text[]) GROUP BY norm
) a JOIN entities e ON e.namespace = %(ns)s AND e.id = a.entity_id
"""
FIND_ENTITIES = """
SELECT norm, id, name FROM entities WHERE namespace = %(ns)s AND norm = ANY(%(keys)s::text[])
"""
# New entities in the order they were first named (their ids in that order, as on SQLite); a
# key another writer created meanwhile is taken as it is (a no-op update, to return its id).
UPSERT_ENTITIES = """
INSERT INTO entities AS e (namespace, name, norm, mentions, created_at)
SELECT t.namespace, t.name, t.norm, 0, t.created
FROM unnest(%s::text[], %s::text[], %s::text[], %s::float8[])
     WITH ORDINALITY AS t(namespace, name, norm, created, n)
ORDER BY t.n
ON CONFLICT (namespace, norm) DO UPDATE SET mentions = e.mentions
RETURNING id, namespace, norm, name
"""
INSERT_MENTIONS = """
INSERT INTO mentions (namespace, entity_id, memory_id, joined, type)
SELECT t.namespace, t.entity_id, t.memory_id, t.joined, m.type
FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::boolean[])
    AS t(namespace, entity_id, memory_id, joined)
JOIN memories m ON m.namespace = t.namespace AND m.id = t.memory_id
ON CONFLICT DO NOTHING
"""
BUMP_ENTITIES_MENTIONS = """
UPDATE entities e SET mentions = e.mentions + t.n
FROM unnest(%s::text[], %s::bigint[], %s::int[]) AS t(namespace, id, n)
WHERE e.namespace = t.namespace AND e.id = t.id
RETURNING e.id
"""
UPSERT_COMENTIONS = f"""
INSERT INTO edges AS ed (namespace, user_id, agent_id, source_id, target_id, relation, kind,
                         confidence, support, created_at)
SELECT t.namespace, t.user_id, t.agent_id, t.a, t.b, '{COMENTION}', 'semantic', 1.0, t.n, t.created
FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::int[],
            %s::float8[]) AS t(namespace, user_id, agent_id, a, b, n, created)
ON CONFLICT (namespace, user_id, agent_id, source_id, target_id) WHERE relation = '{COMENTION}'
DO UPDATE SET support = ed.support + excluded.support
"""
UPSERT_SESSIONS = """
INSERT INTO sessions AS s (namespace, user_id, agent_id, session_id, started_at, last_seen_at)
SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::float8[], %s::float8[])
ON CONFLICT (namespace, user_id, agent_id, session_id) DO UPDATE SET
    started_at = least(s.started_at, excluded.started_at),
    last_seen_at = greatest(s.last_seen_at, excluded.last_seen_at)
"""
RESPAN_SESSION = Dialect.POSTGRES.positional(sql.RESPAN_SESSION)
DROP_EMPTY_SESSION = Dialect.POSTGRES.positional(sql.DROP_EMPTY_SESSION)
FIND_ALIAS = (
    "SELECT entity_id FROM aliases WHERE namespace = %s AND norm = %s ORDER BY entity_id LIMIT 1"
)
UPSERT_ENTITY = """
INSERT INTO entities AS e (namespace, name, norm, mentions, created_at)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (namespace, norm) DO UPDATE SET mentions = e.mentions + excluded.mentions
RETURNING id
"""
BUMP_ENTITY_MENTIONS = (
    "UPDATE entities SET mentions = mentions + %s WHERE namespace = %s AND id = %s"
)
DROP_COMENTION = f"""
UPDATE edges SET support = support - 1
WHERE namespace = %s AND user_id = %s AND agent_id = %s AND source_id = %s AND target_id = %s
  AND relation = '{COMENTION}'
"""
PRUNE_COMENTIONS = (
    f"DELETE FROM edges WHERE namespace = %s AND relation = '{COMENTION}' AND support <= 0"
)
DROP_ORPHAN_ENTITIES = """
DELETE FROM entities e WHERE e.namespace = %s AND e.id = ANY(%s::bigint[])
  AND NOT EXISTS (SELECT 1 FROM mentions WHERE namespace = e.namespace AND entity_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM edges WHERE namespace = e.namespace
                  AND (source_id = e.id OR target_id = e.id))
  AND NOT EXISTS (SELECT 1 FROM aliases WHERE namespace = e.namespace AND entity_id = e.id)
"""
INSERT_EDGE = """
INSERT INTO edges (namespace, user_id, agent_id, source_id, target_id, relation, kind,
                   confidence, valid_from, valid_to, memory_id, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING id
"""
# A namespace's names: an alias declaration holds it alone, every write resolving names holds
# it shared, so a name cannot become an alias while a write makes it an entity (or the other
# way round: each passed its check before the other was committed).
ALIAS_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('fivefold alias ' || %s, 0))"
# Shared, for each namespace of a batch at once, in one order for every writer (taken as met,
# two batches meeting two namespaces in opposite orders stall behind waiting aliases until
# Postgres's deadlock check reorders the queue, a second later).
NAMES_LOCK = (
    "SELECT count(pg_advisory_xact_lock_shared(hashtextextended('fivefold alias ' || n, 0))) "
    "FROM (SELECT n FROM unnest(%s::text[]) AS n ORDER BY n) AS sorted"
)
# What an alias's key already names: an entity of that key, and the entities it is an alias of.
NAME_TAKEN = """
SELECT id, name, false FROM entities WHERE namespace = %(ns)s AND norm = %(norm)s
UNION ALL
SELECT a.entity_id, e.name, true FROM aliases a
JOIN entities e ON e.namespace = a.namespace AND e.id = a.entity_id
WHERE a.namespace = %(ns)s AND a.norm = %(norm)s
"""
INSERT_ALIAS = """
INSERT INTO aliases (namespace, norm, alias, entity_id) VALUES (%s, %s, %s, %s)
ON CONFLICT DO NOTHING
"""
